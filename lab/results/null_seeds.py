"""Would more seeds meet the resampled-null goal (issue 38: at most 5% of simulated labs with a wrong directional
verdict)? The committed family (`summary.json`) under the metric as fixed (2026-11-27: each test's seeds drawn with
replacement from its own effects minus their mean), with every directional test given n seeds (its own count where that
is more) drawn from the same observed shape, at n = 16 to 256: the rate of each test of the mean (version 2's t-test,
version 3.0's sign-flip test), of the sign test on that null, and of the sign test on its own null (the median);
the sign test's two also computed exactly (`family_exact`, added 2026-11-29, eleventh session: the simulation's
figures differ from them by its noise).

What an exact test would give is the reference: k independent directional tests, each rejecting with probability
alpha / m at Holm's first step, give 1 - (1 - alpha / m)^k.

Made 2026-11-29 (eighth session), after every result it reads: it answers how many seeds the goal would need, not
whether a verdict holds.

    python lab/results/null_seeds.py lab/results/summary.json --json lab/results/null_seeds.json
"""

from __future__ import annotations

import json
import sys

import numpy as np

SEEDS = (16, 32, 64, 128, 256)
DRAWS = 20_000
SIGN_DRAWS = 4_000  # random sign patterns beyond EXACT_SEEDS, as `trl-lite-lab null`


def _p(values: np.ndarray, n: int, test: str, rng: np.random.Generator, seed: int, draws: int) -> np.ndarray:
    """p-values of `test` on `draws` resamples of n seeds from `values`, centred on the test's null (as
    `resampling._null_p`, which draws as many seeds as the test had)."""
    from trl_lite_lab.resampling import _sign_p, _t_p
    from trl_lite_lab.stats import EXACT_SEEDS, _patterns, _sign_flip_p

    centred = values - (np.median(values) if test == "sign" else values.mean())
    samples = rng.choice(centred, size=(draws, n), replace=True)
    if test == "t":
        return _t_p(samples)
    if test in ("sign", "sign-mean"):
        return _sign_p(samples)
    return _sign_flip_p(samples, _patterns(n, SIGN_DRAWS, seed), n <= EXACT_SEEDS)


def reading(summary_path: str, seeds: tuple = SEEDS, draws: int = DRAWS) -> dict:
    """The family's rate under each test (`resampling.TESTS`) and each test's own share, at every seed count in
    `seeds`. At a count no test exceeds, every test keeps its own seeds, and the rates are `trl-lite-lab null`'s
    (the same draws: seed 0, the tests in the summary's order)."""
    from trl_lite_lab.resampling import TESTS, exact_sign_rate
    from trl_lite_lab.stats import near_ties

    with open(summary_path, encoding="utf-8") as f:
        summary = json.load(f)
    m, alpha = summary["family_size"], summary["alpha"]
    tests = [(t["name"], near_ties(t["per_seed"])) for e in summary["takeaways"] for t in e.get("tests", [])
             if not t.get("margin") and t.get("verdict") is not None]  # directional and tested, as `null`
    exact = 1.0 - (1.0 - alpha / m) ** len(tests)
    rows = []
    for n in seeds:
        row = {"seeds": n, "family": {}, "by_test": {}}
        for test in TESTS:
            rng = np.random.default_rng(0)
            p = np.array([_p(values, max(n, len(values)), test, rng, 1 + i, draws)
                          for i, (_, values) in enumerate(tests)])
            row["family"][test] = float(np.mean(p.min(axis=0) < alpha / m))
            row["by_test"][test] = {name: float(r) for (name, _), r in zip(tests, np.mean(p < alpha / m, axis=1))}
        row["excess_over_exact"] = {test: rate - exact for test, rate in row["family"].items()}
        # the sign test's rates without simulation (`resampling.exact_sign_rate`; the tests are drawn apart)
        row["family_exact"] = {
            name: float(1.0 - np.prod([1.0 - exact_sign_rate(values, max(n, len(values)), center, alpha / m)
                                       for _, values in tests]))
            for name, center in (("sign", "median"), ("sign-mean", "mean"))}
        rows.append(row)
        print(n, row["family"], flush=True)
    return {"family_size": m, "alpha": alpha, "draws": draws, "directional": [name for name, _ in tests],
            "own_seeds": {name: len(values) for name, values in tests},
            "exact_reference": exact, "rows": rows}


if __name__ == "__main__":
    from script_json import write_json

    write_json(reading(sys.argv[1]), "python lab/results/null_seeds.py " + sys.argv[1])
