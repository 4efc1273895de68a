"""Could each reported experiment have come out "reproduced"? Issue 38's review of version 2 called a test unfair
where that was out of reach at a true effect of +0.05 (0.5%, 4% and 1.5% for three of its tests). This applies that
yardstick to the committed verdicts (`summary.json`), with the verdicts' own test and the seeds' own spread:

each experiment's registered seeds are drawn with replacement (a seed's effects on all the experiment's primary tests
together, so tests that share seeds stay paired), each test's effects centred on their median and shifted by the true
effect `delta` in the claim's direction; a test passes when the sign test's p-value is below alpha / m (Holm's first
step, the strictest: so these are lower bounds) with the median in the claim's direction, and the experiment comes out
"reproduced" when all its primary tests pass. Then the same at a true +0.05 with more seeds drawn from the same
effects (`MORE_SEEDS`): what a fair test would take where the registered seeds fall short.

Made 2026-11-29 (eighth session), after every result it reads, on an independent review's finding that clip
scaling's saturation test could hardly pass: it describes the designs as run, and changes no verdict.

    python lab/results/fairness.py lab/results/summary.json --json lab/results/fairness.json
"""

from __future__ import annotations

import json
import sys

import numpy as np

DELTAS = (0.025, 0.045, 0.05, 0.055, 0.06)  # around +0.05: one seed can sit just at a shift (T1: -0.050375)
DRAWS = 20_000
MORE_SEEDS = (32, 64, 96, 128)


def reading(summary_path: str, deltas: tuple = DELTAS, draws: int = DRAWS, seed: int = 0,
            more_seeds: tuple = MORE_SEEDS) -> dict:
    from trl_lite_lab.resampling import _sign_p
    from trl_lite_lab.stats import near_ties

    with open(summary_path, encoding="utf-8") as f:
        summary = json.load(f)
    level = summary["alpha"] / summary["family_size"]
    rows = []
    for experiment in summary["takeaways"]:
        tests = [t for t in experiment.get("tests", []) if not t.get("margin") and t.get("verdict") is not None]
        if not tests:
            continue
        effects = np.array([near_ties(t["per_seed"]) for t in tests])  # tests x seeds, paired by seed
        centred = effects - np.median(effects, axis=1, keepdims=True)
        rng = np.random.default_rng(seed)
        n = effects.shape[1]
        row = {"id": experiment["id"], "verdict": experiment["verdict"], "seeds": int(n),
               "tests": [t["name"] for t in tests], "by_delta": {}, "more_seeds": {},
               # each test's lowest centred effect: from a shift just past its negation, every seed is positive
               "lowest_centred": {t["name"]: float(c.min()) for t, c in zip(tests, centred)}}

        def passes(delta, picks):  # per test and draw: does the sign test pass in the claim's direction?
            passed = []
            for values in centred + delta:
                samples = values[picks]
                passed.append((_sign_p(samples) < level) & (np.median(samples, axis=1) > 0.0))
            return np.array(passed)

        for delta in deltas:
            passed = passes(delta, rng.integers(0, n, size=(draws, n)))  # the same seeds for every test
            row["by_delta"][f"{delta}"] = {"each": {t["name"]: float(p.mean()) for t, p in zip(tests, passed)},
                                          "reproduced": float(passed.all(axis=0).mean())}
        for more in (k for k in more_seeds if k > n):
            passed = passes(0.05, rng.integers(0, n, size=(draws, more)))
            row["more_seeds"][f"{more}"] = float(passed.all(axis=0).mean())
        rows.append(row)
    return {"alpha": summary["alpha"], "family_size": summary["family_size"], "level": level, "draws": draws,
            "seed": seed, "experiments": rows}


if __name__ == "__main__":
    from script_json import write_json

    result = reading(sys.argv[1])
    print(json.dumps(result, indent=1))
    write_json(result, "python lab/results/fairness.py " + sys.argv[1])
