"""A small grid for T5's redesign (2026-11-28; issue 38: "reach the clip band with stale batches at lr 1e-4, chosen
from a small piloted grid"): the recheck SUM-k policy at epsilon_high 0.2, lr 1e-4 (version 2's T5 used 5e-4) with 8
passes per generation batch (`num_iterations`, as version 2), for 192 and 576 optimizer steps (6 and 18 generation
batches); then, after the 576-step point fell (held-out -0.0505), 2 passes for 576 steps (SUM-k's default, as T6's
arms) and 4 passes for 384 steps; one seed (3000: never a registered or pilot seed), with the lab's runner and held-out evaluation.

Not an experiment about the paper and not a pilot: it informs T5's redesign (`designs/connectives.py`), which had not
been made when it ran. What it reads per point: the held-out gain over the initial policy, the training reward's rise
on the fixed training problems, and how many eligible connective and other tokens were clipped at the high bound
(T5's clip-band gate asks for 20 connectives pooled over seeds).

    python lab/results/t5_grid.py run OUTPUT PASSES STEPS      # one point
    python lab/results/t5_grid.py summarize OUTPUT --json lab/results/t5_grid.json
"""

from __future__ import annotations

import json
import os
import sys

SEED, LEARNING_RATE = 3000, 1e-4
POINTS = ((8, 192), (8, 576), (2, 576), (4, 384))  # (passes per generation batch, optimizer steps)


def grid_arm(passes: int, steps: int):
    from trl_lite_lab.design import arm

    return arm("sumk", "recheck", steps=steps, num_iterations=passes, learning_rate=LEARNING_RATE)


def run(output_dir: str, passes: int, steps: int) -> None:
    from trl_lite_lab.design import EVAL_PROBLEMS
    from trl_lite_lab.runner import initial_eval, run_arm

    a = grid_arm(passes, steps)
    initial_eval(a.task, a.policy, output_dir, EVAL_PROBLEMS, a.settings["temperature"])
    run_arm(a, SEED, output_dir, progress=False, eval_problems=EVAL_PROBLEMS)


def _count(strata: dict, cls: str, stage: str) -> float:
    return sum(v for k, v in strata.items() if k.startswith(f"{cls}/") and k.endswith(f"/{stage}"))


def summarize(output_dir: str) -> dict:
    from trl_lite_lab.design import EVAL_PROBLEMS
    from trl_lite_lab.designs.connectives import matched_excess
    from trl_lite_lab.results import RESULT_FILE, initial_path, run_folder, train_measures

    with open(initial_path(output_dir, "sumk", "recheck", EVAL_PROBLEMS, 1.0), encoding="utf-8") as f:
        initial = json.load(f)
    rows = {"initial": {"acc": initial["acc"], "recheck_link": initial["recheck_link"]}}
    for passes, steps in POINTS:
        a = grid_arm(passes, steps)
        folder = run_folder(output_dir, a, SEED)
        if not os.path.exists(os.path.join(folder, RESULT_FILE)):
            continue
        with open(os.path.join(folder, RESULT_FILE), encoding="utf-8") as f:
            result = json.load(f)
        train = train_measures(folder)
        strata = train["strata"]
        rows[f"{passes} passes, {steps} steps"] = {
            "arm": a.name, "seed": SEED, "acc": result["eval"]["acc"],
            "gain": result["eval"]["acc"] - initial["acc"], "train_rise": result["eval"]["train_rise"],
            "connectives_eligible": _count(strata, "connective", "eligible"),
            "connectives_clipped": _count(strata, "connective", "clipped"),
            "others_eligible": _count(strata, "other", "eligible"), "others_clipped": _count(strata, "other", "clipped"),
            "matched_excess": matched_excess({"recheck 0.2": {"train": train}}),
            "clip_high_frac": train["clip_high_frac"], "update_norm": result["eval"]["update_norm"],
            "wall_s": result["wall_s"]}
    return rows


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        rows = summarize(sys.argv[2])
        print(json.dumps(rows, indent=1))
        from script_json import write_json

        write_json(rows, "python lab/results/t5_grid.py summarize " + sys.argv[2],
                   made="2026-11-28/29, runs 23:39-00:17 UTC, beside two or three other processes on 2 cores (the "
                        "engine of commit 3484ffb)")
