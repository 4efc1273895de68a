"""Clip scaling: clip-higher keeps helping small models up to epsilon_high 0.32; larger ones saturate near 0.28.

**Version 3.3 (issue 38), fixed 2026-11-29 10:14 UTC and changed to fresh seeds at 10:17 UTC, both before its pilot:
64 registered seeds, 5000-5063, nothing else changed.** Version 3.2 (below) ran 32 registered seeds and read
"untestable (power)": drawn from its registered effects at a true +0.05 it would miss "reproduced" in 0.40085 of labs of
32 (0.2 allowed), all of it the saturation test's, whose effects spread about twice as widely as the grid's 8 seeds had
promised (its summary, pilot and readings are kept in `lab/results/v3.2-clip-32/`). This version raises the seed count,
takes seeds no earlier version has seen, and changes nothing else (arms, policies, data, tests, gates, pilot seeds).

- **The count** comes from the same yardstick read on version 3.2's 32 registered effects
  (`lab/results/clip_seed_count.py`, `clip_seed_count.json`: the miss at 40, 48, 56, 64, 72, 80 and 96 seeds is 0.2436,
  0.1448, 0.08665, 0.02905, 0.0163, 0.0094, 0.0022): 64, the smallest multiple of 8 whose miss is under a quarter of
  the gate's 0.2 (56 gives 0.08665, 48 gives 0.1448). A margin, because 32 seeds estimate a spread that the next seeds
  may exceed (version 3.2's registered spread was twice its grid's). The quarter was fixed in the same commit as the
  figures it was applied to: a third would also have taken 64, a half 56.
- **Fresh seeds** (`first_seed` 5000; an independent review of the design's first form, 10:15-10:17 UTC). As first
  committed (093c30b, 10:14 UTC) this version ran seeds 0-63, of which 0-31 are version 3.2's seeds, and runs are
  deterministic on this machine, so half its data would have been version 3.2's, seen. The review found that this
  nearly fixed the label: holding seeds 0-31 at their observed effects (saturation's median near zero) and drawing the
  other 32 at a true +0.05, both tests would come out "reproduced" in about 0.14 of labs, while the gate, which draws
  all 64 afresh, would likely pass; "inconclusive" would have held largely by construction. Seeds 5000-5063 are no
  registered, pilot or exploratory seed of any version (registered 0-31, pilot 1000-1005, the grids' 2000-2007 and
  3000-3007, T4's sharpening 4000). The first form's pilot, stopped after 6 of its 36 runs, was set aside.
- **The looks and their error.** This is the fourth look at the hypothesis: version 2 tested it (16 seeds, arms that
  lost accuracy; inconclusive), version 3.1 tested it (16 seeds, inconclusive), version 3.2 made no test (untestable,
  though had both tests rejected at 0.05 / 12 the gate would not have stopped them), and this version tests it. Its own
  seeds are independent of everything that chose its design, seed count included, so its chance of a wrong directional
  verdict (either direction) is one look's level; over the four looks it is at most four times that (a union bound,
  which holds whatever the looks share).
- **What was read before.** Version 3.2's report printed its contrasts' means with the gate: saturation +0.0012 (16
  seeds above zero, 15 below), small gains +0.0115 (20 of 32 above). None of its seeds is this version's.
- **The fairness gate stays** at the runs stage, on these 64 seeds: if they spread more widely than version 3.2's, it
  says so.

The rest of this docstring is version 3.2's design, which this version keeps; where it says 32 seeds, this version has
64.

**Version 3.2 (issue 38), fixed 2026-11-29 before its pilot: 32 seeds and a gate on fairness itself.** Version 3.1
(below) ran 16 registered seeds and read "inconclusive" on both tests (its summary, pilot and readings are kept in
`lab/results/v3.1-clip-16/`). An independent review then found that its saturation test could hardly have come out
"reproduced": drawn from its own registered effects, it would have in 0.02055 of labs at a true +0.05
(`lab/results/v3.1-clip-16/fairness.json`), because two runs of the large policy fell below their start and the rest
spread by about 0.05. So that label held largely by construction, which issue 38 asks no label to do. This version
changes two things and nothing else (arms, policies, data, tests, clip band, learning rate, passes, steps are version
3.1's):

- **32 registered seeds, chosen by a rule fixed before its data were read** (`lab/results/saturation_grid.py`,
  committed 2026-11-29 07:45 UTC; `saturation_grid.json`). Clip scaling's arms were made on exploratory seeds
  3000-3007 at 8 passes per generation batch (these arms) and at 4 (fresher batches, the same 960 steps). 4 passes did
  not qualify: the small policy's share of positive-advantage tokens in (1.2, 1.32] was 0.47% pooled, under the clip
  band's 0.5%. 8 passes qualified (every arm gained 0.18-0.23 and raised its training reward; band 0.79%), and at its
  saturation effects (standard deviation 0.0405 over the 8 seeds, no run fell) the sign test at 0.05 / 12 comes out
  "reproduced" at a true +0.05 in 0.96035 of labs at 32 seeds (0.39285 at 16): the rule's smallest count with 80%.
- **A runs-stage gate on the same yardstick** (`FAIR_AT`, kind "power"): drawn from the registered seeds' own
  effects (the tests together, each centred on its median and shifted by +0.05; 20,000 labs of 32 seeds; the sign
  test at 0.05 / 12 with the median above 0), the experiment's tests must come out "reproduced" in at least 80% of
  labs: its miss rate at most 0.2 (the pilot, with its margin, 0.15). A test that already rejects at 0.05 / 12 on the
  registered seeds (either direction) is not read by this gate: a spread-only gate must not overrule a clear result.
  Version 3.1's registered effects would miss in 0.827 of labs of 32 seeds (`v3.1-clip-16/fairness.json`:
  "reproduced" in 0.173); the grid's in 0.03965. If the registered runs spread as version 3.1's did, this version
  likely reads "untestable (power)", not an "inconclusive" that holds by construction.
- **The gate's first form, and why it changed** (2026-11-29 08:25 UTC, before any registered run was read). As
  first committed (817e32a, piloted 08:19), the gate read both tests whatever they showed, so a spread-only measure
  could have overruled a test that rejects clearly (an independent review of the design: 32 effects spread normally
  about +0.20 with standard deviation 0.07 give p = 4.7e-10 and yet miss 0.564). The pilot and the 18 registered
  runs then made (of 192) were made again under this form; the first pilot is kept
  (`pilots/superseded/v3.2/clip-scaling-first-gate.json`).

Disclosed, because this is a second look at the same hypothesis after its first was seen:

- **Version 3.1's own rule is set aside.** It said "the seed count is not raised after the pilot". This version
  raises it after version 3.1's registered runs were reported (saturation +0.012, small gains +0.008, both
  inconclusive), as a new design with its own pilot; version 3.1's result stays reported beside it. Two looks at one
  hypothesis: the chance that either wrongly reads "reproduced" is at most the sum of the two looks' levels, twice a
  single look's.
- **Seeds 0-15 are version 3.1's seeds.** The lab's seeds count from 0, so 16 of the 32 are the seeds whose effects
  were seen. Version 3.1's runs were made on another machine, and made again here a run does not always replicate
  (`lab/results/clip_remake.json`: of the two runs that fell, large 0.28 on seed 2 gained instead, 0.463 -> 0.73025;
  large 0.32 on seed 14 fell again, 0.38875 -> 0.504); every run of this version is made afresh on this machine.
- **What the grid showed.** The rule reads the arms' gains, reward rises and clip band and the saturation effects'
  spread (`saturation_grid.decide`), never a contrast's mean or sign; but the arms' mean accuracies, from which the
  contrasts' means follow, were printed with those inputs and read (`saturation_grid.json`): at 8 passes saturation
  -0.039 (6 of 8 seeds against the claim) and small gains -0.003. The grid ran the five arms the tests read, not
  large 0.2 (whose gates only the pilot checked). The rule's text was committed before its data were read;
  `decide` and `fair_chance`, which carry it out, were written after 4 passes' figures had been read.
- **The seed count rests on the grid's 8 seeds.** Version 3.1's 16 registered seeds of the same arms point to more
  (64-96 seeds; `v3.1-clip-16/fairness.json`), and the large policy's falls are not only another machine's (seed 14's
  fell again here). The rule took the grid's, as fixed; if the registered seeds spread as version 3.1's did, the
  runs-stage gate says so. Each fall counts as spread, though falls under stale batches at a looser bound may be part
  of what the trick does to a larger policy.
- **Pilot seeds 1000-1002 are version 3.1's pilot seeds**, made afresh (6 pilot seeds now). With 6 seeds the
  fairness gate at the pilot checks little: it fails only where a pilot seed lies more than about 0.05 below its
  test's median.

The rest of this docstring is version 3.1's design, which this version keeps; where it says 16 seeds and 3 pilot
seeds, this version has 32 and 6.

**Version 3.1** (issue 38), fixed 2026-11-28 before any pilot or registered run of this design, after an independent
read of its first draft (same day). It is a second attempt at the same hypothesis: version 2's registered runs, in which
every arm lost held-out accuracy, gave small gains -0.039 [-0.079, +0.001] and saturation +0.005 (inconclusive,
`lab/results/v2/summary.json`). Version 2's design (in `clip.py` until now) compared two ADD policies 14x apart in
size, matched in initial accuracy only because the small one was caught mid-jump (0.0535 at 2,800 SFT steps, 0.4265
at 2,840; `lab/results/builds.json`), and trained them at lr 5e-4. This design changes three things:

- **Two policies on a plateau, matched in accuracy.** The small policy is `arith_carry_tiny` (2 x 48, 61,536
  parameters), rebuilt at 5,000 SFT steps: its builds sit on a plateau from 2,880 steps on (acc@T1 0.5075 at 2,880,
  0.506 at 2,950, 0.50875 at 3,100, 0.5165 at 3,500; 0.526 at 5,000 on 2026-11-25 and 0.525 rebuilt on 2026-11-27, on
  another stack). The large one is `arith_carry_small` (2 x 96, 242,880 parameters, 3.95x), from the same SFT data
  and the same 5,000 steps, acc@T1 0.52725. So "size" here is width at equal depth and equal initial skill. The large
  policy's own plateau was not measured (one build): the demo policy (4 x 128) is at 0.429 after the same 5,000
  steps, so a wider model may not have converged there; builds at 4,000 and 6,000 steps would settle it. The audit
  gate still asks |acc@T1 small - large| <= 0.03, but its value is known before it runs (the same deterministic
  evaluation measured 0.00225 for `builds.json`): it passes by construction and only catches drift between stacks.
- **Updates that gain, at the demo's learning rate.** lr 1e-4 (5e-4 before), with stale batches to reach the clip
  band: each of 30 generation batches of 8 prompts x 8 completions is used for `NUM_ITERATIONS` = 8 passes of 4
  optimizer steps (960 steps). Chosen from two points of a grid of the epsilon_high 0.2 arm at lr 1e-4, one seed
  (3000) each (`lab/results/clip_grid.py`, `lab/results/clip_grid.json`): at 8 passes the small policy gained +0.2195
  held-out and the large +0.2193, with 0.89% and 0.82% of positive-advantage tokens in the wide band (1.2, 1.32]; at
  16 passes the small policy gained less (+0.174) and its band did not grow (0.80%); the large's reached 1.08%.
- **The clip-band gate at 0.5% (`WIDE_BAND`), not version 2's 1%.** At lr 1e-4 the small policy's band stayed under
  1% at both grid points, and neither size reached the 1.25% that 1% asks with the pilot's 25% margin. The threshold
  was lowered after seeing the grid (exploratory runs on seed 3000, never a pilot or registered seed) and before any
  pilot. It now sits below the grid's 0.82-0.89%, so it is a sanity check (epsilon_high binds on some tokens, so that
  the arms can differ at all), not a screen; the pilot asks 0.625%.

**Which tokens each test rests on.** epsilon_high 0.2 and 0.32 differ only on tokens whose ratio lies in (1.2, 1.32]:
0.82-0.89% of positive-advantage tokens in the grid. The saturation test compares 0.28 with 0.32, which differ only on
(1.28, 1.32]: 0.16-0.20% in the grid (the wide band less the band). Both shares are reported per arm (`details`). On so
few tokens a near-zero effect is likely: "inconclusive" is the likely outcome, said before the pilot.

**Power.** A pilot gate per primary test: the smallest effect `SEEDS` seeds detect (the sign test at the strictest
Holm level of the 16 designed tests needs 15 of 16 seeds on one side: about 1.63 per-seed standard deviations,
`stats.detectable_effect`) over the arms' mean gain, at most 0.5 (0.375 with the margin). At a mean gain near the
grid's 0.22 that passes for a per-seed spread up to about 0.05, i.e. a detectable effect up to about 0.08: far larger
than 0.2-0.9% of tokens can plausibly produce. The gate asks that the test could see an effect half the size of
training's own, not one this trick is likely to have. Three pilot seeds estimate the spread on 2 degrees of freedom.
If the power gate fails, the experiment is reported untestable with the pilot's figures; the seed count is not raised
after the pilot.

**Update size.** Clip-higher is a looser bound on how far one update may move a token's probability: an arm that moves
further is the trick working, so the arms' update sizes are not matched. Each arm's weight distance from its initial
policy and mean gradient norm are reported next to the verdict (`details`). The weight distance is an L2 norm over all
weights, so it grows with parameter count (grid, 8 passes: 1.07 small, 2.30 large; per parameter, 1.07 / sqrt(61,536)
= 0.0043 and 2.30 / sqrt(242,880) = 0.0047). Rule, fixed now: where a test is reproduced (or not reproduced) and the
arm it favours also has the larger mean weight distance, the write-up says that the verdict cannot be told apart from
"the arm that moved further did better". For clip-higher that is the mechanism the paper names, so the label stands
and the flag is reported beside it. For saturation, a difference between the sizes' update sizes that is merely added
to both epsilon arms cancels in the contrast; one that changes how often epsilon binds (more tokens in the band for one
size) does not, and that interaction is what saturation means. The grid's band shares were close (0.89% and 0.82%).
"""

from __future__ import annotations

from ..design import (
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

SEEDS = 64  # version 3.3 (32 in version 3.2, 16 in version 3.1)
FIRST_SEED = 5000  # version 3.3: seeds no version has seen (version 3.1 registered 0-15, version 3.2 0-31)
PILOT_SEEDS = 6  # version 3.2 (3 in version 3.1): the fairness gate reads the spread of their effects
FAIR_AT, FAIR_LEVEL, FAIR_DRAWS, FAIR_MISS = 0.05, 0.05 / 12, 20_000, 0.2  # the runs-stage fairness gate (above)
NUM_ITERATIONS = 8  # passes over each generation batch
GENERATION_BATCHES = 30
STEPS = 4 * NUM_ITERATIONS * GENERATION_BATCHES  # 4 optimizer steps per pass: 960
LEARNING_RATE = 1e-4  # the demo's
WIDE_BAND = 0.005  # share of positive-advantage tokens with ratio in (1.2, 1.32], where the arms' bounds differ
EPS = (0.2, 0.28, 0.32)
SIZES = (("small", "carry-tiny"), ("large", "carry-small"))
ARMS = {f"{size} {eps}": arm("add", policy, "mixed", steps=STEPS, epsilon_high=eps, temperature=1.0,
                             num_iterations=NUM_ITERATIONS, learning_rate=LEARNING_RATE)
        for size, policy in SIZES for eps in EPS}
POLICIES = {label: a.policy for label, a in ARMS.items()}


def _share(key: str, less: str | None = None):
    """One run's share of positive-advantage tokens counted under `key` (less those under `less`)."""
    def value(result):
        train = result["train"]
        count = train[key] - (train[less] if less else 0)
        return count / train["pos_adv_tokens"] if train["pos_adv_tokens"] else float("nan")
    return value


def _gain(size: str, low: float, high: float):
    return difference(f"{size} {high}", f"{size} {low}")


PRIMARIES = (
    Primary("clip-scaling small gains", "held-out accuracy of the small policy, epsilon_high 0.32 - 0.2",
            _gain("small", 0.2, 0.32)),
    Primary("clip-scaling saturation", "(accuracy at 0.32 - at 0.28) of the small policy minus the large policy's",
            lambda runs: _gain("small", 0.28, 0.32)(runs) - _gain("large", 0.28, 0.32)(runs)),
)
_moved = mean_gain(tuple(ARMS), POLICIES)  # what training gains: the arms' mean gain


def miss_at_fair_effect(evidence: dict) -> float:
    """The runs-stage fairness gate's value (version 3.2): the share of `FAIR_DRAWS` labs in which this experiment's
    tests that do not already reject would NOT all come out "reproduced" at a true `FAIR_AT`. Each lab draws the
    registered number of seeds (`evidence["registered_seeds"]` in a pilot, else the runs' own count) with replacement
    from the evidence's seeds, a seed's effects on every test together; each test's effects (near-ties zeroed) are
    centred on their median and shifted by `FAIR_AT`; a test passes where the sign test's p-value is below
    `FAIR_LEVEL` (Holm's first step in the family of 12) with the median above 0 (`lab/results/fairness.py`'s
    yardstick). A test whose own p-value on the evidence is already below `FAIR_LEVEL` (either direction) is not read:
    a test that rejects at Holm's strictest level needs no power argument, and a spread-only gate must not overrule
    it. 0.0 where every test rejects. (A pilot's few seeds cannot reject: 2 / 2^6 is above the level.)"""
    import numpy as np

    from ..resampling import _sign_p
    from ..stats import near_ties

    per_seed = list(evidence["runs"].values())
    n = evidence.get("registered_seeds", len(per_seed))
    effects = np.array([near_ties([p.effect(runs) for runs in per_seed]) for p in PRIMARIES])
    effects = effects[_sign_p(effects) >= FAIR_LEVEL]  # the tests that do not reject on the evidence itself
    if not len(effects):
        return 0.0
    shifted = effects - np.median(effects, axis=1, keepdims=True) + FAIR_AT
    picks = np.random.default_rng(0).integers(0, effects.shape[1], size=(FAIR_DRAWS, n))
    passed = np.ones(FAIR_DRAWS, dtype=bool)
    for values in shifted:
        samples = values[picks]
        passed &= (_sign_p(samples) < FAIR_LEVEL) & (np.median(samples, axis=1) > 0.0)
    return float(1.0 - passed.mean())


register("clip-scaling", Experiment(
    id="clip-scaling",
    title="clip-higher keeps helping small models up to 0.32; larger ones saturate near 0.28",
    claim="Small models keep gaining as epsilon_high rises to 0.32; larger models saturate near 0.28.",
    arms=ARMS,
    primaries=PRIMARIES,
    gates=(Gate("initial held-out accuracy at temperature 1, |small - large|",
                lambda e: abs(e["add/carry-tiny/acc@T1"] - e["add/carry-small/acc@T1"]), 0.03, at_most=True,
                kind="matched sizes"),)
    + tuple(Gate(f"{size} 0.2: share of positive-advantage tokens with ratio in (1.2, 1.32]",
                 band_share(f"{size} 0.2", "ratio_wide_band_tokens"), WIDE_BAND, stage="runs", kind="the clip band")
            for size, _ in SIZES)
    + gain_gates(ARMS)
    + tuple(Gate(f"{p.name}: smallest effect {SEEDS} seeds detect (80% power, Holm over every designed test) / the "
                 "arms' mean gain", power_ratio(p, _moved), 0.5, at_most=True, stage="pilot", kind="power")
            for p in PRIMARIES)
    + (Gate(f"tests that do not reject at 0.05 / 12: share of labs of the registered seeds, drawn from these seeds' "
            f"effects at a true +{FAIR_AT}, that would not come out reproduced", miss_at_fair_effect, FAIR_MISS,
            at_most=True, stage="runs", kind="power"),),
    details={**{f"accuracy {size} {eps}": one_arm(f"{size} {eps}", held_out()) for size, _ in SIZES for eps in EPS},
             **{"small gain 0.28 - 0.2": _gain("small", 0.2, 0.28), "large gain 0.28 - 0.2": _gain("large", 0.2, 0.28),
                "large gain 0.32 - 0.2": _gain("large", 0.2, 0.32)},
             **{f"high-clip share {label}": one_arm(label, training("clip_high_frac")) for label in ARMS},
             **{f"share in (1.2, 1.32] {label}": one_arm(label, _share("ratio_wide_band_tokens")) for label in ARMS},
             **{f"share in (1.28, 1.32] {label}": one_arm(label, _share("ratio_wide_band_tokens", "ratio_band_tokens"))
                for label in ARMS},
             **{f"weight distance {label}": one_arm(label, held_out("update_norm")) for label in ARMS},
             **{f"mean gradient norm {label}": one_arm(label, training("grad_norm_mean")) for label in ARMS}},
    curve="clip_ratio/high_mean",
    seeds=SEEDS, pilot_seeds=PILOT_SEEDS, first_seed=FIRST_SEED,
    notes="Version 3.3: 64 fresh seeds, 5000-5063 (32 in version 3.2, seeds 0-31), with version 3.2's runs-stage gate "
          "that the tests could come out "
          "reproduced at a true +0.05. "
          "Two carry-habit ADD policies from the same SFT data and 5,000 steps, each on its plateau and matched in "
          "initial accuracy: 2 x 48 (61K parameters) and 2 x 96 (0.24M), trained on the mixed ADD data at temperature "
          "1, lr 1e-4, 8 passes over each generation batch (960 optimizer steps).",
), __file__)
