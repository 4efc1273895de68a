"""Config and errors: LitePPOConfig, recipes, the recommender, the TRL contract, the command line's startup, the model card renderer."""
