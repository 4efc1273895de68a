"""An exploratory look at T8's arms under version 3's update rule (2026-11-28; issue 38: "get movement from more steps
and prompts, not from a higher learning rate"): the verbose SUM-k policy trained at the demo's learning rate (1e-4,
T8's version 2 used 1e-3) for 576 steps (T6's 576-step budget) at LONG (124) tokens, overlong filter off and on, one
seed (3000: never a registered or pilot seed), with the lab's runner and held-out evaluation (`runner.run_arm`).

Not an experiment about the paper and not a pilot: it informs T8's redesign (`designs/overlong.py`), which had not
been made when it ran.

    python lab/results/t8_grid.py run OUTPUT        # both arms, seed 3000 (12-13 min each beside two other processes)
    python lab/results/t8_grid.py summarize OUTPUT --json lab/results/t8_grid.json
"""

from __future__ import annotations

import json
import os
import sys

SEED, STEPS, LEARNING_RATE = 3000, 576, 1e-4
KEYS = ("acc@long", "trunc_share@long", "truncated_n@long", "unending_share@long")
FILTER = {"off": False, "on": True}  # T8's two arms: the overlong filter off and on


def grid_arm(overlong_filter: bool):
    from trl_lite_lab.design import LONG, arm

    return arm("sumk", "verbose", steps=STEPS, max_completion_length=LONG, overlong_filter=overlong_filter,
               learning_rate=LEARNING_RATE)


def run(output_dir: str) -> None:
    from trl_lite_lab.design import EVAL_PROBLEMS
    from trl_lite_lab.runner import initial_eval, run_arm

    for overlong_filter in FILTER.values():
        a = grid_arm(overlong_filter)
        initial_eval(a.task, a.policy, output_dir, EVAL_PROBLEMS, a.settings["temperature"])
        run_arm(a, SEED, output_dir, progress=False, eval_problems=EVAL_PROBLEMS)


def summarize(output_dir: str) -> dict:
    from trl_lite_lab.design import EVAL_PROBLEMS
    from trl_lite_lab.results import RESULT_FILE, initial_path, run_folder

    with open(initial_path(output_dir, "sumk", "verbose", EVAL_PROBLEMS, 1.0), encoding="utf-8") as f:
        initial = json.load(f)
    rows = {"initial": {k: initial[k] for k in KEYS}}
    for label, overlong_filter in FILTER.items():
        a = grid_arm(overlong_filter)
        with open(os.path.join(run_folder(output_dir, a, SEED), RESULT_FILE), encoding="utf-8") as f:
            result = json.load(f)
        held = result["eval"]
        rows[label] = {"arm": a.name, "seed": SEED, **{k: held[k] for k in KEYS},
                       "gain@long": held["acc@long"] - initial["acc@long"], "train_rise": held["train_rise"],
                       "update_norm": held["update_norm"], "wall_s": result["wall_s"]}
    return rows


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2])
    else:
        rows = summarize(sys.argv[2])
        print(json.dumps(rows, indent=1))
        from script_json import write_json

        write_json(rows, "python lab/results/t8_grid.py summarize " + sys.argv[2],
                   made="2026-11-28, runs 08:56-09:24 UTC, beside two other processes on 2 cores")
