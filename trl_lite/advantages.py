"""Advantage normalization: the paper's mean x std grid as pure tensor functions.

"Tricks or Traps? A Deep Dive into RL for LLM Reasoning" (https://huggingface.co/papers/2508.08221), Section 4.1,
studies A_k = (r_k - mean) / std with the mean and the std each taken at the group level (the `num_generations`
completions of one prompt) or at the batch level (the whole generation batch, gathered over all processes), and
reports that:

- group-level normalization is robust under any reward scale; batch-level normalization alone is fragile with {0, 1}
  rewards (Takeaway 1);
- when rewards are concentrated (easy data, most groups all-correct) dropping the std avoids blowing up small
  differences into large gradients (Takeaway 2);
- group mean + batch std is the most robust combination (Takeaway 3), and is Lite PPO's normalization.

The mean and the std are looked up in two registries, so a new statistic can be added by name::

    from trl_lite.advantages import ADVANTAGE_STDS

    @ADVANTAGE_STDS.register("mad")
    def batch_mad(rewards, group_size):  # rewards (N,), NaN where a sample is excluded
        med = rewards.nanmedian()
        return (rewards - med).abs().nanmedian().expand_as(rewards)

    LitePPOConfig(..., advantage_std="mad")

A mean function maps `(rewards (N,), group_size)` to the per-sample baseline `(N,)`; a std function maps the same
inputs to the per-sample scale `(N,)`, or to `None` for "no division". Excluded samples carry NaN in `rewards`, so
every statistic must ignore NaN (use `nanmean` / [`nan_std`]).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .registry import Registry

MeanFn = Callable[[torch.Tensor, int], torch.Tensor]
StdFn = Callable[[torch.Tensor, int], "torch.Tensor | None"]

ADVANTAGE_MEANS: Registry[MeanFn] = Registry("advantage_mean")
ADVANTAGE_STDS: Registry[StdFn] = Registry("advantage_std")


def nan_std(x: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Bessel-corrected standard deviation ignoring NaN; 0 where fewer than two values are present.

    A single valid sample has no spread, and returning 0 (rather than NaN) gives it advantage `(r - r) / eps = 0`.
    """
    valid = ~torch.isnan(x)
    count = valid.sum() if dim is None else valid.sum(dim)
    mean = x.nanmean() if dim is None else x.nanmean(dim, keepdim=True)
    sq = torch.where(valid, (x - mean) ** 2, torch.zeros_like(x))
    sq = sq.sum() if dim is None else sq.sum(dim)
    var = sq / (count - 1).clamp(min=1)
    return torch.where(count > 1, var.sqrt(), torch.zeros_like(var))


def _grouped(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    if rewards.ndim != 1 or rewards.numel() % group_size != 0:
        raise ValueError(
            f"rewards must have shape (N,) with N divisible by group_size={group_size}, got {tuple(rewards.shape)}."
        )
    return rewards.view(-1, group_size)  # (N / K, K)


@ADVANTAGE_MEANS.register("group")
def group_mean(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """Mean of the valid rewards of each prompt's group, broadcast to its members. (N,)"""
    return _grouped(rewards, group_size).nanmean(dim=1).repeat_interleave(group_size)


@ADVANTAGE_MEANS.register("batch")
def batch_mean(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """Mean of all valid rewards of the generation batch. (N,)"""
    return rewards.nanmean().expand_as(rewards)


@ADVANTAGE_MEANS.register("none")
def no_mean(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """No baseline: the advantage is the (scaled) raw reward. (N,)"""
    return torch.zeros_like(rewards)


@ADVANTAGE_STDS.register("group")
def group_std(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """Bessel-corrected std of the valid rewards of each group, broadcast to its members. (N,)"""
    return nan_std(_grouped(rewards, group_size), dim=1).repeat_interleave(group_size)


@ADVANTAGE_STDS.register("batch")
def batch_std(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """Bessel-corrected std of all valid rewards of the generation batch. (N,)"""
    return nan_std(rewards).expand_as(rewards)


@ADVANTAGE_STDS.register("none")
def no_std(rewards: torch.Tensor, group_size: int) -> None:
    """No division (Dr. GRPO; the paper's choice when rewards are concentrated)."""
    return None


def normalize_advantages(
    rewards: torch.Tensor,
    group_size: int,
    *,
    mean: str = "group",
    std: str = "batch",
    eps: float = 1e-4,
    valid: torch.Tensor | None = None,
) -> torch.Tensor:
    r"""
    Computes `A = (r - mu) / (sigma + eps)` over a whole generation batch.

    Args:
        rewards (`torch.Tensor`):
            Rewards of shape `(N,)`, ordered so that each consecutive run of `group_size` samples belongs to one prompt.
            NaN marks an unscorable sample.
        group_size (`int`):
            Completions per prompt (`num_generations`).
        mean (`str`, *optional*, defaults to `"group"`):
            Registered mean: `"group"`, `"batch"` or `"none"`.
        std (`str`, *optional*, defaults to `"batch"`):
            Registered std: `"group"`, `"batch"` or `"none"` (no division, and `eps` is not added).
        eps (`float`, *optional*, defaults to `1e-4`):
            Added to the std before dividing; TRL's value, so matching settings reproduce TRL exactly.
        valid (`torch.Tensor`, *optional*):
            Boolean mask `(N,)` of the samples that count. Invalid and NaN-reward samples get advantage 0 and stay out
            of every mean and std (e.g. completions removed by the overlong filter).

    Returns:
        `torch.Tensor`: Advantages of shape `(N,)`, same dtype as `rewards`.
    """
    mean_fn, std_fn = ADVANTAGE_MEANS.get(mean), ADVANTAGE_STDS.get(std)
    keep = ~torch.isnan(rewards)
    if valid is not None:
        if valid.shape != rewards.shape:
            raise ValueError(f"valid must have shape {tuple(rewards.shape)}, got {tuple(valid.shape)}.")
        keep = keep & valid.bool()
    masked = torch.where(keep, rewards, torch.full_like(rewards, float("nan")))  # (N,) excluded -> NaN
    advantages = masked - mean_fn(masked, group_size)
    sigma = std_fn(masked, group_size)
    if sigma is not None:
        advantages = advantages / (sigma + eps)
    return torch.where(keep, advantages, torch.zeros_like(advantages))


def normalize_then_sum(
    rewards_per_func: torch.Tensor,
    group_size: int,
    weights: torch.Tensor,
    *,
    eps: float = 1e-4,
    valid: torch.Tensor | None = None,
) -> torch.Tensor:
    r"""
    TRL's `multi_objective_aggregation="normalize_then_sum"` first stage: each reward function is normalized within
    each group, `(r_kf - mean_group_f) / (std_group_f + eps)`, then the functions are summed with their weights.

    The result is the reward that the configured advantage mean and std then normalize (TRL takes batch mean and
    batch std there). With several reward functions on different scales (accuracy in {0, 1}, a length penalty in
    [-1, 0]), the per-function normalization keeps one function from drowning out the others (GDPO,
    https://huggingface.co/papers/2601.05242).

    Args:
        rewards_per_func (`torch.Tensor`):
            Rewards `(N, F)`, one column per reward function, NaN where a function gave no reward.
        group_size (`int`):
            Completions per prompt.
        weights (`torch.Tensor`):
            Reward weights `(F,)`.
        eps (`float`, *optional*, defaults to `1e-4`):
            Added to each group std (TRL's value).
        valid (`torch.Tensor`, *optional*):
            Boolean mask `(N,)` of the samples that count; the others are NaN in the result and out of every group
            statistic (the overlong filter).

    Returns:
        `torch.Tensor`: `(N,)`; NaN where no function gave a reward or the sample is not valid.
    """
    if rewards_per_func.ndim != 2 or rewards_per_func.shape[1] != weights.numel():
        raise ValueError(
            f"rewards_per_func must have shape (N, {weights.numel()}), got {tuple(rewards_per_func.shape)}."
        )
    x = rewards_per_func
    if valid is not None:
        x = torch.where(valid.bool().unsqueeze(1), x, torch.full_like(x, float("nan")))
    num_funcs = x.shape[1]
    grouped = x.reshape(-1, group_size, num_funcs)  # (G, K, F)
    mean = grouped.nanmean(dim=1, keepdim=True)  # (G, 1, F)
    std = nan_std(grouped, dim=1).unsqueeze(1)  # (G, 1, F)
    normalized = ((grouped - mean) / (std + eps)).reshape(-1, num_funcs)  # (N, F)
    summed = (normalized * weights.to(x.dtype).unsqueeze(0)).nansum(dim=1)  # (N,)
    return torch.where(torch.isnan(x).all(dim=1), torch.full_like(summed, float("nan")), summed)


def uniform_groups(rewards: torch.Tensor, group_size: int, valid: torch.Tensor | None = None) -> torch.Tensor:
    """Which groups carry no learning signal under a group mean: all counted rewards match, or none is counted. (G,)

    DAPO's dynamic sampling drops exactly these groups (https://huggingface.co/papers/2503.14476, Section 3.2).
    """
    keep = ~torch.isnan(rewards) if valid is None else ~torch.isnan(rewards) & valid.bool()
    grouped = _grouped(torch.where(keep, rewards, torch.full_like(rewards, float("nan"))), group_size)  # (G, K)
    spread = grouped.nan_to_num(float("-inf")).amax(dim=1) - grouped.nan_to_num(float("inf")).amin(dim=1)  # (G,)
    present = keep.view(-1, group_size).any(dim=1)  # (G,)
    return ~present | (spread == 0)


def zero_std_group_fraction(rewards: torch.Tensor, group_size: int, valid: torch.Tensor | None = None) -> float:
    """Share of groups whose counted rewards all match (no learning signal under a group mean).

    Computed per group whatever the std level, unlike TRL's `frac_reward_zero_std`, which under `scale_rewards="batch"`
    tests the batch std. Groups with no counted sample are left out of the share; NaN when no group counts.
    """
    keep = ~torch.isnan(rewards) if valid is None else ~torch.isnan(rewards) & valid.bool()
    present = keep.view(-1, group_size).any(dim=1)  # (G,)
    zero = present & uniform_groups(rewards, group_size, valid)
    return (zero.sum() / present.sum()).item() if present.any() else float("nan")


# `advantage_std="auto"`: the std level kept while rewards are spread out, and the threshold's default
AUTO_STD_KEEP = "batch"


def resolve_auto_std(
    rewards: torch.Tensor, group_size: int, threshold: float, valid: torch.Tensor | None = None
) -> str:
    """The std level `advantage_std="auto"` uses for one generation batch: `"none"` when rewards are concentrated,
    `"batch"` otherwise.

    Takeaway 2 of the paper: when most groups are all-correct (or all-wrong), the std is small and dividing by it
    blows small reward differences up into large gradients, so the std is dropped. "Concentrated" is read from the
    share of groups whose counted rewards all match ([`zero_std_group_fraction`]): at or above `threshold` the std is
    dropped. NaN shares (no group counted) keep the std.
    """
    share = zero_std_group_fraction(rewards, group_size, valid)
    return "none" if share == share and share >= threshold else AUTO_STD_KEEP
