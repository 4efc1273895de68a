"""Takeaways 7-8: overlong filtering.

Version 2 (issue 29). T7: in version 1 only 5.7% of the completions cut at the short length would have been right
with more room (40% needed), so the filter had nothing to save. The scratch policy writes a clean scratchpad (right
unless it is cut) or a noisy direct answer; at 28 tokens the scratchpads of k >= 5 are cut. T8: in version 1 the loop
share was compared with a fixed 0.5 although the initial policy already stood at 0.86, and neither arm moved. Here
the budget (124 tokens) is one every terminating format of the verbose policy ends within, the audit asks that it
cut at least 10% of completions, the loop share of the filter-on policy's cut completions is compared with the
initial policy's, and the no-gain margin is set against training: the off arm must move accuracy by at least twice
the margin.

Version 3 (issue 38), 2026-11-27: not yet redesigned. The engine's gates are now signed (`design.gain_gates`: every
arm must gain +0.03 held-out accuracy and raise its training reward) and its test is the exact sign-flip test, so
these definitions changed and their version 2 pilots register nothing; version 2's runs, in which every arm lost
held-out accuracy, are superseded (`lab/results/README.md`). Until a redesign is piloted, T7 and T8 are untestable (no
pilot).

Version 3.1, fixed 2026-11-28 23:30 UTC (issue 38), before any pilot of it. Both experiments take the update rule that made T6's
arms gain on SUM-k (`designs/aggregation.py`): the demo's learning rate, 1e-4, for 1,152 steps (more generation
batches and prompts, not a higher learning rate), with the engine's sign test, signed gain gates and fixed-problem
training-reward gate. 24 seeds each, as T6 (a sign test on 24 seeds detects 1.12 per-seed standard deviations at the
strictest Holm level of the 16 designed tests), piloted on 2 seeds.

- **T7** keeps its policy and its two audit gates. The premise gate (at least half of what 28 tokens cut would be
  right with more room) read 0.1386 on version 2's audit of the same policy (`pilots/superseded/v2/T7.json`); the
  audit is of the initial policy, not of training, so the pilot is expected to stop there, and T7 would then be
  retired with that reason: this policy's cut completions are not the reasoning the paper's filter protects. A power
  gate as T6's (on the gain at 28 tokens) is added for the case it passes.
- **T8**: lr 1e-4 (1e-3 before; `lab/results/t8_grid.json`, one exploratory seed at 576 steps, seen before this
  design: filter off +0.0435 held-out at 124 tokens, filter on -0.1025, its loops up from 12.5% to 49% of held-out
  completions). 1,152 steps, so that the off arm can gain the twice-the-margin the no-gain test needs (0.06; 0.0435 at
  576 steps). Gain gates for both arms (held-out accuracy at 124 tokens, +0.03, and the training reward's rise), and
  the off arm's twice-the-margin gate on top.
- **T8 loops** (issue 38: "the loop share against the initial policy's and the off arm's, not against a share the
  policy was built to have"): per seed, the share of the filter-on policy's cut completions that never end minus the
  LARGER of the initial policy's share and the same seed's filter-off arm's. Positive (the paper's direction: what
  the filter masks is repetition that never ends, more so than without it) only where the filter-on policy's cut
  completions loop more than both. The family stays at 16 designed tests (one loops test, as before); each
  comparison alone is reported beside it (descriptive).
- Said before the pilot: the exploratory seed's filter-on arm fell, so T8 is likely a negative pilot (gain): the
  filter removes the only signal against completions that never end, and the verbose policy was built with a loop
  format. If so, T8 is reported untestable with the pilot's figures.
"""

from __future__ import annotations

import math

from ..design import (
    LONG,
    LOOSE,
    TIGHT,
    Experiment,
    Gate,
    Primary,
    arm,
    audit_value,
    difference,
    gain_gates,
    gained,
    held_out,
    one_arm,
    power_ratio,
    register,
)
from ..stats import mean

# version 3.1: T6's update rule on SUM-k (lr 1e-4, 1,152 steps), 24 seeds, piloted on 2
LEARNING_RATE, STEPS, SEEDS = 1e-4, 1152, 24

T7_ARMS = {"off": arm("sumk", "scratch", steps=STEPS, max_completion_length=TIGHT, learning_rate=LEARNING_RATE),
           "on": arm("sumk", "scratch", steps=STEPS, max_completion_length=TIGHT, overlong_filter=True,
                     learning_rate=LEARNING_RATE)}
T7_PRIMARY = Primary("T7", f"held-out accuracy for k >= 5 at {LOOSE} tokens, filter on - off, trained at {TIGHT} "
                           "tokens", difference("on", "off", held_out("acc_k5")))


def _t7_gain(evidence: dict) -> float:
    """What T7's training gains, for its power gate: the mean over its arms of the held-out gain at TIGHT tokens."""
    return mean([gained(label, "scratch", "acc@tight")(evidence) for label in T7_ARMS])


register("7", Experiment(
    id="T7",
    title="overlong filtering helps at short maximum lengths",
    claim="Masking truncated completions helps when the maximum length is short (8k in the paper).",
    arms=T7_ARMS,
    primaries=(T7_PRIMARY,),
    # the paper's premise: what the short length cuts is reasoning that would have been right with more room
    gates=(Gate(f"scratch policy: share of completions cut at {TIGHT} tokens that would be correct with more room",
                audit_value("sumk/scratch/would_be_correct_share@tight"), 0.5),
           Gate(f"scratch policy: share of completions cut at {TIGHT} tokens",
                audit_value("sumk/scratch/trunc_share@tight"), 0.10))
    + gain_gates(T7_ARMS, "acc@tight", what=f"held-out accuracy at {TIGHT} tokens")
    + (Gate(f"T7: smallest effect {SEEDS} seeds detect (80% power, Holm over every designed test) / the arms' mean "
            f"gain at {TIGHT} tokens", power_ratio(T7_PRIMARY, _t7_gain), 0.5, at_most=True, stage="pilot",
            kind="power"),),
    details={
        f"accuracy at {TIGHT} tokens, on - off": difference("on", "off", held_out("acc@tight")),
        f"truncated share at {TIGHT} tokens, off": one_arm("off", held_out("trunc_share@tight")),
        f"truncated share at {TIGHT} tokens, on": one_arm("on", held_out("trunc_share@tight")),
    },
    curve="overlong/frac_truncated",
    seeds=SEEDS,
    notes=f"Two arms on the scratch policy trained at {TIGHT} tokens for {STEPS} steps at lr {LEARNING_RATE}: filter "
          "off and on; every arm must gain.",
), __file__)

NO_GAIN = 0.03  # "no gain": |accuracy on - off| within 3 points; the off arm must gain at least twice that
T8_ARMS = {"off": arm("sumk", "verbose", steps=STEPS, max_completion_length=LONG, learning_rate=LEARNING_RATE),
           "on": arm("sumk", "verbose", steps=STEPS, max_completion_length=LONG, overlong_filter=True,
                     learning_rate=LEARNING_RATE)}
UNENDING = "unending_share@long"


def _unending(label: str):
    return lambda runs: runs[label]["eval"][UNENDING]


def _loops_vs_both(runs: dict) -> float:
    """The unending share of the filter-on policy's completions cut at LONG tokens, minus the larger of the initial
    policy's share and the same seed's filter-off arm's: positive only where it exceeds both. A share with nothing cut
    (NaN: the off arm may stop being cut at all) has nothing to compare and is left out of the larger."""
    shares = [runs["on"]["initial"][UNENDING], runs["off"]["eval"][UNENDING]]
    return runs["on"]["eval"][UNENDING] - max([s for s in shares if not math.isnan(s)], default=float("nan"))


register("8", Experiment(
    id="T8",
    title="at long maximum lengths, overlong filtering drops mostly degenerate repetition",
    claim="At a long maximum length (20k), the filter brings no gain; what it masks is mostly repetition that never "
          "ends.",
    arms=T8_ARMS,
    primaries=(
        Primary("T8 no gain", f"held-out accuracy at {LONG} tokens, filter on - off",
                difference("on", "off", held_out("acc@long")), margin=NO_GAIN),
        Primary("T8 loops", f"share of the filter-on policy's completions cut at {LONG} tokens that never end, minus "
                            "the larger of the initial policy's share and the filter-off arm's", _loops_vs_both),
    ),
    gates=(Gate(f"verbose policy: share of completions cut at {LONG} tokens",
                audit_value("sumk/verbose/trunc_share@long"), 0.10),
           Gate(f"filter on: fewest held-out completions cut at {LONG} tokens in a seed",
                lambda e: min(runs["on"]["eval"]["truncated_n@long"] for runs in e["runs"].values()), 20,
                stage="runs", kind="truncations to measure"))
    + gain_gates(T8_ARMS, "acc@long", what=f"held-out accuracy at {LONG} tokens")
    + (Gate(f"off: held-out accuracy at {LONG} tokens, mean over seeds, minus the initial policy's (at least twice "
            "the no-gain margin)", gained("off", "verbose", "acc@long"), 2 * NO_GAIN, stage="runs", kind="gain"),),
    details={
        f"truncated share at {LONG} tokens, on": one_arm("on", held_out("trunc_share@long")),
        f"truncated share at {LONG} tokens, off": one_arm("off", held_out("trunc_share@long")),
        f"unending share of cut at {LONG} tokens, off": one_arm("off", held_out(UNENDING)),
        f"unending share of cut at {LONG} tokens, on": one_arm("on", held_out(UNENDING)),
        f"unending share of cut at {LONG} tokens, on - initial":
            lambda runs: runs["on"]["eval"][UNENDING] - runs["on"]["initial"][UNENDING],
        f"unending share of cut at {LONG} tokens, on - off": lambda runs: _unending("on")(runs) - _unending("off")(runs),
    },
    curve="overlong/frac_truncated",
    seeds=SEEDS,
    notes=f"Two arms on the verbose policy trained at {LONG} tokens for {STEPS} steps at lr {LEARNING_RATE}: filter "
          "off and on; every arm must gain, the off arm twice the no-gain margin.",
), __file__)
