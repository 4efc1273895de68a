"""Named recipes: the settings of Lite PPO and of the methods it is compared with, as `LitePPOConfig` fields.

    LitePPOConfig.from_recipe("dapo", output_dir="runs/dapo", max_completion_length=8192)
    trl-lite train --recipe dapo --max_steps 100      # explicit flags override the recipe

Each recipe is a function returning the fields it sets, registered in `RECIPES` (its docstring names the source), so a
user can add one without editing the config::

    @RECIPES.register("my_recipe")
    def my_recipe() -> dict:
        return {"advantage_std": "none", "epsilon_high": 0.3}

Only the fields that define the method are set; model, data, batch and length settings stay the caller's.
"""

from __future__ import annotations

from collections.abc import Callable

from .registry import Registry

RECIPES: Registry[Callable[[], dict]] = Registry("recipe")


@RECIPES.register("lite_ppo")
def lite_ppo() -> dict:
    """Lite PPO (arXiv 2508.08221, Section 5): group-level mean, batch-level std, token-level loss, symmetric clip 0.2,
    no critic, no KL. For base models."""
    return {"advantage_mean": "group", "advantage_std": "batch", "loss_aggregation": "token-mean", "epsilon": 0.2,
            "epsilon_high": 0.2, "beta": 0.0}


@RECIPES.register("grpo")
def grpo() -> dict:
    """GRPO (DeepSeekMath, arXiv 2402.03300): group mean and group std, sequence-level loss (mean over sequences of
    the per-sequence token mean), symmetric clip 0.2. The paper's baseline, run without KL as in its setup."""
    return {"advantage_mean": "group", "advantage_std": "group", "loss_aggregation": "seq-mean-token-mean",
            "epsilon": 0.2, "epsilon_high": 0.2, "beta": 0.0}


@RECIPES.register("dr_grpo")
def dr_grpo() -> dict:
    """Dr. GRPO ("Understanding R1-Zero-Like Training", arXiv 2503.20783): group mean without the std, and the token
    sum normalized by a constant (`seq-mean-token-sum-norm`), removing GRPO's length and difficulty biases."""
    return {"advantage_mean": "group", "advantage_std": "none", "loss_aggregation": "seq-mean-token-sum-norm",
            "epsilon": 0.2, "epsilon_high": 0.2, "beta": 0.0}


@RECIPES.register("instruct")
def instruct() -> dict:
    """For aligned (Instruct) models (arXiv 2508.08221, Takeaways 4 and 6): sequence-level loss and clip-higher 0.28,
    with Lite PPO's group-mean / batch-std advantages. The paper finds 0.28 saturates for 8B models while 4B models
    keep gaining up to 0.32: pass `epsilon_high=0.32` for aligned models of 4B and below."""
    return {"advantage_mean": "group", "advantage_std": "batch", "loss_aggregation": "seq-mean-token-mean",
            "epsilon": 0.2, "epsilon_high": 0.28, "beta": 0.0}


@RECIPES.register("dapo")
def dapo() -> dict:
    """DAPO (arXiv 2503.14476): clip-higher 0.2 / 0.28, token-level loss, overlong filtering and soft overlong
    punishment (DAPO's buffer: 20% of the maximum length), group normalization, and dynamic sampling: groups whose
    rewards all match are dropped and the batch is refilled with fresh prompts (at most 3 extra generation rounds
    per generation batch here; DAPO's verl recipe allows more). No KL."""
    return {"advantage_mean": "group", "advantage_std": "group", "loss_aggregation": "token-mean", "epsilon": 0.2,
            "epsilon_high": 0.28, "overlong_filter": True, "soft_overlong_punishment": True, "dynamic_sampling": True,
            "dynamic_sampling_max_rounds": 3, "beta": 0.0}


def recipe_settings(name: str) -> dict:
    """The fields recipe `name` sets, plus `recipe=name`; unknown names raise an error listing the recipes."""
    if name not in RECIPES:
        raise ValueError(f"recipe={name!r} is not a registered recipe; expected one of {RECIPES.names()}.")
    return {**RECIPES.get(name)(), "recipe": name}


def has_recipe_settings(args, name: str) -> bool:
    """Whether `args` (a `LitePPOConfig`) has recipe `name`'s method: every field any recipe sets equals that recipe's
    value, or the field's default where the recipe leaves it alone."""
    from dataclasses import MISSING, fields

    defaults = {f.name: f.default for f in fields(args) if f.default is not MISSING}
    method = {key for recipe in RECIPES.names() for key in RECIPES.get(recipe)()}
    settings = RECIPES.get(name)()
    expected = {key: settings.get(key, defaults.get(key)) for key in method}
    expected["epsilon_high"] = settings.get("epsilon_high", expected.get("epsilon"))
    resolved = {key: getattr(args, key, None) for key in method}
    resolved["epsilon_high"] = args.epsilon if args.epsilon_high is None else args.epsilon_high
    return all(resolved[key] == value for key, value in expected.items())


def matching_recipe(args) -> str | None:
    """The registered recipe whose method `args` has, if any (`has_recipe_settings`): a config left at its defaults is
    `lite_ppo`, and adding `overlong_filter=True` to it matches no recipe."""
    return next((name for name in RECIPES.names() if has_recipe_settings(args, name)), None)
