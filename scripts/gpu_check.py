"""One command for anyone with a GPU and vLLM: LitePPOTrainer's vLLM colocate path, checked on real hardware.

    pip install -e ".[vllm,deepspeed]"
    python scripts/gpu_check.py [--out gpu_check.json] [--steps 4] [--work-dir /tmp/gpu_check]

It builds a small Qwen3-architecture model and a byte-level BPE tokenizer locally (no Hub), then runs a few training
steps of each check in its own process and prints a pass/fail table (also written as JSON to `--out`):

- `colocate`: vLLM colocated on 1 GPU;
- `sleep_mode`: the same with `vllm_enable_sleep_mode=True` (the engine sleeps at level 2 between generations);
- `dynamic_sampling`: DAPO's dynamic sampling (several generation rounds per optimizer step) with colocate;
- `zero3`: DeepSpeed ZeRO-3 + colocate through `accelerate launch --config_file
  trl_lite/accelerate_configs/deepspeed_zero3.yaml` on every visible GPU;
- `standalone`: vLLM alone on the same model, prompts and lengths, the reference for generation speed.

A check passes when its run finishes with finite losses, the weights moved, and TRL's importance-sampling ratio
(vLLM's sampling log-probs against the trainer's) stays within 10% of 1 (bf16 training against vLLM's kernels).
Generation throughput inside training (completion tokens / seconds in `VLLMGeneration.generate`) is reported next to
standalone vLLM's. Without a CUDA GPU or without vLLM it stops at once and says so.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# Big enough for vLLM's attention kernels (head_dim 64) and a meaningful tokens/s, small enough to build in seconds
MODEL_SIZE = dict(hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=64)
CHECKS = ("colocate", "sleep_mode", "dynamic_sampling", "zero3")
PROMPTS = 64
MAX_COMPLETION_LENGTH = 128


def missing_requirements() -> str | None:
    """Why this machine cannot run the checks, or None."""
    import torch

    if not torch.cuda.is_available():
        return "no CUDA GPU is visible (torch.cuda.is_available() is False)"
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed (pip install -e '.[vllm]')"
    return None


def build_model(path: str, **size) -> str:
    """A Qwen3-architecture model with a byte-level BPE tokenizer and Qwen3's chat template, built and saved locally."""
    from tests.tiny import build_qwen3_model

    return build_qwen3_model(path, **{**MODEL_SIZE, **size})


def _dataset():
    from datasets import Dataset

    return Dataset.from_dict({"prompt": [f"Let x = {i}. Then 2x + 5 =" for i in range(PROMPTS)]})


def _reward(completions, **kwargs):
    """Mixed rewards within groups (so dynamic sampling keeps some and refills others)."""
    return [float(sum(ch.isdigit() for ch in c) % 2) for c in completions]


def _synchronize():
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def worker(check: str, model_dir: str, out: str, steps: int, max_length: int = MAX_COMPLETION_LENGTH) -> None:
    """One check's training run (in its own process); writes its measurements to `out`."""
    import torch

    from trl_lite import LitePPOConfig, LitePPOTrainer

    fields = dict(output_dir=os.path.join(os.path.dirname(out), check), use_vllm=True, vllm_mode="colocate",
                  vllm_gpu_memory_utilization=0.3, max_steps=steps, per_device_train_batch_size=16,
                  num_generations=8, max_completion_length=max_length, learning_rate=1e-4,
                  logging_steps=1, report_to="none", save_strategy="no",
                  bf16=torch.cuda.is_available(), use_cpu=not torch.cuda.is_available())  # CPU: the stand-in's test
    if check == "sleep_mode":
        fields["vllm_enable_sleep_mode"] = True
    if check == "dynamic_sampling":
        fields.update(dynamic_sampling=True, dynamic_sampling_max_rounds=3)
    trainer = LitePPOTrainer(model=model_dir, reward_funcs=_reward, args=LitePPOConfig(**fields),
                             train_dataset=_dataset())
    timing = {"seconds": 0.0, "tokens": 0, "calls": 0}
    generate = trainer.vllm_generation.generate

    def timed(*args, **kwargs):
        _synchronize()
        start = time.perf_counter()
        result = generate(*args, **kwargs)
        _synchronize()
        timing["seconds"] += time.perf_counter() - start
        timing["tokens"] += sum(len(ids) for ids in result[1])
        timing["calls"] += 1
        return result

    trainer.vllm_generation.generate = timed
    before = {k: v.detach().float().cpu().clone() for k, v in trainer.model.named_parameters() if v.numel() > 0}
    trainer.train()
    after = {k: v.detach().float().cpu() for k, v in trainer.model.named_parameters() if k in before}
    logs = [row for row in trainer.state.log_history if "loss" in row]
    ratios = [row.get("sampling/importance_sampling_ratio/mean") for row in logs]
    result = {
        "check": check, "processes": trainer.accelerator.num_processes, "steps": trainer.state.global_step,
        "losses_finite": all(math.isfinite(row["loss"]) for row in logs),
        "weights_moved": max((after[k] - before[k]).abs().max().item() for k in before) > 0 if before else None,
        "is_ratio_mean": [r for r in ratios if r is not None],
        "generation_rounds": [row.get("generation/rounds") for row in logs],
        "tokens_per_s": timing["tokens"] / timing["seconds"] if timing["seconds"] else None,
        "generate_calls": timing["calls"],
    }
    if trainer.accelerator.is_main_process:
        with open(out, "w") as f:
            json.dump(result, f, indent=1)


def standalone(model_dir: str, out: str) -> None:
    """vLLM alone on the same model, prompts and lengths: completion tokens per second."""
    from transformers import AutoTokenizer
    from vllm import LLM, SamplingParams

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    llm = LLM(model=model_dir, gpu_memory_utilization=0.3, max_num_batched_tokens=4096, seed=0)
    prompts = [{"prompt_token_ids": tokenizer(p)["input_ids"]} for p in _dataset()["prompt"][:16]] * 8
    params = SamplingParams(max_tokens=MAX_COMPLETION_LENGTH, temperature=1.0, logprobs=0)
    llm.generate(prompts[:8], params, use_tqdm=False)  # warm-up
    start = time.perf_counter()
    outputs = llm.generate(prompts, params, use_tqdm=False)
    seconds = time.perf_counter() - start
    tokens = sum(len(o.token_ids) for request in outputs for o in request.outputs)
    with open(out, "w") as f:
        json.dump({"check": "standalone", "tokens_per_s": tokens / seconds, "passed": True}, f, indent=1)


def _launch(check: str, model_dir: str, work: str, steps: int, max_length: int = MAX_COMPLETION_LENGTH) -> dict:
    out = os.path.join(work, f"{check}.json")
    script = os.path.abspath(__file__)
    if check == "zero3":
        import torch

        command = ["accelerate", "launch", "--config_file",
                   os.path.join(ROOT, "trl_lite", "accelerate_configs", "deepspeed_zero3.yaml"),
                   "--num_processes", str(torch.cuda.device_count()), script]
    else:
        command = [sys.executable, script]
    command += ["--worker", check, "--model", model_dir, "--result", out, "--steps", str(steps),
                "--max-completion-length", str(max_length)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    wall = time.perf_counter() - started
    if done.returncode != 0 or not os.path.exists(out):
        return {"check": check, "passed": False, "wall_s": wall, "error": done.stderr[-2000:]}
    with open(out) as f:
        result = json.load(f)
    result["wall_s"] = wall
    if check == "standalone":
        return result
    ratios = result.get("is_ratio_mean", [])
    result["passed"] = bool(result.get("losses_finite") and result.get("weights_moved") is not False
                            and result["steps"] == steps and all(abs(r - 1) < 0.1 for r in ratios)
                            and (check != "dynamic_sampling" or result["generate_calls"] >= steps))
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="gpu_check.json", help="where the pass/fail table goes, as JSON")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--work-dir", default=None, help="default: a temporary folder")
    parser.add_argument("--checks", default=",".join(CHECKS), help=f"comma-separated, from {CHECKS}")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--max-completion-length", type=int, default=MAX_COMPLETION_LENGTH)
    args = parser.parse_args(argv)
    if args.worker:
        return standalone(args.model, args.result) if args.worker == "standalone" else worker(
            args.worker, args.model, args.result, args.steps, args.max_completion_length)

    reason = missing_requirements()
    if reason:
        print(f"gpu_check: {reason}; this script checks the vLLM colocate path on a GPU and needs both. "
              "On CPU, the same path is exercised by tests/test_vllm_colocate.py with a vLLM stand-in.", file=sys.stderr)
        return 2
    import tempfile

    work = args.work_dir or tempfile.mkdtemp(prefix="gpu_check-")
    os.makedirs(work, exist_ok=True)
    model_dir = build_model(os.path.join(work, "model"))
    checks = [c for c in args.checks.split(",") if c]
    unknown = sorted(set(checks) - set(CHECKS))
    if unknown:
        parser.error(f"--checks: unknown {unknown}; expected some of {list(CHECKS)}")
    length = args.max_completion_length
    results = [_launch(check, model_dir, work, args.steps, length) for check in checks]
    results.append(_launch("standalone", model_dir, work, args.steps, length))
    print(f"{'check':<18}{'result':<8}{'procs':<7}{'gen tok/s':>12}{'IS ratio':>10}{'wall s':>9}")
    for row in results:
        ratio = row.get("is_ratio_mean") or [float("nan")]
        speed = "-" if row.get("tokens_per_s") is None else str(round(row["tokens_per_s"]))
        print(f"{row['check']:<18}{'PASS' if row['passed'] else 'FAIL':<8}{row.get('processes', 1):<7}"
              f"{speed:>12}{sum(ratio) / len(ratio):>10.3f}"
              f"{row.get('wall_s', float('nan')):>9.1f}")
    with open(args.out, "w") as f:
        json.dump({"model_size": MODEL_SIZE, "results": results}, f, indent=1)
    print(f"written to {args.out}")
    return 0 if all(row["passed"] for row in results) else 1


if __name__ == "__main__":
    sys.exit(main())
