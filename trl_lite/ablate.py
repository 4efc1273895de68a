"""The ablation runner: recipes x seeds, per-step metrics, the paper's figures and a summary table.

    trl-lite ablate --recipes lite_ppo,grpo,dapo --seeds 3 --max-steps 100 --output-dir runs/ablation

runs every recipe of `trl_lite.recipes` named in `--recipes` once per seed (on the built-in arithmetic task with the
embedded policy by default, CPU-friendly; `--dataset` and `--model` for others), and writes to `--output-dir`:

- `runs/<recipe>/seed<k>/metrics.jsonl`: every logged step (TRL's metrics and trl-lite's diagnostics), and
  `result.json` once the run has finished. A run with a `result.json` is not repeated, so an interrupted ablation
  resumes where it stopped. An unfinished run starts over, or, with `--resume_from_checkpoint true`, continues from
  its last complete checkpoint (every `--save-steps` steps; `--resume_from_checkpoint PATH` names one run's
  checkpoint, and the other unfinished runs continue from their last).
- `accuracy.png`, `entropy.png`, `response_length.png`, `clip_fraction.png` (low and high bound panels): mean over
  seeds per recipe with a +/- 1 std band, smoothed over 5 logged points, as the paper's figures.
- `summary.md` / `summary.json`: final training accuracy (mean reward of the first reward function over the last 5
  generation batches) and held-out accuracy on the built-in task (one sample per problem), each mean +/- std over
  seeds; completions generated and generation rounds per generation batch (the compute dynamic sampling adds).

Each run is an ordinary `LitePPOTrainer` run in this process; `--set field=value` overrides any `LitePPOConfig` field
for every run (e.g. `--set epsilon_high=0.32`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

import yaml

from .recipes import RECIPES
from .runs import read_metrics, run_dir, run_one

FIGURES = {
    "accuracy.png": ("training accuracy (mean first reward)", None),
    "entropy.png": ("token entropy", ["entropy"]),
    "response_length.png": ("mean response length (tokens)", ["completions/mean_length"]),
    "clip_fraction.png": ("clipped token fraction", ["clip_ratio/low_mean", "clip_ratio/high_mean"]),
}


def plot(output_dir: str, histories: dict[str, list[list[dict]]], accuracy_keys: dict[str, str],
         smooth: int = 5) -> list[str]:
    """Draws `FIGURES` with [`trl_lite.curves.seed_bands`]: one line per recipe (mean over seeds, a trailing moving
    average over `smooth` logged points) with a +/- 1 std band over seeds, one panel per metric. Returns their
    paths."""
    from .curves import save_figure, seed_bands

    paths = []
    for filename, (label, keys) in FIGURES.items():
        panels = {key: {recipe: (runs, key) for recipe, runs in histories.items()} for key in keys} if keys else \
            {label: {recipe: (runs, accuracy_keys[recipe]) for recipe, runs in histories.items()}}
        fig = seed_bands(panels, ylabel=label, window=smooth)
        paths.append(save_figure(fig, os.path.join(output_dir, filename)))
    return paths


def summarize(results: dict[str, list[dict]]) -> tuple[str, list[dict]]:
    """The markdown summary table and its rows (one per recipe, mean +/- std over seeds)."""
    from .curves import mean_std as _mean_std

    rows = []
    for recipe, runs in results.items():
        train_mean, train_std = _mean_std([r["final_train_accuracy"] for r in runs])
        heldout_mean, heldout_std = _mean_std([r.get("heldout_accuracy") for r in runs])
        rounds_mean, _ = _mean_std([r["mean_generation_rounds"] for r in runs])
        generated = _mean_std([r["completions_generated"] for r in runs])[0]
        rows.append({"recipe": recipe, "seeds": len(runs), "final_train_accuracy": train_mean,
                     "final_train_accuracy_std": train_std, "heldout_accuracy": heldout_mean,
                     "heldout_accuracy_std": heldout_std, "completions_generated": generated,
                     "generation_rounds": rounds_mean})

    def pm(mean, std):
        return "n/a" if math.isnan(mean) else f"{mean:.3f} ± {std:.3f}"

    lines = [
        "| recipe | seeds | final train accuracy | held-out accuracy (sampled) | completions generated | rounds per batch |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['recipe']} | {row['seeds']} | {pm(row['final_train_accuracy'], row['final_train_accuracy_std'])} | "
            f"{pm(row['heldout_accuracy'], row['heldout_accuracy_std'])} | {row['completions_generated']:.0f} | "
            f"{row['generation_rounds']:.2f} |"
        )
    return "\n".join(lines) + "\n", rows


def ablate(recipes: list[str], seeds: int, max_steps: int, output_dir: str, *, progress: bool = True,
           smooth: int = 5, resume_from_checkpoint: str | None = None, **run_kwargs) -> dict:
    """Runs (or resumes) the ablation and writes the figures and the summary; returns the summary rows and paths.

    `resume_from_checkpoint`: `"true"` continues every unfinished run from its last complete checkpoint (runs without
    one start over); a checkpoint path continues that run from it, and the others as with `"true"`.
    """
    from tqdm.auto import tqdm

    from .checkpoints import last_complete_checkpoint, resolve_resume, resume_mode

    unknown = [name for name in recipes if name not in RECIPES]
    if unknown:
        raise ValueError(f"recipes={','.join(recipes)!r} names {unknown}; expected recipes among {RECIPES.names()}.")
    if not isinstance(seeds, int) or seeds < 1:
        raise ValueError(f"seeds={seeds!r} is not supported; expected an int >= 1.")
    jobs = [(recipe, seed) for recipe in recipes for seed in range(seeds)]
    mode = resume_mode(resume_from_checkpoint)
    named = None  # the run folder a checkpoint path belongs to
    if mode not in (None, "last"):
        resolve_resume(resume_from_checkpoint, output_dir)  # exists and complete
        named = os.path.abspath(os.path.dirname(mode))
        if named not in {os.path.abspath(run_dir(output_dir, recipe, seed)) for recipe, seed in jobs}:
            raise ValueError(
                f"resume_from_checkpoint={resume_from_checkpoint!r} is not a checkpoint of this ablation's runs; "
                f"expected {os.path.join(output_dir, 'runs', '<recipe>', 'seed<k>')}/checkpoint-N, or 'true'."
            )
    os.makedirs(output_dir, exist_ok=True)
    results: dict[str, list[dict]] = {name: [] for name in recipes}
    histories: dict[str, list[list[dict]]] = {name: [] for name in recipes}
    bar = tqdm(jobs, desc="ablation", unit="run", disable=not progress, file=sys.stderr)
    for recipe, seed in bar:
        bar.set_postfix_str(f"{recipe} seed {seed}")
        folder = run_dir(output_dir, recipe, seed)
        done = os.path.join(folder, "result.json")
        if os.path.exists(done):  # finished before: not repeated
            with open(done, encoding="utf-8") as f:
                result = json.load(f)
        else:
            checkpoint = None
            if named == os.path.abspath(folder):
                checkpoint = mode
            elif mode is not None:
                checkpoint = last_complete_checkpoint(folder)
            result = run_one(recipe, seed, output_dir, max_steps=max_steps, progress=progress,
                             resume_from_checkpoint=checkpoint, **run_kwargs)
        results[recipe].append(result)
        histories[recipe].append(read_metrics(os.path.join(folder, "metrics.jsonl")))
    accuracy_keys = {recipe: runs[0]["accuracy_key"] for recipe, runs in results.items()}
    figures = plot(output_dir, histories, accuracy_keys, smooth=smooth)
    table, rows = summarize(results)
    with open(os.path.join(output_dir, "summary.md"), "w", encoding="utf-8") as f:
        f.write(f"# Ablation: {', '.join(recipes)} x {seeds} seeds x {max_steps} steps\n\n{table}")
    with open(os.path.join(output_dir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump({"rows": rows, "runs": results}, f, indent=2)
    return {"rows": rows, "table": table, "figures": figures}


def _parse_set(values: list[str]) -> dict:
    overrides = {}
    for item in values:
        if "=" not in item:
            raise ValueError(f"--set {item!r} is not supported; expected field=value, e.g. epsilon_high=0.32.")
        key, value = item.split("=", 1)
        overrides[key.strip()] = yaml.safe_load(value)
    return overrides


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="trl-lite ablate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipes", default="lite_ppo,grpo,dapo", help=f"Comma-separated, among {RECIPES.names()}.")
    parser.add_argument("--seeds", type=int, default=3, help="Seeds per recipe (0, 1, ...).")
    parser.add_argument("--max-steps", type=int, default=100, help="Optimizer steps per run.")
    parser.add_argument("--output-dir", default="runs/ablation")
    parser.add_argument("--model", default=None, help="Local model path; the embedded policy by default.")
    parser.add_argument("--dataset", default=None,
                        help="A trl_lite.data source name or a local JSON/JSONL/parquet/CSV file with prompt and answer "
                             "columns; the built-in arithmetic task by default.")
    parser.add_argument("--reward-funcs", default=None, help="Comma-separated reward names (trl_lite.rewards).")
    parser.add_argument("--eval-problems", type=int, default=100,
                        help="Built-in task: held-out hard problems scored after each run (0 to skip).")
    parser.add_argument("--smooth", type=int, default=5, help="Moving-average window of the figures (logged points).")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="Override a LitePPOConfig field for every run (repeatable).")
    parser.add_argument("--save-steps", "--save_steps", type=int, default=40,
                        help="Checkpoint every run every N steps, keeping the last (0: no checkpoints). Keep it a "
                             "multiple of the optimizer steps per generation batch (4 on the built-in task): TRL "
                             "1.16 does not save a half-used generation batch, so a resume elsewhere is not exact.")
    parser.add_argument("--resume-from-checkpoint", "--resume_from_checkpoint", default=None, metavar="PATH|true",
                        help="'true': unfinished runs continue from their last complete checkpoint; a path: that "
                             "run continues from it (finished runs are never repeated).")
    args = parser.parse_args(argv)
    summary = ablate(
        [name.strip() for name in args.recipes.split(",") if name.strip()], args.seeds, args.max_steps,
        args.output_dir, model=args.model, dataset=args.dataset,
        reward_funcs=args.reward_funcs.split(",") if args.reward_funcs else None,
        overrides=_parse_set(args.set), eval_problems=args.eval_problems, smooth=args.smooth,
        save_steps=args.save_steps, resume_from_checkpoint=args.resume_from_checkpoint,
    )
    print(summary["table"], end="")
    print(f"figures: {', '.join(summary['figures'])}", file=sys.stderr)
