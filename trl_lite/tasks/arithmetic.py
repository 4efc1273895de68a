"""A built-in arithmetic task with difficulty levels, held-out splits and an exact-answer reward.

Rows use the same schema as the math datasets (`prompt` in chat format with the paper's system prompt, `answer`,
`source`, `difficulty`), so the same training code serves both. The answer is expected inside `\\boxed{}`.

| level  | problems                              |
|--------|---------------------------------------|
| easy   | `a+b`, `a` in 0..99, `b` in 0..9      |
| medium | `a+b`, `a, b` in 10..99               |
| hard   | `a+b`, `a` in 100..999, `b` in 10..99 |

Splits are disjoint: every problem is assigned to `train` or `test` by a hash of its text, so a held-out problem is
never trained on, whatever the seed.
"""

from __future__ import annotations

import hashlib
import random
from typing import TYPE_CHECKING

from ..data import chat_prompt, transformers_sampler
# The task's reward lives in (and is registered by) trl_lite.rewards, so `REWARDS["exact_answer"]` never depends on
# this module having been imported; re-exported here under its usual name.
from ..rewards import exact_answer_reward  # noqa: F401

if TYPE_CHECKING:
    from datasets import Dataset

LEVELS = ("easy", "medium", "hard")


def _all_problems(level: str) -> list[tuple[str, str]]:
    if level == "easy":
        return [(f"{a}+{b}", str(a + b)) for a in range(100) for b in range(10)]
    if level == "medium":
        return [(f"{a}+{b}", str(a + b)) for a in range(10, 100) for b in range(10, 100)]
    if level == "hard":
        return [(f"{a}+{b}", str(a + b)) for a in range(100, 1000) for b in range(10, 100)]
    raise ValueError(f"level={level!r} is not supported; expected one of {list(LEVELS)}.")


def _split_of(problem: str, test_fraction: float) -> str:
    digest = int(hashlib.sha256(problem.encode()).hexdigest()[:8], 16)
    return "test" if digest / 0xFFFFFFFF < test_fraction else "train"


def arithmetic_dataset(
    levels: str | list[str] = LEVELS,
    split: str = "train",
    num_per_level: int | None = None,
    seed: int = 0,
    test_fraction: float = 0.2,
) -> Dataset:
    """Problems of the given levels and split, in the math datasets' schema.

    Args:
        levels: a level name, a comma-separated string or a list of them (`easy`, `medium`, `hard`).
        split: `"train"` or `"test"` (held out).
        num_per_level: sample this many problems per level (without replacement, capped at what exists).
        seed: sampling seed.
        test_fraction: share of problems held out.
    """
    if split not in ("train", "test"):
        raise ValueError(f"split={split!r} is not supported; expected 'train' or 'test'.")
    from datasets import Dataset

    if isinstance(levels, str):
        levels = [lv.strip() for lv in levels.split(",")]
    rng = random.Random(seed)
    rows = {"prompt": [], "answer": [], "source": [], "difficulty": []}
    for level in levels:
        problems = [p for p in _all_problems(level) if _split_of(p[0], test_fraction) == split]
        if num_per_level is not None:
            problems = rng.sample(problems, min(num_per_level, len(problems)))
        for question, answer in problems:
            rows["prompt"].append(chat_prompt(question))
            rows["answer"].append(answer)
            rows["source"].append("arithmetic")
            rows["difficulty"].append(level)
    return Dataset.from_dict(rows)


def pass_rate(model, tokenizer, dataset: Dataset, *, greedy: bool = True, max_new_tokens: int = 12,
              batch_size: int = 256, seed: int = 0) -> float:
    """Share of `dataset` problems whose completion earns reward 1 (greedy decoding, or one sample at temperature 1
    with the model's own top-k/top-p)."""
    sample = transformers_sampler(model, tokenizer, max_new_tokens=max_new_tokens, greedy=greedy, temperature=1.0,
                                  top_p=None, top_k=None, batch_size=batch_size, seed=seed)
    model.eval()
    completions = [group[0] for group in sample(list(dataset["prompt"]), 1)]
    return sum(exact_answer_reward(completions, dataset["answer"])) / max(len(dataset), 1)


# The small policies shipped with the package, both built by `scripts/build_embedded_policy.py` (fixed seed, TRL's
# SFTTrainer): "label-noise" had 35% of its SFT answers off by 1 or 10 (greedy mostly right, samples often wrong; the
# tests' and the ablations' policy), "carry-habit" dropped the carry into the hundreds in 70% of the SFT answers that
# have one (greedy wrong on those problems: the main job's demo, where RL lifts greedy and sampled, and the lab's ADD
# policy). The lab's smaller ADD policies live with the lab (`lab/trl_lite_lab/policies/`).
EMBEDDED_POLICIES = {"label-noise": "assets/arith_policy", "carry-habit": "assets/arith_carry"}


def embedded_policy_path(kind: str = "label-noise") -> str:
    """Local folder of a small policy shipped with the package, `"label-noise"` or `"carry-habit"` (see
    `EMBEDDED_POLICIES`)."""
    import importlib.resources

    if kind not in EMBEDDED_POLICIES:
        raise ValueError(
            f"kind={kind!r} is not a shipped arithmetic policy; expected one of {list(EMBEDDED_POLICIES)}.")
    return str(importlib.resources.files("trl_lite").joinpath(EMBEDDED_POLICIES[kind]))


def carries_into_hundreds(question: str) -> bool:
    """Whether `a+b` carries into the hundreds (where the carry-habit policy tends to drop it)."""
    a, b = map(int, question.split("+"))
    return a % 100 + b % 100 >= 100
