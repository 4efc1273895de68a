"""Takeaways 1-3: advantage normalization, on ADD (version 3, issue 38).

Version 2 trained at lr 3e-4 on an easy mix (sums that do not carry into the hundreds, which the carry-habit policy
gets right) and a hard mix (sums that do): every arm lost held-out accuracy, and the mixes were split on the very
feature held-out accuracy depends on (on the hard mix the training reward rose while held-out accuracy fell).

Version 3, fixed 2026-11-27 before any run of it:

- **Every mix holds both kinds of problem**, in different proportions: `mostly-easy` (three easy to one hard: the
  rewards concentrate at 1, most groups of 8 have zero std) and `mostly-hard` (one easy to three hard). The
  concentrated-reward condition comes from the reward's distribution; held-out accuracy counts both kinds in both.
- **The demo's update budget**: lr 1e-4 (ADD's lab settings), the base-like carry policy, 120 optimizer steps on the
  mostly-hard mix and 360 on the mostly-easy one (120 until the first pilot: below). Every
  arm must gain (`design.gain_gates`: +0.03 held-out accuracy over the initial policy, and a rising training reward).
  Since 14:17 UTC the mostly-easy arms train for 720 steps (below).
- **16 paired seeds** (16 until the first pilot, then 12, then 16 again: below) for each test (an exact sign-flip test: `stats.paired_test`), 3 pilot seeds; a power gate asks
  the registered seeds to detect an effect half as large as the arms' mean gain.
- The four normalizations x two mixes are eight arms shared by T1-T3: T1 reads four, T2 two, T3 all eight.
- **Version 3.1 (2026-11-27, after the negative pilots below, before any registered run)**: the engine's training-reward
  gate reads the reward on 400 fixed problems of the arm's own mix before and after training
  (`training.training_accuracy`), not the generation batches' rewards: on the mostly-easy mix every arm gained 0.037-0.090
  held-out while the batches' reward moved -0.009 to +0.003 (`pilots/superseded/v3/`), a rise of about 0.02 (a quarter
  of the problems are hard) under noise from which problems each batch drew. The primary tests became sign tests
  (`stats.paired_test`); the seeds stayed 12 until 14:17 UTC (below).
- **Update size**: the normalizations scale the advantages differently, which is what the claims are about, so update
  sizes are not matched; each arm's weight distance from the initial policy and its mean gradient norm are reported
  next to the verdict.
"""

from __future__ import annotations

from typing import Callable

from ..design import (
    Experiment,
    Gate,
    Primary,
    arm,
    audit_value,
    difference,
    gain_gates,
    held_out,
    mean,
    mean_gain,
    one_arm,
    power_ratio,
    register,
    training,
)

MIXES = ("mostly-easy", "mostly-hard")
NORMS = {"batch/batch": ("batch", "batch"), "group/group": ("group", "group"), "group/batch": ("group", "batch"),
         "group/none": ("group", "none")}
SEEDS = 16
# Changed 2026-11-27 10:45 UTC, after the first pilot's audit and before any run: the mostly-easy pass-rate gate 0.7 ->
# 0.65. The audit measured 0.751 (the construction predicts 3/4 x 0.959 + 1/4 x 0.133 = 0.753), short of 0.7 plus its
# 10% audit margin (0.77): the threshold had been set without the margin (`pilots/superseded/T1-T3-audit.json`).
MIX_GATES = (
    Gate("mostly-easy mix: pass rate of fresh samples (groups of 8)", audit_value("add/mostly-easy/pass"), 0.65),
    Gate("mostly-easy mix: share of zero-std groups of 8", audit_value("add/mostly-easy/zero_std@8"), 0.5),
    Gate("mostly-hard mix: pass rate of fresh samples", audit_value("add/mostly-hard/pass"), 0.45, at_most=True),
)


# Changed 2026-11-27 10:52 UTC, after the first pilot of T1 (`pilots/superseded/v3/T1-120-steps.json`), before any
# registered run: on the mostly-easy mix at 120 steps no arm gained (batch/batch +0.033, group/group -0.003 held-out;
# the training reward fell in both), where both mostly-hard arms gained 0.09-0.11. The mostly-easy arms now train for
# 360 steps, so that they see as many hard problems (a quarter of 360 x 2 prompts) as the mostly-hard arms in 120 (three
# quarters of 120 x 2): more steps and prompts, the same learning rate. And 16 -> 12 seeds, for the session's compute
# (the mostly-easy runs cost three times as much; 12 is above the 10 an exact test needs in a family of 16).
# Changed 2026-11-27 14:17 UTC, after version 3.1's first pilots of T1 and T2 (`pilots/superseded/v3.1/`), before any
# registered run: T1's pilot passed (every arm gained 0.075-0.109 held-out, its training reward rose 0.055-0.392); T2's
# failed its power gate (0.488 at 12 seeds; 0.375 with the margin); T3's could not pass, because version 3.0's pilot,
# on the same seeds and the same training, had measured group/batch's held-out gain on the mostly-easy mix at 0.037
# (0.0375 needed with the margin; training is deterministic, and version 3.1's pilots reproduced every figure of 3.0's
# that they reached). So the mostly-easy arms train for 720 steps (more steps and prompts, the same learning rate), and
# every test gets 16 seeds (12 -> 16: the sign test then needs 15 of 16 seeds on one side, not 12 of 12).
STEPS = {"mostly-easy": 720, "mostly-hard": 120}


def _add(mix: str, norm: str):
    mean_level, std_level = NORMS[norm]
    return arm("add", "carry", mix, steps=STEPS[mix], advantage_mean=mean_level, advantage_std=std_level)


ARMS = {f"{norm} {mix}": _add(mix, norm) for norm in NORMS for mix in MIXES}


def _over_mixes(norm: str, runs: dict) -> list[float]:
    return [held_out()(runs[f"{norm} {mix}"]) for mix in MIXES]


def _power(primary: Primary, labels: tuple[str, ...]) -> Gate:
    return Gate(f"{primary.name}: smallest effect {SEEDS} seeds detect (80% power, Holm over every designed test) / "
                "the arms' mean gain", power_ratio(primary, mean_gain(labels, {k: "carry" for k in labels})), 0.5,
                at_most=True, stage="pilot", kind="power")


def _sizes(labels) -> dict[str, Callable[[dict], float]]:
    """Update size per arm (descriptive): weight distance from the initial policy, mean gradient norm."""
    return {**{f"weight distance {label}": one_arm(label, held_out("update_norm")) for label in labels},
            **{f"mean gradient norm {label}": one_arm(label, training("grad_norm_mean")) for label in labels}}


def _pick(*labels: str) -> dict:
    return {label: ARMS[label] for label in labels}


T1_ARMS = _pick(*(f"{norm} {mix}" for norm in ("batch/batch", "group/group") for mix in MIXES))
T1_PRIMARY = Primary(
    "T1", "held-out accuracy, group/group - batch/batch, mean over the mostly-easy and mostly-hard mixes",
    lambda runs: mean(_over_mixes("group/group", runs)) - mean(_over_mixes("batch/batch", runs)))
register("1", Experiment(
    id="T1",
    title="group-level normalization is robust, batch-level fragile with {0,1} rewards",
    claim="Group-level mean and std normalization is robust across data; batch-level is fragile under {0,1} rewards.",
    arms=T1_ARMS,
    primaries=(T1_PRIMARY,),
    gates=MIX_GATES + gain_gates(T1_ARMS) + (_power(T1_PRIMARY, tuple(T1_ARMS)),),
    details={
        "top-5% |A| share, batch/batch (mostly-hard)": one_arm("batch/batch mostly-hard", training("top5_adv_share")),
        "top-5% |A| share, group/group (mostly-hard)": one_arm("group/group mostly-hard", training("top5_adv_share")),
        "accuracy group/group - batch/batch, mostly-hard": difference("group/group mostly-hard",
                                                                      "batch/batch mostly-hard"),
        "accuracy group/group - batch/batch, mostly-easy": difference("group/group mostly-easy",
                                                                      "batch/batch mostly-easy"),
        **_sizes(T1_ARMS),
    },
    curve="reward",
    seeds=SEEDS, pilot_seeds=3,
    notes="Four arms: batch/batch and group/group normalization, each trained on the mostly-easy and the mostly-hard "
          "mix (both hold both kinds of problem), lr 1e-4, 720 / 120 steps; every arm must gain.",
), __file__)

T2_ARMS = _pick("group/none mostly-easy", "group/group mostly-easy")
T2_PRIMARY = Primary("T2", "held-out accuracy, group/none - group/group, trained on the mostly-easy mix",
                     difference("group/none mostly-easy", "group/group mostly-easy"))
register("2", Experiment(
    id="T2",
    title="on concentrated (easy) rewards, dropping the std avoids blowing up the gradients",
    claim="When rewards are concentrated (easy data), group mean without the std trains better than with it.",
    arms=T2_ARMS,
    primaries=(T2_PRIMARY,),
    gates=MIX_GATES[:2] + gain_gates(T2_ARMS) + (_power(T2_PRIMARY, tuple(T2_ARMS)),),
    details={
        "max grad norm, group/group": one_arm("group/group mostly-easy", training("grad_norm_max")),
        "max grad norm, group/none": one_arm("group/none mostly-easy", training("grad_norm_max")),
        "mean |advantage|, group/group": one_arm("group/group mostly-easy", training("abs_adv_mean")),
        "mean |advantage|, group/none": one_arm("group/none mostly-easy", training("abs_adv_mean")),
        **_sizes(T2_ARMS),
    },
    curve="grad_norm",
    excluded={"group/batch, auto": "T2's claim is about dropping the std against keeping the group's; the others "
                                   "are T3's"},
    seeds=SEEDS, pilot_seeds=3,
    notes="Two arms on the mostly-easy mix (most groups of 8 have zero std, the others often a small one): group mean "
          "without the std against with the group's std, lr 1e-4, 720 steps, the lab's gradient clipping. Under AdamW "
          "a global scale of the advantages mostly cancels, so the gradient norms are shown next to the mean "
          "|advantage|, not read as a blow-up.",
), __file__)


def _worst_mix(norm: str) -> Callable[[dict], float]:
    return lambda runs: min(_over_mixes(norm, runs))


T3_PRIMARIES = tuple(
    Primary(f"T3 vs {other}", f"worst-mix held-out accuracy, group/batch - {other}",
            (lambda runs, other=other: _worst_mix("group/batch")(runs) - _worst_mix(other)(runs)))
    for other in ("batch/batch", "group/group", "group/none"))
register("3", Experiment(
    id="T3",
    title="group mean + batch std is the most robust normalization",
    claim="Group-level mean with batch-level std is the most robust across data difficulty.",
    arms=ARMS,
    # "most robust" = better than each other normalization: three pairwise contrasts on the worst-mix accuracy,
    # reproduced only if all three are
    primaries=T3_PRIMARIES,
    gates=MIX_GATES + gain_gates(ARMS) + tuple(_power(p, tuple(ARMS)) for p in T3_PRIMARIES),
    details={**{f"worst-mix accuracy, {norm}": _worst_mix(norm) for norm in NORMS}, **_sizes(ARMS)},
    curve="reward",
    excluded={"auto": "advantage_std='auto' equals group/batch on every batch where under half the groups have zero "
                      "std, so it is group/batch or group/none batch by batch, not a normalization the paper tests"},
    seeds=SEEDS, pilot_seeds=3,
    notes="Four normalizations on both mixes (each holds both kinds of problem), lr 1e-4, 720 / 120 steps; the worst "
          "mix is, per seed, the one where the normalization ends lower. Lite PPO's advantage half (group/batch) is "
          "the arm under test.",
), __file__)
