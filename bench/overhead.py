"""Step time and peak memory of LitePPOTrainer (defaults, diagnostics on; and with diagnostics off) against
GRPOTrainer(scale_rewards="batch", loss_type="dapo").

Both trainers run the same tiny Llama on the same prompts; runs are interleaved (lite, lite_no_diagnostics, trl, ...) so drift
in machine load hits both alike. Reports the median optimizer-step time over the steps after the first of each run,
by the wall clock from one step's end to the next (`tests.tiny.StepClock`: the optimizer step and the logging step,
where trl-lite reduces its diagnostics, count; TRL's own `step_time` metric, recorded beside it, times
`training_step` alone), the median peak RSS of each run's own process, and the ratio lite / trl.

    python bench/overhead.py --runs 5 --steps 20 [--max-completion-length 32] [--out bench/results/overhead.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import resource
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from tests.tiny import StepClock, build_tiny_model, prompt_dataset, reward_digit_count, train_args  # noqa: E402
from trl_lite import LitePPOConfig, LitePPOTrainer  # noqa: E402


def one_run(kind: str, model_dir: str, out: str, steps: int, max_len: int) -> tuple[float, float, float]:
    fields = dict(max_steps=steps, max_completion_length=max_len, gradient_accumulation_steps=2, logging_steps=1)
    clock = StepClock()
    if kind.startswith("lite"):
        diagnostics = kind == "lite"
        trainer = LitePPOTrainer(model=model_dir, reward_funcs=reward_digit_count, train_dataset=prompt_dataset(64),
                                 args=LitePPOConfig(**train_args(out, diagnostics=diagnostics, **fields)),
                                 callbacks=[clock])
    else:
        trainer = GRPOTrainer(model=model_dir, reward_funcs=reward_digit_count, train_dataset=prompt_dataset(64),
                              args=GRPOConfig(**train_args(out, scale_rewards="batch", loss_type="dapo", **fields)),
                              callbacks=[clock])
    trainer.train()
    trl_metric = [log["step_time"] for log in trainer.state.log_history if "step_time" in log][1:]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # MiB
    return statistics.median(clock.step_times()[1:]), peak, statistics.median(trl_metric)


def _worker(queue, *run_args):
    torch.set_num_threads(1)
    queue.put(one_run(*run_args))


def isolated_run(*run_args) -> tuple[float, float, float]:
    """One run in a fresh process, so its peak RSS is its own."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_worker, args=(queue, *run_args))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--max-completion-length", type=int, default=32)
    parser.add_argument("--out", default="bench/results/overhead.json", help="Where the JSON report is written.")
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_tiny_model(os.path.join(tmp, "model"))
        results = {"lite": [], "lite_no_diagnostics": [], "trl": []}
        for run in range(args.runs):
            for kind in results:
                results[kind].append(isolated_run(kind, model_dir, os.path.join(tmp, f"{kind}{run}"), args.steps,
                                             args.max_completion_length))
    med = {k: statistics.median(t for t, _, _ in v) for k, v in results.items()}
    mem = {k: statistics.median(m for _, m, _ in v) for k, v in results.items()}
    trl_metric = {k: statistics.median(t for _, _, t in v) for k, v in results.items()}
    report = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}",
        "command": " ".join(sys.argv),
        "median_step_time_s": med,
        "step_time_ratio_lite_over_trl": med["lite"] / med["trl"],
        "step_time_ratio_lite_no_diagnostics_over_trl": med["lite_no_diagnostics"] / med["trl"],
        "median_peak_rss_mib": mem,
        "median_trl_step_time_metric_s": trl_metric,
        "all_runs": results,
        "all_runs_fields": ["wall-clock median step s", "peak RSS MiB", "TRL step_time median s"],
        "date": time.strftime("%Y-%m-%d"),
    }
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)
    print(f"median step time: lite {med['lite']:.4f}s, lite without diagnostics {med['lite_no_diagnostics']:.4f}s, "
          f"trl {med['trl']:.4f}s, ratios {report['step_time_ratio_lite_over_trl']:.3f} / "
          f"{report['step_time_ratio_lite_no_diagnostics_over_trl']:.3f}; peak RSS: lite {mem['lite']:.1f} MiB, "
          f"trl {mem['trl']:.1f} MiB -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
