"""Tests whose error rate does not rest on normality at the lab's seed counts, and a family's wrong-direction rate
under a null resampled from its own observed effects (issue 38: the lab's version 3 statistics).

Version 2's verdicts used one-sample t-tests on 6-31 per-seed paired effects; their error rate holds when the effects
are normal, and at 6 seeds with one outlying seed it need not. Version 3.0 decided with the exact sign-flip test of the
mean; version 3.1 decides with the exact sign test of the median (`stats.paired_test`). This module measures all three:

- [`near_ties`]: an effect within float noise of zero (`NOISE`) is zero. An effect of -2.8e-17 is a rounding of 0, and
  a t-test on effects one float step apart gives p near 1e-80.
- [`sign_flip`]: the exact two-sided sign-flip permutation test of mean == 0 (version 3.0's). Exact when the per-seed
  effects are symmetric about 0 under the null.
- `stats.sign_test`: the exact two-sided sign test of median == 0 (version 3.1's): exact whenever each seed is as
  likely to fall on either side of 0, whatever the effects' shape.
- [`smallest_p`]: the smallest p-value either test on n seeds can give, 2 / 2^n. Holm's first step needs
  p < alpha / m, so a family of m tests needs n > log2(2m / alpha) seeds per test before any verdict is possible
  ([`seeds_needed`]: 10 tests at alpha 0.05 need 9).
- [`null_rate`]: the chance that a family of tests gives at least one directional verdict ("reproduced" or "not
  reproduced") when no effect is real, each test's seeds drawn with replacement from its own centred effects (the
  observed shape, outliers included). Centred on what the test is about: the mean for the t-test and the sign-flip
  test, the median for the sign test (a null of "no effect" is the test's own null: a mean of 0, or a median of 0).
  With Holm a directional verdict happens exactly when the smallest p-value is below alpha / m (m: the family's size,
  equivalence tests and untested experiments included).

`trl-lite-lab null` applies these to a committed `summary.json` and writes what they give (`lab/results/null.md`).
"""

from __future__ import annotations

import math

import numpy as np

from .stats import (  # the verdicts' own test (version 3): the lab's engine
    ALPHA,
    EXACT_SEEDS,
    NOISE,
    _patterns,
    _sign_flip_p,
    near_ties,
    seeds_needed,
    sign_flip,
    smallest_p,
)


def _t_p(samples: np.ndarray) -> np.ndarray:
    """Two-sided one-sample t-test p-values of the rows of `samples` (as `stats.t_test`: p = 1 without spread)."""
    from scipy import stats

    n = samples.shape[1]
    center = samples.mean(axis=1)
    sd = samples.std(axis=1, ddof=1)
    p = np.ones(len(samples))
    spread = sd > NOISE  # a resample of one repeated value has a rounding-level sd, not a spread
    t = np.abs(center[spread]) / (sd[spread] / math.sqrt(n))
    p[spread] = np.minimum(1.0, 2.0 * stats.t.sf(t, n - 1))
    return p


def _sign_p(samples: np.ndarray) -> np.ndarray:
    """Two-sided sign-test p-values of the rows of `samples` (as `stats.sign_test`: near-ties left out; p = 1 when
    every seed is a tie or every value is the same, as `stats.paired_test`)."""
    from scipy import stats

    positive = (samples >= NOISE).sum(axis=1)
    negative = (samples <= -NOISE).sum(axis=1)
    n = positive + negative
    p = np.minimum(1.0, 2.0 * stats.binom.cdf(np.minimum(positive, negative), np.maximum(n, 1), 0.5))
    p[n == 0] = 1.0
    p[np.ptp(samples, axis=1) == 0.0] = 1.0  # no spread: a constant effect is not evidence
    return p


# the sign test (version 3.1's) is centred on the median, the others on the mean; "sign-mean" is the sign test on the
# mean-centred null, for comparison (there the median is not 0, so a verdict in its direction is right about the median)
TESTS = ("t", "sign-flip", "sign", "sign-mean")


def null_rate(effects: list, family_size: int, test: str = "t", draws: int = 20_000, seed: int = 0,
              alpha: float = ALPHA, sign_draws: int = 4_000) -> float:
    """
    The family's chance of at least one directional verdict when no effect is real, resampled from the observed
    effects.

    Args:
        effects (`list[list[float]]`):
            Each directional test's per-seed effects (equivalence tests are left out: at a true 0 their
            "reproduced" is right).
        family_size (`int`):
            The Holm family's size m: these tests, the equivalence tests and the untested experiments' (p = 1).
        test (`str`, *optional*, defaults to `"t"`):
            `"t"` (version 2's t-test), `"sign-flip"` (version 3.0's), `"sign"` (version 3.1's sign test, whose
            null is centred on the median) or `"sign-mean"` (the sign test on the mean-centred null).
        draws (`int`, *optional*, defaults to `20_000`):
            Simulated labs.
        seed (`int`, *optional*, defaults to `0`):
            Seed of the resampling.
        alpha (`float`, *optional*, defaults to `ALPHA`):
            Family-wise level.
        sign_draws (`int`, *optional*, defaults to `4_000`):
            Random sign patterns for a test with more than `EXACT_SEEDS` seeds (the same patterns in every simulated
            lab).

    Returns:
        `float`: the share of simulated labs in which the smallest p-value is below alpha / family_size, which is when
        Holm makes at least one directional verdict. Each simulated lab draws every test's seeds (as many as it had)
        with replacement from that test's effects minus their mean (their median for `"sign"`).
    """
    if family_size < len(effects) or family_size < 1:
        raise ValueError(f"family_size must be at least the number of tests ({len(effects)}); got {family_size}")
    if not effects:  # no directional test: no directional verdict
        return 0.0
    return float(np.mean(_null_p(effects, test, draws, seed, sign_draws).min(axis=0) < alpha / family_size))


def exact_sign_rate(values, draws: int | None = None, center: str = "median", level: float = ALPHA) -> float:
    """
    The chance, computed exactly (no simulation), that the sign test rejects at `level` on `draws` seeds drawn with
    replacement from `values` centred on their median (or mean): [`null_rate`]'s `"sign"` (`"sign-mean"`) for one
    test, with its rules (near-ties left out; p = 1 when every draw is the same value).

    Each draw is positive, negative or a tie (at the centre) with the shares of the centred values; the count of each
    is multinomial, and the sign test reads only the first two. With no value at the median, a draw is positive with
    probability exactly 1/2 and this is the sign test's size at `level`, whatever the effects' shape: a property of
    the test, not a measurement of the effects.

    Args:
        values (`list[float]`): One test's per-seed effects.
        draws (`int`, *optional*): Seeds per simulated lab; defaults to `len(values)`.
        center (`str`, *optional*, defaults to `"median"`): `"median"` or `"mean"`.
        level (`float`, *optional*, defaults to `ALPHA`): The level the p-value must be below (Holm's first step:
            alpha / m).

    Returns:
        `float`: the rejection probability.
    """
    from scipy import stats

    if center not in ("median", "mean"):
        raise ValueError(f"center={center!r} is not supported; expected 'median' or 'mean'")
    values = near_ties(values)
    n = len(values) if draws is None else draws
    centred = values - (np.median(values) if center == "median" else values.mean())
    up, down = float(np.mean(centred >= NOISE)), float(np.mean(centred <= -NOISE))
    tie = 1.0 - up - down
    positive = np.arange(n + 1)[:, None]
    negative = np.arange(n + 1)[None, :]
    signed = positive + negative
    valid = signed <= n
    # multinomial probability of (positive, negative, n - both), in logs; 0 ** 0 = 1
    log_p = (math.lgamma(n + 1) - _lgamma(positive + 1) - _lgamma(negative + 1) - _lgamma(np.maximum(n - signed, 0) + 1)
             + _xlog(positive, up) + _xlog(negative, down) + _xlog(np.maximum(n - signed, 0), tie))
    p_value = np.minimum(1.0, 2.0 * stats.binom.cdf(np.minimum(positive, negative), np.maximum(signed, 1), 0.5))
    reject = valid & (signed > 0) & (p_value < level)
    rate = float(np.exp(log_p[reject]).sum())
    if 2.0 * 0.5 ** n < level:  # every draw the same non-tied value: rejected above, p = 1 in the test
        _, counts = np.unique(centred[np.abs(centred) >= NOISE], return_counts=True)
        rate -= float(np.sum((counts / len(values)) ** n))
    return max(rate, 0.0)


def _lgamma(x: np.ndarray) -> np.ndarray:
    from scipy.special import gammaln

    return gammaln(x)


def _xlog(count: np.ndarray, share: float) -> np.ndarray:
    """count * log(share), with 0 * log(0) = 0 and any other count of an impossible outcome -inf."""
    if share > 0.0:
        return count * math.log(share)
    return np.where(count == 0, 0.0, -np.inf)


def hoeffding_half_width(n: int, level: float, width: float = 2.0) -> float:
    """The half-width of Hoeffding's two-sided interval for a mean of n values in a range of `width` (paired
    accuracy differences lie in [-1, 1]: 2) at `level`: a test of the mean whose level holds for every bounded shape,
    and which can reject only an effect at least this large. Hoeffding: P(|mean - mu| >= t) <= 2 exp(-2 n t^2 /
    width^2), so t = width * sqrt(log(2 / level) / (2 n))."""
    return width * math.sqrt(math.log(2.0 / level) / (2.0 * n))


def null_rate_by_test(effects: list, family_size: int, test: str = "t", draws: int = 20_000, seed: int = 0,
                      alpha: float = ALPHA, sign_draws: int = 4_000) -> list[float]:
    """Each test's share of the simulated labs of [`null_rate`] (the same draws) in which its own p-value is below
    alpha / family_size: which tests make the family's rate."""
    return [float(r) for r in np.mean(_null_p(effects, test, draws, seed, sign_draws) < alpha / family_size, axis=1)]


def _null_p(effects: list, test: str, draws: int, seed: int, sign_draws: int) -> np.ndarray:
    """p-values (one row per test, one column per simulated lab) under the resampled null of [`null_rate`]."""
    if test not in TESTS:
        raise ValueError(f"test={test!r} is not supported; expected one of {list(TESTS)}")
    rng = np.random.default_rng(seed)
    rows = []
    for i, per_seed in enumerate(effects):
        values = near_ties(per_seed)
        centred = values - (np.median(values) if test == "sign" else values.mean())
        samples = rng.choice(centred, size=(draws, len(values)), replace=True)
        if test == "t":
            p = _t_p(samples)
        elif test in ("sign", "sign-mean"):
            p = _sign_p(samples)
        else:
            exact = len(values) <= EXACT_SEEDS
            p = _sign_flip_p(samples, _patterns(len(values), sign_draws, seed + 1 + i), exact)
        rows.append(p)
    return np.array(rows).reshape(len(effects), draws)


def reanalysis(summary: dict, draws: int = 20_000, seed: int = 0) -> dict:
    """What these statistics say about a `summary.json` (as `trl-lite-lab report` writes it): per directional test,
    its effects with near-ties zeroed, its t-test, sign-flip and sign-test p-values, each Holm-adjusted over the family
    with its verdict (`stats.direction`: on the mean for the first two, the median for the sign test); and the
    family's resampled-null rate under each test."""
    from .stats import direction, holm, paired_test, t_test

    m = summary["family_size"]
    alpha = summary.get("alpha", ALPHA)
    rows, effects = [], []
    for takeaway in summary["takeaways"]:
        for test in takeaway.get("tests", []):
            if test.get("margin") or test.get("verdict") is None:  # equivalence (right at a true 0), or untested
                continue
            values = near_ties(test["per_seed"])
            effects.append(values.tolist())
            spread = bool(np.ptp(values) > 0.0)
            verdicts_test = paired_test(test["name"], values.tolist())  # the verdicts' own: its p-value and median
            rows.append({"name": test["name"], "n": len(values), "mean": float(values.mean()),
                         "median": verdicts_test.location, "positive": int((values > 0).sum()),
                         "at_median": int(np.sum(np.abs(values - verdicts_test.location) < NOISE)),
                         "negative": int((values < 0).sum()),
                         "zeroed": int(np.sum((values == 0.0) & (np.asarray(test["per_seed"]) != 0.0))),
                         "t_p": t_test(test["name"], values.tolist()).p_value,
                         "sign_flip_p": sign_flip(values) if spread else 1.0,
                         "sign_p": verdicts_test.p_value,
                         "smallest_p": smallest_p(len(values))})
    padding = {f"\0other {i}": 1.0 for i in range(m - len(rows))}
    for kind, center in (("t", "mean"), ("sign_flip", "mean"), ("sign", "median")):
        adjusted = holm({**{r["name"]: r[f"{kind}_p"] for r in rows}, **padding})
        for r in rows:
            r[f"{kind}_adjusted_p"] = adjusted[r["name"]]
            r[f"{kind}_verdict"] = direction(r[center], adjusted[r["name"]], alpha)
    for r, values in zip(rows, effects):
        r["can_reject"] = r["smallest_p"] < alpha / m
        for name, center in (("sign", "median"), ("sign-mean", "mean")):
            r[f"exact_null_rate_{name}"] = exact_sign_rate(values, center=center, level=alpha / m)
        r["hoeffding_half_width"] = hoeffding_half_width(r["n"], alpha / m)
    family = {}
    for name in TESTS:  # one simulation per test kind: the family's rate and each test's share come from the same draws
        p = _null_p(effects, name, draws, seed, sign_draws=4_000)
        family[name] = float(np.mean(p.min(axis=0) < alpha / m)) if effects else 0.0
        for r, rate in zip(rows, np.mean(p < alpha / m, axis=1)):
            r[f"null_rate_{name}"] = float(rate)
    # the sign test's rates without simulation: the tests are drawn apart, so the family's is 1 - prod(1 - each's);
    # and the family's without each test in turn (does one test make the excess?)
    exact, without = {}, {}
    for name in ("sign", "sign-mean"):
        kept = np.array([1.0 - r[f"exact_null_rate_{name}"] for r in rows])
        exact[name] = float(1.0 - np.prod(kept))
        without[name] = {r["name"]: float(1.0 - np.prod(np.delete(kept, i))) for i, r in enumerate(rows)}
    return {"family_size": m, "alpha": alpha, "draws": draws, "seed": seed, "tests": rows,
            "seeds_needed": seeds_needed(m, alpha), "null_rate": family, "exact_null_rate": exact,
            "exact_null_rate_without": without, "exact_reference": 1.0 - (1.0 - alpha / m) ** len(rows),
            "exact_reference_without_one": 1.0 - (1.0 - alpha / m) ** max(len(rows) - 1, 0)}


def _missed(result: dict) -> str:
    """The share of resamples that miss a given seed, (1 - 1/n)^n, for each seed count of the directional tests."""
    counts = sorted({r["n"] for r in result["tests"]})
    return ", ".join(f"{(1 - 1 / n) ** n:.0%} at {n}" for n in counts) or "no directional test"


def _hoeffding(result: dict) -> str:
    """Hoeffding's half-width at each seed count of the directional tests, in words."""
    widths = {r["n"]: r["hoeffding_half_width"] for r in result["tests"]}
    return ", ".join(f"{w:.3f} at {n} seeds" for n, w in sorted(widths.items())) or "(no directional test)"


def _without(result: dict, alpha: float) -> str:
    """Whether the sign test on the mean-centred null would meet the goal without its largest single share."""
    if not result["tests"]:
        return ""
    largest = max(result["tests"], key=lambda r: r["exact_null_rate_sign-mean"])
    rest = result["exact_null_rate_without"]["sign-mean"][largest["name"]]
    return (f"Its largest share is {largest['name']}'s ({largest['exact_null_rate_sign-mean']:.4f}); without that "
            f"test the others' rate, computed exactly, is {rest:.4f}, " + ("still above" if rest > alpha else "within")
            + f" the goal's {alpha:.0%}, against {result['exact_reference_without_one']:.4f} for as many exact "
            "tests.")


def _goal(rate: dict, alpha: float) -> str:
    """Whether the goal (rate at most alpha) is met under the metric as fixed (mean-centred), per test, in words."""
    fixed = {"the sign test": rate["sign-mean"], "the sign-flip test": rate["sign-flip"], "the t-test": rate["t"]}
    met = [name for name, value in fixed.items() if value <= alpha]
    if not met:
        return (f"**Under the metric as fixed, the goal (at most {alpha:.0%} of labs) is not met by any of the three "
                "tests.**")
    return f"Under the metric as fixed, the goal (at most {alpha:.0%} of labs) is met by {', '.join(met)}."


def markdown(result: dict, source: str) -> str:
    """`reanalysis`'s result as the page `trl-lite-lab null` writes."""
    m, alpha = result["family_size"], result["alpha"]
    lines = [
        "# The committed verdicts under the version 3 statistics (`trl-lite-lab null`)", "",
        f"Read from `{source}` by `trl_lite_lab/resampling.py`; written by "
        f"`trl-lite-lab null --summary {source} --draws {result['draws']} --seed {result['seed']}`. The family: "
        f"{m} tests at alpha {alpha} (Holm); {len(result['tests'])} directional, the rest equivalence tests or "
        f"untested (p = 1). The verdicts' test (version 3.1) is the exact sign test of the median; version 3.0's "
        "sign-flip test of the mean and version 2's t-test are shown beside it.", "",
        "## Each directional test", "",
        "| test | seeds | mean effect | median | seeds positive / negative | seeds at the median | effects zeroed "
        "(within 1e-12 of 0) | t-test p (raw) | sign-flip p (raw) | sign test p (raw) | smallest possible | sign test, "
        "Holm-adjusted | its verdict | t-test's verdict | sign-flip's verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["tests"]:
        lines.append(f"| {r['name']} | {r['n']} | {r['mean']:+.4f} | {r['median']:+.4f} | {r['positive']} / "
                     f"{r['negative']} | {r['at_median']} | {r['zeroed']} | {r['t_p']:.4f} | {r['sign_flip_p']:.4f} | {r['sign_p']:.4f} | "
                     f"{r['smallest_p']:.4f} | {r['sign_adjusted_p']:.4f} | {r['sign_verdict']} | {r['t_verdict']} | "
                     f"{r['sign_flip_verdict']} |")
    cannot = [r["name"] for r in result["tests"] if not r["can_reject"]]
    rate, exact = result["null_rate"], result["exact_null_rate"]
    lines += [
        "", "## The family's wrong-direction rate under a resampled null", "",
        f"Each of {result['draws']} simulated labs draws every directional test's seeds, as many as it had, with "
        "replacement from that test's own effects, centred so that no effect is real (the observed shape, outliers "
        "included); a wrong verdict is any directional one (Holm: the smallest p-value below "
        f"{alpha} / {m}). The metric was fixed (2026-11-27, before it first ran) with every test centred on the mean; "
        "version 3.1, which changed the verdicts' test to the sign test after version 3.0's headline had been seen, adds "
        "the sign test centred on its own null, the median, where a rate at or below the level holds by construction "
        "(see below). " + _goal(rate, alpha) + " On its own null the sign test's rate is the test's size, "
        f"{exact['sign']:.4f} computed exactly (each test's binomial size at its seed count, combined as "
        "1 - the product of (1 - each)), at or below the level whatever the effects' shape: a guarantee of the test, "
        "not a measurement of these effects, so **this lab does not count it as meeting the goal**.", "",
        "| test | centred on | rate of at least one wrong directional verdict per lab (simulated) | computed exactly |",
        "|---|---|---|---|",
        f"| sign test (the verdicts', version 3.1) | the median | {rate['sign']:.4f} | {exact['sign']:.4f} |",
        f"| sign-flip (version 3.0) | the mean | {rate['sign-flip']:.4f} | |",
        f"| t-test (version 2) | the mean | {rate['t']:.4f} | |",
        f"| sign test, for comparison | the mean | {rate['sign-mean']:.4f} | {exact['sign-mean']:.4f} |",
        f"| exact tests, for reference | | | {result['exact_reference']:.4f} |", "",
        "The fourth row centres the sign test's null on the mean: where the mean and the median differ, its resamples "
        "have a median off 0, so a verdict in the median's direction there is right about what the sign test tests "
        "(on which side most seeds fall), and is counted as wrong only because the null is the mean's. "
        + _without(result, alpha), "",
        f"Which tests make it: each one's own rate of a p-value below {alpha} / {m} in the same simulated labs.", "",
        "| test | seeds | sign test | sign test, exact | sign-flip | t-test | sign test on the mean's null, exact |",
        "|---|---|---|---|---|---|---|",
        *[f"| {r['name']} | {r['n']} | {r['null_rate_sign']:.4f} | {r['exact_null_rate_sign']:.6f} | "
          f"{r['null_rate_sign-flip']:.4f} | {r['null_rate_t']:.4f} | {r['exact_null_rate_sign-mean']:.4f} |"
          for r in result["tests"]], "",
        "A test of the mean is exact when the per-seed effects are symmetric about 0 under the null. A null resampled "
        "from the observed effects keeps their shape: where one seed lies far from the others (a skewed sample), many "
        f"resamples miss it (at n seeds, (1 - 1/n)^n of them: {_missed(result)}); the others, centred off 0, lie mostly "
        "on one side, which a test of the mean reads as an effect. The sign test asks only on which side of 0 each "
        "seed falls; centred on the median, a resampled seed falls on either side with probability 1/2 when exactly "
        "one effect (odd n) or none (even n) sits at the median, so its rate is then at or below its level whatever "
        "the shape: a property of the test, not evidence about these effects. Where several effects tie at the median "
        "(accuracies are multiples of 1 / 4000, so ties happen), the two sides are no longer equally likely and the "
        "rate can exceed the level; the column \"seeds at the median\" above says where.", "",
        "A test of the mean that holds its level for every shape does exist here, because paired accuracy differences "
        "lie in [-1, 1]: Hoeffding's inequality. It pays in power: at this level it can reject only a mean effect of "
        + _hoeffding(result) + ", against effects of a few hundredths here: valid, and unable to give any verdict.",
        "",
        f"A sign test (or a sign-flip test) on n seeds cannot give p below 2 / 2^n, so in a family of {m} it can pass "
        f"Holm's first step only with at least {result['seeds_needed']} seeds. "
        + (f"Here {len(cannot)} of the {len(result['tests'])} directional tests have fewer ({', '.join(cannot)}): "
           "they could never give a verdict (their rates above are 0)."
           if cannot else "Every directional test here has enough."), ""]
    return "\n".join(lines)
