"""What a fair test would take, from committed pilots (2026-11-27, not part of the engine): per primary test of each
pilot named, the pilot's per-seed spread of the effect, the arms' mean held-out gain, the power gate's value at
several seed counts under the current engine (`stats.detectable_effect`: the sign test, Holm over the designed family),
the smallest seed count that passes with the pilot's margin, and the mean gain the arms would need to pass at each
count. A pilot made under another engine (version 3.0's T6) is read under today's test.

    python lab/results/feasibility.py lab/results/pilots/T2.json lab/results/pilots/superseded/v3/T6.json ... \\
        --json lab/results/feasibility.json
"""

from __future__ import annotations

import json
import statistics
import sys

from trl_lite_lab.design import PILOT_MARGIN
from trl_lite_lab.experiments import family_size
from trl_lite_lab.report import seeds_needed
from trl_lite_lab.stats import detectable_effect

COUNTS = (16, 24, 32, 48, 64)
LIMIT = 0.5 * (1 - PILOT_MARGIN)  # the power gate's 0.5, with the pilot's margin


def feasibility(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        record = json.load(f)
    gains = [g["value"] for g in record["gates"] if g["kind"] == "gain" and "held-out" in g["name"]]
    gain = statistics.mean(gains)
    family = family_size()
    out = {"pilot": path, "id": record["id"], "made": record["made"], "mean_gain": gain, "tests": {}}
    for name, effects in record["effects"].items():
        sd = statistics.stdev(effects)
        ratio = {n: detectable_effect(sd, n, family) / gain for n in COUNTS}
        # the report's own search (`report.seeds_needed`), on the power gate as today's test reads this pilot
        gate = {"value": detectable_effect(sd, record["registered_seeds"], family) / gain, "threshold": 0.5}
        smallest = seeds_needed(gate, {**record, "margin": {**record["margin"], "pilot": PILOT_MARGIN}})
        out["tests"][name] = {"effects": effects, "sd": sd, "ratio": ratio, "smallest_seeds": smallest,
                              "gain_needed": {n: detectable_effect(sd, n, family) / LIMIT for n in COUNTS}}
    return out


if __name__ == "__main__":
    paths = [a for a in sys.argv[1:] if a.endswith(".json") and a != (sys.argv[sys.argv.index("--json") + 1]
                                                                       if "--json" in sys.argv else None)]
    rows = [feasibility(p) for p in paths]
    print("| pilot | test | spread | mean gain | power gate at " + " / ".join(map(str, COUNTS)) + " seeds | smallest "
          "passing | gain needed at " + " / ".join(map(str, COUNTS)) + " |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        for name, t in r["tests"].items():
            print(f"| `{r['pilot'].removeprefix('lab/results/')}` | {name} | {t['sd']:.4f} | {r['mean_gain']:.4f} | "
                  + " / ".join(f"{t['ratio'][n]:.3f}" for n in COUNTS) + f" | {t['smallest_seeds']} | "
                  + " / ".join(f"{t['gain_needed'][n]:.3f}" for n in COUNTS) + " |")
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
