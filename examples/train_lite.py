"""Train a policy with Lite PPO.

With no arguments, this runs offline on CPU: a tiny, randomly initialised Llama learns a built-in arithmetic task
for a few steps (a smoke run of the whole pipeline; it needs no network and no GPU):

    python examples/train_lite.py
    accelerate launch examples/train_lite.py

At real scale, any LitePPOConfig field is a flag:

    accelerate launch examples/train_lite.py \
        --model_name_or_path Qwen/Qwen3-4B-Base --dataset_name DATASET --prompt_column problem --answer_column answer \
        --per_device_train_batch_size 8 --num_generations 8 --max_completion_length 8192 --learning_rate 1e-6 \
        --advantage_mean group --advantage_std batch --loss_aggregation token-mean --output_dir runs/lite-ppo
"""

from __future__ import annotations

import os
import random
import tempfile
from dataclasses import dataclass, field

from datasets import Dataset, load_dataset
from trl import ModelConfig, TrlParser, get_peft_config

from trl_lite import LitePPOConfig, LitePPOTrainer


@dataclass
class ScriptArguments:
    dataset_name: str | None = field(
        default=None, metadata={"help": "Hub id or local path of a dataset; the built-in arithmetic task when unset."}
    )
    dataset_split: str = field(default="train", metadata={"help": "Split to train on."})
    prompt_column: str = field(default="prompt", metadata={"help": "Column holding the prompt."})
    answer_column: str = field(default="answer", metadata={"help": "Column holding the gold answer."})


################
# Built-in task and reward
################
def arithmetic_dataset(num: int = 256, seed: int = 0) -> Dataset:
    rng = random.Random(seed)
    pairs = [(rng.randint(0, 9), rng.randint(0, 9)) for _ in range(num)]
    return Dataset.from_dict({"prompt": [f"{a}+{b}=" for a, b in pairs], "answer": [str(a + b) for a, b in pairs]})


def exact_answer_reward(completions, answer, **kwargs) -> list[float]:
    """1.0 when the completion, stripped, starts with the gold answer; else 0.0."""
    texts = [c if isinstance(c, str) else c[-1]["content"] for c in completions]
    return [float(t.strip().startswith(str(a))) for t, a in zip(texts, answer)]


def tiny_model(path: str) -> str:
    from tests.tiny import build_tiny_model  # a character-level Llama built locally, no download

    return build_tiny_model(path)


def main(script_args: ScriptArguments, training_args: LitePPOConfig, model_args: ModelConfig):
    ################
    # Data
    ################
    if script_args.dataset_name is None:
        dataset = arithmetic_dataset()
    else:
        dataset = load_dataset(script_args.dataset_name, split=script_args.dataset_split)
        missing = {script_args.prompt_column, script_args.answer_column} - set(dataset.column_names)
        if missing:
            raise ValueError(
                f"dataset {script_args.dataset_name!r} lacks the columns {sorted(missing)}; it has "
                f"{dataset.column_names}. Set --prompt_column and --answer_column."
            )
        dataset = dataset.rename_columns(
            {c: n for c, n in [(script_args.prompt_column, "prompt"), (script_args.answer_column, "answer")] if c != n}
        )

    ################
    # Model and training
    ################
    model = model_args.model_name_or_path or tiny_model(tempfile.mkdtemp(prefix="trl-lite-tiny-"))
    trainer = LitePPOTrainer(
        model=model,
        reward_funcs=exact_answer_reward,
        args=training_args,
        train_dataset=dataset,
        peft_config=get_peft_config(model_args),
    )
    trainer.train()
    trainer.save_model(training_args.output_dir)
    if training_args.push_to_hub:
        trainer.push_to_hub()


if __name__ == "__main__":
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser = TrlParser((ScriptArguments, LitePPOConfig, ModelConfig))
    defaults = ["--output_dir", "runs/train_lite", "--max_steps", "20", "--per_device_train_batch_size", "8",
                "--num_generations", "8", "--max_completion_length", "4", "--learning_rate", "1e-2",
                "--logging_steps", "5", "--report_to", "none", "--save_strategy", "no"]
    import torch

    if not torch.cuda.is_available():
        defaults.append("--use_cpu")  # TRL defaults to bf16, which needs a GPU
    argv = sys.argv[1:] if len(sys.argv) > 1 else defaults
    script_args, training_args, model_args = parser.parse_args_and_config(args=argv)
    main(script_args, training_args, model_args)
