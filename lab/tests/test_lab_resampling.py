"""The version 3 statistics (`trl_lite_lab.resampling`): the exact sign-flip test, near-ties, the seeds a family needs,
and the resampled-null rate; and the committed page (`lab/results/null.md`) is what `trl-lite-lab null` writes."""

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


def test_committed_page_is_what_the_command_writes(tmp_path):
    out = tmp_path / "null.md"
    done = subprocess.run([sys.executable, "-m", "trl_lite_lab", "null", "--summary", "lab/results/summary.json",
                           "--draws", "20000", "--seed", "0", "--output", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert out.read_text() == open(os.path.join(ROOT, "lab", "results", "null.md"), encoding="utf-8").read()
    assert json.loads((tmp_path / "null.json").read_text()) == json.load(
        open(os.path.join(ROOT, "lab", "results", "null.json"), encoding="utf-8"))
    summary = json.load(open(os.path.join(ROOT, "lab", "results", "summary.json"), encoding="utf-8"))
    result = resampling.reanalysis(summary, draws=2_000)
    rows = {r["name"]: r for r in result["tests"]}
    # under the resampled null the t-tests give a wrong directional verdict in far more than 5% of labs; a sign-flip
    # test with fewer seeds than the family needs never does; one with a far-off seed (the headline vs GRPO: +0.15
    # where nine seeds lie within 0.03 of 0) does, about a quarter of the time
    assert result["null_rate"]["t"] > 0.2 and result["seeds_needed"] == 9  # family of 12: 2/512 < 0.05/12 < 2/256
    assert all(r["null_rate_sign-flip"] == 0.0 for r in rows.values() if r["n"] < 9)
    (grpo,) = [t["per_seed"] for e in summary["takeaways"] for t in e["tests"] if t["name"] == "headline vs GRPO"]
    assert max(grpo) > 0.1 and sorted(abs(v) for v in grpo)[-2] < 0.035
    assert rows["headline vs GRPO"]["null_rate_sign-flip"] > 0.15
