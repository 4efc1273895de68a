"""`trl-lite train`: train a policy with Lite PPO (arXiv 2508.08221), from a CPU laptop to multi-GPU clusters.

With no arguments, this runs offline on CPU in about a minute (59 s on 2 cores, bench/README.md): a small policy
shipped in the package (a character model taught the answer format by SFT with a habit of dropping the carry into the
hundreds, see
`scripts/build_embedded_policy.py`) learns the built-in arithmetic task with Lite PPO, and a before/after table of
held-out accuracy on the hard level is printed (seed 0: greedy 0.454 -> 0.806, sampled 0.502 -> 0.690, measured by
`tests/trainer/test_main_job.py::test_demo_figures`). `--task sumk --model_name_or_path PATH` trains a small policy on SUM-k
instead (`trl_lite/tasks/sumk.py`; the lab's SUM-k policies are in a clone, `lab/trl_lite_lab/policies/`):

    trl-lite train
    trl-lite train --max_steps 20                      # the demo, for 20 steps: each flag overrides its own field
    accelerate launch examples/train_lite.py           # the same program, from a clone

Defaults merge field by field: while no model is named (`--model_name_or_path`, here or in `--config`), the demo's
small CPU settings (`DEMO_DEFAULTS`) are the defaults of the fields you do not set; with a model, TRL's defaults are.
Without an accelerator, `bf16` resolves to off (`LitePPOConfig`) and `use_cpu` to on unless you set them.

`--recipe NAME` applies a named recipe (lite_ppo, grpo, dr_grpo, instruct, dapo; `trl_lite/recipes.py`); `--config`
values and explicit flags override it. `--config` takes a YAML path or the name of a recipe file shipped in
`trl_lite/recipe_configs/` (the paper's setups, e.g. `lite_ppo_qwen3_4b_base`):

    trl-lite train --recipe dapo                       # the CPU demo with DAPO's settings
    trl-lite train --accelerate_config deepspeed_zero3 --config lite_ppo_qwen3_4b_base

`--accelerate_config NAME|PATH` launches the run through `accelerate launch`, as TRL's CLI does, with a config shipped
in `trl_lite/accelerate_configs/` (single_gpu, multi_gpu, deepspeed_zero2, deepspeed_zero3, deepspeed_zero3_offload)
or your own file. `accelerate launch`'s own flags (`--num_processes`, `--num_machines`, `--machine_rank`,
`--main_process_ip`, `--main_process_port`, ...) pass through to it:

    trl-lite train --accelerate_config multi_gpu --num_processes 2 --max_steps 20   # 2 processes (CPU: gloo)

A preempted run resumes with the same command plus `--resume_from_checkpoint true` (the last complete checkpoint in
`--output_dir`; the demo keeps its last one) or `--resume_from_checkpoint runs/x/checkpoint-500`, and ends with the
uninterrupted run's weights. A reward function that fails stops the run with an error naming it, the step and the
sample; `--on_reward_error skip` trains on without the samples it fails on (`--reward_timeout S` for async ones).

At real scale every LitePPOConfig field is a flag:

    trl-lite train --accelerate_config deepspeed_zero3 \
        --model_name_or_path Qwen/Qwen3-4B-Base --dataset_name zwhe99/DeepMath-103K --prompt_column question \
        --answer_column final_answer --reward_funcs math_accuracy --use_vllm --vllm_mode colocate \
        --num_generations 8 --per_device_train_batch_size 16 --gradient_accumulation_steps 8 \
        --max_completion_length 8192 --temperature 0.99 --top_p 0.99 --learning_rate 1e-6 --bf16 true \
        --output_dir runs/lite-ppo-qwen3-4b-base
    # LoRA: add --use_peft --lora_r 64 --lora_alpha 128 --lora_target_modules all-linear
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

from .checkpoints import resolve_resume
from .config import LitePPOConfig
from .data import LOCAL_FILE_TYPES, chat_prompt, read_local
from .argv import apply_recipe_defaults, flag_value
from .hub import HubPushError
from .launch import (
    LAUNCH_HELP,
    check_flags,
    has_accelerator,
    launch_args,
    launch_flags,
    option_strings,
    resolve_flag,
    shipped_file,
    split_argv,
)
from .rewards import REWARDS
from .tasks.arithmetic import arithmetic_dataset, embedded_policy_path, pass_rate
from .tasks.sumk import sumk_dataset
from .teardown import exit_cleanly, shutdown_vllm
from .trainer import LitePPOTrainer
from .vllm_cpu import use_vllm_problem

PROG = "trl-lite train"


@dataclass
class ScriptArguments:
    dataset_name: str | None = field(
        default=None,
        metadata={"help": "Hub id or local path (JSONL/parquet/CSV file or folder) of a dataset with a prompt and an "
                          "answer column. The built-in task (see task) when unset."},
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
                          "embedded character policy) or 'sumk' (SUM-k; needs model_name_or_path, e.g. a lab policy "
                          "from a clone: lab/trl_lite_lab/policies/sumk_base).",
                  "choices": ["sumk", "arithmetic"]},
    )
    sumk_ks: str = field(default="2,3", metadata={"help": "SUM-k task: numbers of operands to train and evaluate on."})
    train_levels: str = field(default="medium,hard", metadata={"help": "Arithmetic task: levels to train on."})
    eval_level: str = field(default="hard", metadata={"help": "Arithmetic task: held-out level reported before/after."})
    eval_problems: int = field(default=500,
                               metadata={"help": "Built-in task: held-out problems reported before/after."})


################
# Defaults: the demo's, field by field
################
# The CPU demo (no model named): the embedded policy, 8 completions per prompt, short answers, a checkpoint every 50
# steps with only the last kept, so that a preempted demo resumes and its trainer_state.json stays on disk.
DEMO_DEFAULTS = {
    "output_dir": "runs/train_lite", "max_steps": 200, "per_device_train_batch_size": 64, "num_generations": 8,
    "max_completion_length": 14, "learning_rate": 1e-4, "temperature": 1.0, "logging_steps": 20, "report_to": "none",
    "save_strategy": "steps", "save_steps": 50, "save_total_limit": 1, "bf16": False, "lr_scheduler_type": "constant",
    "seed": 0,
}
# `--task sumk` (its policies are the lab's, as small as the demo's): 8 prompts x 8 completions per generation batch in
# 2 optimizer steps, up to 96 tokens each
SUMK_DEMO_DEFAULTS = {"max_steps": 60, "per_device_train_batch_size": 32, "steps_per_generation": 2,
                      "max_completion_length": 96, "logging_steps": 5, "save_steps": 20}


def make_parser() -> TrlParser:
    return TrlParser((ScriptArguments, LitePPOConfig, ModelConfig), prog=PROG, description=__doc__.split("\n\n")[0],
                     epilog=LAUNCH_HELP)


def resolve_config(value: str) -> str:
    """A `--config` value as a file path: a path, or the name of a recipe file shipped in `trl_lite/recipe_configs/`."""
    return shipped_file("config", value, "trl_lite.recipe_configs", "recipe")


def _normalize(argv: list[str]) -> list[str]:
    """`--config=X` as `--config PATH` (TrlParser reads only the spaced form), with shipped names resolved."""
    return resolve_flag(argv, "--config", "--config", resolve_config)


def _config_values(argv: list[str]) -> dict:
    import yaml

    path = flag_value(argv, "--config")
    if path is None:
        return {}
    with open(path) as f:
        values = yaml.safe_load(f)
    return values if isinstance(values, dict) else {}


def cli_defaults(argv: list[str]) -> dict:
    """The defaults for the fields a command line leaves unset: the demo's while no model is named (on the command line
    or in `--config`) or the task is SUM-k (whose policies are as small as the demo's), and `use_cpu` on machines
    without an accelerator."""
    config = _config_values(argv)
    defaults = {} if has_accelerator() else {"use_cpu": True}
    model = flag_value(argv, "--model_name_or_path") or config.get("model_name_or_path")
    sumk = (flag_value(argv, "--task") or config.get("task")) == "sumk"
    if model is None or sumk:
        defaults.update(DEMO_DEFAULTS)
    if sumk:
        defaults.update(SUMK_DEMO_DEFAULTS)
    return defaults


def parse_cli(argv: list[str]):
    """(script_args, training_args, model_args) from a command line, with the precedence flags > `--config` >
    `--recipe` > the demo's defaults (`cli_defaults`) > the dataclasses' defaults."""
    argv = _normalize(argv)
    parser = make_parser()
    parser.set_defaults(**cli_defaults(argv))
    apply_recipe_defaults(parser, argv)  # TrlParser applies --config's values after these, so they win
    check_flags(argv, parser, prog=PROG)
    return parser.parse_args_and_config(args=argv)


################
# The command line: here, or through `accelerate launch` (trl_lite/launch.py)
################
def cli(argv: list[str] | None = None) -> None:
    """`trl-lite train`: parses the command line; runs the main job here, or launches it through `accelerate launch`
    when a launch flag is given."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = make_parser()
    if any(a in ("-h", "--help") for a in argv):
        parser.parse_args(["--help"])  # prints the help (with the launch flags in its epilog) and exits
    launch = launch_flags()
    train, accel, _ = split_argv(argv, option_strings(parser), launch)
    check_flags(argv, parser, launch, prog=PROG)
    try:  # a bad name or value (config, accelerate_config, any field) is one line, before anything is loaded
        parsed = parse_cli(train)
        accel = launch_args(accel) if accel else accel
    except ValueError as err:
        sys.exit(f"{PROG}: error: {err}")
    if not accel:
        with exit_cleanly():  # several processes (e.g. `torchrun -m trl_lite.cli train`): no interpreter teardown
            main(*parsed)
        return
    from accelerate.commands.launch import launch_command, launch_command_parser

    accelerate_args = launch_command_parser().parse_args([*accel, "--module", "trl_lite.train", *train])
    launch_command(accelerate_args)


################
# Data
################
def _load(path_or_id: str, config: str | None, split: str):
    ext = os.path.splitext(path_or_id)[1].lower()
    if os.path.isfile(path_or_id) and ext in LOCAL_FILE_TYPES:
        return read_local(path_or_id, split=split)  # the package's one local loader (trl_lite/data.py)
    if ext in LOCAL_FILE_TYPES or path_or_id.startswith((".", "/", "~")):
        raise ValueError(f"dataset_name={path_or_id!r}: no such file or folder; expected a Hub id or a local "
                         "JSONL/parquet/CSV file or folder.")
    try:
        return load_dataset(path_or_id, config, split=split)
    except Exception as err:
        from .offline import hub_unreachable, unreachable_message

        if hub_unreachable(err):
            sys.exit(unreachable_message("dataset", path_or_id,
                                         "pass a local JSONL/parquet/CSV file or folder to --dataset_name"))
        raise


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


def load_model(model_id: str, model_args: ModelConfig):
    """Tokenizer and causal LM; one line naming the model when the Hub cannot be reached."""
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_id, revision=model_args.model_revision)
        model = AutoModelForCausalLM.from_pretrained(
            model_id,
            revision=model_args.model_revision,
            attn_implementation=model_args.attn_implementation,
            dtype=getattr(torch, model_args.dtype) if model_args.dtype not in (None, "auto") else "auto",
        )
    except Exception as err:
        from .offline import hub_unreachable, unreachable_message

        if hub_unreachable(err):
            sys.exit(unreachable_message("model", model_id, "pass a local folder to --model_name_or_path"))
        raise
    return tokenizer, model


################
# Report
################
class QuietProgress(ProgressCallback):
    """The progress bar without the metric dictionaries it prints at each log."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        pass


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


################
# The main job
################
def main(script_args: ScriptArguments, training_args: LitePPOConfig, model_args: ModelConfig):
    # use_vllm without a working vLLM: one line from each process that would train, before anything is loaded (the
    # launching process itself needs no vLLM)
    if (problem := use_vllm_problem(training_args.use_vllm)) is not None:
        sys.exit(f"{PROG}: error: {problem}")
    # A path, or "true" for the last complete checkpoint in output_dir; checked before anything is loaded
    checkpoint = resolve_resume(training_args.resume_from_checkpoint, training_args.output_dir)
    builtin = script_args.dataset_name is None
    # Under ZeRO-3 the weights are sharded until training starts, so the before/after report is left out.
    report = builtin and not is_deepspeed_zero3_enabled()
    reward_names = [name.strip() for name in script_args.reward_funcs.split(",") if name.strip()]
    unknown = [name for name in reward_names if name not in REWARDS]
    if unknown:
        raise ValueError(f"reward_funcs={script_args.reward_funcs!r} names {unknown}; accepted: {REWARDS.names()}.")
    if builtin and script_args.task == "sumk" and model_args.model_name_or_path is None:
        sys.exit(f"{PROG}: error: task='sumk' needs model_name_or_path: trl-lite ships one policy, the arithmetic "
                 "demo's; SUM-k's small policies are the lab's, in a clone (e.g. --model_name_or_path "
                 "lab/trl_lite_lab/policies/sumk_base, or sumk_aligned).")
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

    ################
    # Model
    ################
    model_id = model_args.model_name_or_path or embedded_policy_path()
    tokenizer, model = load_model(model_id, model_args)

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
    if report:  # the before/after table is what this run prints; every step's metrics go to trainer_state.json
        trainer.remove_callback(PrinterCallback)
        trainer.remove_callback(ProgressCallback)
        trainer.add_callback(QuietProgress())
    if checkpoint is not None and trainer.accelerator.is_main_process:
        print(f"[resume] continuing from {checkpoint}", file=sys.stderr)
    trainer.train(resume_from_checkpoint=checkpoint)
    trainer.save_state()  # output_dir/trainer_state.json: every logged step, next to the model
    if report:
        after = held_out_accuracy(trainer, tokenizer, eval_set)
        if trainer.accelerator.is_main_process:
            print_table(task_name, len(eval_set), before, after)
        trainer.evaluation_results = {
            f"{task_name} {kind} accuracy": f"{before[kind]:.3f} -> {after[kind]:.3f}" for kind in ("greedy", "sampled")
        }
        # drawn on the curves' held-out accuracy panel, at step 0 and at the last step
        trainer.curves_points = {f"{task_name} {kind}": [(0, before[kind]), (trainer.state.global_step, after[kind])]
                                 for kind in ("greedy", "sampled")}

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
    # A colocated vLLM engine shuts down while the process group is up (trl_lite/teardown.py); then every process
    # leaves its process group, and the entry points end the process without interpreter teardown
    shutdown_vllm(trainer)
    trainer.accelerator.end_training()
    if failed is not None:
        print(failed, file=sys.stderr)
        sys.exit(1)


def run(argv: list[str] | None = None) -> None:
    """`python -m trl_lite.train` and `examples/train_lite.py`: parses the command line and runs the main job; a
    process of a multi-process run then ends without interpreter teardown (`trl_lite.teardown.exit_cleanly`)."""
    with exit_cleanly():
        main(*parse_cli(list(sys.argv[1:] if argv is None else argv)))


if __name__ == "__main__":  # `accelerate launch -m trl_lite.train ...`, as `trl-lite train --accelerate_config` does
    run()
