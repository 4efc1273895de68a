"""Builds the lab's two SUM-k policies from scratch, offline, on CPU, with fixed seeds (see `lab/trl_lite_lab/`).

Both are the same 4-layer Llama (0.9M parameters) over the SUM-k tokenizer (`trl_lite.tasks.sumk`), taught by
supervised fine-tuning with TRL's SFTTrainer on generated completions. They differ only in their SFT data, as an
*analogy* of the paper's base and aligned models (nothing here is a pretrained model):

- `sumk_base` (base-like): mixed formats (direct 25%, step 35%, careful 10%, filler 20%, loops that never emit EOS
  10%), step-level label noise (8% of steps off by 1 or 10), noisy direct answers (30%). High entropy. Designed for
  sampled accuracy 0.3-0.5; as built it samples 0.19 right (1,000 held-out problems x 4): it answers directly in
  about 55% of its samples (13% right: a 0.9M model does not add k numbers in one step) and its scratchpads are right
  23% of the time.
- `sumk_aligned` (aligned-like): one clean step-by-step format and a consistent habit: a step whose units carry drops
  the carry 25% of the time. Low entropy. Designed for sampled accuracy 0.6-0.75; as built it samples 0.37 right
  (greedy 0.55).

8,000 SFT steps (the default) take 25-30 min per policy on 2 cores. At 3,000 steps neither policy had converged
(SFT loss still falling; sampled accuracy 0.06 and 0.10) and RL could not raise them (`lab/results/README.md`).

- `sumk_fork`, `sumk_connective`, `sumk_long`: fine-tuned from those two (800 SFT steps at lr 1e-3, about 4 min each
  on one core) for the lab's fair tests of Takeaways 4, 5 and 6-8 (`POLICIES` below says what each adds).

- `sumk_recheck`, `sumk_verbose`, `sumk_scratch`: fine-tuned the same way for the lab's version 2 (`verbose` for 1,600
  steps, about 41 min on one core shared with other jobs); `lab/results/README.md` says which audit gates they met.

    python lab/scripts/build_lab_policies.py [--policy base|aligned|both] [--output-dir DIR] [--max-steps 8000]
    python lab/scripts/build_lab_policies.py --policy fork      # then connective, long (after base and aligned)

All ship with the lab (`lab/trl_lite_lab/policies/`; `trl-lite train --task sumk --model_name_or_path` trains any of
them). Without `--output-dir`, each goes there.
"""

from __future__ import annotations

import argparse
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the clone
sys.path.insert(0, os.path.join(ROOT, "scripts"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from build_embedded_policy import sft_tiny_llama  # noqa: E402  (this folder is on sys.path when run as a script)
from datasets import Dataset  # noqa: E402
from transformers import set_seed  # noqa: E402

from trl_lite.tasks.sumk import question, sample_problems  # noqa: E402
from trl_lite_lab.sumk import sumk_tokenizer, write_completion  # noqa: E402

MAX_LEN = 96  # the loose maximum completion length; loops are cut there
POLICIES = {
    "base": {"styles": {"direct": 0.25, "step": 0.35, "careful": 0.10, "filler": 0.20, "loop": 0.10},
             "step_noise": 0.08, "direct_noise": 0.3, "carry_error": 0.0, "seed": 1},
    "aligned": {"styles": {"step": 1.0}, "step_noise": 0.0, "direct_noise": 0.0, "carry_error": 0.25, "seed": 2},
    # Fine-tuned from the two above (800 steps at lr 1e-3) for the fair tests of issue 20:
    # fork (Takeaway 4): the aligned-like format with a real carry fork, the carry dropped 60% of the time
    "fork": {"styles": {"step": 1.0}, "step_noise": 0.0, "direct_noise": 0.0, "carry_error": 0.6, "seed": 3,
             "init": "aligned"},
    # connective (Takeaway 5): the careful format, each step followed by `then` or by a `chk` recheck, 50/50
    "connective": {"styles": {"careful": 1.0}, "step_noise": 0.0, "direct_noise": 0.0, "carry_error": 0.25,
                   "recheck": 0.5, "seed": 4, "init": "aligned"},
    # long (Takeaway 6 since 2026-11-25): the verbose policy below fine-tuned wordier and wronger, for T6 alone (T8
    # keeps `verbose`). Version 1's `long` (base-like, a terminating 80-120-token format in 10% of its data, no
    # experiment of version 2 used it) was {"direct": 0.25, "step": 0.35, "careful": 0.10, "filler": 0.10,
    # "loop": 0.10, "long": 0.10}, step noise 0.08, from `base`. `verbose` sampled 24.2% long wrong completions where
    # T6's audit gate asks for 25% and a tenth more (lab/results/pilots/superseded/T6-verbose.json)
    "long": {"styles": {"direct": 0.05, "step": 0.1, "long": 0.5, "loop": 0.3, "filler": 0.05}, "step_noise": 0.3,
             "direct_noise": 0.3, "carry_error": 0.0, "seed": 5, "init": "verbose", "max_len": 124, "steps": 800},
    # Fine-tuned for the lab's version 2 (issue 29):
    # recheck (Takeaway 5 with credit): careful steps that drop a units carry half the time; after a dropped carry,
    # `chk` and the step written right follow half the time, so the connective decides the answer. Its first build
    # (800 steps) showed too weak a link on fresh samples (0.124; T5's audit gate asks for 0.3 and a tenth more,
    # lab/results/pilots/superseded/T5-c44121d6.json), and so did one of 2,400 steps (`--steps 2400`: 0.243, not
    # shipped); the shipped one trains 4,800 steps (0.534; lab/results/builds.json)
    "recheck": {"styles": {"recheck": 1.0}, "step_noise": 0.0, "direct_noise": 0.0, "carry_error": 0.5,
                "recheck": 0.5, "seed": 6, "init": "connective", "steps": 4800},
    # verbose (Takeaways 6 and 8): base-like, long wrong completions common: the long format (ending at 80-120 tokens,
    # not cut in its SFT data) and loops, with noisy steps. Its first build (long 0.35, loop 0.2, step noise 0.12, 800
    # steps) sampled 13.7% long wrong completions and cut 5.2% at 124 tokens: both audit gates of its pilots failed
    # (lab/results/pilots/superseded/); this one has more of both and trains longer
    "verbose": {"styles": {"direct": 0.1, "step": 0.1, "long": 0.4, "loop": 0.35, "filler": 0.05}, "step_noise": 0.2,
                "direct_noise": 0.3, "carry_error": 0.0, "seed": 7, "init": "base", "max_len": 124, "steps": 1600},
    # scratch (Takeaway 7): a clean scratchpad (right unless it is cut) or a noisy direct answer
    "scratch": {"styles": {"step": 0.6, "direct": 0.4}, "step_noise": 0.0, "direct_noise": 0.6, "carry_error": 0.05,
                "seed": 8, "init": "aligned"},
}
FINE_TUNE = {"max_steps": 800, "learning_rate": 1e-3}


def sft_dataset(tokenizer, policy: str, n: int) -> Dataset:
    """Pre-tokenized SFT rows (`input_ids`, `completion_mask`): prompt `a+b+...=`, then the completion and EOS (none
    after a loop, which is cut at the policy's `max_len`, MAX_LEN unless it says otherwise)."""
    spec = POLICIES[policy]
    max_len = spec.get("max_len", MAX_LEN)
    rng = random.Random(spec["seed"])
    styles, weights = zip(*spec["styles"].items())
    rows = {"input_ids": [], "completion_mask": []}
    for nums in sample_problems(n, split="train", seed=spec["seed"]):
        text, ends = write_completion(nums, rng.choices(styles, weights)[0], rng, carry_error=spec["carry_error"],
                                      step_noise=spec["step_noise"], direct_noise=spec["direct_noise"], max_len=max_len,
                                      recheck=spec.get("recheck", 0.0))
        prompt = tokenizer(question(nums) + "=", add_special_tokens=False)["input_ids"]
        completion = tokenizer(text, add_special_tokens=False)["input_ids"][:max_len]
        if ends:
            completion = completion + [tokenizer.eos_token_id]
        rows["input_ids"].append(prompt + completion)
        rows["completion_mask"].append([0] * len(prompt) + [1] * len(completion))
    return Dataset.from_dict(rows)


def build(policy: str, output: str, max_steps: int, batch_size: int = 64, steps: int | None = None) -> None:
    """Builds `policy` into `output`: `max_steps` SFT steps from scratch (base, aligned), or, for a policy fine-tuned
    from another, `steps` (default: the policy's own count, else FINE_TUNE's)."""
    seed, init = POLICIES[policy]["seed"], POLICIES[policy].get("init")
    set_seed(seed)
    tokenizer = sumk_tokenizer()
    extra = {}
    if init is not None:  # fine-tuned from a built policy
        from transformers import AutoModelForCausalLM

        from trl_lite_lab.design import policy_dir

        max_steps = steps or POLICIES[policy].get("steps", FINE_TUNE["max_steps"])
        extra = {"init_model": AutoModelForCausalLM.from_pretrained(policy_dir("sumk", init)),
                 "learning_rate": FINE_TUNE["learning_rate"]}
    model = sft_tiny_llama(tokenizer, sft_dataset(tokenizer, policy, max_steps * batch_size), max_positions=160,
                           max_steps=max_steps, seed=seed, warmup_steps=50, logging_steps=100, batch_size=batch_size,
                           completion_only_loss=True, disable_tqdm=True, train_sampling_strategy="group_by_length",
                           **extra)
    model.save_pretrained(output)
    tokenizer.save_pretrained(output)
    print(f"saved {policy} to {output}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--policy", default="both", choices=[*POLICIES, "both"],
                        help="'both' builds base and aligned; fork, connective and long are fine-tuned from them")
    parser.add_argument("--output-dir", default=None, help="default: lab/trl_lite_lab/policies")
    parser.add_argument("--max-steps", type=int, default=8000, help="SFT steps of base and aligned")
    parser.add_argument("--steps", type=int, default=None,
                        help="SFT steps of a fine-tuned policy (default: its own count in POLICIES, else 800)")
    args = parser.parse_args()
    for policy in (["base", "aligned"] if args.policy == "both" else [args.policy]):
        shipped = os.path.join(ROOT, "lab", "trl_lite_lab", "policies")
        build(policy, os.path.join(args.output_dir or shipped, f"sumk_{policy}"), args.max_steps, steps=args.steps)


if __name__ == "__main__":
    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    main()
