"""The lab's experiments, one module per family of the paper's takeaways. Each module's file is hashed with the code
that runs and judges its experiments (`trl_lite_lab.provenance`), apart from the other modules."""
