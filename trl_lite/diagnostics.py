"""The paper's diagnostics as pure functions: what got clipped, who repeats, how concentrated the rewards are.

"Tricks or Traps? A Deep Dive into RL for LLM Reasoning" (https://huggingface.co/papers/2508.08221) explains each trick
through a measurement and reports what it saw; [`~trl_lite.LitePPOTrainer`] logs the same measurements (with
`diagnostics=True`):

- clipped tokens (Takeaway 5): with a low upper bound, the tokens clipped most at the high bound are connectives
  ("therefore", "if"), which clip-higher frees. [`clipped_token_masks`] mirrors TRL 1.16's clip rule;
  [`clipped_token_table`] ranks the clipped tokens of a logging window.
- repetition (Takeaway 8): at long maximum lengths, what the overlong filter removes is mostly degenerate repetition.
  [`repeats_itself`] is the rule, [`repetition_shares`] splits it by truncated/finished and correct/incorrect.
- reward concentration (Takeaways 1-3): [`reward_concentration`] gives the all-correct / all-wrong / mixed group
  shares and the group vs batch reward std.
- lengths and entropy of correct vs incorrect completions: [`masked_mean_by`].

Every function takes per-sample tensors for the whole (gathered) batch and returns plain numbers; NaN marks a share
of an empty set (TRL's logger skips NaN values).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import torch

from .advantages import _grouped, nan_std

# Repetition rule (see `repeats_itself`)
REPETITION_MAX_PERIOD = 64
REPETITION_MIN_REPEATS = 3
REPETITION_MIN_SPAN = 24


def clipped_token_masks(
    coef: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, epsilon_low: float, epsilon_high: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Tokens clipped at the low and at the high bound, with TRL 1.16's rule (`GRPOTrainer._compute_loss`).

    A token is clipped at the low bound when its ratio `coef < 1 - epsilon_low` and its advantage is negative, at the
    high bound when `coef > 1 + epsilon_high` and its advantage is positive: only then does the clip stop its
    gradient.

    Args:
        coef: importance ratios `(B, T)`, or `(B, 1)` under sequence-level importance sampling.
        advantages: `(B,)`.
        mask: loss mask `(B, T)`.

    Returns:
        Boolean masks `(B, T)` `(low, high)`, restricted to `mask`.
    """
    adv = advantages.unsqueeze(-1)  # (B, 1)
    in_loss = mask.bool()
    low = (coef < 1 - epsilon_low) & (adv < 0) & in_loss  # (B, T)
    high = (coef > 1 + epsilon_high) & (adv > 0) & in_loss  # (B, T)
    return low, high


def count_tokens(token_ids: torch.Tensor, selected: torch.Tensor) -> Counter:
    """Counts of each token id where `selected` is true. `token_ids` and `selected` are `(B, T)`."""
    return Counter(token_ids[selected.bool()].tolist())


def clipped_token_table(
    low: Counter, high: Counter, decode: Callable[[int], str], top_k: int = 20
) -> list[dict]:
    """The `top_k` most clipped tokens at each bound, as rows `{bound, token, token_id, count, share}`.

    `share` is the token's count over all tokens clipped at the same bound in the window, so each bound's shares sum
    to at most 1 (exactly 1 when it has at most `top_k` distinct tokens). Ties are broken by token id.
    """
    rows = []
    for bound, counts in (("low", low), ("high", high)):
        total = sum(counts.values())
        for token_id, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top_k]:
            rows.append(
                {"bound": bound, "token": decode(token_id), "token_id": int(token_id), "count": int(count),
                 "share": count / total}
            )
    return rows


def repeats_itself(
    token_ids: Sequence[int],
    max_period: int = REPETITION_MAX_PERIOD,
    min_repeats: int = REPETITION_MIN_REPEATS,
    min_span: int = REPETITION_MIN_SPAN,
) -> bool:
    """Whether a completion ends in a loop: its tail repeats one n-gram at least `min_repeats` times in a row.

    The rule: for some period `n <= max_period`, the longest suffix with `ids[i] == ids[i - n]` throughout (plus the
    `n` tokens it repeats) covers at least `min_repeats * n` and at least `min_span` tokens. A suffix cut in the middle
    of a copy still counts (`"abcabcabcab"` has period 3), and `min_span` keeps short legitimate runs (`"1000"`,
    `"...)))"`) out. Pass the completion without its EOS and padding.
    """
    ids = list(token_ids)
    length = len(ids)
    for n in range(1, min(max_period, length // max(min_repeats, 1)) + 1):
        run = 0  # positions i (from the end) with ids[i] == ids[i - n]
        while run < length - n and ids[length - 1 - run] == ids[length - 1 - run - n]:
            run += 1
        span = run + n
        if span >= min_repeats * n and span >= min_span:
            return True
    return False


def _share(flags: torch.Tensor, where: torch.Tensor) -> float:
    where = where.bool()
    return flags[where].float().mean().item() if where.any() else float("nan")


def repetition_shares(repetitive: torch.Tensor, truncated: torch.Tensor, correct: torch.Tensor) -> dict[str, float]:
    """Share of repeating completions overall and within truncated, finished, correct and incorrect ones. All `(N,)`."""
    everyone = torch.ones_like(repetitive, dtype=torch.bool)
    return {
        "frac": _share(repetitive, everyone),
        "frac_truncated": _share(repetitive, truncated),
        "frac_finished": _share(repetitive, ~truncated.bool()),
        "frac_correct": _share(repetitive, correct),
        "frac_incorrect": _share(repetitive, ~correct.bool()),
    }


def reward_concentration(correct: torch.Tensor, rewards: torch.Tensor, group_size: int) -> dict[str, float]:
    """How concentrated a batch's outcomes are (Takeaways 1-3).

    Args:
        correct: `(N,)` booleans, groups of `group_size` consecutive samples.
        rewards: `(N,)` total rewards, NaN where unscorable.

    Returns:
        Shares of groups all correct, all wrong and mixed; the mean of the per-group reward std (Bessel-corrected)
        and the batch reward std. A small group std next to a larger batch std is what makes group-std normalization
        blow up near-uniform groups.
    """
    grouped = _grouped(correct.float(), group_size)  # (G, K)
    n_correct = grouped.sum(dim=1)  # (G,)
    return {
        "frac_groups_all_correct": (n_correct == group_size).float().mean().item(),
        "frac_groups_all_wrong": (n_correct == 0).float().mean().item(),
        "frac_groups_mixed": ((n_correct > 0) & (n_correct < group_size)).float().mean().item(),
        "group_std_mean": nan_std(_grouped(rewards, group_size), dim=1).mean().item(),
        "batch_std": nan_std(rewards).item(),
    }


def masked_mean_by(values: torch.Tensor, counts: torch.Tensor, flags: torch.Tensor) -> tuple[float, float]:
    """`(sum values / sum counts)` over the samples with `flags` true, and over the others; NaN for an empty side.

    With `values` the per-sample token sums of entropy and `counts` the token counts, this is the token-mean entropy of
    correct vs incorrect completions; with `values = lengths` and `counts = 1`, their mean length.
    """
    flags = flags.bool()
    out = []
    for side in (flags, ~flags):
        total = counts[side].sum()
        out.append((values[side].sum() / total).item() if total > 0 else float("nan"))
    return out[0], out[1]
