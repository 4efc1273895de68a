"""trl-lite: Lite PPO and the tricks of "Tricks or Traps? A Deep Dive into RL for LLM Reasoning" (arXiv 2508.08221)
as a TRL-compatible trainer."""

from .advantages import ADVANTAGE_MEANS, ADVANTAGE_STDS, normalize_advantages
from .aggregation import AGGREGATIONS, aggregate_loss
from .config import LitePPOConfig
from .recipes import RECIPES
from .trainer import LitePPOTrainer

__version__ = "0.1.0"

__all__ = [
    "ADVANTAGE_MEANS",
    "ADVANTAGE_STDS",
    "AGGREGATIONS",
    "LitePPOConfig",
    "LitePPOTrainer",
    "RECIPES",
    "aggregate_loss",
    "normalize_advantages",
]
