"""The figures T8's negative pilot's write-up needs beyond its pilot record (`pilots/T8.json`): per pilot seed and arm,
the held-out share of completions cut at 124 tokens, the share of those that never end, and how many were cut; and
the initial policy's. Read from the pilot's runs (`trl-lite-lab pilot 8 --output-dir OUTPUT`), not committed (logs).

    python lab/results/t8_reading.py OUTPUT --json lab/results/t8_reading.json
"""

from __future__ import annotations

import json
import os
import sys

KEYS = ("acc@long", "trunc_share@long", "unending_share@long", "truncated_n@long", "train_rise", "update_norm")


def reading(output_dir: str) -> dict:
    from trl_lite_lab.design import EVAL_PROBLEMS
    from trl_lite_lab.experiments import EXPERIMENTS
    from trl_lite_lab.results import load_initial, load_run

    experiment = EXPERIMENTS["8"]
    initial = load_initial(output_dir, "sumk", "verbose", EVAL_PROBLEMS)
    out = {"initial": {k: initial[k] for k in KEYS if k in initial}}
    for seed in experiment.seed_list(pilot=True):
        for label, a in experiment.arms.items():
            run = load_run(output_dir, a, seed, experiment)  # checked: T8's current definitions and weights
            out[f"{label}, seed {seed}"] = {"arm": a.name, **{k: run["eval"][k] for k in KEYS}}
    return out


if __name__ == "__main__":
    from script_json import write_json

    rows = reading(sys.argv[1])
    print(json.dumps(rows, indent=1))
    write_json(rows, "python lab/results/t8_reading.py " + sys.argv[1])
