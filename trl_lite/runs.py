"""One training run that records what it logged: `run_one`, the primitive of `trl-lite ablate` (recipes x seeds)
and of research code built on trl-lite (the lab, `lab/` in a clone).

A run trains one recipe with one seed as an ordinary [`LitePPOTrainer`] run (on the built-in arithmetic task with the
shipped policy unless told otherwise), appends every log to `metrics.jsonl` in its folder, and writes `result.json`
(final training accuracy, held-out accuracy, the compute dynamic sampling added) once it has finished.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

# The CPU setting of the built-in task. 8 prompts x 8 completions per generation batch, trained in 4 optimizer steps of
# 16 completions each, so that the later steps are off-policy and the PPO clip (and clip-higher) has work to do.
BUILTIN_SETTINGS = {
    "per_device_train_batch_size": 16,
    "steps_per_generation": 4,
    "num_generations": 8,
    "max_completion_length": 14,
    "learning_rate": 1e-4,
    "lr_scheduler_type": "constant",
    "temperature": 1.0,
}
FINAL_WINDOW = 5  # "final training accuracy": mean over the last 5 generation batches logged (one batch is noisy)
COMMON_SETTINGS = {"logging_steps": 1, "report_to": "none", "save_strategy": "no", "disable_tqdm": True}

def run_dir(output_dir: str, recipe: str, seed: int) -> str:
    return os.path.join(output_dir, "runs", recipe, f"seed{seed}")


def _accuracy_key(reward_name: str) -> str:
    return f"rewards/{reward_name}/mean"


def run_one(recipe: str, seed: int, output_dir: str, *, max_steps: int, model: str | None = None,
            dataset: str | None = None, reward_funcs: list[str] | None = None, overrides: dict | None = None,
            eval_problems: int = 100, progress: bool = True, save_steps: int = 0,
            resume_from_checkpoint: str | None = None, folder: str | None = None, train_set=None,
            settings: dict | None = None, trainer_cls=None, evaluate=None, desc: str | None = None) -> dict:
    """Trains one recipe with one seed; writes `metrics.jsonl` and `result.json` into its run folder; returns the
    result. `resume_from_checkpoint` (a checkpoint of this run) continues the run from there instead of starting
    over; `save_steps > 0` writes a checkpoint every `save_steps` steps (only the last is kept).

    For other runners (the lab): `folder` replaces the run folder, `train_set` the dataset, `settings` the
    built-in task's settings, `trainer_cls` `LitePPOTrainer` (a subclass), and `evaluate(trainer, tokenizer) -> dict`
    the built-in held-out score (its result is stored under `"eval"`); `desc` labels the progress bar."""
    import torch
    from tqdm.auto import tqdm
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback, TrainerCallback

    from .checkpoints import TRAINER_STATE
    from .config import LitePPOConfig
    from .data import SOURCES, load_source, read_local
    from .rewards import REWARDS
    from .tasks.arithmetic import arithmetic_dataset, embedded_policy_path, pass_rate
    from .trainer import LitePPOTrainer

    folder = folder or run_dir(output_dir, recipe, seed)
    metrics_path = os.path.join(folder, "metrics.jsonl")
    if resume_from_checkpoint is None:
        shutil.rmtree(folder, ignore_errors=True)  # an unfinished run starts over
        os.makedirs(folder)
    else:  # the logs after the checkpoint are logged again by the resumed run
        with open(os.path.join(resume_from_checkpoint, TRAINER_STATE), encoding="utf-8") as f:
            step = json.load(f)["global_step"]
        kept = [row for row in read_metrics(metrics_path) if row["step"] <= step]
        with open(metrics_path, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(row) + "\n" for row in kept)
    builtin = dataset is None and train_set is None
    saving = {"save_strategy": "steps", "save_steps": save_steps, "save_total_limit": 1} if save_steps > 0 else {}
    settings = {**(BUILTIN_SETTINGS if builtin else settings or {}), **COMMON_SETTINGS, **saving, "max_steps": max_steps,
                "seed": seed, "output_dir": folder, "bf16": False, "use_cpu": not torch.cuda.is_available(),
                **(overrides or {})}
    args = LitePPOConfig.from_recipe(recipe, **settings)
    if builtin:
        train_set = arithmetic_dataset("medium,hard", split="train", seed=seed)
        names = reward_funcs or ["exact_answer"]
    elif train_set is not None:
        names = reward_funcs or ["exact_answer"]
    else:
        train_set = load_source(dataset) if dataset in SOURCES else read_local(dataset)
        names = reward_funcs or ["math_accuracy"]
    funcs = [REWARDS[name] for name in names]
    model_id = model or embedded_policy_path()
    tokenizer = AutoTokenizer.from_pretrained(model_id)
    policy = AutoModelForCausalLM.from_pretrained(model_id)

    class WriteMetrics(TrainerCallback):
        """Appends every log to metrics.jsonl and shows the run's progress (instead of printing each log)."""

        def on_train_begin(self, args, state, control, **kwargs):
            self.bar = tqdm(total=state.max_steps, desc=desc or f"{recipe} seed {seed}", unit="step", leave=False,
                            disable=not progress or not state.is_world_process_zero, file=sys.stderr,
                            initial=state.global_step)

        def on_step_end(self, args, state, control, **kwargs):
            self.bar.update(1)

        def on_train_end(self, args, state, control, **kwargs):
            self.bar.close()

        def on_log(self, args, state, control, logs=None, **kwargs):
            if state.is_world_process_zero and logs and "train_runtime" not in logs:
                with open(metrics_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps({"step": state.global_step, **logs}) + "\n")

    trainer = (trainer_cls or LitePPOTrainer)(model=policy, reward_funcs=funcs, args=args, train_dataset=train_set,
                             processing_class=tokenizer, callbacks=[WriteMetrics()])
    trainer.remove_callback(PrinterCallback)
    output = trainer.train(resume_from_checkpoint=resume_from_checkpoint)
    history = read_metrics(metrics_path)
    accuracy_key = _accuracy_key(getattr(funcs[0], "__name__", names[0]))
    logged = [row[accuracy_key] for row in history if row.get(accuracy_key) is not None]
    last = logged[-FINAL_WINDOW:]
    rounds = [row["generation/rounds"] for row in history if row.get("generation/rounds") is not None]
    result = {
        "recipe": recipe,
        "seed": seed,
        "steps": trainer.state.global_step,
        "accuracy_key": accuracy_key,
        "final_train_accuracy": sum(last) / len(last) if last else None,
        "completions_generated": trainer._lite_completions_generated,
        "mean_generation_rounds": sum(rounds) / len(rounds) if rounds else None,
        "train_runtime_s": output.metrics.get("train_runtime"),
    }
    if evaluate is not None:
        result["eval"] = evaluate(trainer, tokenizer)
    elif builtin and eval_problems > 0:
        eval_set = arithmetic_dataset("hard", split="test", num_per_level=eval_problems, seed=0)
        result["heldout_accuracy"] = pass_rate(trainer.model, tokenizer, eval_set, greedy=False,
                                               max_new_tokens=args.max_completion_length)
    with open(os.path.join(folder, "result.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
    return result


def read_metrics(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
