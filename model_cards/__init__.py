"""Model card templates, installed as `trl_lite.model_cards`."""
