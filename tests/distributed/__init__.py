"""Multi-process and integration: torchrun, accelerate multi-node on one host, process teardown, the SLURM example, the real vLLM engine, the GPU check's CPU rehearsal."""
