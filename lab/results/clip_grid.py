"""The clip experiments' update grid (issue 38: "reach the clip band with stale batches at lr 1e-4, chosen from a small
piloted grid"): how many passes over each generation batch (`num_iterations`) it takes, at the demo's learning rate,
for the ratio pi/pi_old of enough positive-advantage tokens to reach the band where epsilon_high 0.2, 0.28 and 0.32
clip differently, and whether the policy still gains held-out accuracy there.

Not an experiment about the paper: it picks a design. Each grid point trains clip scaling's epsilon_high 0.2 arm on
the mixed ADD data (temperature 1, lr 1e-4, `num_iterations` K, 30 generation batches of 8 prompts x 8 completions:
4 x K optimizer steps each, so 120 x K steps) for each policy size, on its own seed (3000 and up: never a registered
or pilot seed), with the lab's runner and held-out evaluation (`runner.run_arm`), and reads:

- `band`: share of positive-advantage tokens whose ratio lies in (1.2, 1.28] (T4's clip-band gate), `wide_band`: in
  (1.2, 1.32] (clip scaling's), `upper_band`: in (1.28, 1.32] (where epsilon_high 0.28 and 0.32 differ), pooled over
  training;
- `gain`: held-out accuracy at temperature 1 minus the initial policy's; `train_rise`: the training reward's rise on
  fixed problems (`training.training_accuracy`); `update_norm`: weight distance from the initial policy.

    python lab/results/clip_grid.py run SIZE K SEED --output-dir D   # SIZE small | large
    python lab/results/clip_grid.py summarize D --json lab/results/clip_grid.json
"""

from __future__ import annotations

import json
import os
import sys

from trl_lite_lab.designs.clip_scaling import GENERATION_BATCHES, LEARNING_RATE, SIZES

POLICIES = dict(SIZES)  # {"small": "carry-tiny", "large": "carry-small"}: clip scaling's two policies


def grid_arm(size: str, k: int):
    """Clip scaling's epsilon_high 0.2 arm of `size`, with `k` passes over each generation batch."""
    from trl_lite_lab.design import arm

    return arm("add", POLICIES[size], "mixed", steps=4 * k * GENERATION_BATCHES, epsilon_high=0.2, temperature=1.0,
               num_iterations=k, learning_rate=LEARNING_RATE)


def run(size: str, k: int, seed: int, output_dir: str) -> None:
    from trl_lite_lab.design import EVAL_PROBLEMS
    from trl_lite_lab.runner import initial_eval, run_arm

    a = grid_arm(size, k)
    initial_eval(a.task, a.policy, output_dir, EVAL_PROBLEMS, a.settings["temperature"])
    run_arm(a, seed, output_dir, progress=False, eval_problems=EVAL_PROBLEMS)


def summarize(output_dir: str) -> list[dict]:
    from trl_lite_lab.design import EVAL_PROBLEMS
    from trl_lite_lab.results import initial_path, run_folder, train_measures

    rows = []
    for size in POLICIES:
        for k in (1, 2, 4, 8, 16, 32):
            a = grid_arm(size, k)
            parent = os.path.dirname(run_folder(output_dir, a, 0))
            if not os.path.isdir(parent):
                continue
            with open(initial_path(output_dir, a.task, a.policy, EVAL_PROBLEMS, 1.0), encoding="utf-8") as f:
                initial = json.load(f)
            for name in sorted(os.listdir(parent)):
                folder = os.path.join(parent, name)
                path = os.path.join(folder, "result.json")
                if not os.path.exists(path):
                    continue
                with open(path, encoding="utf-8") as f:
                    result = json.load(f)
                train = train_measures(folder)
                positive = train["pos_adv_tokens"]
                held = result["eval"]
                rows.append({"size": size, "policy": a.policy, "num_iterations": k, "steps": a.steps,
                             "seed": int(name.removeprefix("seed")), "initial_acc": initial["acc"],
                             "acc": held["acc"], "gain": held["acc"] - initial["acc"],
                             "train_rise": held["train_rise"], "update_norm": held["update_norm"],
                             "band": train["ratio_band_tokens"] / positive,
                             "wide_band": train["ratio_wide_band_tokens"] / positive,
                             "upper_band": (train["ratio_wide_band_tokens"] - train["ratio_band_tokens"]) / positive,
                             "clip_high_frac": train.get("clip_high_frac"), "wall_s": result["wall_s"]})
    return rows


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[sys.argv.index("--output-dir") + 1])
    else:
        rows = summarize(sys.argv[2])
        for row in rows:
            print({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()})
        from script_json import write_json

        write_json({"rows": rows}, "python lab/results/clip_grid.py summarize " + sys.argv[2])
