"""Builds the small arithmetic policies from scratch, offline, on CPU: trl-lite's demo policy (`trl_lite/assets/`, the
only one in the wheel) and those beside the package, in a clone.

A 4-layer character-level Llama is taught the arithmetic task's answer format (`\\boxed{N}` then EOS) by supervised
fine-tuning with TRL's SFTTrainer on generated problems, with a fixed seed. Two kinds come out of it:

- `bench/policies/arith_label_noise` (the ablation benchmark's and soak run's policy, `bench/`): 35% of the SFT answers
  (`--label-noise`) are off by 1 or 10, so the policy's greedy answer is mostly right while a sampled one is often
  wrong: its sampled pass rate sits well above 0 and well below 1, and RL has signal to sharpen it within minutes on a
  CPU.
- `trl_lite/assets/arith_carry` (the demo policy: the main job's and `trl-lite ablate`'s default start): 70% of the SFT answers whose sum carries into the
  hundreds drop that carry (`--carry-habit`), and 10% of the rest (carries kept included) are off by 1 or 10. Its
  greedy answer is a+b-100 wherever that carry occurs, so greedy accuracy on the hard level starts near 0.45 and RL
  has a habit to fix. It needs more steps (at 2,000 its hard greedy accuracy was 0.16).

    python scripts/build_embedded_policy.py                     # arith_label_noise: 2,000 steps, about 5 min on 2 cores
    python scripts/build_embedded_policy.py --output trl_lite/assets/arith_carry --label-noise 0.1 --carry-habit 0.7 \\
        --max-steps 5000                                        # arith_carry: about 9 min on 2 cores
    python scripts/build_embedded_policy.py --output lab/trl_lite_lab/policies/arith_carry_small --label-noise 0.1 \\
        --carry-habit 0.7 --max-steps 5000 --hidden-size 96 --num-layers 2   # the lab's smaller carry-habit policy
    python scripts/build_embedded_policy.py --output lab/trl_lite_lab/policies/arith_carry_tiny --label-noise 0.1 \
        --carry-habit 0.7 --max-steps 5000 --hidden-size 48 --num-layers 2   # clip scaling's small policy (version
        # 3.1): the same steps as arith_carry_small, on the plateau of its builds (lab/results/builds.json; THREADS=1,
        # about 30 min next to other jobs)

`arith_carry_small` is `arith_carry`'s data and steps in a 2-layer, 96-wide Llama (0.24M parameters against 0.86M):
since the lab's version 3.1, clip scaling's large policy, against `arith_carry_tiny` (61K parameters), both matched in
initial accuracy (`lab/trl_lite_lab/designs/clip_scaling.py`).
"""

from __future__ import annotations

import argparse
import os
import random
import string
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from datasets import concatenate_datasets  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM, set_seed  # noqa: E402
from trl import SFTConfig, SFTTrainer  # noqa: E402

from trl_lite.tasks.arithmetic import arithmetic_dataset, carries_into_hundreds, pass_rate  # noqa: E402
from trl_lite.tasks.char_tokenizer import char_tokenizer  # noqa: E402

CHARS = string.digits + "+-*=\\{}() boxed"
# The system prompt is dropped: a model this small has no use for it. The user turn is followed by "=".
CHAT_TEMPLATE = (
    "{%- for m in messages -%}"
    "{%- if m['role'] == 'user' -%}{{ m['content'] }}={%- elif m['role'] == 'assistant' -%}"
    "{% generation %}{{ m['content'] }}{{ eos_token }}{% endgeneration %}{%- endif -%}"
    "{%- endfor -%}"
)


def _noisy(answer: str, index: int, seed: int, label_noise: float, carry_habit: float = 0.0, question: str = "") -> str:
    rng = random.Random(seed * 1_000_003 + index)
    if carry_habit and rng.random() < carry_habit:
        if carries_into_hundreds(question):  # the carry into the hundreds is dropped
            return str(int(answer) - 100)
    if rng.random() >= label_noise:
        return answer
    return str(int(answer) + rng.choice([-10, -1, 1, 10]))


def sft_dataset(seed: int, label_noise: float, carry_habit: float = 0.0):
    data = concatenate_datasets(
        [arithmetic_dataset("easy", seed=seed)] * 4
        + [arithmetic_dataset("medium", num_per_level=4000, seed=seed)]
        + [arithmetic_dataset("hard", num_per_level=8000, seed=seed)]
    ).shuffle(seed=seed)
    return data.map(
        lambda row, i: {"completion": [{"role": "assistant", "content": "\\boxed{%s}" % _noisy(
            row["answer"], i, seed, label_noise, carry_habit, row["prompt"][-1]["content"])}]},
        with_indices=True,
        remove_columns=["answer", "source", "difficulty"],
    )


def sft_tiny_llama(tokenizer, train_dataset, *, max_positions: int, max_steps: int, seed: int, warmup_steps: int,
                   logging_steps: int, batch_size: int = 64, hidden_size: int = 128, num_layers: int = 4,
                   init_model: LlamaForCausalLM | None = None, learning_rate: float = 3e-3,
                   **sft_args) -> LlamaForCausalLM:
    """A fresh `num_layers`-layer, `hidden_size`-wide Llama over `tokenizer` (4 x 128 by default; or `init_model`,
    fine-tuned further), trained by TRL's SFTTrainer on `train_dataset` on CPU (lr `learning_rate`, cosine, no weight
    decay, sequences of up to `max_positions` tokens); `sft_args` go to `SFTConfig`. Also used by
    `lab/scripts/build_lab_policies.py`."""
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=3 * hidden_size,
        num_hidden_layers=num_layers, num_attention_heads=4, num_key_value_heads=4,
        max_position_embeddings=max_positions, tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.bos_token_id,
    )
    model = init_model if init_model is not None else LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    with tempfile.TemporaryDirectory() as tmp:
        trainer = SFTTrainer(
            model=model,
            processing_class=tokenizer,
            train_dataset=train_dataset,
            args=SFTConfig(
                output_dir=tmp, max_steps=max_steps, per_device_train_batch_size=batch_size,
                learning_rate=learning_rate,
                lr_scheduler_type="cosine", warmup_steps=warmup_steps, weight_decay=0.0, logging_steps=logging_steps,
                save_strategy="no", report_to="none", use_cpu=True, bf16=False, seed=seed, max_length=max_positions,
                **sft_args,
            ),
        )
        trainer.train()
    return trainer.model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", default="bench/policies/arith_label_noise")
    parser.add_argument("--max-steps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--label-noise", type=float, default=0.35)
    parser.add_argument("--hidden-size", type=int, default=128, help="width (intermediate size 3x)")
    parser.add_argument("--num-layers", type=int, default=4)
    parser.add_argument("--carry-habit", type=float, default=0.0,
                        help="share of the SFT answers whose carry into the hundreds is dropped, where there is one")
    args = parser.parse_args()
    set_seed(args.seed)
    tokenizer = char_tokenizer(CHARS, CHAT_TEMPLATE)
    model = sft_tiny_llama(tokenizer, sft_dataset(args.seed, args.label_noise, args.carry_habit), max_positions=64,
                           max_steps=args.max_steps, seed=args.seed, warmup_steps=30, logging_steps=50,
                           hidden_size=args.hidden_size, num_layers=args.num_layers)
    for level in ("easy", "medium", "hard"):
        test = arithmetic_dataset(level, split="test", num_per_level=300)
        print(f"{level}: greedy {pass_rate(model, tokenizer, test):.3f}, "
              f"sampled {pass_rate(model, tokenizer, test, greedy=False):.3f}")
    model.save_pretrained(args.output)
    tokenizer.save_pretrained(args.output)
    print(f"saved to {args.output}")


if __name__ == "__main__":
    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    main()
