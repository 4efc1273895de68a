"""A methods study (not an experiment about the paper): how much of the spread of a run's held-out accuracy over seeds
is the end point's own fluctuation, which averaging the held-out accuracy over late checkpoints removes, and how much
is the seed's whole trajectory, which it does not.

`python lab/results/variance_study.py ARM_LABEL MIX SEED [SEED ...] --output-dir D` trains one of T1-T3's arms (the
registered settings: `designs/normalization.py`) on seeds of its own (2000 and up: never a registered or pilot seed),
evaluating held-out accuracy as the lab does (`training.evaluate`, seeded; the global RNG state is restored, so the
evaluations do not change the training) at 9 checkpoints over the second half of training, and writes
`<D>/<arm>/seed<k>.json`: {step: held-out accuracy}. `--summarize D` prints, per arm and contrast, the spread over
seeds of the end point's accuracy and of the mean over the checkpoints (`--json PATH`: and writes them there with
the curves; `--check D2`: adds the curves in D2 under "check", e.g. a pilot seed's, whose last checkpoint must equal the
pilot run's held-out accuracy if the evaluations leave the training unchanged).

Made 2026-11-27 (`lab/results/variance_study.json`):

    python lab/results/variance_study.py group/group mostly-hard 2000 ... 2007 --output-dir /work/varstudy
    python lab/results/variance_study.py batch/batch mostly-hard 2000 ... 2007 --output-dir /work/varstudy
    python lab/results/variance_study.py group/group mostly-hard 1000 --output-dir /work/varstudy-check
    python lab/results/variance_study.py --summarize /work/varstudy --check /work/varstudy-check \
        --json lab/results/variance_study.json
"""

from __future__ import annotations

import json
import os
import statistics
import sys


def train(label: str, mix: str, seed: int, output_dir: str) -> None:
    from transformers import TrainerCallback

    from trl_lite.runs import run_one
    from trl_lite_lab.design import policy_dir
    from trl_lite_lab.designs.normalization import ARMS
    from trl_lite_lab.training import LabTrainer, evaluate, train_set

    arm = ARMS[f"{label} {mix}"]
    path = os.path.join(output_dir, label.replace("/", "-") + "-" + mix, f"seed{seed}.json")
    if os.path.exists(path):
        return
    checkpoints = {arm.steps // 2 + i * arm.steps // 16 for i in range(9)}
    curve: dict[int, float] = {}

    class Checkpoints(TrainerCallback):
        def __init__(self, trainer):
            self.trainer = trainer

        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step in checkpoints:
                model = self.trainer.model
                curve[state.global_step] = evaluate("add", model, self.trainer.processing_class,
                                                    temperature=arm.settings["temperature"])["acc"]
                model.train()

    class Trainer(LabTrainer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.add_callback(Checkpoints(self))

    run_one("lite_ppo", seed, os.path.join(output_dir, "runs"), max_steps=arm.steps,
            model=policy_dir(arm.task, arm.policy), folder=os.path.join(output_dir, "runs", arm.name, f"seed{seed}"),
            train_set=train_set(arm, seed), settings=dict(arm.settings), trainer_cls=Trainer,
            evaluate=lambda trainer, tokenizer: {}, eval_problems=0, progress=False)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({str(k): v for k, v in sorted(curve.items())}, f, indent=2)


def _curves(output_dir: str) -> dict[str, dict[int, list[float]]]:
    """{arm folder: {seed: held-out accuracy at each checkpoint, in step order}}."""
    curves: dict[str, dict[int, list[float]]] = {}
    for name in sorted(os.listdir(output_dir)):
        folder = os.path.join(output_dir, name)
        if name == "runs" or not os.path.isdir(folder):
            continue
        for file in os.listdir(folder):
            with open(os.path.join(folder, file), encoding="utf-8") as f:
                curves.setdefault(name, {})[int(file[4:-5])] = [v for _, v in sorted(json.load(f).items(),
                                                                                    key=lambda kv: int(kv[0]))]
    return curves


def summarize(output_dir: str, json_path: str | None = None, check: str | None = None) -> None:
    curves, rows = _curves(output_dir), {}

    def line(what, end, late):
        rows[what] = {"seeds": len(end), "sd_end": statistics.stdev(end), "sd_late": statistics.stdev(late),
                      "mean_end": statistics.mean(end), "mean_late": statistics.mean(late)}
        print(f"{what:45s} n={len(end):2d}  sd(end)={statistics.stdev(end):.4f}  sd(mean of last 9)="
              f"{statistics.stdev(late):.4f}  mean end {statistics.mean(end):.4f} late {statistics.mean(late):.4f}")

    for name, by_seed in curves.items():
        if len(by_seed) > 1:
            line(name, [c[-1] for c in by_seed.values()], [statistics.mean(c) for c in by_seed.values()])
    names = sorted(curves)
    for a in names:
        for b in names:
            if a < b and a.split("-", 2)[-1] == b.split("-", 2)[-1]:
                seeds = sorted(set(curves[a]) & set(curves[b]))
                if len(seeds) > 1:
                    end = [curves[a][s][-1] - curves[b][s][-1] for s in seeds]
                    late = [statistics.mean(curves[a][s]) - statistics.mean(curves[b][s]) for s in seeds]
                    line(f"{a} - {b}", end, late)
                    # how much one seed moves the comparison: the two spreads with each seed left out
                    rows[f"{a} - {b}"]["leave_one_out"] = {
                        seed: [statistics.stdev(end[:i] + end[i + 1:]), statistics.stdev(late[:i] + late[i + 1:])]
                        for i, seed in enumerate(seeds)}
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump({"spread": rows, "curves": curves, "check": _curves(check) if check else {}}, f, indent=1)


if __name__ == "__main__":
    if sys.argv[1] == "--summarize":
        summarize(sys.argv[2], sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None,
                  sys.argv[sys.argv.index("--check") + 1] if "--check" in sys.argv else None)
    else:
        out = sys.argv[sys.argv.index("--output-dir") + 1]
        args = sys.argv[1: sys.argv.index("--output-dir")]
        for s in args[2:]:
            train(args[0], args[1], int(s), out)
