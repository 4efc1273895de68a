"""Train a policy with Lite PPO (arXiv 2508.08221), from a CPU laptop to multi-GPU clusters.

With no arguments, this runs offline on CPU in under a minute: a small policy shipped in the package (a character
model taught the answer format by SFT with a habit of dropping the carry into the hundreds, see
`scripts/build_embedded_policy.py`) learns the built-in arithmetic task with Lite PPO, and a before/after table of
held-out accuracy on the hard level is printed: greedy 0.454 -> 0.806, sampled 0.502 -> 0.690 (seed 0). `--task sumk`
trains one of the lab's SUM-k policies instead (`trl_lite/tasks/sumk.py`, `trl_lite/lab`):

    python examples/train_lite.py
    accelerate launch examples/train_lite.py

`--recipe NAME` applies a named recipe (lite_ppo, grpo, dr_grpo, instruct, dapo; see `trl_lite/recipes.py`), and
explicit flags and `--config` values override it:

    python examples/train_lite.py --recipe dapo        # the CPU run above, with DAPO's settings
    accelerate launch examples/train_lite.py --config examples/recipes/lite_ppo_qwen3_4b_base.yaml --recipe dr_grpo

A preempted run resumes with the same command plus `--resume_from_checkpoint true` (the last complete checkpoint in
`--output_dir`) or `--resume_from_checkpoint runs/x/checkpoint-500`, and ends with the uninterrupted run's weights (see
"Long runs" in the README). A reward function that fails stops the run with an error naming it, the step and the
sample; `--on_reward_error skip` trains on without the samples it fails on (`--reward_timeout S` for async ones).

At real scale every LitePPOConfig field is a flag, and `--config recipe.yaml` loads a full setup:

    accelerate launch --config_file examples/accelerate_configs/deepspeed_zero3.yaml examples/train_lite.py \
        --config examples/recipes/lite_ppo_qwen3_4b_base.yaml
    accelerate launch --config_file examples/accelerate_configs/deepspeed_zero3.yaml examples/train_lite.py \
        --model_name_or_path Qwen/Qwen3-4B-Base --dataset_name zwhe99/DeepMath-103K --prompt_column question \
        --answer_column final_answer --reward_funcs math_accuracy --use_vllm --vllm_mode colocate \
        --num_generations 8 --per_device_train_batch_size 16 --gradient_accumulation_steps 8 \
        --max_completion_length 8192 --temperature 0.99 --top_p 0.99 --learning_rate 1e-6 --bf16 \
        --output_dir runs/lite-ppo-qwen3-4b-base
    # LoRA: add --use_peft --lora_r 64 --lora_alpha 128 --lora_target_modules all-linear
    # Multi-GPU without DeepSpeed: --config_file examples/accelerate_configs/multi_gpu.yaml
    # Push the result with its model card: --push_to_hub --hub_model_id you/lite-ppo-qwen3-4b
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

import torch
from datasets import load_dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback, ProgressCallback
from transformers.integrations import is_deepspeed_zero3_enabled
from trl import ModelConfig, TrlParser, get_peft_config

from trl_lite import LitePPOConfig, LitePPOTrainer
from trl_lite.hub import HubPushError
from trl_lite.data import chat_prompt
from trl_lite.tasks.arithmetic import arithmetic_dataset, embedded_policy_path, pass_rate
from trl_lite.tasks.sumk import sumk_dataset, sumk_policy_path
from trl_lite.checkpoints import resolve_resume
from trl_lite.recipes import apply_recipe_defaults
from trl_lite.rewards import REWARDS


@dataclass
class ScriptArguments:
    dataset_name: str | None = field(
        default=None,
        metadata={"help": "Hub id or local path (JSONL/parquet/folder) of a dataset with a prompt and an answer column. "
                          "The built-in arithmetic task when unset."},
    )
    dataset_config: str | None = field(default=None, metadata={"help": "Dataset configuration name."})
    dataset_train_split: str = field(default="train", metadata={"help": "Split to train on."})
    dataset_test_split: str | None = field(default=None, metadata={"help": "Split to evaluate on (eval_steps)."})
    prompt_column: str = field(default="prompt", metadata={"help": "Column holding the prompt (text or chat)."})
    answer_column: str = field(default="answer", metadata={"help": "Column holding the gold answer."})
    reward_funcs: str = field(
        default="exact_answer",
        metadata={"help": f"Comma-separated reward names, among {REWARDS.names()}."},
    )
    task: str = field(
        default="arithmetic",
        metadata={"help": "Built-in task when dataset_name is unset: 'arithmetic' (3-digit additions with the "
                          "embedded character policy) or 'sumk' (SUM-k with a lab policy, see sumk_policy).",
                  "choices": ["sumk", "arithmetic"]},
    )
    sumk_policy: str = field(
        default="aligned",
        metadata={"help": "SUM-k task: the shipped policy to start from when model_name_or_path is unset, 'base' "
                          "(base-like) or 'aligned' (aligned-like); see trl_lite/lab.", "choices": ["base", "aligned"]},
    )
    sumk_ks: str = field(default="2,3", metadata={"help": "SUM-k task: numbers of operands to train and evaluate on."})
    arithmetic_policy: str = field(
        default="carry-habit",
        metadata={"help": "Arithmetic task: the shipped policy to start from when model_name_or_path is unset, "
                          "'carry-habit' (drops the carry into the hundreds in most answers; RL fixes it) or "
                          "'label-noise' (greedy mostly right already, samples often wrong).",
                  "choices": ["carry-habit", "label-noise"]},
    )
    train_levels: str = field(default="medium,hard", metadata={"help": "Arithmetic task: levels to train on."})
    eval_level: str = field(default="hard", metadata={"help": "Arithmetic task: held-out level reported before/after."})
    eval_problems: int = field(default=500,
                               metadata={"help": "Built-in task: held-out problems reported before/after."})


class QuietProgress(ProgressCallback):
    """The progress bar without the metric dictionaries it prints at each log."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        pass


################
# Data
################
def _load(path_or_id: str, config: str | None, split: str):
    ext = os.path.splitext(path_or_id)[1].lstrip(".")
    if os.path.isfile(path_or_id) and ext in ("json", "jsonl", "parquet", "csv"):
        return load_dataset("json" if ext == "jsonl" else ext, data_files=path_or_id, split=split)
    return load_dataset(path_or_id, config, split=split)


def prepare_dataset(script_args: ScriptArguments, split: str):
    dataset = _load(script_args.dataset_name, script_args.dataset_config, split)
    missing = [c for c in (script_args.prompt_column, script_args.answer_column) if c not in dataset.column_names]
    if missing:
        raise ValueError(
            f"dataset {script_args.dataset_name!r} has no column {missing}; its columns are {dataset.column_names}. "
            "Set --prompt_column and --answer_column."
        )

    def to_schema(row):
        prompt = row[script_args.prompt_column]
        if isinstance(prompt, str):  # raw text: the paper's chat format
            prompt = chat_prompt(prompt)
        return {"prompt": prompt, "answer": str(row[script_args.answer_column])}

    return dataset.map(to_schema, remove_columns=dataset.column_names)


def held_out_accuracy(trainer, tokenizer, eval_set) -> dict[str, float]:
    """Greedy and sampled (one completion at temperature 1 per problem) accuracy on the held-out problems."""
    budget = trainer.args.max_completion_length
    return {kind: pass_rate(trainer.model, tokenizer, eval_set, greedy=kind == "greedy", max_new_tokens=budget)
            for kind in ("greedy", "sampled")}


def print_table(name: str, size: int, before: dict, after: dict) -> None:
    print(f"\nheld-out accuracy on {size} {name} problems (sampled: 1 completion at temperature 1 each)")
    print(f"{'':8}{'greedy':>9}{'sampled':>9}")
    print(f"{'before':8}{before['greedy']:>9.3f}{before['sampled']:>9.3f}")
    print(f"{'after':8}{after['greedy']:>9.3f}{after['sampled']:>9.3f}")
    print(f"{'change':8}{after['greedy'] - before['greedy']:>+9.3f}{after['sampled'] - before['sampled']:>+9.3f}")


def main(script_args: ScriptArguments, training_args: LitePPOConfig, model_args: ModelConfig):
    # A path, or "true" for the last complete checkpoint in output_dir; checked before anything is loaded
    checkpoint = resolve_resume(training_args.resume_from_checkpoint, training_args.output_dir)
    builtin = script_args.dataset_name is None
    # Under ZeRO-3 the weights are sharded until training starts, so the before/after report is left out.
    report = builtin and not is_deepspeed_zero3_enabled()
    if builtin and script_args.task == "sumk":
        ks = [int(k) for k in script_args.sumk_ks.split(",")]
        train_set = sumk_dataset(20_000, split="train", ks=ks, seed=training_args.seed)
        eval_set = sumk_dataset(script_args.eval_problems, split="test", ks=ks, seed=0)
        datasets, task_name = ["trl-lite built-in SUM-k task"], "SUM-k"
    elif builtin:
        train_set = arithmetic_dataset(script_args.train_levels, split="train", seed=training_args.seed)
        eval_set = arithmetic_dataset(script_args.eval_level, split="test", num_per_level=script_args.eval_problems,
                                      seed=0)
        datasets, task_name = ["trl-lite built-in arithmetic task"], f"arithmetic/{script_args.eval_level}"
    else:
        train_set = prepare_dataset(script_args, script_args.dataset_train_split)
        eval_set = prepare_dataset(script_args, script_args.dataset_test_split) if script_args.dataset_test_split else None
        datasets = [script_args.dataset_name]
    reward_names = [name.strip() for name in script_args.reward_funcs.split(",") if name.strip()]
    unknown = [name for name in reward_names if name not in REWARDS]
    if unknown:
        raise ValueError(f"reward_funcs={script_args.reward_funcs!r} names {unknown}; accepted: {REWARDS.names()}.")

    ################
    # Model
    ################
    model_id = model_args.model_name_or_path or (
        embedded_policy_path(script_args.arithmetic_policy) if script_args.task == "arithmetic"
        else sumk_policy_path(script_args.sumk_policy))
    tokenizer = AutoTokenizer.from_pretrained(model_id, revision=model_args.model_revision)
    model = AutoModelForCausalLM.from_pretrained(
        model_id,
        revision=model_args.model_revision,
        attn_implementation=model_args.attn_implementation,
        dtype=getattr(torch, model_args.dtype) if model_args.dtype not in (None, "auto") else "auto",
    )

    ################
    # Training
    ################
    trainer = LitePPOTrainer(
        model=model,
        reward_funcs=[REWARDS[name] for name in reward_names],
        args=training_args,
        train_dataset=train_set,
        eval_dataset=None if builtin else eval_set,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
    )
    trainer.card_datasets = datasets
    before = held_out_accuracy(trainer, tokenizer, eval_set) if report else None
    if report:  # the before/after table is what this run prints; every step's metrics stay in trainer_state.json
        trainer.remove_callback(PrinterCallback)
        trainer.remove_callback(ProgressCallback)
        trainer.add_callback(QuietProgress())
    if checkpoint is not None and trainer.accelerator.is_main_process:
        print(f"[resume] continuing from {checkpoint}", file=sys.stderr)
    trainer.train(resume_from_checkpoint=checkpoint)
    if report:
        after = held_out_accuracy(trainer, tokenizer, eval_set)
        if trainer.accelerator.is_main_process:
            print_table(task_name, len(eval_set), before, after)
        trainer.evaluation_results = {
            f"{task_name} {kind} accuracy": f"{before[kind]:.3f} -> {after[kind]:.3f}" for kind in ("greedy", "sampled")
        }

    ################
    # Save (with the model card) and push
    ################
    failed = None
    if not training_args.push_to_hub:
        trainer.save_model(training_args.output_dir)
    else:
        try:
            trainer.push_to_hub(dataset_name=datasets)  # saves the model and its card locally first
        except HubPushError as err:
            failed = err
    # Every process leaves its process group before the interpreter exits: left to interpreter teardown, gloo's worker
    # threads can abort a finished run with SIGABRT (pytorch/pytorch#179291). A no-op on one process.
    trainer.accelerator.end_training()
    if failed is not None:
        print(failed, file=sys.stderr)
        sys.exit(1)


# Small settings for the no-argument CPU run: the embedded policy, 8 completions per prompt, short answers.
CPU_DEFAULTS = [
    "--output_dir", "runs/train_lite", "--max_steps", "200", "--per_device_train_batch_size", "64",
    "--num_generations", "8", "--max_completion_length", "14", "--learning_rate", "1e-4", "--temperature", "1.0",
    "--logging_steps", "20", "--report_to", "none", "--save_strategy", "no", "--bf16", "false",
    "--lr_scheduler_type", "constant", "--seed", "0",
]
# `--task sumk` alone: 8 prompts x 8 completions per generation batch in 2 optimizer steps, up to 96 tokens each
SUMK_DEFAULTS = ["--max_steps", "60", "--per_device_train_batch_size", "32", "--steps_per_generation", "2",
                 "--max_completion_length", "96", "--logging_steps", "5"]


# The flags that keep a command line the CPU run (any other flag leaves CPU_DEFAULTS for TRL's defaults)
CPU_RUN_FLAGS = ("--recipe", "--task", "--arithmetic_policy", "--sumk_policy", "--output_dir", "--seed")


def _only(argv: list[str], flags: tuple[str, ...]) -> bool:
    """Whether argv holds nothing but `--flag VALUE` / `--flag=VALUE` pairs of the given flags."""
    i = 0
    while i < len(argv):
        name = argv[i].split("=", 1)[0]
        if name not in flags:
            return False
        i += 1 if "=" in argv[i] else 2
    return i == len(argv)


def parse_cli(argv: list[str]):
    """(script_args, training_args, model_args) from a command line: no arguments, or only the flags of `CPU_RUN_FLAGS`
    (a recipe, a built-in task and its shipped policy, a folder, a seed), is the CPU run; `--recipe` sets defaults that
    `--config` values and explicit flags override."""
    parser = TrlParser((ScriptArguments, LitePPOConfig, ModelConfig))
    if _only(argv, CPU_RUN_FLAGS):  # the CPU run, optionally with a recipe, task, policy, folder or seed
        sumk = "sumk" in argv or "--task=sumk" in argv
        argv = CPU_DEFAULTS + (SUMK_DEFAULTS if sumk else []) + (
            [] if torch.cuda.is_available() else ["--use_cpu"]) + argv
    apply_recipe_defaults(parser, argv)
    return parser.parse_args_and_config(args=argv)


if __name__ == "__main__":
    main(*parse_cli(sys.argv[1:]))
