"""How to read T4's verdict (2026-11-28, written before its registered runs reported, after an independent review of
its design and pilot): the figures its write-up needs beyond the report's, read from the summary's per-seed values.
Not part of the engine: it decides no label.

- **The base half on its own.** Version 3.1 tests "helps the aligned-like policy more" (an interaction), which can come
  out reproduced while the base-like policy gains from clip-higher too. So the base half's own difference (epsilon_high
  0.28 - 0.2) is reported with its median and a distribution-free 95% interval for the median (the sign test's order
  statistics: the k-th smallest and k-th largest of n seeds, k the largest with 2 P(Binomial(n, 1/2) < k) <= 0.05),
  and its seeds above and below zero.
- **Update size, per seed.** Clip-higher loosens the bound on each update, so an arm that moves further may simply be
  the trick working; the reader should still see whether the accuracy difference follows the weight-distance
  difference. For each test, per seed: the accuracy effect and the matching difference in weight distance from the
  initial policy ("T4 aligned": aligned 0.28 - 0.2; "T4 aligned vs base": that minus the base-like policy's), and
  on how many seeds the two have the same sign.
- **Exploration.** The paper says clip-higher helps aligned models *explore*. Whether the 0.28 arm of the aligned-like
  policy ended with higher token entropy and pass@4 than its 0.2 arm (held-out, `details`) says whether the wording
  "explore" is earned; otherwise the write-up says "raised accuracy".

- **Spread** (added 2026-11-28 after the runs reported, at a second independent review's request; exploratory, no
  test): each arm's standard deviation and lowest value of held-out accuracy over seeds.

    python lab/results/t4_reading.py lab/results/summary.json --json lab/results/t4_reading.json
"""

from __future__ import annotations

import json
import math
import statistics
import sys

ALPHA = 0.05
ARMS = ("aligned 0.2", "aligned 0.28", "base 0.2", "base 0.28")  # T4's arms (`designs/clip.py`)


def median_interval(values: list[float], alpha: float = ALPHA) -> tuple[float, float, float]:
    """A distribution-free (1 - alpha) interval for the median: order statistics k and n + 1 - k (1-based), k the
    largest with 2 P(Binomial(n, 1/2) <= k - 1) <= alpha; the coverage it gives."""
    n = len(values)
    ordered = sorted(values)

    def tail(k: int) -> float:  # P(Binomial(n, 1/2) <= k - 1)
        return sum(math.comb(n, i) for i in range(k)) / 2 ** n

    k = max((k for k in range(1, n // 2 + 1) if 2 * tail(k) <= alpha), default=None)
    if k is None:
        raise ValueError(f"{n} seeds are too few for a {1 - alpha:.0%} interval of the median")
    return ordered[k - 1], ordered[n - k], 1 - 2 * tail(k)


def _per_seed(entry: dict, name: str) -> list[float]:
    return entry["details"][name]["per_seed"]


def _same_sign(a: list[float], b: list[float]) -> int:
    return sum(1 for x, y in zip(a, b) if x * y > 0)


def reading(summary: dict) -> dict:
    (t4,) = [e for e in summary["takeaways"] if e["id"] == "T4"]
    base = _per_seed(t4, "base-like, epsilon_high 0.28 - 0.2")
    low, high, coverage = median_interval(base)
    distance = {label: _per_seed(t4, f"weight distance {label}") for label in ARMS}
    d_aligned = [b - a for a, b in zip(distance["aligned 0.2"], distance["aligned 0.28"])]
    d_base = [b - a for a, b in zip(distance["base 0.2"], distance["base 0.28"])]
    d_interaction = [a - b for a, b in zip(d_aligned, d_base)]
    tests = {t["name"]: t["per_seed"] for t in t4["tests"]}
    out = {"made_by": "python lab/results/t4_reading.py " + " ".join(sys.argv[1:]), "seeds": len(base),
           "base_half": {"per_seed": base, "mean": statistics.mean(base), "median": statistics.median(base),
                         "median_interval": [low, high], "coverage": coverage,
                         "positive": sum(v > 0 for v in base), "negative": sum(v < 0 for v in base)},
           "update_size": {}}
    for name, effects, moved in (("T4 aligned", tests["T4 aligned"], d_aligned),
                                 ("T4 aligned vs base", tests["T4 aligned vs base"], d_interaction)):
        out["update_size"][name] = {"effect_per_seed": effects, "distance_difference_per_seed": moved,
                                    "distance_difference_mean": statistics.mean(moved),
                                    "same_sign": _same_sign(effects, moved), "seeds": len(effects)}
    out["exploration"] = {}
    for key in ("token entropy aligned, 0.28 - 0.2", "pass@4 aligned, 0.28 - 0.2", "token entropy base, 0.28 - 0.2",
                "pass@4 base, 0.28 - 0.2"):
        values = _per_seed(t4, key)
        out["exploration"][key] = {"mean": statistics.mean(values), "median": statistics.median(values),
                                   "positive": sum(v > 0 for v in values), "negative": sum(v < 0 for v in values)}
    accuracy = {label: _per_seed(t4, f"accuracy {label}") for label in ARMS}
    out["spread"] = {label: {"sd": statistics.stdev(values), "min": min(values)} for label, values in accuracy.items()}
    return out


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        result = reading(json.load(f))
    text = json.dumps(result, indent=1)
    print(text)
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w", encoding="utf-8") as f:
            f.write(text + "\n")
