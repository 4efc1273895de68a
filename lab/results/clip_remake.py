"""Clip scaling's registered runs made again on this machine: would making them again replicate them, or draw anew?

Not an experiment about the paper, and no verdict reads it. Clip scaling's "inconclusive" holds largely by
construction (`lab/results/README.md`, eighth session): its saturation test's spread rests on two runs of the large
policy that fell below their start (epsilon_high 0.28 on seed 2, 0.32 on seed 14). Relabelling it through a gate
added after the results would change its design, which every run's hash covers, and so mean making its 96 runs
again. Whether that replicates the registered runs or re-rolls the experiment depends on whether a run made again
gives the same figures. The lab's migration assumes it does on one machine (`lab/scripts/migrate_engine.py`); clip
scaling's runs were made on another (their `product.commit`, d6da3f2).

Each re-made run is clip scaling's own arm (`designs/clip_scaling.py`, `runner.run_arm`, the registered seed), written
to a folder of its own; `summarize` compares it with the registered run in `--registered` (the same arm and seed):

- `acc`, `train_rise`, `update_norm`: held-out accuracy, the training reward's rise and the weight distance, both ways;
- `first_step_differing`: the first logged optimizer step at which any logged figure differs (the loss included);
- `step1_loss_diff`: the first step's loss, re-made minus registered;
- `diverged_at`: the first step at which the two losses differ by more than 1e-3.

With `--again D2` (the same arms and seeds made a second time on this machine, in D2), it also says whether the two
makes on this machine agree in every logged figure and every held-out measure (`same_machine_equal`).

    python lab/results/clip_remake.py run "large 0.28" 2 --output-dir D    # one process per run, OMP_NUM_THREADS=1
    python lab/results/clip_remake.py summarize D --registered lab/results/lab31 [--again D2] \\
        --json lab/results/clip_remake.json
"""

from __future__ import annotations

import json
import math
import os
import shlex
import sys

LABELS = ("small 0.2", "small 0.28", "small 0.32", "large 0.2", "large 0.28", "large 0.32")
DIVERGED = 1e-3  # a loss difference this large is a different trajectory, not rounding


def _arm(label: str):
    from trl_lite_lab.experiments import experiment_named

    return experiment_named("clip-scaling").arms[label]


def run(label: str, seed: int, output_dir: str) -> None:
    from trl_lite_lab.design import EVAL_PROBLEMS
    from trl_lite_lab.runner import initial_eval, run_arm

    a = _arm(label)
    initial_eval(a.task, a.policy, output_dir, EVAL_PROBLEMS, a.settings["temperature"])
    run_arm(a, seed, output_dir, progress=False, eval_problems=EVAL_PROBLEMS)


def _read(folder: str) -> tuple[dict, list[dict]]:
    with open(os.path.join(folder, "result.json"), encoding="utf-8") as f:
        result = json.load(f)
    with open(os.path.join(folder, "metrics.jsonl"), encoding="utf-8") as f:
        metrics = [json.loads(line) for line in f if line.strip()]
    return result, metrics


def _same(x, y) -> bool:
    """Equal, NaN equal to NaN (a measure with nothing to count is NaN in both)."""
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
        return True
    return x == y


def compare(remade: str, registered: str) -> dict:
    """One re-made run against the registered run of the same arm and seed (their folders)."""
    new, new_metrics = _read(remade)
    old, old_metrics = _read(registered)
    if len(new_metrics) != len(old_metrics):
        raise ValueError(f"{remade}: {len(new_metrics)} logged steps, the registered run {len(old_metrics)}")
    first = next((m["step"] for m, o in zip(new_metrics, old_metrics)
                  if any(not _same(m.get(k), o.get(k)) for k in set(m) | set(o) if k != "step_time")), None)
    diverged = next((m["step"] for m, o in zip(new_metrics, old_metrics)
                     if abs(m["loss"] - o["loss"]) > DIVERGED), None)
    return {"acc": new["eval"]["acc"], "acc_registered": old["eval"]["acc"],
            "train_rise": new["eval"]["train_rise"], "train_rise_registered": old["eval"]["train_rise"],
            "update_norm": new["eval"]["update_norm"], "update_norm_registered": old["eval"]["update_norm"],
            "first_step_differing": first, "step1_loss_diff": new_metrics[0]["loss"] - old_metrics[0]["loss"],
            "diverged_at": diverged, "registered_commit": old["product"]["commit"],
            "commit": new["product"]["commit"]}


def same_everywhere(one: str, two: str) -> bool:
    """Whether two makes of one arm and seed agree in every logged figure (wall time aside) and held-out measure."""
    a, a_metrics = _read(one)
    b, b_metrics = _read(two)
    if len(a_metrics) != len(b_metrics):
        return False
    logged = all(_same(m.get(k), o.get(k)) for m, o in zip(a_metrics, b_metrics) for k in set(m) | set(o)
                 if k != "step_time")
    held = all(_same(a["eval"][k], b["eval"].get(k)) for k in a["eval"] if k != "eval_s")
    return logged and held


def summarize(output_dir: str, registered_dir: str, again: str | None = None) -> list[dict]:
    from trl_lite_lab.results import run_folder

    rows = []
    for label in LABELS:
        a = _arm(label)
        parent = os.path.dirname(run_folder(output_dir, a, 0))
        if not os.path.isdir(parent):
            continue
        for name in sorted(os.listdir(parent), key=lambda n: int(n.removeprefix("seed"))):
            seed = int(name.removeprefix("seed"))
            if not os.path.exists(os.path.join(parent, name, "result.json")):
                continue
            row = {"arm": label, "seed": seed,
                   **compare(os.path.join(parent, name), run_folder(registered_dir, a, seed))}
            if again is not None:
                second = run_folder(again, a, seed)
                row["same_machine_equal"] = (same_everywhere(os.path.join(parent, name), second)
                                             if os.path.exists(os.path.join(second, "result.json")) else None)
            rows.append(row)
    return rows


if __name__ == "__main__":
    args = sys.argv[1:]

    def option(name: str, default=None):
        return args[args.index(name) + 1] if name in args else default

    if args[0] == "run":
        run(args[1], int(args[2]), option("--output-dir"))
    else:
        rows = summarize(args[1], option("--registered"), option("--again"))
        for row in rows:
            print({k: round(v, 5) if isinstance(v, float) else v for k, v in row.items()})
        if "--json" in args:
            from script_json import write_json

            write_json({"rows": rows}, "python lab/results/clip_remake.py " + " ".join(shlex.quote(a) for a in args))
