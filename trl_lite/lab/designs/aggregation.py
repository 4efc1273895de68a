"""Takeaway 6: loss aggregation.

Version 2 (issue 29): in version 1 the base-like policy's wrong completions were rarely long (5.8%, 15% needed), so the
aggregations could not differ where the paper says they do. The verbose policy is base-like with long wrong
completions common (a long format that ends at 80-120 tokens, loops, noisy steps); the audit gate asks for 25%.
Training at lr 3e-4 so that both arms move.
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
ARMS = {f"base {agg}": arm("sumk", "verbose", loss_aggregation=loss, learning_rate=3e-4)
        for agg, loss in AGGREGATIONS.items()}

register("6", Experiment(
    id="T6",
    title="token-level loss for base models, sequence-level for aligned models",
    claim="Token-level loss aggregation helps base models; sequence-level suits aligned models.",
    arms=ARMS,
    primaries=(Primary("T6", "held-out accuracy of the base-like (verbose) policy, token-mean - seq-mean-token-mean",
                       difference("base token", "base seq")),),
    gates=(Gate("verbose policy: share of its completions that are wrong and longer than 40 tokens",
                audit_value("sumk/verbose/long_wrong_share"), 0.25),)
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
    notes="Two arms on the verbose policy: token-mean and seq-mean-token-mean aggregation.",
), __file__)
