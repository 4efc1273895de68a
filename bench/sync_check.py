"""The stale-weight alarm's cost: time inside `LitePPOTrainer._check_weight_sync` against the optimizer-step time.

Runs LitePPOTrainer with vLLM colocate through the test stand-in (tests/vllm_standin, put on sys.path by this script
only), on the tiny Qwen3 of tests/tiny.py (byte-level BPE, 2 layers), 8 completions of up to `--max-completion-length`
tokens per step, 1 torch thread. Two settings:

- `is_correction`: TRL's default `vllm_importance_sampling_correction=True`; the alarm reuses TRL's forward
  (`old_per_token_logps`): a subtraction over the batch and one all-gather of two numbers;
- `no_is_correction`: `vllm_importance_sampling_correction=False`; the alarm runs one extra forward on
  `trl_lite.sync_check.EXTRA_FORWARD_COMPLETIONS` completions per process.

Reports, per setting, the summed time inside the check over the summed optimizer-step time (TRL's `step_time`,
first step dropped) and the median per step.

    python bench/sync_check.py --steps 20 --runs 3 [--max-completion-length 64] [--out bench/results/sync_check.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(1, os.path.join(ROOT, "tests", "vllm_standin"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import torch  # noqa: E402

from tests.tiny import build_qwen3_model, prompt_dataset, reward_digit_count, train_args  # noqa: E402
from trl_lite import LitePPOConfig, LitePPOTrainer  # noqa: E402


def one_run(model_dir: str, out: str, setting: str, steps: int, max_len: int) -> dict:
    args = LitePPOConfig(**train_args(
        out, use_vllm=True, vllm_mode="colocate", max_steps=steps, per_device_train_batch_size=8, num_generations=4,
        max_completion_length=max_len, logging_steps=1,
        vllm_importance_sampling_correction=setting == "is_correction",
    ))
    trainer = LitePPOTrainer(model=model_dir, reward_funcs=reward_digit_count, args=args,
                             train_dataset=prompt_dataset(64))
    spent = []
    check = trainer._check_weight_sync

    def timed(*a, **k):
        start = time.perf_counter()
        check(*a, **k)
        spent.append(time.perf_counter() - start)

    trainer._check_weight_sync = timed
    trainer.train()
    step_times = [row["step_time"] for row in trainer.state.log_history if "step_time" in row][1:]
    gaps = [row["sampling/sync_logp_gap"] for row in trainer.state.log_history if "sampling/sync_logp_gap" in row]
    return {"setting": setting, "check_s": spent[1:], "step_s": step_times, "gaps": gaps,
            "share": sum(spent[1:]) / sum(step_times)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--max-completion-length", type=int, default=64)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "sync_check.json"))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    work = tempfile.mkdtemp(prefix="bench-sync-")
    model_dir = build_qwen3_model(os.path.join(work, "model"))
    runs = []
    for index in range(args.runs):
        for setting in ("is_correction", "no_is_correction"):  # interleaved: drift in load hits both alike
            runs.append(one_run(model_dir, os.path.join(work, f"{setting}-{index}"), setting, args.steps,
                                args.max_completion_length))
    summary = {}
    for setting in ("is_correction", "no_is_correction"):
        mine = [run for run in runs if run["setting"] == setting]
        summary[setting] = {
            "share_of_step_time": sum(sum(r["check_s"]) for r in mine) / sum(sum(r["step_s"]) for r in mine),
            "median_check_s": statistics.median(t for r in mine for t in r["check_s"]),
            "median_step_s": statistics.median(t for r in mine for t in r["step_s"]),
            "largest_gap": max(g for r in mine for g in r["gaps"]),
        }
        row = summary[setting]
        print(f"{setting:<18} check {row['median_check_s'] * 1e3:7.2f} ms  step {row['median_step_s']:.3f} s  "
              f"share {row['share_of_step_time']:.2%}  largest gap {row['largest_gap']:.2e}")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"machine": platform.platform(), "torch": torch.__version__, "steps": args.steps,
                   "max_completion_length": args.max_completion_length, "summary": summary, "runs": runs}, f,
                  indent=1)
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
