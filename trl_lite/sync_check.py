"""The stale-weight alarm: does vLLM sample from the weights the trainer just pushed to it?

After each weight sync TRL's colocate and server modes generate with vLLM, which reports the log-prob of each token it
sampled. The trainer's own log-probs for the same tokens come from the forward TRL already runs for importance
sampling (`old_per_token_logps`). With the weights in sync the two differ only by numerics (float32 here; bf16 kernels
on a GPU); a sync that silently failed (a sleep-mode wake-up that put other weights back, a LoRA merge that did not
reach vLLM, a ZeRO-3 gather of stale parameters) makes vLLM sample from another policy, and the gap grows with every
step the trainer moves away from it.

The gap is the mean absolute difference per completion token, over the whole generation batch (all processes):

    gap = sum_{i,t} m_it * |logp_vllm_it - logp_trainer_it| / sum_{i,t} m_it

with `m` the completion mask (tool tokens out), and tokens vLLM could not score (NaN) out. `trl_lite.trainer` logs it
as `sampling/sync_logp_gap` on the first generation batch after each sync and acts on it with `on_sync_mismatch`.
"""

from __future__ import annotations

import logging
import math

import torch

logger = logging.getLogger(__name__)

ON_SYNC_MISMATCH = ("warn", "raise", "ignore")

# Default threshold on the gap, in nats per token, set from the CPU stand-in (tests/trainer/test_sync_alarm.py, bench/README.md
# "Stale-weight alarm"): over 20 steps of the tiny Llama the correct engine's gap stays below 2e-7 in float32 and below
# 7e-4 with its bf16 model copy (15x under the threshold); an engine left one step behind (learning rate 0.1) shows
# 0.019 on the first sync after the policy moved, and the gap grows with every step it stays behind. vLLM's own bf16
# kernels on a GPU are not measured yet (scripts/gpu_check.py records them).
SYNC_MISMATCH_THRESHOLD = 0.01
# Without importance-sampling correction TRL runs no forward the gap can reuse; the extra one covers this many
# completions per process (any stale weight shows on every token, so a few completions suffice).
EXTRA_FORWARD_COMPLETIONS = 2

CAUSES = (
    "sleep mode (weights woken or reloaded from the checkpoint after a level-2 sleep), a LoRA merge that did not reach "
    "vLLM (the adapter merged, synced and unmerged in the wrong order, or not synced), or a ZeRO-3 gather that pushed "
    "stale or partitioned parameters"
)


def logp_gap_terms(sampling_logps: torch.Tensor, trainer_logps: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The gap's numerator and denominator on this process: `[sum |a - b| over counted tokens, counted tokens]`.

    Args:
        sampling_logps (`torch.Tensor`): `(B, T)` log-probs vLLM reported for the tokens it sampled (NaN: unscored).
        trainer_logps (`torch.Tensor`): `(B, T)` the trainer's log-probs for the same tokens.
        mask (`torch.Tensor`): `(B, T)` the completion tokens to count (1) and padding (0).

    Returns:
        `torch.Tensor` of shape `(2,)`, float64, so that sums over processes stay exact.
    """
    delta = (sampling_logps.double() - trainer_logps.double()).abs()
    counted = mask.bool() & ~torch.isnan(delta)
    return torch.stack([delta[counted].sum(), counted.sum().double()])


def logp_gap(terms: torch.Tensor) -> float:
    """The gap from the terms of every process `(P, 2)` (or one process `(2,)`); NaN when no token is counted."""
    total = terms.reshape(-1, 2).sum(dim=0)
    return float(total[0] / total[1]) if total[1] > 0 else float("nan")


def mismatch_threshold(threshold: float, top_p: float) -> float:
    """The gap above which the alarm acts: `threshold` plus what `top_p` < 1 alone can add.

    vLLM reports log-probs after the nucleus truncation (renormalized over the kept tokens), the trainer before it.
    The kept tokens hold at least `top_p` of the probability, so each sampled token's log-prob is raised by at most
    `-log(top_p)`: `top_p=0.99` (the paper's recipes) adds up to 0.01005 nats per token, which alone could reach the
    default threshold. `top_k` and `min_p` have no such bound and are not allowed for.
    """
    return threshold + (-math.log(top_p) if 0 < top_p < 1 else 0.0)


def mismatch_message(gap: float, threshold: float, step: int, first: tuple[int, float] | None = None) -> str:
    """The warning (or error) for a gap above the threshold; `first`: the (step, gap) of this run's first sync."""
    baseline = ""
    if first is not None and first[0] != step:
        baseline = (f" This run's first sync (global step {first[0]}) gave {first[1]:.4g}; on a fresh run the weights "
                    "are identical there, so that value is this setup's numerical noise.")
    return (
        f"vLLM may be sampling from stale weights: at global step {step}, right after the weight sync, the log-probs "
        f"vLLM reported for the tokens it sampled differ from the trainer's by {gap:.4g} nats per token on average "
        f"(sampling/sync_logp_gap), above the alarm's threshold {threshold:.4g} (sync_mismatch_threshold, plus "
        f"-log(top_p) when top_p < 1).{baseline} The completions then come "
        f"from another policy than the one being trained. Likely causes: {CAUSES}. Set on_sync_mismatch='raise' to "
        "stop at this point, or raise sync_mismatch_threshold (or 'ignore') if the gap is expected: top_k or min_p, "
        "which vLLM applies to its log-probs and the trainer does not, or kernels noisier than measured."
    )


class SyncCheckMixin:
    """The alarm in [`LitePPOTrainer`]: `_check_weight_sync` runs on each generation batch TRL scores (the first one
    after a sync acts; the others return at once)."""

    _lite_gap_step: int | None = None
    _lite_first_gap: tuple[int, float] | None = None
    _lite_sync_warned: bool = False

    def _check_weight_sync(self, output: dict, mode: str) -> None:
        if not self.use_vllm or self.state.global_step == self._lite_gap_step:
            return  # no vLLM, or not the first generation batch since TRL synced (it syncs when global_step moved)
        self._lite_gap_step = self.state.global_step
        sampling = output.get("sampling_per_token_logps")
        if sampling is None:  # a rollout_func that returns no log-probs
            return
        trainer_logps = output.get("old_per_token_logps")
        if trainer_logps is None:  # importance-sampling correction off: TRL ran no forward; run one
            if self.args.on_sync_mismatch == "ignore":
                return
            rows = slice(0, EXTRA_FORWARD_COMPLETIONS)
            ids = torch.cat([output["prompt_ids"][rows], output["completion_ids"][rows]], dim=1)
            attention = torch.cat([output["prompt_mask"][rows], output["completion_mask"][rows]], dim=1)
            with torch.no_grad():
                trainer_logps = self._get_per_token_logps_and_entropies(
                    self.model, ids, attention, output["completion_ids"].size(1)
                )[0]
        rows = slice(0, trainer_logps.size(0))
        mask = output["completion_mask"][rows]
        if output.get("tool_mask") is not None:
            mask = mask * output["tool_mask"][rows]
        terms = logp_gap_terms(sampling[rows], trainer_logps, mask)
        gap = logp_gap(self.accelerator.gather(terms.unsqueeze(0)))  # (P, 2) gathered
        self._metrics[mode]["sampling/sync_logp_gap"].append(gap)
        if self._lite_first_gap is None:
            self._lite_first_gap = (self.state.global_step, gap)
        threshold = mismatch_threshold(self.args.sync_mismatch_threshold, self.args.top_p)
        if not gap > threshold or self.args.on_sync_mismatch == "ignore":
            return
        message = mismatch_message(gap, threshold, self.state.global_step, self._lite_first_gap)
        if self.args.on_sync_mismatch == "raise":
            raise RuntimeError(message)  # the gap is gathered: every process raises at the same step
        if not self._lite_sync_warned:
            self._lite_sync_warned = True
            if self.accelerator.is_main_process:
                logger.warning(message)
