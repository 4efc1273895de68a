"""Takeaway 6: loss aggregation.

Version 2 (issue 29): the verbose policy is base-like with long wrong completions common (a long format that ends at
80-120 tokens, loops, noisy steps). After a pilot (2026-11-25, `pilots/superseded/T6-verbose.json`: 24.2% long wrong
completions, under the gate's 25%) T6 trained the `long` policy, the verbose policy fine-tuned wordier and wronger
(`scripts/build_lab_policies.py`), at lr 1e-3 for 192 steps: both arms lost held-out accuracy.

Version 3 (issue 38), fixed 2026-11-27 before any run of it: the same policy and audit gate (the aggregations weigh
long and short completions differently only where lengths differ: ADD's completions are all about 12 tokens, so T6
stays on SUM-k), at the demo's learning rate, 1e-4, for 192 steps (SUM-k's 2 passes per generation batch), with
Lite PPO's advantages (group mean, batch std); every arm must gain (`design.gain_gates`); 10 paired seeds, an exact
sign-flip test, and a power gate as in T1-T3.

Version 3.1, changed 2026-11-27 after version 3.0's negative pilot (`pilots/superseded/v3/T6.json`: gains +0.030
token-mean and +0.023 seq-mean, under +0.03 with the pilot's margin; the power gate 0.886 > 0.5 at 10 seeds), before
any registered run: 576 steps (three times as many: more steps and prompts, the same learning rate), 16 seeds (what a
sign test detects, 0.024 at the pilot's spread of 0.015, so the power gate passes with its margin only if the arms gain
about 0.065 on average: a guess that three times the steps gives that, to be checked by the pilot), the engine's sign
test and fixed-problem training-reward gate.

Changed 2026-11-27 17:49 UTC, before any committed pilot of this version: 32 seeds (16 before). Version 3.1's 576-step
pilot was stopped after one seed (not committed: both arms gained about 0.04 held-out). Under today's sign test, at
version 3.0's pilot's spread, 16 seeds pass the power gate with its margin only if the arms gain about 0.064 on
average, 32 seeds at about 0.036 (`lab/results/feasibility.md`); the gain gate itself asks 0.0375 with the margin.
Whether 576 steps give that, and whether the spread holds there, is the pilot's to say.

Changed 2026-11-28 09:20 UTC, after that pilot (runs 08:42-09:10 UTC, `pilots/superseded/v3.1/T6-576-steps.json`) was
negative on one gate: the seq-mean arm gained 0.0345 held-out (0.040, 0.019, 0.045), under the 0.0375 the gain gate
asks with the pilot's margin; the token-mean arm gained 0.043 and the power gate passed (0.223). Both arms raised the
training reward (0.072 and 0.077) and moved their weights about as far (3.15-3.24 token-mean, 3.07-3.24 seq-mean).
From 192 to 576 steps the gains grew by about 0.012 (version 3.0's pilot: 0.030 token-mean, 0.023 seq-mean), so:

- **1,152 steps** (twice 576; the same learning rate, more generation batches and prompts). Whether the seq-mean arm
  then gains 0.0375 is the next pilot's to say; if it does not, T6 is reported untestable with both pilots' figures.
- **24 seeds** (32 before), because each run now costs twice as much (about 13 minutes on one core): 24 x 2 runs,
  about 11 run-hours. At 24 seeds the sign test at the strictest Holm level of the 16 designed tests detects 1.12
  per-seed standard deviations (`stats.detectable_effect`); at version 3.0's pilot's spread (0.015) the power gate
  then passes with its margin if the arms gain about 0.044 on average (`lab/results/feasibility.md`), at the 576-step
  pilot's (0.0094) about 0.028. The pilot's effects (+0.007, +0.019, +0.001) were seen before this change; the seed
  count follows from the spread and the cost, not from them.
"""

from __future__ import annotations

from ..design import (
    Experiment,
    Gate,
    Primary,
    arm,
    audit_value,
    difference,
    gain_gates,
    held_out,
    mean_gain,
    one_arm,
    power_ratio,
    register,
    training,
)

AGGREGATIONS = {"token": "token-mean", "seq": "seq-mean-token-mean"}
POLICY = "long"
STEPS, SEEDS = 1152, 24
ARMS = {f"base {agg}": arm("sumk", POLICY, steps=STEPS, loss_aggregation=loss, advantage_mean="group",
                           advantage_std="batch") for agg, loss in AGGREGATIONS.items()}
PRIMARY = Primary("T6", f"held-out accuracy of the base-like ({POLICY}) policy, token-mean - seq-mean-token-mean",
                  difference("base token", "base seq"))

register("6", Experiment(
    id="T6",
    title="token-level loss for base models, sequence-level for aligned models",
    claim="Token-level loss aggregation helps base models; sequence-level suits aligned models.",
    arms=ARMS,
    primaries=(PRIMARY,),
    gates=(Gate(f"{POLICY} policy: share of its completions that are wrong and longer than 40 tokens",
                audit_value(f"sumk/{POLICY}/long_wrong_share"), 0.25),)
    + gain_gates(ARMS)
    + (Gate(f"T6: smallest effect {SEEDS} seeds detect (80% power, Holm over every designed test) / the arms' mean "
            "gain", power_ratio(PRIMARY, mean_gain(tuple(ARMS), {k: POLICY for k in ARMS})), 0.5, at_most=True,
            stage="pilot", kind="power"),),
    details={
        "length gap (incorrect - correct), token-mean": one_arm("base token", held_out("length_gap")),
        "length gap (incorrect - correct), seq-mean": one_arm("base seq", held_out("length_gap")),
        "long wrong share, token-mean - seq-mean": difference("base token", "base seq", held_out("long_wrong_share")),
        **{f"weight distance {label}": one_arm(label, held_out("update_norm")) for label in ARMS},
        **{f"mean gradient norm {label}": one_arm(label, training("grad_norm_mean")) for label in ARMS},
    },
    curve="completions/mean_length",
    excluded={"aligned token, aligned seq": "the aligned half (sequence-level suits aligned models) is not tested: "
                                           "no aligned-like policy here has long completions for the aggregations "
                                           "to weigh differently"},
    seeds=SEEDS, pilot_seeds=3,
    notes=f"Two arms on the {POLICY} policy (the verbose policy fine-tuned wordier), {STEPS} steps at lr 1e-4, Lite "
          "PPO's advantages: token-mean and seq-mean-token-mean aggregation; every arm must gain.",
), __file__)
