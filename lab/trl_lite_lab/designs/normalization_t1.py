"""Takeaway 1 (T1): group-level normalization is robust, batch-level fragile with {0,1} rewards, on ADD.

The arms, mixes, steps and gates are `normalization`'s (its docstring has the design's history). T1 reads four arms:
batch/batch and group/group normalization, each trained on the mostly-easy and the mostly-hard mix; its primary test is
their held-out accuracy averaged over the two mixes, group/group - batch/batch. 16 paired seeds (16 until version
3.0's first pilot, then 12, then 16 again from 14:14 UTC: the sign test then needs 15 of 16 seeds on one side).
Unchanged since version 3.1's first design except for the move into this module (2026-11-27 16:59 UTC).
"""

from __future__ import annotations

from ..design import Experiment, Primary, difference, gain_gates, mean, one_arm, register, training
from .normalization import MIX_GATES, MIXES, over_mixes, pick, power_gate, sizes

SEEDS = 16
T1_ARMS = pick(*(f"{norm} {mix}" for norm in ("batch/batch", "group/group") for mix in MIXES))
T1_PRIMARY = Primary(
    "T1", "held-out accuracy, group/group - batch/batch, mean over the mostly-easy and mostly-hard mixes",
    lambda runs: mean(over_mixes("group/group", runs)) - mean(over_mixes("batch/batch", runs)))
register("1", Experiment(
    id="T1",
    title="group-level normalization is robust, batch-level fragile with {0,1} rewards",
    claim="Group-level mean and std normalization is robust across data; batch-level is fragile under {0,1} rewards.",
    arms=T1_ARMS,
    primaries=(T1_PRIMARY,),
    gates=MIX_GATES + gain_gates(T1_ARMS) + (power_gate(T1_PRIMARY, tuple(T1_ARMS), SEEDS),),
    details={
        "top-5% |A| share, batch/batch (mostly-hard)": one_arm("batch/batch mostly-hard", training("top5_adv_share")),
        "top-5% |A| share, group/group (mostly-hard)": one_arm("group/group mostly-hard", training("top5_adv_share")),
        "accuracy group/group - batch/batch, mostly-hard": difference("group/group mostly-hard",
                                                                      "batch/batch mostly-hard"),
        "accuracy group/group - batch/batch, mostly-easy": difference("group/group mostly-easy",
                                                                      "batch/batch mostly-easy"),
        **sizes(T1_ARMS),
    },
    curve="reward",
    seeds=SEEDS, pilot_seeds=3,
    notes="Four arms: batch/batch and group/group normalization, each trained on the mostly-easy and the mostly-hard "
          "mix (both hold both kinds of problem), lr 1e-4, 720 / 120 steps; every arm must gain.",
), __file__)
