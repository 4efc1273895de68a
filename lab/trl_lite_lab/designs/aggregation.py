"""Takeaway 6: loss aggregation.

Version 2 (issue 29): in version 1 the base-like policy's wrong completions were rarely long (5.8%, 15% needed), so the
aggregations could not differ where the paper says they do. The verbose policy is base-like with long wrong
completions common (a long format that ends at 80-120 tokens, loops, noisy steps); the audit gate asks for 25%.
Training at lr 1e-3 for 192 steps so that both arms move (lr 3e-4 and 128 steps until a pilot, below).

Changed after a pilot, 2026-11-25 (lab/results/README.md): the verbose policy sampled 24.2% long wrong completions, under
the gate's 25% and a tenth (`pilots/superseded/T6-verbose.json`); T8 keeps it, so T6 trains the `long` policy instead,
rebuilt as the verbose policy fine-tuned wordier and wronger (`scripts/build_lab_policies.py`).
"""

from __future__ import annotations

from ..design import (
    Experiment,
    Gate,
    Primary,
    arm,
    audit_value,
    difference,
    held_out,
    movement_gates,
    one_arm,
    register,
)

AGGREGATIONS = {"token": "token-mean", "seq": "seq-mean-token-mean"}
POLICY = "long"
# 2026-11-25 20:29 UTC, after the pilot of the long policy (`pilots/superseded/T6-long-lr3e-4.json`), where the arms
# moved 0.017 and 0.005 (0.02 and a quarter needed): lr 3e-4 -> 1e-3 and 192 steps, T8's updates
LR, STEPS = 1e-3, 192
ARMS = {f"base {agg}": arm("sumk", POLICY, steps=STEPS, loss_aggregation=loss, learning_rate=LR)
        for agg, loss in AGGREGATIONS.items()}

register("6", Experiment(
    id="T6",
    title="token-level loss for base models, sequence-level for aligned models",
    claim="Token-level loss aggregation helps base models; sequence-level suits aligned models.",
    arms=ARMS,
    primaries=(Primary("T6", f"held-out accuracy of the base-like ({POLICY}) policy, token-mean - seq-mean-token-mean",
                       difference("base token", "base seq")),),
    gates=(Gate(f"{POLICY} policy: share of its completions that are wrong and longer than 40 tokens",
                audit_value(f"sumk/{POLICY}/long_wrong_share"), 0.25),)
    + movement_gates(ARMS),
    details={
        "length gap (incorrect - correct), token-mean": one_arm("base token", held_out("length_gap")),
        "length gap (incorrect - correct), seq-mean": one_arm("base seq", held_out("length_gap")),
        "long wrong share, token-mean - seq-mean": difference("base token", "base seq", held_out("long_wrong_share")),
    },
    curve="completions/mean_length",
    excluded={"aligned token, aligned seq": "the aligned half (sequence-level suits aligned models) is not tested: "
                                           "no aligned-like policy here has long completions for the aggregations "
                                           "to weigh differently"},
    seeds=6,
    notes=f"Two arms on the {POLICY} policy (the verbose policy fine-tuned wordier), {STEPS} steps at lr {LR}: "
          "token-mean and seq-mean-token-mean aggregation.",
), __file__)
