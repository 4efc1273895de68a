"""Resume exactness: N steps without a stop (checkpoints on the way) against a fresh trainer resumed from checkpoint-k.

    python tests/resume_run.py MODEL_DIR OUT_DIR SETTING [RESUME_STEP]
    torchrun --nproc_per_node 2 tests/resume_run.py MODEL_DIR OUT_DIR SETTING [RESUME_STEP]

Both runs train the tiny Llama in float64 (see tests/trainer/test_exactness.py) with sampled generation, so a resume has to
restore the RNG, the data position and whatever the trainer keeps between steps. Rank 0 writes OUT_DIR/result.json:
the largest weight difference, the largest difference of every logged value after step k, and both runs' logs.
Used by tests/trainer/test_resume_exact.py and `python bench/resume.py`.
"""

from __future__ import annotations

import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from tests.tiny import (  # noqa: E402
    GROUP,
    leave_process_group,
    prompt_dataset,
    reward_digit_count,
    snapshot,
    train_args,
    uniform_or_mixed,
    uniform_or_mixed_dataset,
)
from trl_lite import LitePPOConfig, LitePPOTrainer  # noqa: E402
from trl_lite.diagnostics_window import CLIPPED_TOKENS_FILE  # noqa: E402
from trl_lite.recipes import recipe_settings  # noqa: E402

# Each setting: LitePPOConfig fields, the reward, the dataset and the step to resume from (by default).
# 2 groups of 4 per micro-batch; 4 steps; one checkpoint per step, so any step can be the resume point.
_COMMON = dict(per_device_train_batch_size=2 * GROUP, num_generations=GROUP, max_steps=4, save_strategy="steps",
               save_steps=1, model_init_kwargs={"dtype": torch.float64}, learning_rate=0.1)
SETTINGS = {
    "defaults": (dict(), reward_digit_count, lambda: prompt_dataset(), 2),
    # the checkpoint after step 1 is in the middle of a generation cycle (steps 1-2 share one generation batch)
    "steps_per_generation": (dict(steps_per_generation=2), reward_digit_count, lambda: prompt_dataset(), 1),
    "num_iterations": (dict(num_iterations=2), reward_digit_count, lambda: prompt_dataset(), 1),
    # half the prompts always score 1: most generation batches need a refill
    "dynamic_sampling": (dict(dynamic_sampling=True, dynamic_sampling_max_rounds=20), uniform_or_mixed,
                         lambda: uniform_or_mixed_dataset(6, 6), 2),
    # the recipe as a whole (dynamic sampling, overlong filter and punishment, clip-higher), mid-cycle, and a logging
    # window of 2 steps cut by the checkpoint after step 1 (the diagnostics window and the counters must continue)
    # a logging window of 2 steps (3-4) cut by the checkpoint after step 3, with tokens clipped (SGD at lr 0.5, 4
    # micro-batches per generation batch, so step 3 is off-policy): the clipped-token table, the entropy of correct vs
    # incorrect completions and TRL's averaged metrics of the step-4 log cover steps 3 and 4
    "window": (dict(per_device_train_batch_size=GROUP, steps_per_generation=4, epsilon_high=0.28, learning_rate=0.5,
                    logging_steps=2, max_steps=6), reward_digit_count, lambda: prompt_dataset(), 3),
    "dapo": ({**recipe_settings("dapo"), "steps_per_generation": 2, "logging_steps": 2}, uniform_or_mixed,
             lambda: uniform_or_mixed_dataset(6, 6), 1),
    # vLLM colocate through the test stand-in (tests/vllm_standin on PYTHONPATH; tests/trainer/test_vllm_seeds.py): its
    # per-request sampling seeds come from NumPy's global generator, which the checkpoint's RNG states restore;
    # resumed mid-cycle and at a cycle boundary
    "vllm": (dict(use_vllm=True, vllm_mode="colocate", steps_per_generation=2, max_steps=5), reward_digit_count,
             lambda: prompt_dataset(), 1),
}
# Logged values that measure the wall clock, or (transformers) average the loss over the steps since the last log:
# after a resume that window starts at the resume step.
_NOT_COMPARED = {"step_time", "train_runtime", "train_samples_per_second", "train_steps_per_second", "total_flos",
                 "epoch", "loss", "train_loss"}


def _trainer(model_dir, output_dir, setting):
    fields, reward, dataset, _ = SETTINGS[setting]
    args = LitePPOConfig(**train_args(output_dir, **{**_COMMON, **fields}))
    return LitePPOTrainer(model=model_dir, reward_funcs=reward, args=args, train_dataset=dataset())


def _params(trainer):
    return {k: v.cpu() for k, v in snapshot(trainer.accelerator.unwrap_model(trainer.model)).items()}


def _logs(trainer, after: int) -> dict[int, dict]:
    return {row["step"]: row for row in trainer.state.log_history if row["step"] > after and "train_runtime" not in row}


def _largest_difference(a: dict[int, dict], b: dict[int, dict]) -> dict[str, float]:
    """Per logged key, the largest |a - b| over the steps both logged (inf when only one side logged it)."""
    out = {}
    for step in sorted(set(a) | set(b)):
        for key in sorted(set(a.get(step, {})) | set(b.get(step, {}))):
            if key in _NOT_COMPARED or key == "step":
                continue
            x, y = a.get(step, {}).get(key, "missing"), b.get(step, {}).get(key, "missing")
            if x is None and y is None:  # NaN, logged as null
                diff = 0.0
            elif "missing" in (x, y) or x is None or y is None:
                diff = math.inf
            elif isinstance(x, (int, float)) and isinstance(y, (int, float)):
                diff = 0.0 if (math.isnan(x) and math.isnan(y)) else abs(x - y)
            else:
                diff = 0.0 if x == y else math.inf
            out[key] = max(out.get(key, 0.0), diff)
    return out


def main(model_dir: str, out_dir: str, setting: str, resume_step: str | None = None):
    step = int(resume_step) if resume_step else SETTINGS[setting][3]
    full = _trainer(model_dir, os.path.join(out_dir, "full"), setting)
    full.train()
    full_params, full_logs, full_losses = _params(full), _logs(full, step), _losses(full, step)

    resumed = _trainer(model_dir, os.path.join(out_dir, "resumed"), setting)
    resumed.train(resume_from_checkpoint=os.path.join(out_dir, "full", f"checkpoint-{step}"))
    params, logs, losses = _params(resumed), _logs(resumed, step), _losses(resumed, step)
    if not resumed.accelerator.is_main_process:
        return
    start = _initial_params(model_dir)
    result = {
        "setting": setting,
        "world": resumed.accelerator.num_processes,
        "resume_step": step,
        "weights": max((params[k] - full_params[k]).abs().max().item() for k in params),
        "trained": max((full_params[k] - start[k]).abs().max().item() for k in params),
        "losses": max((abs(losses[s] - full_losses[s]) for s in full_losses), default=math.inf)
        if set(losses) == set(full_losses) else math.inf,
        "logged": _largest_difference(full_logs, logs),
        "clipped_tokens": _clipped_rows(os.path.join(out_dir, "full"), step),
        "clipped_tokens_resumed": _clipped_rows(os.path.join(out_dir, "resumed"), step),
        "full_logs": full_logs,
        "resumed_logs": logs,
    }
    with open(os.path.join(out_dir, "result.json"), "w") as f:
        json.dump(result, f, indent=1)


def _losses(trainer, after: int) -> dict[int, float]:
    """Per step after `after`, the loss of that step: with `logging_steps=1` the logged loss; otherwise the loss the
    trainer recorded per optimizer step (`LitePPOTrainer` keeps none, so logged losses of single-step windows only)."""
    logging = trainer.args.logging_steps
    return {row["step"]: row["loss"] for row in trainer.state.log_history
            if "loss" in row and row["step"] > after and (logging == 1 or row["step"] - logging >= after)}


def _clipped_rows(output_dir: str, after: int) -> list[dict]:
    """The clipped-token table's lines (output_dir/clipped_tokens.jsonl) logged after step `after`."""
    path = os.path.join(output_dir, CLIPPED_TOKENS_FILE)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [row for row in map(json.loads, f) if row["step"] > after]


def _initial_params(model_dir):
    from transformers import AutoModelForCausalLM

    return snapshot(AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float64))


if __name__ == "__main__":
    main(*sys.argv[1:])
    leave_process_group()
