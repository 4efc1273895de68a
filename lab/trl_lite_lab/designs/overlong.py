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
"""

from __future__ import annotations

from ..design import (
    LONG,
    LOOSE,
    GAIN,
    TIGHT,
    Experiment,
    Gate,
    Primary,
    arm,
    audit_value,
    difference,
    held_out,
    gained,
    gain_gates,
    one_arm,
    register,
)

T7_ARMS = {"off": arm("sumk", "scratch", max_completion_length=TIGHT, learning_rate=3e-4),
           "on": arm("sumk", "scratch", max_completion_length=TIGHT, overlong_filter=True, learning_rate=3e-4)}
register("7", Experiment(
    id="T7",
    title="overlong filtering helps at short maximum lengths",
    claim="Masking truncated completions helps when the maximum length is short (8k in the paper).",
    arms=T7_ARMS,
    primaries=(Primary("T7", f"held-out accuracy for k >= 5 at {LOOSE} tokens, filter on - off, trained at {TIGHT} "
                             "tokens", difference("on", "off", held_out("acc_k5"))),),
    # the paper's premise: what the short length cuts is reasoning that would have been right with more room
    gates=(Gate(f"scratch policy: share of completions cut at {TIGHT} tokens that would be correct with more room",
                audit_value("sumk/scratch/would_be_correct_share@tight"), 0.5),
           Gate(f"scratch policy: share of completions cut at {TIGHT} tokens",
                audit_value("sumk/scratch/trunc_share@tight"), 0.10))
    + gain_gates(T7_ARMS, "acc@tight", what=f"held-out accuracy at {TIGHT} tokens"),
    details={
        f"accuracy at {TIGHT} tokens, on - off": difference("on", "off", held_out("acc@tight")),
        f"truncated share at {TIGHT} tokens, off": one_arm("off", held_out("trunc_share@tight")),
        f"truncated share at {TIGHT} tokens, on": one_arm("on", held_out("trunc_share@tight")),
    },
    curve="overlong/frac_truncated",
    seeds=6,
    notes=f"Two arms on the scratch policy trained at {TIGHT} tokens: filter off and on.",
), __file__)

NO_GAIN = 0.03  # "no gain": |accuracy on - off| within 3 points; the off arm must move at least twice that
# Changed after pilots (lab/results/README.md): 2026-11-25 19:14 UTC, after the pilot of 12:08
# (`pilots/superseded/T8.json`), lr 3e-4 -> 1e-3, because neither arm moved held-out accuracy at LONG tokens there
# (off 0.0081, 0.06 needed; on 0.0074, 0.02 needed); 19:29 UTC, after that pilot (`pilots/superseded/T8-lr1e-3.json`),
# 128 -> 192 steps, because the off arm moved 0.071 there (0.06 and a quarter of it needed)
T8_LR, T8_STEPS = 1e-3, 192
T8_ARMS = {"off": arm("sumk", "verbose", steps=T8_STEPS, max_completion_length=LONG, learning_rate=T8_LR),
           "on": arm("sumk", "verbose", steps=T8_STEPS, max_completion_length=LONG, overlong_filter=True,
                     learning_rate=T8_LR)}


def _loops_vs_initial(runs: dict) -> float:
    """Unending share of the filter-on policy's completions cut at LONG tokens - the initial policy's."""
    return runs["on"]["eval"]["unending_share@long"] - runs["on"]["initial"]["unending_share@long"]


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
                            "the initial policy's share", _loops_vs_initial),
    ),
    gates=(Gate(f"verbose policy: share of completions cut at {LONG} tokens",
                audit_value("sumk/verbose/trunc_share@long"), 0.10),
           Gate(f"filter on: fewest held-out completions cut at {LONG} tokens in a seed",
                lambda e: min(runs["on"]["eval"]["truncated_n@long"] for runs in e["runs"].values()), 20,
                stage="runs", kind="truncations to measure"),
           Gate(f"off: held-out accuracy at {LONG} tokens moved from the initial policy's (at least twice the margin)",
                gained("off", "verbose", "acc@long"), 2 * NO_GAIN, stage="runs", kind="movement"),
           Gate(f"on: held-out accuracy at {LONG} tokens moved from the initial policy's",
                gained("on", "verbose", "acc@long"), GAIN, stage="runs", kind="movement")),
    details={
        f"truncated share at {LONG} tokens, on": one_arm("on", held_out("trunc_share@long")),
        f"truncated share at {LONG} tokens, off": one_arm("off", held_out("trunc_share@long")),
        f"unending share of cut at {LONG} tokens, off": one_arm("off", held_out("unending_share@long")),
        f"unending share of cut at {LONG} tokens, on": one_arm("on", held_out("unending_share@long")),
    },
    curve="overlong/frac_truncated",
    seeds=6,
    notes=f"Two arms on the verbose policy trained at {LONG} tokens for {T8_STEPS} steps at lr {T8_LR}: filter off and "
          "on.",
), __file__)
