"""Loss aggregation: how per-token losses become one scalar, as pure tensor functions.

The paper (https://huggingface.co/papers/2508.08221, Section 4.3, Takeaway 6) finds token-level aggregation better for
base models and sequence-level aggregation better for aligned models. The modes follow verl's `agg_loss`
(`verl/trainer/ppo/core_algos.py`) and ROLL, with `m` the loss mask, `l` the per-token loss, `|o_i| = sum_t m_it`:

| mode                        | formula                                         | TRL `loss_type` |
|-----------------------------|-------------------------------------------------|-----------------|
| `token-mean`                | `sum(m*l) / sum(m)`                              | `dapo`, `bnpo`  |
| `seq-mean-token-mean`       | `mean_i( sum_t m*l / |o_i| )`                    | `grpo`          |
| `seq-mean-token-sum`        | `mean_i( sum_t m*l )`                            | `luspo`         |
| `seq-mean-token-sum-norm`   | `sum(m*l) / (N * C)`, `C = max_completion_length` | `dr_grpo`       |

Sequences with no loss token (e.g. removed by the overlong filter) do not count in `N`.

Every mode is linear in the per-token loss with one weight per sequence:
`loss = sum_i w_i * sum_t m_it * l_it`, and the weights depend only on the loss-token counts `|o_i|`. That is what
makes the modes exact under gradient accumulation and multiple processes: the trainer computes `w` once from the
counts of the *whole optimizer step* gathered over all processes, so however the samples are split into
micro-batches, the summed gradient is the same. A registered aggregator is therefore a function
`(lengths (N,), max_length) -> weights (N,)`::

    from trl_lite.aggregation import AGGREGATIONS

    @AGGREGATIONS.register("seq-sqrt")
    def seq_sqrt(lengths, max_length):
        n = (lengths > 0).sum().clamp(min=1)
        return torch.where(lengths > 0, 1.0 / (n * lengths.clamp(min=1).sqrt()), torch.zeros_like(lengths))
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .registry import Registry

WeightFn = Callable[[torch.Tensor, int], torch.Tensor]

AGGREGATIONS: Registry[WeightFn] = Registry("loss_aggregation")

# TRL `loss_type` -> the aggregation it performs (used to translate GRPOConfig's field). These loss types share the
# clipped PPO objective and differ only in how they aggregate it.
TRL_LOSS_TYPE_TO_AGGREGATION = {
    "dapo": "token-mean",
    "bnpo": "token-mean",
    "grpo": "seq-mean-token-mean",
    "luspo": "seq-mean-token-sum",
    "dr_grpo": "seq-mean-token-sum-norm",
}

# TRL `loss_type`s that change the per-token objective itself -> the aggregation TRL 1.16 gives them, used unless
# `loss_aggregation` is set. The trainer keeps TRL's per-token objective and applies the configured aggregation.
OBJECTIVE_LOSS_TYPES = {
    "cispo": "token-mean",  # clipped IS-weight times log-prob (MiniMax-M1, arXiv 2506.13585)
    "sapo": "seq-mean-token-mean",  # soft sigmoid gate instead of the hard clip (arXiv 2511.20347)
    "vespo": "token-mean",  # gamma-weighted sequence IS ratio times log-prob (arXiv 2602.10693)
}


def _num_sequences(lengths: torch.Tensor) -> torch.Tensor:
    return (lengths > 0).sum().to(lengths.dtype)


def _per_present_sequence(lengths: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return torch.where(lengths > 0, weight, torch.zeros_like(lengths))


@AGGREGATIONS.register("token-mean")
def token_mean(lengths: torch.Tensor, max_length: int) -> torch.Tensor:
    """Every loss token weighs `1 / sum(m)`."""
    total = lengths.sum()
    return _per_present_sequence(lengths, 1.0 / total.clamp(min=1))


@AGGREGATIONS.register("seq-mean-token-mean")
def seq_mean_token_mean(lengths: torch.Tensor, max_length: int) -> torch.Tensor:
    """Sequence `i` weighs `1 / (N * |o_i|)`."""
    return _per_present_sequence(lengths, 1.0 / (_num_sequences(lengths).clamp(min=1) * lengths.clamp(min=1)))


@AGGREGATIONS.register("seq-mean-token-sum")
def seq_mean_token_sum(lengths: torch.Tensor, max_length: int) -> torch.Tensor:
    """Sequence `i` weighs `1 / N`."""
    return _per_present_sequence(lengths, 1.0 / _num_sequences(lengths).clamp(min=1))


@AGGREGATIONS.register("seq-mean-token-sum-norm")
def seq_mean_token_sum_norm(lengths: torch.Tensor, max_length: int) -> torch.Tensor:
    """Every loss token weighs `1 / (N * C)` (Dr. GRPO, https://huggingface.co/papers/2503.20783)."""
    return _per_present_sequence(lengths, 1.0 / (_num_sequences(lengths).clamp(min=1) * max_length))


def sequence_weights(lengths: torch.Tensor, mode: str, *, max_length: int) -> torch.Tensor:
    """Per-sequence weights `w` (N,) such that `loss = sum_i w_i * sum_t m_it * l_it` for `mode`."""
    return AGGREGATIONS.get(mode)(lengths, max_length)


def aggregate_loss(
    per_token_loss: torch.Tensor, mask: torch.Tensor, mode: str, *, max_length: int | None = None
) -> torch.Tensor:
    r"""
    Aggregates a batch of per-token losses into one scalar.

    Args:
        per_token_loss (`torch.Tensor`):
            Loss of each completion token, shape `(B, T)`.
        mask (`torch.Tensor`):
            Loss mask `(B, T)`: 1 for tokens that count, 0 for padding and excluded tokens.
        mode (`str`):
            Registered aggregation: `"token-mean"`, `"seq-mean-token-mean"`, `"seq-mean-token-sum"` or
            `"seq-mean-token-sum-norm"`.
        max_length (`int`, *optional*):
            `C` of `seq-mean-token-sum-norm` (the maximum completion length); defaults to the mask's width `T`.

    Returns:
        `torch.Tensor`: The scalar loss; 0 when no token counts.
    """
    if per_token_loss.shape != mask.shape or mask.ndim != 2:
        raise ValueError(
            f"per_token_loss and mask must both have shape (B, T), got {tuple(per_token_loss.shape)} and "
            f"{tuple(mask.shape)}."
        )
    mask = mask.to(per_token_loss.dtype)
    lengths = mask.sum(-1)  # (B,)
    weights = sequence_weights(lengths, mode, max_length=mask.shape[1] if max_length is None else max_length)
    masked = torch.where(mask.bool(), per_token_loss, torch.zeros_like(per_token_loss))  # NaN-safe on padding
    return (masked.sum(-1) * weights).sum()
