"""How many seeds would make clip scaling's tests fair? Version 3.2's own gate, read at more seeds.

Not an experiment and not a pilot: it chose version 3.3's seed count (`designs/clip_scaling.py`). Version 3.2 ran 32
registered seeds and read "untestable (power)": its runs-stage gate (`clip_scaling.miss_at_fair_effect`) found that,
drawn from those seeds' own effects at a true +0.05, the tests that do not already reject would miss "reproduced" in
0.40085 of labs of 32 (0.2 allowed). This script asks the same function the same question for labs of `n` seeds, on the
same 32 seeds' effects, rebuilt from each arm's per-seed held-out accuracy in version 3.2's summary
(`v3.2-clip-32/summary.json`). The gate reads only the spread (each test's effects centred on their median), never a
contrast's mean or sign.

**The rule, fixed with version 3.3 (2026-11-29):** the smallest multiple of 8 whose miss is under a quarter of the
gate's 0.2 (0.05), because 32 seeds estimate a spread that the next 32 may exceed (version 3.2's registered spread was
twice its grid's).

    python lab/results/clip_seed_count.py lab/results/v3.2-clip-32/summary.json --json lab/results/clip_seed_count.json
"""

from __future__ import annotations

import json
import sys

COUNTS = (32, 40, 48, 56, 64, 72, 80, 96)
QUARTER = 0.25  # of the gate's allowed miss


def registered_runs(summary_path: str) -> dict:
    """Clip scaling's registered seeds in `summary_path` as the design's gate reads them: {seed: {arm: {"eval":
    {"acc": held-out accuracy}}}}."""
    from trl_lite_lab.designs import clip_scaling

    with open(summary_path, encoding="utf-8") as f:
        summary = json.load(f)
    (takeaway,) = [t for t in summary["takeaways"] if t["id"] == "clip-scaling"]
    accuracy = {label: takeaway["details"][f"accuracy {label}"]["per_seed"] for label in clip_scaling.ARMS}
    seeds = {len(values) for values in accuracy.values()}
    if seeds != {takeaway["seeds"]}:
        raise ValueError(f"{summary_path}: clip scaling's arms hold {sorted(seeds)} seeds, its summary says "
                         f"{takeaway['seeds']}")
    return {seed: {label: {"eval": {"acc": values[seed]}} for label, values in accuracy.items()}
            for seed in range(takeaway["seeds"])}


def choose(misses: dict[int, float], allowed: float) -> int | None:
    """The rule: the smallest count (a multiple of 8) whose miss is under `QUARTER` of `allowed`; None if none."""
    for n in sorted(misses):
        if n % 8 == 0 and misses[n] < QUARTER * allowed:
            return n
    return None


def reading(summary_path: str, counts: tuple = COUNTS) -> dict:
    from trl_lite_lab.designs import clip_scaling

    runs = registered_runs(summary_path)  # read once; each count only changes the labs' size
    misses = {n: clip_scaling.miss_at_fair_effect({"runs": runs, "registered_seeds": n}) for n in counts}
    return {"summary": summary_path, "allowed": clip_scaling.FAIR_MISS, "quarter": QUARTER,
            "miss": {str(n): m for n, m in misses.items()}, "chosen": choose(misses, clip_scaling.FAIR_MISS)}


if __name__ == "__main__":
    from script_json import write_json

    result = reading(sys.argv[1])
    print(json.dumps(result, indent=1))
    write_json(result, "python lab/results/clip_seed_count.py " + " ".join(sys.argv[1:]))
