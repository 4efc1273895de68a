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

Version 3.1 (issue 38), fixed 2026-11-28 12:09 UTC, before any pilot or registered run of this design, after an
exploratory grid (`lab/results/t4_grid.py`, `lab/results/t4_grid.json`; seeds 3000 and 4000, never a registered or pilot
seed). It moves T4 from SUM-k (version 2: an "aligned-like" policy at 0.215 held-out against the base-like 0.204, lr
5e-4) to ADD, where runs are cheap and gain at the demo's learning rate, and changes what "aligned-like" means:

- **Base-like** is clip scaling's large policy, `arith_carry_small` (SFT only). **Aligned-like** is the same weights
  with the output logits divided by 0.6 (`arith_carry_small_sharp`, built by `lab/scripts/sharpen_policy.py`): sampled
  at temperature 1 it is the base-like policy sampled at 0.6. The paper's account of this takeaway is about exploration:
  an aligned model samples with low entropy, and a low upper clip keeps it from raising the tokens it rarely samples.
  The two policies differ in exactly that and little else: held-out accuracy 0.5405 against 0.52725, token entropy
  0.0372 against 0.0766, the entropy of the top fifth of tokens 0.185 against 0.370, pass@4 0.749 against 0.811 (the
  grid's initial evaluations). They do not differ in what else post-training gives (accuracy, format): this tests the
  paper's mechanism, not everything that separates an Instruct model from its base. Two other candidates, the base-like
  policy after 240 or 480 steps of the lab's own RL, were hardly sharper (token entropy 0.0737 and 0.0753).
- **Updates that gain**: lr 1e-4, temperature 1, 8 passes over each of 15 generation batches of 8 prompts x 8
  completions (480 optimizer steps), the mixed ADD data. In the grid the epsilon_high 0.2 arm gained +0.2093 from the
  aligned-like policy and +0.14 from the base-like one, with 1.44% and 0.73% of positive-advantage tokens in the band
  (1.2, 1.28] where 0.2 and 0.28 clip differently. 480 steps, not clip scaling's 960, also keeps the base half's arms
  apart from clip scaling's (whose large 0.2 and 0.28 arms would otherwise be the same runs, seen before this design).
- **Two directional tests, both the sign test (no normality)**: "T4 aligned", accuracy at 0.28 minus at 0.2 from the
  aligned-like policy (> 0: clip-higher helps it), and "T4 aligned vs base", that difference minus the base-like
  policy's (> 0: it helps the aligned-like policy more). The second replaces version 2's equivalence test of the base
  half ("little or harmful"), a TOST that rests on normality: "not base" is read as a contrast, and the base half's own
  difference is reported beside it (`details`). T4 is reproduced only when both are.
- **Gates**: every arm gains (`gain_gates`); both 0.2 arms have at least `BAND` = 0.4% of positive-advantage tokens in
  (1.2, 1.28] (the pilot asks 0.5%; a sanity check that the bounds can differ at all, below the grid's 0.73%); the
  two policies differ as described: the base-like policy's top-fifth token entropy at least 1.5 times the aligned-like's
  (2.0 by construction: it only catches a wrong policy folder); a power gate per test, as clip scaling's.
- **Seeds**: 32 (pilot: 3). At 32 seeds the sign test at the strictest Holm level of the 16 designed tests detects
  about 0.92 per-seed standard deviations (`stats.detectable_effect`); 4 x 32 runs of about a minute each.

**Update size.** Clip-higher is a looser bound on how far an update moves a token's probability, so within a policy
the arms' update sizes are not matched: an arm that moves further is the trick working. Across the two policies the
same weight step moves the aligned-like policy's log-probabilities 1 / 0.6 times as far (its logits are scaled), so
more of its tokens reach the band: that is the mechanism the paper names for aligned models, and the interaction test
measures it. Rule, fixed now: where a test is reproduced (or not reproduced) and the arm it favours also has the larger
mean weight distance, the write-up says so beside the label, as for clip scaling. Each arm's weight distance and mean
gradient norm are reported (`details`).
"""

from __future__ import annotations

from ..design import (
    LAB_POLICIES,
    Experiment,
    Gate,
    Primary,
    arm,
    band_share,
    difference,
    gain_gates,
    held_out,
    mean_gain,
    one_arm,
    power_ratio,
    register,
    training,
)

# updates that reach the clip band. 2026-11-25 19:40 UTC, after the pilot of 12:08 (`pilots/superseded/T4.json`): lr
# 3e-4 -> 5e-4, because the aligned-like 0.28 arm moved held-out accuracy by 0.0065 there (0.02 needed)
CLIP = {"num_iterations": 8, "learning_rate": 5e-4}
SUMK_STEPS = 192  # 6 generation batches x 8 passes x 4 optimizer steps
# CLIP and SUMK_STEPS: version 2's SUM-k settings, still T5's (`connectives.py` imports them); T4's version 3.1 is below

# Version 3.1: T4 on ADD
LAB_POLICIES["add", "carry-small-sharp"] = "arith_carry_small_sharp"  # this design's aligned-like policy (see above)
POLICIES = {"aligned": "carry-small-sharp", "base": "carry-small"}
NUM_ITERATIONS, GENERATION_BATCHES, LEARNING_RATE = 8, 15, 1e-4
STEPS = 4 * NUM_ITERATIONS * GENERATION_BATCHES  # 480
BAND = 0.004  # share of positive-advantage tokens whose ratio lies in (1.2, 1.28], where 0.2 and 0.28 clip differently
SHARPER = 1.5  # base-like / aligned-like entropy of the top fifth of tokens (initial held-out evaluations)
SEEDS = 32

T4_ARMS = {f"{kind} {eps}": arm("add", policy, "mixed", steps=STEPS, epsilon_high=eps, temperature=1.0,
                                  num_iterations=NUM_ITERATIONS, learning_rate=LEARNING_RATE)
           for kind, policy in POLICIES.items() for eps in (0.2, 0.28)}
ARM_POLICIES = {label: a.policy for label, a in T4_ARMS.items()}


def _clip_higher(kind: str):
    return difference(f"{kind} 0.28", f"{kind} 0.2")


def _sharper(evidence) -> float:
    initial = evidence["initial"]
    return initial[POLICIES["base"]]["fork_entropy"] / initial[POLICIES["aligned"]]["fork_entropy"]


PRIMARIES = (
    Primary("T4 aligned", "held-out accuracy of the aligned-like (sharpened) policy, epsilon_high 0.28 - 0.2",
            _clip_higher("aligned")),
    Primary("T4 aligned vs base", "(accuracy at 0.28 - at 0.2) of the aligned-like policy minus the base-like's",
            lambda runs: _clip_higher("aligned")(runs) - _clip_higher("base")(runs)),
)
_moved = mean_gain(tuple(T4_ARMS), ARM_POLICIES)
register("4", Experiment(
    id="T4",
    title="clip-higher helps aligned models, not base models",
    claim="Raising epsilon_high (0.2 -> 0.28) helps aligned (Instruct) models explore; little or harmful for base.",
    arms=T4_ARMS,
    primaries=PRIMARIES,
    gates=(Gate("top-fifth token entropy of the initial policies, base-like / aligned-like", _sharper, SHARPER,
                stage="runs", kind="distinct policies"),)
    + tuple(Gate(f"{kind} 0.2: share of positive-advantage tokens with ratio in (1.2, 1.28]",
                 band_share(f"{kind} 0.2"), BAND, stage="runs", kind="the clip band") for kind in POLICIES)
    + gain_gates(T4_ARMS)
    + tuple(Gate(f"{p.name}: smallest effect {SEEDS} seeds detect (80% power, Holm over every designed test) / the "
                 "arms' mean gain", power_ratio(p, _moved), 0.5, at_most=True, stage="pilot", kind="power")
            for p in PRIMARIES),
    details={
        "base-like, epsilon_high 0.28 - 0.2": _clip_higher("base"),
        **{f"accuracy {label}": one_arm(label, held_out()) for label in T4_ARMS},
        **{f"pass@4 {kind}, 0.28 - 0.2": difference(f"{kind} 0.28", f"{kind} 0.2", held_out("pass@4"))
           for kind in POLICIES},
        **{f"token entropy {kind}, 0.28 - 0.2": difference(f"{kind} 0.28", f"{kind} 0.2", held_out("entropy"))
           for kind in POLICIES},
        **{f"high-clip share {label}": one_arm(label, training("clip_high_frac")) for label in T4_ARMS},
        **{f"weight distance {label}": one_arm(label, held_out("update_norm")) for label in T4_ARMS},
        **{f"mean gradient norm {label}": one_arm(label, training("grad_norm_mean")) for label in T4_ARMS},
    },
    curve="entropy",
    seeds=SEEDS, pilot_seeds=3,
    notes="Aligned-like = the large ADD policy with its logits divided by 0.6 (half the token entropy, the same "
          "accuracy); base-like = the same policy as built. Both trained on the mixed ADD data at temperature 1, lr "
          "1e-4, 8 passes over each of 15 generation batches (480 optimizer steps).",
), __file__)
