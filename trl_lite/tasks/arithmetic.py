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

from ..data import chat_prompt
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
    with the model's own top-k/top-p): `trl_lite.scoring.score_benchmark`'s accuracy with one sample per problem and
    the exact-answer check."""
    from ..rewards import exact_check
    from ..sampling import transformers_sampler
    from ..scoring import score_benchmark

    if len(dataset) == 0:
        return 0.0
    sample = transformers_sampler(model, tokenizer, max_new_tokens=max_new_tokens, greedy=greedy, temperature=1.0,
                                  top_p=None, top_k=None, batch_size=batch_size, seed=seed)
    model.eval()
    return score_benchmark(sample(list(dataset["prompt"]), 1), list(dataset["answer"]), exact_check)["accuracy"]


# The one policy shipped with the package, built by `scripts/build_embedded_policy.py` (fixed seed, TRL's SFTTrainer):
# a 0.86M-parameter character Llama that dropped the carry into the hundreds in 70% of the SFT answers that have one
# (greedy wrong on those problems). It is the main job's demo, where RL lifts greedy and sampled accuracy, and the lab's
# ADD policy. The other small policies live beside the package, in a clone: the label-noise policy of the ablation
# benchmark (`bench/policies/arith_label_noise`) and the lab's (`lab/trl_lite_lab/policies/`).
DEMO_POLICY = "assets/arith_carry"


def embedded_policy_path() -> str:
    """Local folder of the small arithmetic policy shipped with the package (`DEMO_POLICY`): the main job's and
    `trl-lite ablate`'s starting point."""
    import importlib.resources

    return str(importlib.resources.files("trl_lite").joinpath(DEMO_POLICY))


def carries_into_hundreds(question: str) -> bool:
    """Whether `a+b` carries into the hundreds (where the carry-habit policy tends to drop it)."""
    a, b = map(int, question.split("+"))
    return a % 100 + b % 100 >= 100
