"""Reward functions selectable by name from the command line (`--reward_funcs exact_answer,boxed_format`)."""

from __future__ import annotations

from ..registry import Registry
from .arithmetic import exact_answer_reward, extract_boxed

REWARDS = Registry("reward")
REWARDS.register("exact_answer")(exact_answer_reward)


def _text(completion) -> str:
    return completion if isinstance(completion, str) else completion[-1]["content"]


@REWARDS.register("boxed_format")
def boxed_format_reward(completions, **kwargs) -> list[float]:
    """1.0 when the completion puts an answer inside `\\boxed{}`, else 0.0."""
    return [float(extract_boxed(_text(c)) is not None) for c in completions]


@REWARDS.register("math_verify")
def math_verify_reward(completions, answer, **kwargs) -> list[float | None]:
    """{0, 1} by math-verify's equivalence check of the completion against the gold answer (raw gold is wrapped in
    `$...$`). An unparsable gold answer gives `None` (unscorable). Uses math-verify's own timeout, which only works on
    the main thread."""
    from math_verify import parse, verify

    rewards: list[float | None] = []
    for completion, gold in zip(completions, answer):
        gold_text = str(gold) if "$" in str(gold) or "\\boxed" in str(gold) else f"${gold}$"
        parsed_gold = parse(gold_text)
        if not parsed_gold:
            rewards.append(None)
            continue
        rewards.append(float(verify(parsed_gold, parse(_text(completion)))))
    return rewards
