"""The lab's plain-number helpers, apart from `measure.py` so that the experiments' definitions and the report (and
so `trl-lite-lab list` and `--help`) load without torch.

Besides [`mean`], this module is the lab's verdict engine: pure functions from per-seed paired effects (positive = the
paper's direction) to a verdict. Each primary test (version 3.1, issue 38) is an exact two-sided sign test of the
median effect over seeds ([`paired_test`], [`sign_test`]): does the trick win on more seeds than chance allows? Its
error rate rests on no shape of the effects, and one outlying seed cannot make or unmake a verdict; effects within float
noise of zero are ties, left out ([`near_ties`]). Version 3.0's sign-flip test of the mean ([`sign_flip`]) and version
2's one-sample t-test ([`t_test`]) stay for the reanalysis (`trl_lite_lab.resampling`); the t-test still gives the
descriptive 95% intervals of the mean. The tests of one lab run form a family whose p-values are Holm-adjusted
([`holm`]) so that the chance of any wrong directional verdict in a run is at most [`ALPHA`]; a test that is not
significant is stated with the smallest effect it could have found ([`detectable_effect`]: the sign test's, for normal
per-seed effects, or none where a sign test on that few seeds cannot reach the level), so "inconclusive" says how
large an effect was ruled out. [`family`] puts these together into the rows the report prints. [`equivalence`] (TOST)
is for claims that two settings do *not* differ.

NumPy and scipy are imported on first use, not here: `experiments.py` and `report.py` import [`mean`], and
`trl-lite-lab list` should not pay scipy.stats' second of import time.
"""

from __future__ import annotations

import functools
import math
import reprlib
from dataclasses import dataclass

ALPHA = 0.05  # family-wise error rate of one lab run
POWER = 0.8  # power at which the minimum detectable effect is stated

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"

# Short reprs in error messages: a metric that came back as a long list or a model output should not flood the log
_repr = reprlib.Repr()
_repr.maxstring = 60
_repr.maxother = 60


def mean(values) -> float:
    """Mean of the values that are present (None and NaN left out); NaN when none is."""
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(values) / len(values) if values else float("nan")


class MetricError(ValueError):
    """A metric is missing or not finite: an error, never a verdict."""


def finite(name: str, value) -> float:
    """
    Checks that a metric is a finite number.

    Args:
        name (`str`):
            What the value is (e.g. `"accuracy[seed 3]"`), used in the error message.
        value:
            The metric: an `int`, a `float`, or a number-like scalar (NumPy scalar, 0-d array or tensor).

    Returns:
        `float`: `float(value)`.

    Raises:
        [`MetricError`]: if `value` is `None` (the metric is missing), NaN, infinite, a string, a boolean, or anything
            `float()` does not take.
    """
    # Strings are refused although float("0.5") works: a metric that arrives as text was read from the wrong place.
    # Booleans are refused although they are ints: a True/False where a number belongs is a bug upstream.
    dtype_kind = getattr(getattr(value, "dtype", None), "kind", None)
    if value is None:
        raise MetricError(f"{name} is missing (None); expected a finite number (int or float)")
    if isinstance(value, (bool, str, bytes, bytearray)) or dtype_kind == "b":
        raise MetricError(f"{name} must be a finite number (int or float); got {_repr.repr(value)} "
                          f"({type(value).__name__})")
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError) as error:
        raise MetricError(f"{name} must be a finite number (int or float); got {_repr.repr(value)} "
                          f"({type(value).__name__})") from error
    if not math.isfinite(number):
        raise MetricError(f"{name} must be a finite number (int or float); got {number!r}")
    return number


def _probability(name: str, value) -> float:
    number = finite(name, value)
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1]; got {number!r}")
    return number


def _level(name: str, value) -> float:
    number = finite(name, value)
    if not 0.0 < number < 1.0:
        raise ValueError(f"{name} must be in (0, 1), exclusive; got {number!r}")
    return number


def _count(name: str, value, least: int) -> int:
    # bool is an int, but `n=True` is a bug, not one seed
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be an integer >= {least}; got {value!r}")
    return value


def _summary(name: str, per_seed) -> tuple[tuple[float, ...], float, float]:
    """The checked values, their mean and their standard deviation (ddof=1), exactly 0.0 when all values are equal."""
    values = tuple(finite(f"{name}[seed {i}]", v) for i, v in enumerate(per_seed))
    if len(values) < 2:
        raise ValueError(f"{name}: a t-test needs at least 2 seeds (its standard deviation is undefined with fewer); "
                         f"got {len(values)}: {list(values)}")
    if all(v == values[0] for v in values):
        # Exact, not computed: fsum(values) / n can be off by one ulp (three 0.1s), which would leave a sd of 1e-17 and
        # a t statistic of 1e16 instead of the defined constant-effect case.
        return values, values[0], 0.0
    center = math.fsum(values) / len(values)
    sd = math.sqrt(math.fsum((v - center) ** 2 for v in values) / (len(values) - 1))
    return values, center, sd


@dataclass(frozen=True)
class Test:
    """
    One primary test on per-seed paired effects (positive = the paper's direction).

    Args:
        name (`str`):
            The test's name, unique within its family.
        per_seed (`tuple[float, ...]`):
            The paired effect of each seed (treatment minus control on the same seed).
        mean (`float`):
            Mean of `per_seed`.
        interval (`tuple[float, float]`):
            95% two-sided t-interval of the mean, not adjusted for multiplicity.
        p_value (`float`):
            The test's two-sided p-value, raw (before Holm): [`paired_test`]'s sign test of median == 0, or
            [`t_test`]'s of mean == 0.
        sd (`float`):
            Per-seed standard deviation (ddof=1).
        location (`float`, *optional*):
            What the test is about, whose sign the verdict reads: the median of `per_seed` for [`paired_test`]; None
            (the default) means the mean ([`t_test`]).
    """

    name: str
    per_seed: tuple[float, ...]
    mean: float
    interval: tuple[float, float]
    p_value: float
    sd: float
    location: float | None = None

    @property
    def center(self) -> float:
        """The value whose sign the verdict reads: `location`, or the mean where it is None."""
        return self.mean if self.location is None else self.location


def t_test(name: str, per_seed: list[float]) -> Test:
    """
    Two-sided one-sample t-test of mean == 0 on per-seed paired effects.

    Args:
        name (`str`):
            The test's name; also names the offending seed in errors (`f"{name}[seed {i}]"`).
        per_seed (`list[float]`):
            The paired effect of each seed, at least 2.

    Returns:
        [`Test`]: the mean, its 95% t-interval, the raw p-value and the standard deviation. When all seeds agree
        (sd == 0) the t statistic is undefined and there is no spread to test against: p-value 1.0 (inconclusive,
        whatever the mean: a constant effect is a measure that cannot vary, not evidence) and interval (mean, mean).

    Raises:
        [`MetricError`]: if a value is missing or not finite.
        `ValueError`: if there are fewer than 2 seeds.
    """
    from scipy import stats

    values, center, sd = _summary(name, per_seed)
    if sd == 0.0:
        return Test(name, values, center, (center, center), 1.0, 0.0)
    n = len(values)
    se = sd / math.sqrt(n)
    half = float(stats.t.ppf(1.0 - ALPHA / 2.0, n - 1)) * se
    p_value = min(1.0, float(2.0 * stats.t.sf(abs(center) / se, n - 1)))
    return Test(name, values, center, (center - half, center + half), p_value, sd)


NOISE = 1e-12  # |effect| below this is float noise: a difference of accuracies is a multiple of 1 / (problems x samples)
EXACT_SEEDS = 20  # up to this many seeds every sign pattern is enumerated (2^20 patterns)
DRAWS = 100_000  # random sign patterns beyond EXACT_SEEDS


def near_ties(per_seed, noise: float = NOISE):
    """The per-seed effects as a float64 array, each within `noise` of zero set to 0.0."""
    import numpy as np

    values = np.array([finite(f"per_seed[{i}]", v) for i, v in enumerate(per_seed)], dtype=np.float64)
    values[np.abs(values) < noise] = 0.0
    return values


def smallest_p(n: int) -> float:
    """The smallest two-sided p-value a sign test (or a sign-flip test) on `n` seeds can give: every seed on one side,
    2 of 2^n."""
    return min(1.0, 2.0 / 2.0 ** n)


def seeds_needed(m: int, alpha: float = ALPHA) -> int:
    """The fewest seeds with which a sign test (or a sign-flip test) can pass Holm's first step (p < alpha / m) in a
    family of `m`."""
    n = 1
    while smallest_p(n) >= alpha / m:
        n += 1
    return n


def _patterns(n: int, draws: int, seed: int):
    """Sign patterns (rows of +-1): all 2^n up to `EXACT_SEEDS`, else `draws` random ones."""
    import numpy as np

    if n <= EXACT_SEEDS:
        bits = (np.arange(2 ** n)[:, None] >> np.arange(n)[None, :]) & 1
        return 1.0 - 2.0 * bits
    return np.random.default_rng(seed).choice([-1.0, 1.0], size=(draws, n))


def _sign_flip_p(samples, patterns, exact: bool):
    """Two-sided sign-flip p-values of the rows of `samples` (one test each), against `patterns` (NumPy arrays)."""
    import numpy as np

    observed = np.abs(samples.sum(axis=1))
    extreme = np.empty(len(samples))
    rows = max(1, 4_000_000 // len(patterns))  # about 32 MB of flipped sums at a time
    for start in range(0, len(samples), rows):
        flipped = np.abs(samples[start:start + rows] @ patterns.T)  # rows: tests; columns: patterns
        # at least as extreme, with room for the rounding of a re-ordered sum: ties count against the effect
        extreme[start:start + rows] = (flipped >= observed[start:start + rows, None] * (1 - 1e-9) - NOISE).sum(axis=1)
    p = extreme / len(patterns) if exact else (extreme + 1) / (len(patterns) + 1)
    p[observed < NOISE] = 1.0  # a mean of 0 is no evidence either way
    return np.minimum(p, 1.0)


def sign_flip(per_seed, draws: int = DRAWS, seed: int = 0) -> float:
    """
    Exact two-sided sign-flip permutation test of mean == 0 on per-seed paired effects.

    Args:
        per_seed (`list[float]`):
            The paired effect of each seed, at least 1; each within `NOISE` of zero counts as 0.
        draws (`int`, *optional*, defaults to `DRAWS`):
            Random sign patterns when there are more than `EXACT_SEEDS` seeds.
        seed (`int`, *optional*, defaults to `0`):
            Seed of those random patterns.

    Returns:
        `float`: the share of sign patterns whose mean is at least as far from 0 as the observed one (every pattern
        up to `EXACT_SEEDS` seeds, the observed one and its negation included, so at least `smallest_p(n)`); beyond,
        (1 + that count) / (1 + draws). 1.0 when the mean is 0.
    """
    values = near_ties(per_seed)
    if len(values) < 1:
        raise ValueError("a sign-flip test needs at least 1 seed; got none")
    exact = len(values) <= EXACT_SEEDS
    return float(_sign_flip_p(values[None, :], _patterns(len(values), draws, seed), exact)[0])


def sign_test(per_seed) -> float:
    """
    Exact two-sided sign test of median == 0 on per-seed paired effects.

    Args:
        per_seed (`list[float]`):
            The paired effect of each seed; each within `NOISE` of zero is a tie and is left out.

    Returns:
        `float`: with n seeds that are not ties, k of them on the rarer side: 2 P(Binomial(n, 1/2) <= k), capped at 1
        (at least `smallest_p(n)`); 1.0 when every seed is a tie. E.g. 11 of 12 seeds positive: 2 x (1 + 12) / 4096 =
        0.0063.
    """
    values = near_ties(per_seed)
    positive, negative = int((values > 0).sum()), int((values < 0).sum())
    n = positive + negative
    if n == 0:
        return 1.0
    rare = min(positive, negative)
    return min(1.0, 2.0 * math.fsum(math.comb(n, k) for k in range(rare + 1)) / 2.0 ** n)


def paired_test(name: str, per_seed: list[float]) -> Test:
    """
    The verdicts' primary test (version 3.1): an exact two-sided sign test of median == 0 on per-seed paired effects,
    each within `NOISE` of zero a tie (counted as 0, left out of the test).

    Args:
        name (`str`):
            The test's name; also names the offending seed in errors (`f"{name}[seed {i}]"`).
        per_seed (`list[float]`):
            The paired effect of each seed, at least 2.

    Returns:
        [`Test`]: the mean and sd of the effects (ties zeroed), their 95% t-interval (descriptive: the verdict does not
        read it), the median (`location`, whose sign the verdict reads) and the sign test's p-value ([`sign_test`]),
        whose error rate rests on no shape of the effects. All seeds equal (no spread) gives p = 1, as in [`t_test`]:
        a constant effect is not evidence.

    Raises:
        [`MetricError`]: if a value is missing or not finite.
        `ValueError`: if there are fewer than 2 seeds.
    """
    import numpy as np

    values = [float(v) for v in near_ties([finite(f"{name}[seed {i}]", v) for i, v in enumerate(per_seed)])]
    described = t_test(name, values)
    p_value = 1.0 if described.sd == 0.0 else sign_test(values)
    return Test(name, described.per_seed, described.mean, described.interval, p_value, described.sd,
                float(np.median(values)))


def holm(p_values: dict[str, float]) -> dict[str, float]:
    """
    Holm-Bonferroni adjusted p-values.

    The i-th smallest of m p-values is multiplied by (m - i + 1), then made non-decreasing along the sorted order
    (step-down: a hypothesis is rejected only if every smaller one is) and capped at 1. Rejecting where the adjusted
    p-value is below alpha keeps the family-wise error rate at alpha, whatever the dependence between the tests.

    Args:
        p_values (`dict[str, float]`):
            Raw p-values by test name.

    Returns:
        `dict[str, float]`: the adjusted p-values, with the same keys in the same order.

    Raises:
        `ValueError`: if a p-value is not a probability ([`MetricError`] if it is missing or not finite).
    """
    checked = {name: _probability(f"p_values[{name!r}]", p) for name, p in p_values.items()}
    order = sorted(checked, key=checked.__getitem__)  # stable: tied p-values keep their input order
    count = len(order)
    adjusted, running = {}, 0.0
    for i, name in enumerate(order):
        running = max(running, min(1.0, (count - i) * checked[name]))
        adjusted[name] = running
    return {name: adjusted[name] for name in checked}


@functools.lru_cache(maxsize=256)
def _noncentrality(df: int, level: float, power: float) -> float:
    """The noncentrality at which a two-sided t-test with `df` degrees of freedom at `level` has `power`."""
    from scipy import optimize, stats

    critical = float(stats.t.ppf(1.0 - level / 2.0, df))

    def shortfall(nc: float) -> float:
        # Both tails: a two-sided test also "detects" an effect when T lands far on the wrong side; small, but it is
        # what P(|T| > t_crit) means
        wrong_side = float(stats.nct.cdf(-critical, df, nc))
        if math.isnan(wrong_side):
            # scipy's nct.cdf returns NaN far in the left tail (seen from nc ~ 5.5 on); there the true value is below
            # P(T < 0) = Phi(-nc) < 1e-7, nothing next to a power of 0.8
            wrong_side = 0.0
        return float(stats.nct.sf(critical, df, nc)) + wrong_side - power

    # shortfall(0) = level - power < 0 (checked by the caller); power grows with nc, so double until it is reached
    high = critical + 1.0
    while shortfall(high) < 0.0:
        high *= 2.0
    return float(optimize.brentq(shortfall, 0.0, high, xtol=1e-12, rtol=1e-12))


def mde(sd: float, n: int, m: int = 1, alpha: float = ALPHA, power: float = POWER) -> float:
    """
    Minimum detectable effect of a two-sided one-sample t-test.

    The smallest true mean effect that a two-sided one-sample t-test on `n` seeds detects with probability `power` at
    level `alpha / m`: the strictest Holm step, so the statement holds whatever the family's other tests do. Solved
    exactly with the noncentral t distribution: delta such that P(|T| > t_crit) = power, with
    T ~ nct(df=n-1, nc=delta * sqrt(n) / sd).

    Args:
        sd (`float`):
            Per-seed standard deviation of the effect (the test's own, or a planning guess).
        n (`int`):
            Number of seeds, at least 2.
        m (`int`, *optional*, defaults to `1`):
            Number of tests in the Holm family.
        alpha (`float`, *optional*, defaults to `ALPHA`):
            Family-wise error rate.
        power (`float`, *optional*, defaults to `POWER`):
            Probability of detecting the effect; must exceed `alpha / m` (the rate at which a null effect is
            "detected").

    Returns:
        `float`: the effect, in the effect's units; 0.0 when `sd` is 0 (any nonzero effect is detected).
    """
    sd = finite("sd", sd)
    if sd < 0.0:
        raise ValueError(f"sd must be >= 0; got {sd!r}")
    n = _count("n", n, 2)
    m = _count("m", m, 1)
    alpha = _level("alpha", alpha)
    power = _level("power", power)
    if power <= alpha / m:
        raise ValueError(f"power must exceed the test's level alpha / m = {alpha / m!r} (a null effect is detected "
                         f"that often); got {power!r}")
    if sd == 0.0:
        return 0.0
    # nc = delta * sqrt(n) / sd, so the effect is linear in sd: solve once per (n, level, power), then scale
    return sd * _noncentrality(n - 1, alpha / m, power) / math.sqrt(n)


def sign_test_power(win: float, n: int, level: float) -> float:
    """The power of a two-sided [`sign_test`] on `n` seeds at `level` when each seed favours the trick with probability
    `win` (no ties): P(Binomial(n, win) >= k) + P(Binomial(n, win) <= n - k), k the fewest seeds on one side that give
    p < level (0.0 where none does)."""
    from scipy import stats

    k = next((k for k in range((n + 1) // 2, n + 1) if 2.0 * stats.binom.sf(k - 1, n, 0.5) < level), None)
    if k is None:
        return 0.0
    return float(stats.binom.sf(k - 1, n, win) + stats.binom.cdf(n - k, n, win))


def detectable_effect(sd: float, n: int, m: int = 1, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest mean effect the sign test ([`paired_test`]) on `n` seeds detects with `power` at level `alpha / m`
    when the per-seed effects are normal with standard deviation `sd` (a planning figure: the test itself assumes no
    shape): `sd` x the normal quantile of the smallest win probability with that power ([`sign_test_power`]).
    Infinity where a sign test on `n` seeds cannot reach the level at all (its smallest p-value, 2 / 2^n, is not below
    `alpha / m`: [`seeds_needed`]); 0.0 for `sd == 0` at a reachable level."""
    from scipy import optimize, stats

    sd = finite("sd", sd)
    if sd < 0.0:
        raise ValueError(f"sd must be >= 0; got {sd!r}")
    n, m = _count("n", n, 2), _count("m", m, 1)
    level = _level("alpha", alpha) / m
    power = _level("power", power)
    if smallest_p(n) >= level:
        return float("inf")
    if sd == 0.0:
        return 0.0
    if sign_test_power(1.0 - 1e-15, n, level) < power:
        return float("inf")
    win = optimize.brentq(lambda q: sign_test_power(q, n, level) - power, 0.5, 1.0 - 1e-15, xtol=1e-12)
    return sd * float(stats.norm.ppf(win))


def verdict(test: Test, adjusted_p: float, alpha: float = ALPHA) -> str:
    """
    The verdict of one test.

    Args:
        test ([`Test`]):
            The test; only the sign of its `center` (the median for [`paired_test`], the mean for [`t_test`]) is
            read.
        adjusted_p (`float`):
            Its p-value, Holm-adjusted over the family (or raw, for a raw verdict).
        alpha (`float`, *optional*, defaults to `ALPHA`):
            Family-wise error rate.

    Returns:
        `str`: `"reproduced"` if `adjusted_p < alpha` and the center is positive (the paper's direction),
        `"not reproduced"` if `adjusted_p < alpha` and it is negative (the opposite, established), else
        `"inconclusive"` (an effect of either sign is not established).
    """
    return direction(test.center, adjusted_p, alpha)


def direction(effect: float, adjusted_p: float, alpha: float = ALPHA) -> str:
    """[`verdict`]'s rule on an `effect` (the tested center: a median or a mean) and its adjusted p-value."""
    adjusted_p = _probability("adjusted_p", adjusted_p)
    alpha = _level("alpha", alpha)
    if adjusted_p < alpha and effect > 0.0:
        return REPRODUCED
    if adjusted_p < alpha and effect < 0.0:
        return NOT_REPRODUCED
    return INCONCLUSIVE


@dataclass(frozen=True)
class Equivalence:
    """
    A TOST equivalence test: is the true mean effect within (-margin, margin)?

    Args:
        name (`str`):
            The test's name.
        margin (`float`):
            The equivalence margin, > 0, in the effect's units.
        interval90 (`tuple[float, float]`):
            The (1 - 2 * alpha) two-sided t-interval of the mean (90% at alpha = 0.05).
        p_value (`float`):
            The larger of the two one-sided p-values.
        equivalent (`bool`):
            Whether `p_value < alpha`, i.e. `interval90` lies inside (-margin, margin).
        per_seed (`tuple[float, ...]`):
            The paired effect of each seed.
        mean (`float`):
            Mean of `per_seed`.
    """

    name: str
    margin: float
    interval90: tuple[float, float]
    p_value: float
    equivalent: bool
    per_seed: tuple[float, ...] = ()
    mean: float = float("nan")


def equivalence(name: str, per_seed: list[float], margin: float, alpha: float = ALPHA) -> Equivalence:
    """
    TOST (two one-sided t-tests) of |true mean| < margin.

    A non-significant t-test is not evidence of no effect; this is. The two one-sided tests reject mean <= -margin and
    mean >= margin; equivalence is claimed when both do at level alpha, so its p-value is the larger of the two.

    Args:
        name (`str`):
            The test's name; also names the offending seed in errors.
        per_seed (`list[float]`):
            The paired effect of each seed, at least 2.
        margin (`float`):
            The largest effect that counts as no effect, > 0, in the effect's units.
        alpha (`float`, *optional*, defaults to `ALPHA`):
            Level of each one-sided test.

    Returns:
        [`Equivalence`]. When all seeds agree (sd == 0) there is no spread to test against: p-value 1.0, not shown.

    Raises:
        [`MetricError`]: if a value or the margin is missing or not finite.
        `ValueError`: if `margin <= 0`, or there are fewer than 2 seeds.
    """
    from scipy import stats

    margin = finite("margin", margin)
    if margin <= 0.0:
        raise ValueError(f"margin must be > 0 (the largest effect that counts as none, in the effect's units); "
                         f"got {margin!r}")
    alpha = _level("alpha", alpha)
    if alpha >= 0.5:
        raise ValueError(f"alpha must be < 0.5 for an equivalence test (its interval is 1 - 2 * alpha); got {alpha!r}")
    values, center, sd = _summary(name, per_seed)
    if sd == 0.0:  # no spread: nothing to test against (see `t_test`)
        return Equivalence(name, margin, (center, center), 1.0, False, values, center)
    n = len(values)
    se = sd / math.sqrt(n)
    p_above = float(stats.t.sf((center + margin) / se, n - 1))  # H0: mean <= -margin
    p_below = float(stats.t.cdf((center - margin) / se, n - 1))  # H0: mean >= +margin
    p_value = max(p_above, p_below)
    half = float(stats.t.ppf(1.0 - alpha, n - 1)) * se
    return Equivalence(name, margin, (center - half, center + half), p_value, p_value < alpha, values, center)


def equivalence_margin(sd: float, n: int, m: int = 1, alpha: float = ALPHA, power: float = POWER) -> float:
    """
    The smallest margin a TOST on `n` seeds shows with probability about `power` when the true effect is 0, at level
    `alpha / m` (the strictest Holm step): `sd / sqrt(n) * (t_{1 - alpha/m, n-1} + t_{(1 + power)/2, n-1})`. An
    approximation (the sample sd is taken as known): the equivalence test's counterpart of `mde`.
    """
    from scipy import stats

    sd = finite("sd", sd)
    if sd < 0.0:
        raise ValueError(f"sd must be >= 0; got {sd!r}")
    n = _count("n", n, 2)
    m = _count("m", m, 1)
    level = _level("alpha", alpha) / m
    power = _level("power", power)
    return sd / math.sqrt(n) * float(stats.t.ppf(1.0 - level, n - 1) + stats.t.ppf((1.0 + power) / 2.0, n - 1))


def combine(verdicts: list[str]) -> str:
    """An experiment's verdict from its primary tests': reproduced when all are, not reproduced when one is (against
    the paper), else inconclusive."""
    if verdicts and all(v == REPRODUCED for v in verdicts):
        return REPRODUCED
    if NOT_REPRODUCED in verdicts:
        return NOT_REPRODUCED
    return INCONCLUSIVE


def _number(value: float, signed: bool = False) -> str:
    """3 decimals, as the report's effects (accuracies, rates) read; scientific only where that would print 0.000."""
    text = f"{value:+.3f}" if signed else f"{value:.3f}"
    if value != 0.0 and float(text) == 0.0:
        text = f"{value:+.2e}" if signed else f"{value:.2e}"
    return text


def family(tests: list[Test | Equivalence], alpha: float = ALPHA, untested: int = 0) -> list[dict]:
    """
    The verdicts of one lab run's primary tests, Holm-adjusted together.

    Args:
        tests (`list[Test | Equivalence]`):
            The family, with unique names. An equivalence test (where the paper claims no effect) enters the Holm
            adjustment with its TOST p-value; its verdict is "reproduced" when equivalence is shown at the adjusted
            level, else "inconclusive" (it has no "not reproduced": a failed TOST does not show an effect), and its
            `mde` is None (its margin is stated instead).
        alpha (`float`, *optional*, defaults to `ALPHA`):
            Family-wise error rate.
        untested (`int`, *optional*, defaults to `0`):
            Primary tests of the family that were not tested (an untestable experiment, one left out of this report):
            they enter the adjustment with p = 1, so the family, and each adjusted p-value, does not depend on which
            experiments a report names or which gates passed.

    Returns:
        `list[dict]`: one dict per test, in order, with keys `"name"`, `"mean"`, `"interval"` (`[lo, hi]`, the raw 95%
        t-interval), `"per_seed"` (list), `"p_value"` (raw), `"adjusted_p"` (Holm over this family), `"verdict"` (from
        the adjusted p-value), `"raw_verdict"` (from the raw p-value), `"mde"` (at level `alpha / len(tests)`, from
        the test's own sd and number of seeds), `"median"` (a sign test's; None for a t-test) and `"reads"`: one line,
        e.g. `"reproduced: +0.031 [+0.012, +0.050], median +0.029, 12 of 12 seeds positive, Holm-adjusted p = 0.004"`
        (the median and the count for a sign test only), or for an inconclusive t-test
        `"inconclusive: +0.004 [-0.011, +0.019] (95%, unadjusted), Holm-adjusted p = 1.000; an effect of 0.042 would
        have been detected with 80% power (a power statement, not a bound on the effect)"`.
        Numbers are printed with 3 decimals (scientific notation where that would print a nonzero value as 0.000).

    Raises:
        `ValueError`: if two tests share a name (Holm adjusts by name).
    """
    tests = list(tests)
    alpha = _level("alpha", alpha)
    names = [test.name for test in tests]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"tests must have unique names (the Holm adjustment is by name); repeated: {duplicates}")
    untested = _count("untested", untested, 0)
    padding = {f"\0untested {i}": 1.0 for i in range(untested)}
    adjusted = holm({**{test.name: test.p_value for test in tests}, **padding})
    size = len(tests) + untested
    rows = []
    for test in tests:
        adjusted_p = adjusted[test.name]
        if isinstance(test, Equivalence):
            rows.append(_equivalence_row(test, adjusted_p, alpha, size) if len(set(test.per_seed)) > 1 else {
                "name": test.name, "mean": test.mean, "interval": [test.mean, test.mean],
                "per_seed": list(test.per_seed), "p_value": 1.0, "adjusted_p": adjusted_p, "verdict": INCONCLUSIVE,
                "raw_verdict": INCONCLUSIVE, "mde": None, "margin": test.margin, "showable_margin": float("nan"),
                "reads": f"inconclusive (no spread: every seed gave {_number(test.mean, True)}; a test needs a "
                         "spread)"})
            continue
        decided = verdict(test, adjusted_p, alpha)
        detectable = _detectable(test, size, alpha)
        sides = _sides(test)
        if test.sd == 0.0:  # every seed gave the same effect: no spread to state a power from
            detectable = float("nan")
            reads = (f"{decided} (no spread: every seed gave {_number(test.mean, True)}; a test needs a spread, so "
                     f"a constant effect is not evidence and no power can be stated)")
        elif decided == INCONCLUSIVE:
            low, high = test.interval
            power_note = (f"an effect of {_number(detectable)} would have been detected with {POWER:.0%} power (a "
                          "power statement, not a bound on the effect)" if math.isfinite(detectable) else
                          f"no effect could have been detected: a sign test on {len(test.per_seed)} seeds gives "
                          f"p >= {_number(smallest_p(len(test.per_seed)))}, not below {alpha} / {size}")
            reads = (f"inconclusive: {_number(test.mean, True)} [{_number(low, True)}, {_number(high, True)}] (95%, "
                     f"unadjusted){sides}, Holm-adjusted p = {_number(adjusted_p)}; {power_note}")
        else:
            low, high = test.interval
            reads = (f"{decided}: {_number(test.mean, True)} [{_number(low, True)}, {_number(high, True)}]{sides}, "
                     f"Holm-adjusted p = {_number(adjusted_p)}")
        rows.append({
            "name": test.name,
            "mean": test.mean,
            "interval": [test.interval[0], test.interval[1]],
            "per_seed": list(test.per_seed),
            "p_value": test.p_value,
            "adjusted_p": adjusted_p,
            "verdict": decided,
            "raw_verdict": verdict(test, test.p_value, alpha),
            "mde": detectable,
            "median": test.location,
            "reads": reads,
        })
    return rows


def _detectable(test: Test, size: int, alpha: float) -> float:
    """A row's power statement: the sign test's [`detectable_effect`] for a sign test; for a t-test (version 2's
    records) its [`mde`], or infinity where a sign test on as many seeds could not reach the level (as version 3.0
    stated it)."""
    n = len(test.per_seed)
    if test.location is not None:
        return detectable_effect(test.sd, n, size, alpha)
    return float("inf") if smallest_p(n) >= alpha / size else mde(test.sd, n, size, alpha)


def _sides(test: Test) -> str:
    """", median +0.012, 11 of 12 seeds positive" for a sign test ([`paired_test`]); "" for a t-test."""
    if test.location is None:
        return ""
    values = near_ties(test.per_seed)
    positive, negative = int((values > 0).sum()), int((values < 0).sum())
    ties = len(values) - positive - negative
    return (f", median {_number(test.location, True)}, {positive} of {len(values)} seeds positive"
            + (f" ({negative} negative, {ties} tied)" if ties else ""))


def _equivalence_row(test: Equivalence, adjusted_p: float, alpha: float, size: int) -> dict:
    low, high = test.interval90
    shown = adjusted_p < alpha
    values = list(test.per_seed)
    center = math.fsum(values) / len(values)
    sd = math.sqrt(math.fsum((v - center) ** 2 for v in values) / (len(values) - 1))
    showable = equivalence_margin(sd, len(values), size, alpha)
    interval = f"unadjusted 90% interval [{_number(low, True)}, {_number(high, True)}]"
    reads = (f"{REPRODUCED}: within +-{_number(test.margin)} ({interval}), Holm-adjusted p = {_number(adjusted_p)}"
             if shown else f"{INCONCLUSIVE}: could not show an effect within +-{_number(test.margin)} ({interval}, "
                           f"Holm-adjusted p = {_number(adjusted_p)}); at this spread a margin of "
                           f"{_number(showable)} would be shown with {POWER:.0%} power")
    return {"name": test.name, "mean": test.mean, "interval": [low, high], "per_seed": list(test.per_seed),
            "p_value": test.p_value, "adjusted_p": adjusted_p, "verdict": REPRODUCED if shown else INCONCLUSIVE,
            "raw_verdict": REPRODUCED if test.p_value < alpha else INCONCLUSIVE, "mde": None, "margin": test.margin,
            "showable_margin": showable,
            "reads": reads}
