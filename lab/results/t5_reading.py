"""The figures T5's write-up needs beyond its report (`summary.json`): the initial recheck policy's measures of the
connective and of carries, the same measures after training (per registered seed and their mean), and the high-bound
clip counts by token class and old-probability bin pooled over the registered seeds (the strata T5's primary weighs).
Read from the runs (`trl-lite-lab run 5 --output-dir OUTPUT`), which are not committed (logs and checkpoints). They
were made under T5's definitions before its premise gate (2026-11-29), so each run is checked against the hash that
the summary which reported them recorded (`v3.1-t5-reported/summary.json`), not against today's definitions.

    python lab/results/t5_reading.py OUTPUT --json lab/results/t5_reading.json
"""

from __future__ import annotations

import json
import os
import statistics
import sys

KEYS = ("acc", "carry_drop_rate", "recheck_rate", "chk_after_drop_rate", "recheck_link", "connective_link")
REPORTED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "v3.1-t5-reported", "summary.json")


def _run(output_dir: str, arm, seed: int, sha256: str) -> dict:
    """A registered run's result with its training measures, made under the definitions that hash to `sha256`."""
    from trl_lite_lab.results import RESULT_FILE, run_folder, train_measures

    folder = run_folder(output_dir, arm, seed)
    with open(os.path.join(folder, RESULT_FILE), encoding="utf-8") as f:
        result = json.load(f)
    if result["experiment_sha256"] != {"T5": sha256}:  # {experiment id: hash}
        sys.exit(f"{folder} was made under {result['experiment_sha256']}, not the reported {sha256}")
    return {**result, "train": train_measures(folder)}


def reading(output_dir: str) -> dict:
    from trl_lite_lab.design import EVAL_PROBLEMS
    from trl_lite_lab.experiments import EXPERIMENTS
    from trl_lite_lab.results import load_initial

    with open(REPORTED, encoding="utf-8") as f:
        (reported,) = [e for e in json.load(f)["takeaways"] if e["id"] == "T5"]
    experiment = EXPERIMENTS["5"]
    (label, a), = experiment.arms.items()  # the arm is unchanged by the premise gate
    assert reported["arms"] == {label: a.name}, reported["arms"]
    initial = load_initial(output_dir, "sumk", "recheck", EVAL_PROBLEMS)
    runs = [_run(output_dir, a, seed, reported["experiment_sha256"]) for seed in experiment.seed_list()]
    # the very runs the summary reported: its per-seed `chk` rates are these runs'
    assert [r["eval"]["chk_after_drop_rate"] for r in runs] == \
        reported["details"]["`chk` rate after a dropped carry"]["per_seed"]
    trained = {k: [run["eval"][k] for run in runs] for k in KEYS}
    strata: dict[str, float] = {}
    for run in runs:
        for key, value in run["train"]["strata"].items():  # "<class>/<bin>/<eligible|clipped>"
            strata[key] = strata.get(key, 0.0) + value
    by_bin = {}
    for key in sorted(k for k in strata if k.endswith("/eligible")):
        cls, bin_, _ = key.split("/")
        eligible, clipped = strata[key], strata[f"{cls}/{bin_}/clipped"]
        by_bin[f"{cls} {bin_}"] = {"eligible": eligible, "clipped": clipped,
                                   "clip_rate": clipped / eligible if eligible else float("nan")}
    return {"arm": a.name, "seeds": len(runs),
            "initial": {k: initial[k] for k in KEYS},
            "trained_mean": {k: statistics.mean(v) for k, v in trained.items()},
            "trained_per_seed": trained,
            "pooled_strata": by_bin}


if __name__ == "__main__":
    from script_json import write_json

    rows = reading(sys.argv[1])
    print(json.dumps(rows, indent=1))
    write_json(rows, "python lab/results/t5_reading.py " + sys.argv[1])
