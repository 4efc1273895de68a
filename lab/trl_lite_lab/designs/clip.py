"""Clip-higher (Takeaway 4). Its scaling with model size, here until version 3.1, is `clip_scaling.py`.

Version 2 (issue 29): in version 1 the ratio pi/pi_old passed 1.2 for 0.3-0.4% of positive-advantage tokens, so no
epsilon_high could matter. Here the updates are large enough to reach the band where the arms' bounds differ: 8
passes over each generation batch at lr 5e-4 (3e-4 until the pilot of 12:08 left the aligned-like 0.28 arm
unmoved; the version-1 census found about 1% of tokens in the band at 8-12
passes and lr 5e-4). The aligned-like policy has a fork near p = 0.4 (it drops the units' carry 60% of the time in
its SFT data), and the base half of the claim is registered as an equivalence test. Clip scaling compares two ADD
policies 14x apart in size (61K and 0.86M parameters) built from the same SFT data and steps, gated on matched
initial accuracy, and tests saturation as a contrast: (acc(0.32) - acc(0.28)) of the small policy minus the large's.

Version 3 (issue 38), 2026-11-27: not yet redesigned. The engine's gates are now signed (`design.gain_gates`: every
arm must gain +0.03 held-out accuracy and raise its training reward) and its test is the exact sign-flip test, so
these definitions changed and their version 2 pilots register nothing; version 2's runs, in which every arm lost
held-out accuracy, are superseded (`lab/results/README.md`). Until a redesign is piloted, T4 is untestable (no pilot).

2026-11-28: clip scaling moved to its own module, `clip_scaling.py`, with its redesign (version 3.1), so that a change
to one of the two experiments no longer changes the other's hash (T4 and T5, which imports this module, have no pilot
under their current definitions, so no result is invalidated).
"""

from __future__ import annotations

from ..design import (
    Experiment,
    Gate,
    Primary,
    arm,
    band_share,
    difference,
    held_out,
    gain_gates,
    one_arm,
    register,
    training,
)

# updates that reach the clip band. 2026-11-25 19:40 UTC, after the pilot of 12:08 (`pilots/superseded/T4.json`): lr
# 3e-4 -> 5e-4, because the aligned-like 0.28 arm moved held-out accuracy by 0.0065 there (0.02 needed)
CLIP = {"num_iterations": 8, "learning_rate": 5e-4}
SUMK_STEPS = 192  # 6 generation batches x 8 passes x 4 optimizer steps
BAND = 0.01  # share of positive-advantage tokens whose ratio must lie in the band where the arms' bounds differ
NO_GAIN = 0.03  # the base half: |accuracy 0.28 - 0.2| within 3 points counts as "little"

T4_ARMS = {"aligned 0.2": arm("sumk", "fork", steps=SUMK_STEPS, **CLIP),
           "aligned 0.28": arm("sumk", "fork", steps=SUMK_STEPS, epsilon_high=0.28, **CLIP),
           "base 0.2": arm("sumk", "base", steps=SUMK_STEPS, **CLIP),
           "base 0.28": arm("sumk", "base", steps=SUMK_STEPS, epsilon_high=0.28, **CLIP)}
register("4", Experiment(
    id="T4",
    title="clip-higher helps aligned models, not base models",
    claim="Raising epsilon_high (0.2 -> 0.28) helps aligned (Instruct) models explore; little or harmful for base.",
    arms=T4_ARMS,
    primaries=(Primary("T4 aligned", "held-out accuracy of the aligned-like (fork) policy, epsilon_high 0.28 - 0.2",
                       difference("aligned 0.28", "aligned 0.2")),
               Primary("T4 base", "held-out accuracy of the base-like policy, epsilon_high 0.28 - 0.2",
                       difference("base 0.28", "base 0.2"), margin=NO_GAIN)),
    gates=(Gate("aligned 0.2: share of positive-advantage tokens with ratio in (1.2, 1.28]",
                band_share("aligned 0.2"), BAND, stage="runs", kind="the clip band"),
           Gate("base 0.2: share of positive-advantage tokens with ratio in (1.2, 1.28]",
                band_share("base 0.2"), BAND, stage="runs", kind="the clip band"))
    + gain_gates(T4_ARMS),
    details={
        "pass@4 aligned-like, 0.28 - 0.2": difference("aligned 0.28", "aligned 0.2", held_out("pass@4")),
        "fork-token entropy aligned-like, 0.28 - 0.2": difference("aligned 0.28", "aligned 0.2",
                                                                  held_out("fork_entropy")),
        "carry-drop rate aligned-like, 0.2": one_arm("aligned 0.2", held_out("carry_drop_rate")),
        "carry-drop rate aligned-like, 0.28": one_arm("aligned 0.28", held_out("carry_drop_rate")),
        "high-clip share aligned-like, 0.2": one_arm("aligned 0.2", training("clip_high_frac")),
    },
    curve="entropy",
    seeds=6,
    notes="Aligned-like = the fork policy (one clean step format, the carry dropped 60% of the time in its SFT data); "
          "base-like = the base policy (mixed formats, noisy steps). Both at 8 passes per generation batch, lr 5e-4.",
), __file__)
