"""trl-lite: Lite PPO and the tricks of "Tricks or Traps? A Deep Dive into RL for LLM Reasoning" (arXiv 2508.08221)
as a TRL-compatible trainer.

The public names are imported on first use (PEP 562), so `import trl_lite` (and the `trl-lite` command, whose
`--help` needs none of them) does not pay for torch, transformers and TRL until one of them is asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("trl-lite")
except PackageNotFoundError:  # a source tree on sys.path without the installed metadata
    __version__ = "0.1.0"
del PackageNotFoundError, version

# public name -> the submodule that defines it
_LAZY = {
    "ADVANTAGE_MEANS": "advantages",
    "ADVANTAGE_STDS": "advantages",
    "normalize_advantages": "advantages",
    "AGGREGATIONS": "aggregation",
    "aggregate_loss": "aggregation",
    "LitePPOConfig": "config",
    "RECIPES": "recipes",
    "LitePPOTrainer": "trainer",
}

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

if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names come from __getattr__
    from .advantages import ADVANTAGE_MEANS, ADVANTAGE_STDS, normalize_advantages
    from .aggregation import AGGREGATIONS, aggregate_loss
    from .config import LitePPOConfig
    from .recipes import RECIPES
    from .trainer import LitePPOTrainer


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
