"""The version 3 statistics (`trl_lite_lab.resampling`, the sign-flip test itself in `trl_lite_lab.stats`): the exact
sign-flip test, near-ties, the seeds a family needs, a summary's reanalysis (both tests, each Holm-adjusted with its
verdict) and the resampled-null rate, on hand-made summaries; and the committed page (`lab/results/null.md`) is what
`trl-lite-lab null` writes."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from trl_lite_lab import resampling
from trl_lite_lab.resampling import near_ties, null_rate, seeds_needed, sign_flip, smallest_p
from trl_lite_lab.stats import t_test

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_sign_flip_hand_worked():
    # [1, 2, 3]: the 8 sign patterns give sums +-1 +-2 +-3 = 6, 4, 2, 0, 0, -2, -4, -6; |sum| >= 6 for 2 of them
    assert sign_flip([1, 2, 3]) == 2 / 8
    # [3, -1, -1]: sum 1; |+-3 +-1 +-1| is 5, 3, 3, 1 (and their negations): all 8 are >= 1
    assert sign_flip([3, -1, -1]) == 1.0
    assert sign_flip([1, -1]) == 1.0  # a mean of 0 is no evidence
    # six equal effects: only the observed pattern and its negation are as extreme, 2 of 64
    assert sign_flip([0.5] * 6) == 2 / 64 == smallest_p(6)
    # a t-test would call these significant at any level; a sign-flip test cannot go below 2 / 2^n
    assert t_test("six", [0.5, 0.5, 0.5, 0.5, 0.5, 0.5 + 1e-15]).p_value < 1e-10


def test_near_ties_are_ties():
    # the clip-scaling effect of -2.8e-17 (v2's summary.json, seed 7) is a rounding of 0
    assert near_ties([-2.8e-17, 0.1, 1e-13]).tolist() == [0.0, 0.1, 0.0]
    assert sign_flip([1e-17, 2e-17, 1e-17]) == 1.0  # every effect within float noise of 0: no effect
    # effects one float step apart: the t-test's p is near 0 (the trap of issue 38), the sign-flip's is 1
    tiny = [1e-17, 1e-17 + 1e-33, 1e-17, 1e-17, 1e-17, 1e-17]
    assert t_test("tiny", tiny).p_value < 1e-20 and sign_flip(tiny) == 1.0


def test_sign_flip_beyond_the_exact_range_is_a_valid_monte_carlo_test():
    # 21 seeds, 20 at +1 and one at -1: |sum| = 19; a pattern is as extreme when it agrees with the observed one (or its
    # negation) on all but at most one seed, 2 x (1 + 21) = 44 of 2^21 = 2.1e-5. With 100,000 random patterns the +1
    # correction gives (1 + about 2.1) / 100,001.
    p = sign_flip([1.0] * 20 + [-1.0])
    assert 1 / 100_001 <= p <= 1e-4
    assert sign_flip([1.0, -1.0] * 11) == 1.0


@pytest.mark.parametrize("m, n", [(1, 6), (9, 9), (10, 9), (20, 10)])
def test_seeds_needed(m, n):
    # 2 / 2^n < 0.05 / m: m=1: 2/64 = 0.031 < 0.05, 2/32 = 0.0625 not; m=10: 2/512 = 0.0039 < 0.005, 2/256 = 0.0078 not;
    # m=9: 0.0039 < 0.0056, 0.0078 not; m=20: 2/1024 = 0.00195 < 0.0025, 0.0039 not
    assert seeds_needed(m) == n
    assert smallest_p(n) < 0.05 / m <= smallest_p(n - 1)


def test_null_rate_is_the_level_on_normal_effects_and_zero_where_no_test_can_reject():
    effects = np.random.default_rng(0).normal(size=2000).tolist()
    # one test of 6 seeds resampled from (nearly) normal effects: the t-test's rate is its level, 0.05
    assert 0.04 < null_rate([effects[:2000]], family_size=1, test="t", draws=20_000) < 0.06
    # sign-flip tests on 6 seeds in a family of 10 can never pass alpha / 10: no wrong verdict at all
    six = [effects[i:i + 6] for i in range(0, 60, 6)]
    assert null_rate(six, family_size=10, test="sign-flip", draws=2_000) == 0.0
    with pytest.raises(ValueError, match="test='z' is not supported"):
        null_rate(six, family_size=10, test="z")
    with pytest.raises(ValueError, match="family_size must be at least the number of tests"):
        null_rate(six, family_size=3)


def test_null_rate_rises_with_an_outlier_seed_under_the_t_test():
    # five seeds near 0 and one far away (v2's T8 loops had one such seed): resampled, most draws hold the outlier
    # once or not at all, and a t-test on five tiny values and one large one misreads the spread
    outlier = [0.001, -0.002, 0.0015, -0.001, 0.0005, 0.2]
    t_rate = null_rate([outlier], family_size=1, test="t", draws=20_000)
    sign_rate = null_rate([outlier], family_size=1, test="sign-flip", draws=20_000)
    assert t_rate > 0.1 and sign_rate < t_rate


def _summary(family_size: int, tests: list[dict]) -> dict:
    """A `summary.json` as `trl-lite-lab report` writes it, reduced to what `reanalysis` reads."""
    return {"family_size": family_size, "alpha": 0.05,
            "takeaways": [{"id": "X", "tests": tests}, {"id": "Y", "tests": []}]}


def test_reanalysis_rows_by_hand():
    summary = _summary(6, [
        # ten distinct positive effects 0.01 .. 0.10: sign-flip p = 2 / 2^10 = 0.00195 (the smallest possible)
        {"name": "up", "per_seed": [0.01 * k for k in range(1, 11)], "verdict": "reproduced", "p_value": 0.5},
        # six distinct negative effects: 2 / 2^6 = 0.03125
        {"name": "down", "per_seed": [-0.01 * k for k in range(1, 7)], "verdict": "not reproduced"},
        # an equivalence test (right at a true 0) and an untested one (its experiment's gate failed): left out
        {"name": "eq", "per_seed": [0.001, -0.001], "margin": 0.03, "verdict": "reproduced"},
        {"name": "untested", "per_seed": [0.5, 0.6], "verdict": None, "margin": None},
        # two near-ties (within 1e-12 of 0) zeroed: 0, 0, 0.02, -0.01, sum 0.01; every pattern of +-0.02 +-0.01 has
        # |sum| >= 0.01 -> p = 1
        {"name": "tied", "per_seed": [1e-13, -2e-13, 0.02, -0.01], "verdict": "inconclusive"},
    ])
    result = resampling.reanalysis(summary, draws=2_000)
    rows = {r["name"]: r for r in result["tests"]}
    assert list(rows) == ["up", "down", "tied"] and result["family_size"] == 6 and result["alpha"] == 0.05
    keys = {"name", "n", "mean", "median", "positive", "negative", "at_median", "zeroed", "t_p", "t_adjusted_p", "t_verdict",
            "sign_flip_p", "sign_flip_adjusted_p", "sign_flip_verdict", "sign_p", "sign_adjusted_p", "sign_verdict",
            "smallest_p", "can_reject", "null_rate_t", "null_rate_sign-flip", "null_rate_sign", "null_rate_sign-mean",
            "exact_null_rate_sign", "exact_null_rate_sign-mean", "hoeffding_half_width"}
    assert all(set(r) == keys for r in rows.values())
    up, down, tied = rows["up"], rows["down"], rows["tied"]
    assert (up["n"], down["n"], tied["n"]) == (10, 6, 4) and (up["zeroed"], down["zeroed"], tied["zeroed"]) == (0, 0, 2)
    assert up["mean"] == pytest.approx(0.055) and down["mean"] == pytest.approx(-0.035)
    assert tied["mean"] == pytest.approx(0.0025)  # (0 + 0 + 0.02 - 0.01) / 4
    # both tests recomputed from the per-seed effects (the summary's own p_value, 0.5, is not read)
    assert up["sign_flip_p"] == 2 / 1024 and down["sign_flip_p"] == 2 / 64 and tied["sign_flip_p"] == 1.0
    # the sign test (version 3.1's): 10 of 10 positive, 2 / 1024; 6 of 6 negative, 2 / 64; tied: the two zeros left
    # out, 1 positive and 1 negative: 2 x P(Binomial(2, 1/2) <= 1) > 1 -> 1.0. Medians 0.055, -0.035, 0.0
    assert (up["sign_p"], down["sign_p"], tied["sign_p"]) == (2 / 1024, 2 / 64, 1.0)
    assert (up["median"], down["median"], tied["median"]) == pytest.approx((0.055, -0.035, 0.0))
    assert (tied["positive"], tied["negative"]) == (1, 1)
    # seeds at the median: even n with two distinct middle values, none; tied's middle values are both 0: two
    assert (up["at_median"], down["at_median"], tied["at_median"]) == (0, 0, 2)
    assert [r["sign_verdict"] for r in (up, down, tied)] == ["reproduced", "inconclusive", "inconclusive"]
    for r, per_seed in ((up, [0.01 * k for k in range(1, 11)]), (down, [-0.01 * k for k in range(1, 7)]),
                        (tied, [0.0, 0.0, 0.02, -0.01])):
        assert r["t_p"] == t_test(r["name"], per_seed).p_value
    # up: mean 0.055, sd = 0.01 x sqrt(82.5 / 9) = 0.030277, se = 0.009574, t = 5.745, df 9 -> p = 2.78e-4
    # down: mean -0.035, sd = 0.01 x sqrt(17.5 / 5) = 0.018708, se = 0.0076376, t = 4.583, df 5 -> p = 0.00593
    assert up["t_p"] == pytest.approx(2.782e-4, rel=1e-3) and down["t_p"] == pytest.approx(5.934e-3, rel=1e-3)
    # Holm over the family of 6 (the 3 directional tests, 3 others at p = 1), each test on its own p-values:
    # sign-flip: up 0.00195 x 6 = 0.0117 -> reproduced; down 0.03125 x 5 = 0.156 -> inconclusive; tied 1
    assert up["sign_flip_adjusted_p"] == pytest.approx(6 / 512)
    assert down["sign_flip_adjusted_p"] == pytest.approx(5 / 32)
    assert [r["sign_flip_verdict"] for r in (up, down, tied)] == ["reproduced", "inconclusive", "inconclusive"]
    # t: up 2.78e-4 x 6 = 0.00167 -> reproduced; down 0.00593 x 5 = 0.0297 < 0.05 -> not reproduced (the t-test's
    # verdict, which six seeds cannot give under the sign-flip test); tied 1
    assert up["t_adjusted_p"] == pytest.approx(6 * up["t_p"]) and down["t_adjusted_p"] == pytest.approx(5 * down["t_p"])
    assert tied["t_adjusted_p"] == 1.0
    assert [r["t_verdict"] for r in (up, down, tied)] == ["reproduced", "not reproduced", "inconclusive"]
    # what a sign-flip test on n seeds can reach: 2 / 2^n below 0.05 / 6 = 0.0083? 10 seeds (0.00195) yes; 6 (0.031)
    # and 4 (0.125) no; a family of 6 needs 8 seeds (2 / 256 = 0.0078 < 0.0083 <= 2 / 128)
    assert [r["smallest_p"] for r in (up, down, tied)] == [2 / 1024, 2 / 64, 2 / 16]
    assert [r["can_reject"] for r in (up, down, tied)] == [True, False, False] and result["seeds_needed"] == 8
    # a test that cannot reject never gives a wrong verdict under the resampled null
    assert down["null_rate_sign-flip"] == tied["null_rate_sign-flip"] == 0.0
    # the page: one row per directional test, the three tests' p-values and verdicts
    page = resampling.markdown(result, "synthetic.json")
    assert ("| down | 6 | -0.0350 | -0.0350 | 0 / 6 | 0 | 0 | 0.0059 | 0.0312 | 0.0312 | 0.0312 | 0.1562 | inconclusive | "
            "not reproduced | inconclusive |") in page
    assert ("| up | 10 | +0.0550 | +0.0550 | 10 / 0 | 0 | 0 | 0.0003 | 0.0020 | 0.0020 | 0.0020 | 0.0117 | reproduced | "
            "reproduced | reproduced |") in page
    assert "Here 2 of the 3 directional tests have fewer (down, tied)" in page
    # the goal under the metric as fixed (mean-centred), in words from the rates: here the sign-flip and sign tests
    # on the mean-centred null can reject only through "up"
    assert resampling._goal({"sign-mean": 0.2, "sign-flip": 0.04, "t": 0.3}, 0.05) == (
        "Under the metric as fixed, the goal (at most 5% of labs) is met by the sign-flip test.")
    assert "is not met by any of the three tests" in resampling._goal({"sign-mean": 0.2, "sign-flip": 0.4, "t": 0.3},
                                                                      0.05)
    # no directional test at all: no rows, no wrong verdict
    empty = resampling.reanalysis(_summary(2, [summary["takeaways"][0]["tests"][2]]), draws=100)
    assert empty["tests"] == [] and empty["null_rate"] == {"t": 0.0, "sign-flip": 0.0, "sign": 0.0, "sign-mean": 0.0}
    assert empty["exact_null_rate"] == {"sign": 0.0, "sign-mean": 0.0}
    # the exact rates: only "up" (10 seeds, no effect at its median) can reject at 0.05 / 6 = 0.00833: the sign test's
    # size there is P(10 of 10 on one side) = 2 / 1024 (9 of 10 gives 2 x 11 / 1024 = 0.0215), the same centred on the
    # mean (0.055, between the 5th and 6th effects: 5 on each side); the family's is 1 - (1 - 2/1024)(1 - 0)(1 - 0)
    assert up["exact_null_rate_sign"] == pytest.approx(2 / 1024) == up["exact_null_rate_sign-mean"]
    assert down["exact_null_rate_sign"] == tied["exact_null_rate_sign"] == 0.0
    assert result["exact_null_rate"]["sign"] == pytest.approx(2 / 1024)
    # leaving one test out: without "up" nothing can reject; without either other, "up"'s 2 / 1024 remains
    assert result["exact_null_rate_without"]["sign-mean"] == pytest.approx({"up": 0.0, "down": 2 / 1024,
                                                                            "tied": 2 / 1024})
    # the page: the largest share and the rest against two exact tests, 1 - (1 - 0.05 / 6)^2 = 0.0166
    assert ("Its largest share is up's (0.0020); without that test the others' rate, computed exactly, is 0.0000, "
            "within the goal's 5%, against 0.0166 for as many exact tests.") in page
    assert result["exact_reference"] == pytest.approx(1 - (1 - 0.05 / 6) ** 3)
    assert result["exact_reference_without_one"] == pytest.approx(1 - (1 - 0.05 / 6) ** 2)
    # Hoeffding at 0.05 / 6 on 10 seeds in [-1, 1]: 2 x sqrt(log(2 / 0.008333) / 20) = 2 x sqrt(5.4806 / 20) = 1.0469
    assert up["hoeffding_half_width"] == pytest.approx(1.0469, abs=1e-4)
    assert "it can reject only a mean effect of 1.655 at 4 seeds, 1.352 at 6 seeds, 1.047 at 10 seeds" in page
    assert "**this lab does not count it as meeting the goal**" in page


def test_the_exact_sign_rate_by_hand_and_against_the_simulation():
    from trl_lite_lab.resampling import exact_sign_rate, hoeffding_half_width

    # 16 effects, none at the median: each draw positive with probability 1/2; at 0.05 / 12 = 0.004167 the sign test
    # rejects at 0 or 1 of 16 on one side (2 x (1 + 16) / 65536 = 0.000519), not at 2 (2 x 137 / 65536 = 0.00418)
    sixteen = [0.001 * k for k in range(-8, 8)]
    assert exact_sign_rate(sixteen, level=0.05 / 12) == pytest.approx(2 * 17 / 65536, rel=1e-12)
    # five effects, the median (0) a tie; 3 draws at level 0.3: only 3 of 3 on one side rejects (2 / 8 = 0.25; 2 of 2
    # gives 0.5), and not when the 3 draws are one value (p = 1). All 3 positive: (2/5)^3 = 8/125, of which 2/125 one
    # value; so 6/125 a side, 12/125 = 0.096
    five = [-0.02, -0.01, 0.0, 0.01, 0.02]
    assert exact_sign_rate(five, draws=3, level=0.3) == pytest.approx(12 / 125, rel=1e-12)
    # centred on the mean (3): -3, -2, -1, +6; 4 draws at 0.2 reject at 4 of 4 on one side (2 / 16 = 0.125): all 4
    # negative (3/4)^4 = 81/256 less the 3 of one value (3 x (1/4)^4), all 4 positive is always one value: 78/256
    skewed = [0.0, 1.0, 2.0, 9.0]
    assert exact_sign_rate(skewed, draws=4, center="mean", level=0.2) == pytest.approx(78 / 256, rel=1e-12)
    # centred on the median (1.5): two a side, and all 4 on one side is 2 x (1/2)^4 less 4 x (1/4)^4: 0.125 - 4/256
    assert exact_sign_rate(skewed, draws=4, level=0.2) == pytest.approx(2 / 16 - 4 / 256, rel=1e-12)
    # the simulation (`null_rate`) agrees within its noise: 40,000 draws, se sqrt(0.3047 x 0.6953 / 40000) = 0.0023
    simulated = null_rate([skewed], family_size=1, test="sign-mean", draws=40_000, alpha=0.2)
    assert simulated == pytest.approx(78 / 256, abs=4 * 0.0023)
    # ties at the median (accuracies tie): 9 effects, 3 of them at the median, at 0.05
    tied = [-0.03, -0.02, -0.01, 0.0, 0.0, 0.0, 0.01, 0.02, 0.04]
    exact = exact_sign_rate(tied, level=0.05)
    simulated = resampling.null_rate_by_test([tied], family_size=1, test="sign", draws=40_000)[0]
    assert 0.0 < exact < 0.05 and simulated == pytest.approx(exact, abs=0.005)
    with pytest.raises(ValueError, match="center='middle' is not supported"):
        exact_sign_rate(five, center="middle")
    # Hoeffding at 0.05 / 12 on 16 seeds: 2 x sqrt(log(480) / 32) = 2 x sqrt(6.1738 / 32) = 0.8785
    assert hoeffding_half_width(16, 0.05 / 12) == pytest.approx(0.8785, abs=1e-4)


def test_the_sign_test_holds_its_level_under_a_skewed_resampled_null():
    # the headline's GRPO contrast as version 3.0 ran it (`lab/results/v3.0/summary.json`): 16 seeds, one far above the
    # others (seed 6, where GRPO fell to 0.402).
    # Centred on the mean, most resamples miss that seed (36% of them hold it not at all) and the rest lie on one
    # side: a test of the mean says "effect" in about a fifth of labs. Centred on the median (the sign test's null),
    # each resampled seed is positive with probability 8 / 16 = 1/2 exactly (no two effects tie at the median), so
    # the sign test's rate is the binomial one: P(at least 13 of 16 on one side) = 2 x 697 / 65536 = 0.0213 at the
    # level 0.05 / 2 (a family of 2; 12 of 16 gives 2 x 2517 / 65536 = 0.0768)
    effects = [0.00425, -0.03025, -0.01425, -0.006, 0.006, -0.013, 0.1495, 0.00125, -0.006, 0.01425, -0.01475, 0.022,
               0.00075, 0.01725, 0.00225, -0.02675]
    # 9 positive, 7 negative; the median (0.00075 + 0.00125) / 2 = 0.001 splits them 8 / 8
    assert len(effects) == 16 and sum(v > 0 for v in effects) == 9 and np.median(effects) == pytest.approx(0.001)
    median_rate = null_rate([effects], family_size=2, test="sign", draws=40_000)
    mean_rate = null_rate([effects], family_size=2, test="sign-flip", draws=40_000)
    # binomial standard error at 40,000 draws: sqrt(0.0213 x 0.9787 / 40000) = 0.00072
    assert median_rate == pytest.approx(2 * 697 / 65536, abs=4 * 0.00072)
    assert mean_rate > 0.1 > 0.05 > median_rate
    # the vectorised sign test is `stats.sign_test`, row by row
    from trl_lite_lab.stats import sign_test

    rows = np.random.default_rng(3).choice([-0.02, -1e-13, 0.0, 0.01, 0.03], size=(200, 7))
    assert resampling._sign_p(rows) == pytest.approx([sign_test(r) if np.ptp(r) > 0 else 1.0 for r in rows], abs=1e-15)


def test_a_far_off_seed_makes_the_resampled_null_rate_under_either_test():
    # like version 2's headline vs GRPO: +0.15 on one seed where nine lie within 0.03 of 0; a six-seed test; an
    # equivalence test; a family of 12
    far = [0.004, -0.03, -0.014, -0.006, 0.006, -0.013, 0.15, 0.001, -0.006, 0.014]
    summary = _summary(12, [{"name": "far", "per_seed": far, "verdict": "inconclusive"},
                            {"name": "six", "per_seed": [0.019, 0.038, 0.017, -0.085, 0.023, 0.033],
                             "verdict": "inconclusive"},
                            {"name": "eq", "per_seed": [0.01, -0.02, 0.0], "margin": 0.03, "verdict": "inconclusive"}])
    assert max(far) > 0.1 and sorted(abs(v) for v in far)[-2] < 0.035
    result = resampling.reanalysis(summary, draws=2_000)
    rows = {r["name"]: r for r in result["tests"]}
    # under the resampled null the t-tests give a wrong directional verdict in far more than 5% of labs (computed:
    # 0.399); the sign-flip test on six seeds never does (family of 12: 9 seeds needed, 2 / 512 < 0.05 / 12 <
    # 2 / 256); on ten seeds with the far-off one it does, about a quarter of the time (computed: 0.2405)
    assert result["null_rate"]["t"] > 0.3 and result["seeds_needed"] == 9
    assert rows["six"]["null_rate_sign-flip"] == 0.0 and not rows["six"]["can_reject"]
    assert rows["far"]["can_reject"] and rows["far"]["null_rate_sign-flip"] > 0.15
    assert result["null_rate"]["sign-flip"] == rows["far"]["null_rate_sign-flip"]  # the only test that can reject


def test_committed_page_is_what_the_command_writes(tmp_path):
    out = tmp_path / "null.md"
    done = subprocess.run([sys.executable, "-m", "trl_lite_lab", "null", "--summary", "lab/results/summary.json",
                           "--draws", "20000", "--seed", "0", "--output", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert out.read_text() == open(os.path.join(ROOT, "lab", "results", "null.md"), encoding="utf-8").read()
    # null.json: every value the committed file holds, as the command computes it now (the committed file predates
    # version 3's t_adjusted_p, which the command adds; the t-test's p-value is recomputed from the per-seed effects,
    # a rounding apart from the one the summary recorded)
    written = json.loads((tmp_path / "null.json").read_text())
    committed = json.load(open(os.path.join(ROOT, "lab", "results", "null.json"), encoding="utf-8"))
    assert {k: v for k, v in written.items() if k != "tests"} == {k: v for k, v in committed.items() if k != "tests"}
    assert [r["name"] for r in written["tests"]] == [r["name"] for r in committed["tests"]]
    for now, then in zip(written["tests"], committed["tests"]):
        for key, value in then.items():
            assert now[key] == (pytest.approx(value, rel=1e-12, abs=1e-15) if isinstance(value, float) else value), (
                then["name"], key)
        assert {"t_adjusted_p", "t_verdict", "sign_flip_adjusted_p", "sign_flip_verdict", "sign_p", "sign_verdict"} <= set(now)


def test_more_seeds_under_the_metric_as_fixed(results_script):
    """`lab/results/null_seeds.py`: the committed family with every directional test given n seeds from its observed
    shape. At n = 16 no test gains a seed (16 is the fewest any has), so its rates are `trl-lite-lab null`'s exactly
    (the same draws); and the committed reading (`null_seeds.json`) is what the script computes now."""
    results = os.path.join(ROOT, "lab", "results")
    module = results_script("null_seeds")
    committed_null = json.load(open(os.path.join(results, "null.json"), encoding="utf-8"))
    committed = json.load(open(os.path.join(results, "null_seeds.json"), encoding="utf-8"))
    summary = os.path.join(results, "summary.json")
    at_16 = module.reading(summary, seeds=(16,))
    assert min(at_16["own_seeds"].values()) == 16
    assert at_16["rows"][0]["family"] == committed_null["null_rate"]
    assert committed["rows"][0] == at_16["rows"][0]
    # an exact test rejects with probability alpha / m at Holm's first step; since clip scaling's version 3.3 reported
    # (2026-11-29, tenth session) all 12 directional tests of the family of 12 are tested:
    # 1 - (1 - 0.05 / 12)^12 = 1 - 0.99583^12 = 1 - 0.95113 = 0.04887
    assert len(at_16["directional"]) == 12
    assert at_16["exact_reference"] == pytest.approx(0.04887, abs=5e-6) == committed["exact_reference"]
    # the largest count, remade: the committed figures are the script's
    at_256 = module.reading(summary, seeds=(256,))
    assert at_256["rows"][0] == committed["rows"][-1] and committed["rows"][-1]["seeds"] == 256
    # the claims the write-up makes from it: at no count drawn, 256 seeds per test included, does either test of the
    # mean meet the goal (at most 5%); the headline's GRPO contrast is the largest single share at 256
    for row in committed["rows"]:
        assert min(row["family"]["t"], row["family"]["sign-flip"]) > 0.05, row["seeds"]
    shares = at_256["rows"][0]["by_test"]["sign-flip"]
    assert max(shares, key=shares.get) == "headline vs GRPO"
    # the sign test computed exactly: at 16 seeds as `trl-lite-lab null`; on its own null at most its level at every
    # count (every test here has an even count and no effect at its median, so these are binomial sizes), on the mean's
    # above the goal at every count; the simulated figures within 4 standard errors of the exact ones
    # (sqrt(0.05 x 0.95 / 20000) = 0.0015)
    assert committed["rows"][0]["family_exact"] == pytest.approx(committed_null["exact_null_rate"], rel=1e-12)
    for row in committed["rows"]:
        assert row["family_exact"]["sign"] < at_16["exact_reference"] < 0.05 < row["family_exact"]["sign-mean"]
        assert row["family"]["sign"] == pytest.approx(row["family_exact"]["sign"], abs=4 * 0.0015)


def test_fairness_reading_by_hand_and_the_committed_one(tmp_path, results_script):
    """`lab/results/fairness.py`: the chance that an experiment comes out "reproduced" at a true effect, with the sign
    test at Holm's first step and the seeds' own spread."""
    fairness = results_script("fairness")
    # tight: 16 effects 0.000, 0.001, ..., 0.015; centred on their median (0.0075) they lie within 0.0075 of 0, so
    # shifted by 0.025 every resampled seed is positive: p = 2 / 2^16 = 3.1e-5 < 0.05 / 12 in every draw.
    # wide: 8 effects at +1 and 8 at -1 (median 0); shifted by 0.025 a resampled seed is positive with probability
    # 1/2, and the sign test needs 15 of 16 on one side: P(at least 15 of 16 positive) = 17 / 65536 = 0.00026.
    # The experiment holding both tests is "reproduced" only when both pass: as rarely as the wide one.
    tight = [i / 1000 for i in range(16)]
    wide = [1.0] * 8 + [-1.0] * 8
    summary = {"alpha": 0.05, "family_size": 12, "takeaways": [
        {"id": "X", "verdict": "inconclusive", "tests": [
            {"name": "tight", "per_seed": tight, "verdict": "inconclusive"},
            {"name": "wide", "per_seed": wide, "verdict": "inconclusive"},
            {"name": "eq", "per_seed": wide, "margin": 0.03, "verdict": "inconclusive"}]},
        {"id": "untested", "verdict": "untestable", "tests": []}]}
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(summary))
    result = fairness.reading(str(path), deltas=(0.025,), draws=20_000)
    (row,) = result["experiments"]  # no test, no row; the equivalence test is left out
    at = row["by_delta"]["0.025"]
    assert row["tests"] == ["tight", "wide"] and at["each"]["tight"] == 1.0
    # binomial standard error at 20,000 draws: sqrt(0.00026 / 20000) = 0.00011
    assert at["each"]["wide"] == pytest.approx(17 / 65536, abs=5 * 0.00011) and at["reproduced"] <= at["each"]["wide"]
    # more seeds (at a true +0.05) only beyond the experiment's own 16; the wide test's seeds stay a coin flip, so
    # still rare: at 32 seeds p < 0.05 / 12 needs 25 or more on one side (2 x P(Bin(32, 1/2) >= 25) = 0.0021), and
    # on the claim's side P(Bin(32, 1/2) >= 25) = 0.00105 (standard error at 20,000 draws 0.00023)
    assert sorted(row["more_seeds"], key=int) == ["32", "64", "96", "128"] and row["more_seeds"]["32"] < 0.003
    # the claim's direction: shifted the other way (-0.025) every resampled seed of the tight test is negative, so the
    # sign test's p is as small as it gets (3.1e-5) but the median is on the wrong side: never "reproduced"
    against = fairness.reading(str(path), deltas=(-0.025,), draws=2_000, more_seeds=())
    assert against["experiments"][0]["by_delta"]["-0.025"]["each"]["tight"] == 0.0
    # an experiment's tests are drawn on the same seeds: two copies of the wide test pass together, so the experiment
    # is "reproduced" exactly as often as either (drawn apart, both would pass in about 0.00026^2 of labs, i.e. never)
    twin = {"alpha": 0.05, "family_size": 12, "takeaways": [{"id": "Y", "verdict": "inconclusive", "tests": [
        {"name": "a", "per_seed": wide, "verdict": "inconclusive"},
        {"name": "b", "per_seed": wide, "verdict": "inconclusive"}]}]}
    (tmp_path / "twin.json").write_text(json.dumps(twin))
    both = fairness.reading(str(tmp_path / "twin.json"), deltas=(0.025,), draws=200_000, more_seeds=())
    pair = both["experiments"][0]["by_delta"]["0.025"]
    # 200,000 x 17 / 65536 = 52 expected draws in which both pass
    assert pair["reproduced"] == pair["each"]["a"] == pair["each"]["b"] > 0.0
    assert both["experiments"][0]["lowest_centred"] == {"a": -1.0, "b": -1.0}
    # the committed reading is what the script computes from the committed summary
    committed = json.load(open(os.path.join(ROOT, "lab", "results", "fairness.json"), encoding="utf-8"))
    remade = fairness.reading(os.path.join(ROOT, "lab", "results", "summary.json"))
    assert {k: v for k, v in committed.items() if k != "made_by"} == remade
