"""SUM-k: sums of k one-digit numbers (k = 2..6), as training and held-out data.

`trl-lite train --task sumk --model_name_or_path PATH` trains on it (the lab's SUM-k policies, in a clone:
`lab/trl_lite_lab/policies/sumk_base`, `sumk_aligned`, ...). A prompt is `a4+b7+c9` (each operand carries
a tag `a`-`f`; the chat template adds `=`); the reward is `exact_answer` (the last `\\boxed{}` holds the sum exactly,
in {0, 1}). Problems are split into train and test by a hash of their text, so a held-out problem is never trained
on. The answer formats the policies write, their tokenizer and the lab's measures of completions live with the lab
(`lab/trl_lite_lab/sumk.py` in a clone).
"""

from __future__ import annotations

import hashlib
import random

from datasets import Dataset

KS = (2, 3, 4, 5, 6)
TAGS = "abcdef"


################
# Problems
################
def _split_of(problem: str, test_fraction: float) -> str:
    digest = int(hashlib.sha256(problem.encode()).hexdigest()[:8], 16)
    return "test" if digest / 0xFFFFFFFF < test_fraction else "train"


def sample_problems(n: int, *, split: str = "train", ks=KS, seed: int = 0,
                    test_fraction: float = 0.2) -> list[list[int]]:
    """`n` problems (lists of k one-digit numbers 1-9, k uniform over `ks`) of the given split, drawn with `seed`."""
    if split not in ("train", "test"):
        raise ValueError(f"split={split!r} is not supported; expected 'train' or 'test'.")
    rng = random.Random(f"sumk-{split}-{seed}")
    out = []
    while len(out) < n:
        nums = [rng.randint(1, 9) for _ in range(rng.choice(list(ks)))]
        if _split_of("+".join(map(str, nums)), test_fraction) == split:
            out.append(nums)
    return out


def question(nums: list[int]) -> str:
    """The prompt's text: `[5, 6, 9]` -> `a5+b6+c9`."""
    return "+".join(f"{tag}{n}" for tag, n in zip(TAGS, nums))


def sumk_dataset(n: int, *, split: str = "train", ks=KS, seed: int = 0) -> Dataset:
    """Rows in the math datasets' schema (`prompt` as chat, `answer`), plus `k` and `difficulty` (`k<k>`)."""
    problems = sample_problems(n, split=split, ks=ks, seed=seed)
    return Dataset.from_dict({
        "prompt": [[{"role": "user", "content": question(nums)}] for nums in problems],
        "answer": [str(sum(nums)) for nums in problems],
        "k": [len(nums) for nums in problems],
        "difficulty": [f"k{len(nums)}" for nums in problems],
    })
