"""LitePPOTrainer on a GPU without vLLM: the first thing to run on a rented (or lent) GPU.

    python scripts/gpu_check.py --no-vllm [--device cpu] [--out gpu_check.json] [--checks a,b] [--work-dir DIR]

It builds a Qwen3-architecture model locally (tied embeddings, a byte-level BPE tokenizer and Qwen3's chat template,
as `tests/tiny.py` does; about 200M parameters on a GPU, a tiny one with `--device cpu`), then runs every check below
in a few processes (one per group, so a crash loses one group), prints a PASS/FAIL table and writes every measured
value to `--out` as JSON. It exits 0 only when every check passes.

- `train`: `LitePPOTrainer` in bf16 (the GPU default) with transformers' generation, a few steps: finite losses, the
  weights moved, `advantages/*` and the paper's diagnostics logged (and the clipped-token table written);
- `generation`: transformers' `generate` alone in bf16 on the same model: completion tokens per second (a record);
- `lora`: a LoRA run (r=8, all linear layers): the adapter moves, the base weights stay bit for bit;
- `parity`: float32 with TF32 off: Lite PPO's gradient at every optimizer step against
  `GRPOTrainer(scale_rewards="batch", loss_type="dapo")`'s, on the same completions (a fixed rollout), within
  `PARITY_TOLERANCE` (below); TRL against itself is recorded as the noise floor, and a wrong setting (Lite PPO with
  the group std) must land at least `CONTROL_MINIMUM` away, so that the comparison is shown to see a wrong update;
- `exactness`: the same setting: for every registered loss aggregation, the gradient with gradient accumulation
  2 x B/2 against 1 x B (and token-mean with the overlong filter), within `PARITY_TOLERANCE`;
- `overhead`: Lite PPO (defaults, diagnostics on) against `GRPOTrainer(batch, dapo)`, runs interleaved, 3 each after
  one discarded warm-up run, bf16, the same fixed rollout: the ratio of median optimizer-step wall times (between
  consecutive `on_step_end`s, so logging-time work counts) and of peak GPU memory (`torch.cuda.max_memory_allocated`);
  PASS on a GPU at most `TIME_GOAL` and `MEMORY_GOAL` (on CPU a record only: two shared cores time nothing reliably,
  and one process's peak RSS cannot be split between its runs);
- `zero3`: DeepSpeed ZeRO-3 on one device through `accelerate launch` and the shipped config
  (`trl_lite/accelerate_configs/deepspeed_zero3.yaml`): ZeRO stage 3 in force, finite losses, the gathered weights
  moved; the DeepSpeed ops compiled on the machine (if any) are recorded.

The verdicts, the table and the JSON are pure functions of the measured values (tests/distributed/test_gpu_trainer_check.py tests
them with passing and failing results made by hand); `--device cpu` runs the whole check on CPU, in CI.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import math
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

CHECKS = ("train", "generation", "lora", "parity", "exactness", "overhead", "zero3")
# One process per group: a crash (a CUDA fault poisons its process) loses only its group's checks
GROUPS = (("train", "generation", "lora"), ("parity", "exactness"), ("overhead",), ("zero3",))

# About 200M parameters: 16 layers of 12.6M (q and o 1024x1024, k and v 1024x512, MLP 3 x 1024x3072); the vocabulary
# is the tokenizer's ~400 tokens. The whole check took 232 s on an H200 (docs/gpu.md): sized so that it and a rerun
# fit a 15-minute GPU lease, machine starts included.
MODEL_SIZES = {
    "cuda": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=16, num_attention_heads=16,
                 num_key_value_heads=8, head_dim=64),
    # the CPU rehearsal: the same architecture, small enough for two cores
    "cpu": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, head_dim=16),
}
# completions per micro-batch (per_device_train_batch_size), num_generations, max_completion_length, training steps
SHAPES = {"cuda": dict(batch=16, generations=8, max_length=128, steps=4),
          "cpu": dict(batch=16, generations=4, max_length=16, steps=2)}
PROMPTS = 64

# float32 with TF32 off (TF32 rounds products' inputs to 10 mantissa bits, ~1e-3: it could fail 1e-4 falsely). Where the
# arithmetic differs (another micro-batch split: other matrix shapes, so cuBLAS adds in another order; another
# aggregation's per-sequence weights), the gradients may differ by float32 rounding: relative L2 differences from
# about 1e-7 to a few 1e-6 (2.6e-6 on an H200 between micro-batch splits, bench/results/gpu_check_h200.json); TRL
# against itself is recorded as `noise_floor`.
# 1e-4 leaves a margin of about 40 over that, and is far below a real error: on the CPU rehearsal's model a
# sequence-level instead of token-level mean moves the gradient by 0.21, a group std instead of the batch std by 0.30
# (tests/distributed/test_gpu_trainer_check.py), a factor 2 by 1. The parity check runs that group-std control every time and
# requires it at least CONTROL_MINIMUM away: a comparison that cannot see a wrong update fails.
PARITY_TOLERANCE = 1e-4
CONTROL_MINIMUM = 100 * PARITY_TOLERANCE
TIME_GOAL, MEMORY_GOAL = 1.02, 1.01  # Lite PPO / GRPOTrainer(batch, dapo): the goals
OVERHEAD_RUNS = 3
REQUIRED_LOGS = ("advantages/mean", "advantages/std", "advantages/abs_mean", "advantages/frac_zero_std_groups",
                 "overlong/frac_truncated", "completions/mean_length_correct", "completions/mean_length_incorrect")
REPETITION_PREFIX = "repetition/"


# ------------------------------------------------------------------------------------------------------------ verdicts
def _finite(*values) -> bool:
    return all(v is not None and isinstance(v, (int, float)) and math.isfinite(v) for v in values)


def _training_problems(result: dict) -> str | None:
    """What is wrong with a training run's result in general, or None."""
    if result.get("steps") != result.get("expected_steps"):
        return f"stopped at step {result.get('steps')} of {result.get('expected_steps')}"
    losses = result.get("losses") or []
    if not losses or not _finite(*losses):
        return f"a non-finite or missing loss: {losses}"
    return None


def verdict(check: str, result: dict, device: str) -> tuple[bool, str]:
    """(passed, reason) for one check's measured `result` (what its worker wrote; `error` when it failed to run)."""
    if result.get("error"):
        lines = result["error"].strip().splitlines()
        return False, f"the run failed: {lines[-1] if lines else '?'}"
    if check == "generation":
        rate = result.get("tokens_per_s")
        return (True, f"{rate:.0f} completion tokens/s") if _finite(rate) and rate > 0 else (False, "no tokens")
    if check in ("parity", "exactness"):
        comparisons = result.get("comparisons") or {}
        if not comparisons:
            return False, "nothing was compared"
        for name, diff in comparisons.items():
            if not _finite(diff):
                return False, f"{name}: no gradient compared ({diff})"
            if diff > PARITY_TOLERANCE:
                return False, f"{name}: relative gradient difference {diff:.2e} > {PARITY_TOLERANCE:.0e}"
        if check == "parity":
            control = result.get("control")
            if not _finite(control) or control < CONTROL_MINIMUM:
                return False, (f"the control (a wrong setting) is {control} from TRL's gradient, under "
                               f"{CONTROL_MINIMUM:.0e}: the comparison cannot see a wrong update")
        worst = max(comparisons, key=comparisons.get)
        floor = result.get("noise_floor")
        return True, (f"worst {worst} {comparisons[worst]:.2e} <= {PARITY_TOLERANCE:.0e}"
                      + (f"; TRL vs itself {floor:.2e}" if _finite(floor) else "")
                      + (f"; control {result['control']:.2f}" if check == "parity" else ""))
    if check == "overhead":
        time_ratio, memory_ratio = result.get("time_ratio"), result.get("memory_ratio")
        if not _finite(time_ratio):
            return False, f"no step-time ratio ({time_ratio})"
        if device == "cpu":  # two shared cores: recorded, not judged (the module docstring says why)
            return True, f"time x{time_ratio:.3f} (recorded; judged on a GPU only)"
        if not _finite(memory_ratio):
            return False, f"no peak-memory ratio ({memory_ratio})"
        text = f"time x{time_ratio:.3f} (goal <= {TIME_GOAL}), memory x{memory_ratio:.4f} (goal <= {MEMORY_GOAL})"
        return time_ratio <= TIME_GOAL and memory_ratio <= MEMORY_GOAL, text
    problem = _training_problems(result)
    if problem:
        return False, problem
    if check == "lora":
        if not result.get("adapter_moved"):
            return False, "the LoRA adapter did not move"
        if result.get("base_max_change") != 0.0:
            return False, f"the base weights moved (by up to {result.get('base_max_change')})"
        return True, f"adapter moved, base unchanged ({result.get('adapter_parameters')} adapter tensors)"
    if not result.get("weights_moved"):
        return False, "the weights did not move"
    if check == "zero3" and result.get("zero_stage") != 3:
        return False, f"ZeRO stage {result.get('zero_stage')!r} in force, not 3: DeepSpeed did not run"
    if check == "train":
        missing = result.get("missing_logs")
        if missing is None or missing:
            return False, f"not logged: {missing}"
        if device == "cuda" and not result.get("bf16"):
            return False, "bf16 did not resolve on (the GPU default)"
        if not result.get("clipped_tokens_written"):
            return False, "no clipped-token table written"
        return True, f"{result['steps']} steps, weights moved, advantages and diagnostics logged"
    if check == "zero3":
        return True, f"{result['steps']} steps under ZeRO-3, weights moved"
    raise ValueError(f"verdict: unknown check {check!r}; expected one of {list(CHECKS)}")


def summary_figure(row: dict) -> str:
    """The one number a row is read by, for the table."""
    if row.get("error"):
        return "-"
    check = row["check"]
    if check == "generation" and _finite(row.get("tokens_per_s")):
        return f"{row['tokens_per_s']:.0f} tok/s"
    if check in ("parity", "exactness") and row.get("comparisons"):
        values = [v for v in row["comparisons"].values() if _finite(v)]
        return f"{max(values):.1e}" if values else "-"
    if check == "overhead" and _finite(row.get("time_ratio")):
        return f"x{row['time_ratio']:.3f}"
    if _finite(row.get("step_time_s")):
        return f"{row['step_time_s']:.2f} s/step"
    return "-"


def render_table(rows: list[dict]) -> str:
    """The PASS/FAIL table: one row per check."""
    lines = [f"{'check':<12}{'result':<8}{'figure':>16}{'wall s':>8}  reason"]
    for row in rows:
        lines.append(f"{row['check']:<12}{'PASS' if row['passed'] else 'FAIL':<8}{summary_figure(row):>16}"
                     f"{row.get('wall_s', float('nan')):>8.1f}  {row['reason']}")
    return "\n".join(lines)


def report(rows: list[dict], environment: dict) -> dict:
    """The JSON written to `--out`: the machine, every row as measured, and the overall verdict."""
    return {**environment, "passed": all(row["passed"] for row in rows),
            "failed": [row["check"] for row in rows if not row["passed"]], "results": rows}


def parse_checks(value: str, choices: tuple[str, ...] = CHECKS) -> list[str]:
    """`--checks a,b`: the names, each one of `choices` (scripts/gpu_check.py passes its vLLM checks)."""
    checks = [c.strip() for c in value.split(",") if c.strip()]
    unknown = [c for c in checks if c not in choices]
    if unknown or not checks:
        raise ValueError(f"--checks={value!r}: unknown {unknown or 'empty'}; expected a comma-separated subset of "
                         f"{list(choices)}")
    return checks


# ------------------------------------------------------------------------------------------------------------- workers
def _dataset():
    from datasets import Dataset

    # conversational prompts: Qwen3's chat template is applied, as for a real model
    return Dataset.from_dict({"prompt": [[{"role": "user", "content": f"Let x = {i}. Then 2x + 5 ="}]
                                         for i in range(PROMPTS)]})


def _text(completion) -> str:
    return completion if isinstance(completion, str) else completion[-1]["content"]


def length_reward(completions, **kwargs):
    """{0, 1, 2}, mixed within groups whatever the model (a random one included): the completion's length in characters,
    modulo 3. A third score 0, so the diagnostics' correct/incorrect split has both sides."""
    return [float(len(_text(c)) % 3) for c in completions]


def fixed_rollout(prompts, trainer) -> dict:
    """A `rollout_func` whose completions depend only on (prompt, occurrence within the local batch), so that
    differently built or split runs train on exactly the same samples. Lengths vary; a quarter run to
    `max_completion_length` without EOS (truncated)."""
    tokenizer = trainer.processing_class
    max_length = trainer.max_completion_length
    special = set(tokenizer.all_special_ids)
    vocabulary = [i for i in range(len(tokenizer)) if i not in special]
    seen: dict[str, int] = {}
    prompt_ids, completion_ids = [], []
    for prompt in prompts:
        text = prompt if isinstance(prompt, str) else tokenizer.apply_chat_template(
            prompt, tokenize=False, add_generation_prompt=True)
        occurrence = seen.get(text, 0)
        seen[text] = occurrence + 1
        blocks = max_length // 32 + 1  # 32 bytes a block: one for the length, one per token
        digest = b"".join(hashlib.sha256(f"{text}|{occurrence}|{block}".encode()).digest() for block in range(blocks))
        if digest[0] % 4 == 0:
            ids = [vocabulary[b % len(vocabulary)] for b in digest[1 : 1 + max_length]]
        else:
            length = 1 + digest[0] % (max_length - 1)
            ids = [vocabulary[b % len(vocabulary)] for b in digest[1 : 1 + length]] + [tokenizer.eos_token_id]
        prompt_ids.append(tokenizer(text, add_special_tokens=False)["input_ids"])
        completion_ids.append(ids)
    return {"prompt_ids": prompt_ids, "completion_ids": completion_ids,
            "logprobs": [[0.0] * len(ids) for ids in completion_ids]}


def _sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def _fields(device: str, output_dir: str, **overrides) -> dict:
    shape = SHAPES[device]
    fields = dict(output_dir=output_dir, per_device_train_batch_size=shape["batch"],
                  num_generations=shape["generations"], max_completion_length=shape["max_length"],
                  max_steps=shape["steps"], learning_rate=1e-5, logging_steps=1, report_to="none", save_strategy="no",
                  seed=0, use_cpu=device == "cpu", lr_scheduler_type="constant", warmup_steps=0)
    if device == "cpu":
        # float32 for both trainers: TRL turns an unset bf16 on under use_cpu (CPU autocast), LitePPOConfig off.
        # On a GPU it stays unset: both resolve it on, the default under test (each run records its bf16)
        fields["bf16"] = False
    return {**fields, **overrides}


def _losses(trainer) -> list[float]:
    return [row["loss"] for row in trainer.state.log_history if "loss" in row]


def _cpu_copy(model) -> dict:
    return {name: p.detach().float().cpu().clone() for name, p in model.named_parameters()}


def _max_change(before: dict, after: dict) -> float:
    return max(((after[k] - before[k]).abs().max().item() for k in before), default=float("nan"))


def _step_time(trainer) -> float | None:
    times = [row["step_time"] for row in trainer.state.log_history if "step_time" in row][1:]
    return statistics.median(times) if times else None


def check_train(model_dir: str, work: str, device: str) -> dict:
    from trl_lite import LitePPOConfig, LitePPOTrainer

    output_dir = os.path.join(work, "train")
    args = LitePPOConfig(**_fields(device, output_dir))  # bf16 left unset: it resolves on where a GPU supports it
    clock = _step_clock()
    trainer = LitePPOTrainer(model=model_dir, reward_funcs=length_reward, args=args, train_dataset=_dataset(),
                             callbacks=[clock])
    before = _cpu_copy(trainer.model)
    trainer.train()
    logged = set().union(*[row.keys() for row in trainer.state.log_history])
    missing = [key for key in REQUIRED_LOGS if key not in logged]
    if not any(key.startswith(REPETITION_PREFIX) for key in logged):
        missing.append(REPETITION_PREFIX + "*")
    from trl_lite.diagnostics_window import CLIPPED_TOKENS_FILE

    return {"steps": trainer.state.global_step, "expected_steps": args.max_steps, "losses": _losses(trainer),
            "weights_moved": _max_change(before, _cpu_copy(trainer.model)) > 0, "bf16": bool(args.bf16),
            "parameter_dtype": str(next(trainer.model.parameters()).dtype), "missing_logs": missing,
            "clipped_tokens_written": os.path.isfile(os.path.join(output_dir, CLIPPED_TOKENS_FILE)),
            "step_time_s": _median_step(clock), "trl_step_time_metric_s": _step_time(trainer),
            "logged": {key: [row[key] for row in trainer.state.log_history if key in row]
                       for key in sorted(logged) if key.startswith(("advantages/", "overlong/", "rewards/"))}}


def check_generation(model_dir: str, work: str, device: str) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    shape = SHAPES[device]
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype).to(device).eval()
    texts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in _dataset()["prompt"]]
    batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
    kwargs = dict(do_sample=True, temperature=1.0, top_p=1.0, top_k=0, pad_token_id=tokenizer.pad_token_id)
    model.generate(**batch, max_new_tokens=8, **kwargs)  # warm-up
    torch.manual_seed(0)
    _sync(device)
    start = time.perf_counter()
    output = model.generate(**batch, max_new_tokens=shape["max_length"], **kwargs)
    _sync(device)
    seconds = time.perf_counter() - start
    completions = output[:, batch["input_ids"].shape[1]:]
    # completion tokens: up to and including the first EOS (what TRL counts), not the padding after it
    is_eos = completions == tokenizer.eos_token_id
    lengths = torch.where(is_eos.any(1), is_eos.int().argmax(1) + 1, completions.shape[1])
    tokens = int(lengths.sum())
    return {"prompts": len(texts), "max_new_tokens": shape["max_length"], "dtype": str(dtype), "tokens": tokens,
            "seconds": seconds, "tokens_per_s": tokens / seconds}


def check_lora(model_dir: str, work: str, device: str) -> dict:
    from peft import LoraConfig

    from trl_lite import LitePPOConfig, LitePPOTrainer

    args = LitePPOConfig(**_fields(device, os.path.join(work, "lora"), max_steps=2, learning_rate=1e-4))
    peft_config = LoraConfig(r=8, lora_alpha=16, target_modules="all-linear", task_type="CAUSAL_LM")
    trainer = LitePPOTrainer(model=model_dir, reward_funcs=length_reward, args=args, train_dataset=_dataset(),
                             peft_config=peft_config)
    before = _cpu_copy(trainer.model)
    trainer.train()
    after = _cpu_copy(trainer.model)
    adapter = [k for k in before if "lora_" in k]
    base = [k for k in before if "lora_" not in k]
    return {"steps": trainer.state.global_step, "expected_steps": args.max_steps, "losses": _losses(trainer),
            "adapter_parameters": len(adapter), "bf16": bool(args.bf16),
            "adapter_moved": bool(adapter) and _max_change({k: before[k] for k in adapter}, after) > 0,
            "base_max_change": _max_change({k: before[k] for k in base}, after)}


def _gradient_recorder():
    """A TrainerCallback keeping the whole gradient (flattened, float64, on CPU) at every optimizer step, before it."""
    import torch
    from transformers import TrainerCallback

    class GradientRecorder(TrainerCallback):
        def __init__(self):
            self.gradients = []

        def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
            named = sorted((n, p) for n, p in model.named_parameters() if p.grad is not None)
            self.gradients.append(torch.cat([p.grad.detach().double().flatten().cpu() for _, p in named]))

    return GradientRecorder()


def _float32_exact() -> None:
    """float32 matrix products with TF32 off (cuBLAS and cuDNN): the parity and exactness checks' numerics."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


def _gradients(trainer_cls, config_cls, model_dir: str, output_dir: str, device: str, **fields) -> list:
    """The gradient at each optimizer step of one float32 run on the fixed rollout."""
    import torch

    # SGD without clipping: a clipped gradient would hide a scale error, and the gradient is what is compared
    common = dict(bf16=False, optim="sgd", max_grad_norm=0.0, max_steps=2, learning_rate=0.5,
                  model_init_kwargs={"dtype": torch.float32})
    args = config_cls(**_fields(device, output_dir, **{**common, **fields}))
    recorder = _gradient_recorder()
    trainer = trainer_cls(model=model_dir, reward_funcs=length_reward, args=args, train_dataset=_dataset(),
                          rollout_func=fixed_rollout, callbacks=[recorder])
    trainer.train()
    gradients = recorder.gradients
    del trainer
    _free(device)
    return gradients


def _relative_difference(reference: list, other: list) -> float:
    """max over optimizer steps of ||g - g_ref|| / ||g_ref||; NaN when the runs took different numbers of steps."""
    if not reference or len(reference) != len(other) or any(a.shape != b.shape for a, b in zip(reference, other)):
        return float("nan")
    return max(((b - a).norm() / a.norm()).item() for a, b in zip(reference, other))


def _free(device: str) -> None:
    import torch

    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()


def check_parity(model_dir: str, work: str, device: str) -> dict:
    from trl import GRPOConfig, GRPOTrainer

    from trl_lite import LitePPOConfig, LitePPOTrainer

    _float32_exact()
    accumulation = dict(gradient_accumulation_steps=2)
    trl = _gradients(GRPOTrainer, GRPOConfig, model_dir, os.path.join(work, "parity-trl"), device,
                     scale_rewards="batch", loss_type="dapo", **accumulation)
    trl_again = _gradients(GRPOTrainer, GRPOConfig, model_dir, os.path.join(work, "parity-trl2"), device,
                           scale_rewards="batch", loss_type="dapo", **accumulation)
    lite = _gradients(LitePPOTrainer, LitePPOConfig, model_dir, os.path.join(work, "parity-lite"), device,
                      advantage_mean="group", advantage_std="batch", loss_aggregation="token-mean", **accumulation)
    # the control: a wrong setting for this comparison (the group std), which must land far from TRL's gradient
    wrong = _gradients(LitePPOTrainer, LitePPOConfig, model_dir, os.path.join(work, "parity-control"), device,
                       advantage_mean="group", advantage_std="group", loss_aggregation="token-mean", **accumulation)
    return {"comparisons": {"lite_ppo_vs_trl_batch_dapo": _relative_difference(trl, lite)},
            "noise_floor": _relative_difference(trl, trl_again), "control": _relative_difference(trl, wrong),
            "control_setting": "LitePPO advantage_std='group' vs TRL scale_rewards='batch'",
            "optimizer_steps": len(lite), "gradient_norms": [g.norm().item() for g in trl],
            "lite_gradient_norms": [g.norm().item() for g in lite], "tolerance": PARITY_TOLERANCE,
            "control_minimum": CONTROL_MINIMUM}


def check_exactness(model_dir: str, work: str, device: str) -> dict:
    from trl_lite import LitePPOConfig, LitePPOTrainer
    from trl_lite.aggregation import AGGREGATIONS

    _float32_exact()
    batch = SHAPES[device]["batch"]
    settings = [(mode, False) for mode in AGGREGATIONS.names()] + [("token-mean", True)]
    comparisons = {}
    for mode, overlong in settings:
        name = mode + ("+overlong_filter" if overlong else "")
        runs = [_gradients(LitePPOTrainer, LitePPOConfig, model_dir, os.path.join(work, f"exact-{name}-{b}x{a}"),
                           device, loss_aggregation=mode, overlong_filter=overlong, max_steps=1,
                           per_device_train_batch_size=b, gradient_accumulation_steps=a)
                for b, a in ((batch, 1), (batch // 2, 2))]
        comparisons[name] = _relative_difference(*runs)
    return {"comparisons": comparisons, "splits": [[batch, 1], [batch // 2, 2]], "tolerance": PARITY_TOLERANCE}


def _step_clock():
    """A `tests.tiny.StepClock`: each optimizer step by the wall clock, logging-time work included."""
    from tests.tiny import StepClock

    return StepClock()


def _median_step(clock, skip_first: bool = True) -> float | None:
    """The median of a StepClock's step times (the first dropped: it warms up) or None."""
    times = clock.step_times()[1:] if skip_first else clock.step_times()
    return statistics.median(times) if times else None


def _overhead_run(kind: str, model_dir: str, output_dir: str, device: str, steps: int) -> dict:
    import torch
    from trl import GRPOConfig, GRPOTrainer

    from trl_lite import LitePPOConfig, LitePPOTrainer

    _free(device)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
        baseline = torch.cuda.memory_allocated()
    fields = _fields(device, output_dir, max_steps=steps, gradient_accumulation_steps=2)
    clock = _step_clock()
    if kind == "lite":  # defaults: Lite PPO with the paper's diagnostics on
        trainer = LitePPOTrainer(model=model_dir, reward_funcs=length_reward, train_dataset=_dataset(),
                                 args=LitePPOConfig(**fields), rollout_func=fixed_rollout, callbacks=[clock])
    else:
        trainer = GRPOTrainer(model=model_dir, reward_funcs=length_reward, train_dataset=_dataset(),
                              args=GRPOConfig(**fields, scale_rewards="batch", loss_type="dapo"),
                              rollout_func=fixed_rollout, callbacks=[clock])
    trainer.train()
    peak = torch.cuda.max_memory_allocated() - baseline if device == "cuda" else None
    result = {"kind": kind, "step_time_s": _median_step(clock), "step_times_s": clock.step_times()[1:],
              "trl_step_time_metric_s": _step_time(trainer), "peak_memory_bytes": peak,
              "bf16": bool(trainer.args.bf16)}
    del trainer  # freed before the next run's baseline (`_free` at its start)
    return result


def check_overhead(model_dir: str, work: str, device: str) -> dict:
    steps = 8 if device == "cuda" else 3
    # one discarded run first: the first run in a process pays for CUDA's and cuBLAS's set-up (time and workspace)
    warmup = _overhead_run("trl", model_dir, os.path.join(work, "overhead-warmup"), device, 2)
    runs = []
    for index in range(OVERHEAD_RUNS):  # interleaved, who goes first alternating, so drift hits both alike
        for kind in ("lite", "trl") if index % 2 == 0 else ("trl", "lite"):
            runs.append(_overhead_run(kind, model_dir, os.path.join(work, f"overhead-{kind}-{index}"), device, steps))

    def median(kind, key):
        values = [run[key] for run in runs if run["kind"] == kind and run[key] is not None]
        return statistics.median(values) if values else None

    times = {kind: median(kind, "step_time_s") for kind in ("lite", "trl")}
    memory = {kind: median(kind, "peak_memory_bytes") for kind in ("lite", "trl")}
    pairs = [{run["kind"]: run["step_time_s"] for run in runs[i : i + 2]} for i in range(0, len(runs), 2)]
    return {"runs": runs, "warmup": warmup, "median_step_time_s": times, "median_peak_memory_bytes": memory,
            "pair_time_ratios": [p["lite"] / p["trl"] if p["lite"] and p["trl"] else None for p in pairs],
            "time_ratio": times["lite"] / times["trl"] if times["lite"] and times["trl"] else None,
            "memory_ratio": memory["lite"] / memory["trl"] if memory["lite"] and memory["trl"] else None,
            "goals": {"time": TIME_GOAL, "memory": MEMORY_GOAL}, "steps_per_run": steps}


def check_zero3(model_dir: str, work: str, device: str) -> dict:
    import deepspeed

    from trl_lite import LitePPOConfig, LitePPOTrainer

    args = LitePPOConfig(**_fields(device, os.path.join(work, "zero3"), max_steps=2))
    clock = _step_clock()
    trainer = LitePPOTrainer(model=model_dir, reward_funcs=length_reward, args=args, train_dataset=_dataset(),
                             callbacks=[clock])

    def gathered():  # ZeRO-3 partitions every parameter: gather them to read them
        parameters = list(trainer.model_wrapped.parameters()) if trainer.is_deepspeed_enabled else []
        with deepspeed.zero.GatheredParameters(parameters or list(trainer.model.parameters())):
            return _cpu_copy(trainer.model)

    before = gathered()
    trainer.train()
    after = gathered()
    return {"steps": trainer.state.global_step, "expected_steps": args.max_steps, "losses": _losses(trainer),
            "weights_moved": _max_change(before, after) > 0, "deepspeed": deepspeed.__version__,
            "zero_stage": trainer.accelerator.state.deepspeed_plugin.zero_stage if trainer.is_deepspeed_enabled
            else None, "processes": trainer.accelerator.num_processes, "bf16": bool(args.bf16),
            "step_time_s": _median_step(clock, skip_first=False), "trl_step_time_metric_s": _step_time(trainer),
            "ops_compiled": _compiled_extensions()}


def _compiled_extensions() -> list[str]:
    """The torch extensions (DeepSpeed's JIT-built ops) compiled on this machine so far: torch builds them under
    TORCH_EXTENSIONS_DIR, by default ~/.cache/torch_extensions."""
    root = os.environ.get("TORCH_EXTENSIONS_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "torch_extensions")
    found = []
    for folder, _, files in os.walk(root):
        found += [os.path.relpath(os.path.join(folder, f), root) for f in files if f.endswith(".so")]
    return sorted(found)


WORKERS = {"train": check_train, "generation": check_generation, "lora": check_lora, "parity": check_parity,
           "exactness": check_exactness, "overhead": check_overhead, "zero3": check_zero3}


def worker(checks: list[str], model_dir: str, work: str, device: str) -> None:
    """Runs `checks` in this process, writing each one's result to `work/<check>.json` as soon as it is known."""
    import torch

    rank = int(os.environ.get("RANK", "0"))
    for check in checks:
        started = time.perf_counter()
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()  # each check's own peak
        try:
            result = WORKERS[check](model_dir, work, device)
        except Exception:  # noqa: BLE001 - recorded as the check's failure; the group's other checks still run
            result = {"error": traceback.format_exc()}
        result["wall_s"] = time.perf_counter() - started
        if device == "cuda":
            result.setdefault("peak_memory_bytes_check", torch.cuda.max_memory_allocated())
        if rank == 0:
            with open(os.path.join(work, f"{check}.json"), "w") as f:
                json.dump(result, f, indent=1)


# ----------------------------------------------------------------------------------------------------------- launching
def build_model(path: str, device: str) -> str:
    from tests.tiny import build_qwen3_model

    return build_qwen3_model(path, **MODEL_SIZES[device])


def _command(checks: list[str], model_dir: str, work: str, device: str) -> list[str]:
    script = [os.path.join(ROOT, "scripts", "gpu_check.py"), "--no-vllm", "--device", device]
    if checks == ["zero3"]:
        # the shipped config trains in bf16 (a GPU's); on CPU: float32
        precision = [] if device == "cuda" else ["--mixed_precision", "no"]
        launcher = [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
                    os.path.join(ROOT, "trl_lite", "accelerate_configs", "deepspeed_zero3.yaml"),
                    "--num_processes", "1", *precision]
    else:
        launcher = [sys.executable]
    return launcher + script + ["--worker", ",".join(checks), "--model", model_dir, "--work-dir", work]


def run_group(checks: list[str], model_dir: str, work: str, device: str, timeout: float) -> list[dict]:
    """Launches one group's process; its rows, each with the verdict (a check it did not write fails with the
    process's error output)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}
    started = time.perf_counter()
    # its own process group: on a timeout the whole tree goes (`accelerate launch` starts the worker through
    # torch.distributed.run, and a worker left behind would hold the GPU for the groups after it)
    process = subprocess.Popen(_command(checks, model_dir, work, device), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        _, log = process.communicate(timeout=timeout)
        failure = (log[-3000:] or f"exit status {process.returncode}") if process.returncode else None
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        _, log = process.communicate()
        failure = f"{log[-2000:]}\nTimeoutExpired: the group {checks} ran past {timeout:.0f} s"
    with open(os.path.join(work, "+".join(checks) + ".log"), "w") as f:  # the group's whole error output
        f.write(log)
    rows = []
    for check in checks:
        path = os.path.join(work, f"{check}.json")
        if os.path.exists(path):
            with open(path) as f:
                result = json.load(f)
        else:
            result = {"error": failure or "the worker wrote no result", "wall_s": time.perf_counter() - started}
        row = {"check": check, **result}
        row["passed"], row["reason"] = verdict(check, row, device)
        rows.append(row)
    return rows


def environment(device: str, model_dir: str) -> dict:
    """The machine and the stack, for the JSON."""
    import importlib.metadata

    import torch

    versions = {}
    for name in ("torch", "transformers", "accelerate", "trl", "peft", "datasets", "deepspeed"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    info = {"device": device, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": _commit(),
            "python": platform.python_version(), "versions": versions, "model_size": MODEL_SIZES[device],
            "shape": SHAPES[device]}
    if device == "cuda":
        properties = torch.cuda.get_device_properties(0)
        info.update(gpu=torch.cuda.get_device_name(0), gpu_memory_bytes=properties.total_memory,
                    capability=list(torch.cuda.get_device_capability(0)), cuda=torch.version.cuda,
                    nvidia_smi=_nvidia_smi())
    else:
        info.update(cpu=platform.processor() or platform.machine(), cpu_count=os.cpu_count())
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model_dir)
    info["parameters"] = _parameter_count(config)
    return info


def _commit() -> str | None:
    """The checkout's commit, with `+dirty` when it has changes; None outside a git checkout."""
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "") if head.returncode == 0 else None


def _nvidia_smi() -> dict | None:
    """The GPU's name, driver and memory as nvidia-smi reports them; None without nvidia-smi."""
    fields = ("name", "driver_version", "memory.total")
    try:
        done = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    values = done.stdout.strip().splitlines()[0].split(", ") if done.returncode == 0 and done.stdout.strip() else []
    return dict(zip(fields, values)) if len(values) == len(fields) else None


def _parameter_count(config) -> int:
    """Parameters of a Qwen3 with tied embeddings, from its config (the model is not loaded for it)."""
    h, i, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    q, kv = config.num_attention_heads * config.head_dim, config.num_key_value_heads * config.head_dim
    per_layer = h * (q + 2 * kv) + q * h + 3 * h * i + 2 * h + 2 * config.head_dim  # + 2 RMSNorms, q/k norms
    return config.vocab_size * h + layers * per_layer + h


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="gpu_check.py --no-vllm", description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-vllm", action="store_true", required=True)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cpu: the rehearsal (a tiny model; the overhead goals are not judged)")
    parser.add_argument("--out", default="gpu_check.json", help="where the results go, as JSON")
    parser.add_argument("--checks", default=None, help=f"comma-separated, from {list(CHECKS)} (default: all)")
    parser.add_argument("--work-dir", default=None, help="default: a temporary folder")
    parser.add_argument("--time-limit", type=float, default=480.0,
                        help="seconds the whole check may run: a group still running when they are spent is stopped "
                        "and its unfinished checks fail (default 480: the 8 minutes the check is sized for)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker.split(","), args.model, args.work_dir, args.device)
        return 0
    try:
        checks = parse_checks(args.checks) if args.checks is not None else list(CHECKS)
    except ValueError as err:
        parser.error(str(err))
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_check --no-vllm: no CUDA GPU is visible (torch.cuda.is_available() is False); --device cpu runs "
              "the same checks on CPU with a tiny model (the rehearsal).", file=sys.stderr)
        return 2
    import tempfile

    started = time.perf_counter()
    work = args.work_dir or tempfile.mkdtemp(prefix="gpu_check-")
    os.makedirs(work, exist_ok=True)
    model_dir = build_model(os.path.join(work, "model"), args.device)
    rows = []
    for group in GROUPS:
        selected = [check for check in group if check in checks]
        if selected:
            left = max(args.time_limit - (time.perf_counter() - started), 1.0)
            rows += run_group(selected, model_dir, work, args.device, left)
            print(render_table(rows[-len(selected):]).split("\n", 1)[1], flush=True)
    print(render_table(rows))
    result = report(rows, {**environment(args.device, model_dir), "wall_s": time.perf_counter() - started,
                           "command": "python scripts/gpu_check.py " + " ".join(argv if argv is not None
                                                                                  else sys.argv[1:])})
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"written to {args.out} ({result['wall_s']:.0f} s)")
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
