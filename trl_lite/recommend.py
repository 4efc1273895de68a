"""The paper's decision guide as a function and a command: which Lite PPO settings for which model and data.

    trl-lite recommend --model-type base --model-size 4B --max-completion-length 8192 --reward-scale 0,1 --difficulty hard

prints a ready `LitePPOConfig` YAML (for `trl-lite train --config`) with, for every choice, the takeaway of
"Tricks or Traps? A Deep Dive into RL for LLM Reasoning" (arXiv 2508.08221) behind it.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass

MODEL_TYPES = ("base", "instruct")
DIFFICULTIES = ("easy", "medium", "hard")
REWARD_SCALES = ("0,1", "-1,1")
SHORT_MAX_LENGTH = 8192  # the paper's short setting; the paper reports overlong filtering not helping at 20k


@dataclass(frozen=True)
class Choice:
    field: str
    value: object
    why: str


def _size_in_billions(model_size: str) -> float:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*[bB]\s*", str(model_size))
    if not match:
        raise ValueError(f"model_size={model_size!r} is not supported; expected a size like '4B' or '0.6B'.")
    return float(match.group(1))


def recommend(model_type: str, model_size: str, max_completion_length: int, reward_scale: str = "0,1",
              difficulty: str = "medium") -> list[Choice]:
    """The settings the paper's findings point to, each with the takeaway behind it (the paper's findings, not this
    project's measurements)."""
    if model_type not in MODEL_TYPES:
        raise ValueError(f"model_type={model_type!r} is not supported; expected one of {list(MODEL_TYPES)}.")
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty={difficulty!r} is not supported; expected one of {list(DIFFICULTIES)}.")
    if reward_scale not in REWARD_SCALES:
        raise ValueError(f"reward_scale={reward_scale!r} is not supported; expected one of {list(REWARD_SCALES)}.")
    if not isinstance(max_completion_length, int) or max_completion_length <= 0:
        raise ValueError(f"max_completion_length={max_completion_length!r} is not supported; expected tokens > 0.")
    size = _size_in_billions(model_size)
    base = model_type == "base"
    choices = [
        Choice("recipe", "lite_ppo" if base else "instruct",
               "the paper reports Lite PPO (group-mean/batch-std advantages + token-level loss) surpassing GRPO and "
               "DAPO on base models (Section 5)" if base
               else "the paper reports aligned models doing best with sequence-level loss and clip-higher "
                    "(Takeaways 4-6)"),
        Choice("advantage_mean", "group",
               f"the paper reports a group-level mean robust under any reward scale and a batch-level mean fragile "
               f"with {{{reward_scale}}} rewards (Takeaway 1)"),
    ]
    if difficulty == "easy":
        choices.append(Choice("advantage_std", "none",
                              "the paper reports that on easy data (most groups all-correct) dividing by the small "
                              "std blows up gradients, so drop it (Takeaway 2)"))
    else:
        choices.append(Choice("advantage_std", "batch",
                              "the paper reports group mean + batch std as the most robust normalization "
                              "(Takeaway 3)"))
    if base:
        choices.append(Choice("loss_aggregation", "token-mean",
                              "the paper reports token-level loss aggregation helping base models (Takeaway 6)"))
        choices.append(Choice("epsilon_high", 0.2,
                              "the paper reports clip-higher helping base models little or hurting them: keep the "
                              "symmetric 0.2 (Takeaway 4)"))
    else:
        choices.append(Choice("loss_aggregation", "seq-mean-token-mean",
                              "the paper reports sequence-level aggregation suiting aligned models (Takeaway 6)"))
        high = 0.32 if size <= 4 else 0.28
        choices.append(Choice("epsilon_high", high,
                              "the paper reports clip-higher letting aligned models explore, 4B gaining up to 0.32 "
                              f"and 8B saturating near 0.28 (Takeaways 4-5; {model_size} -> {high})"))
    choices.append(Choice("epsilon", 0.2, "the lower clip bound stays at PPO's 0.2"))
    short = max_completion_length <= SHORT_MAX_LENGTH
    choices.append(Choice("overlong_filter", short,
                          f"the paper reports overlong filtering helping at short maximum lengths (<= 8k) and not at "
                          f"20k, where what it drops is mostly degenerate repetition (Takeaways 7-8; "
                          f"{max_completion_length} tokens)"))
    choices.append(Choice("max_completion_length", max_completion_length, "as given"))
    return choices


def to_yaml(choices: list[Choice]) -> str:
    lines = []
    for choice in choices:
        value = str(choice.value).lower() if isinstance(choice.value, bool) else choice.value
        lines.append(f"# {choice.why}")
        lines.append(f"{choice.field}: {value}")
    return "\n".join(lines) + "\n"


def _attach_scale(argv: list[str]) -> list[str]:
    """`--reward-scale -1,1` as `--reward-scale=-1,1`: argparse takes a value that starts with "-" (and is not a plain
    negative number) for an option, and would stop with "expected one argument"."""
    out = list(argv)
    for i, arg in enumerate(out[:-1]):
        if arg == "--reward-scale" and re.fullmatch(r"-\d[\d.,]*", out[i + 1]):
            out[i : i + 2] = [f"{arg}={out[i + 1]}"]
            break
    return out


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(prog="trl-lite recommend", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-type", required=True, choices=MODEL_TYPES)
    parser.add_argument("--model-size", required=True, help="e.g. 4B, 8B, 0.6B")
    parser.add_argument("--max-completion-length", type=int, required=True)
    # A metavar: argparse would show the choices as {0,1,-1,1}, which reads as four values.
    parser.add_argument("--reward-scale", default="0,1", choices=REWARD_SCALES, metavar="SCALE",
                        help="rewards of a wrong and a right answer: '0,1' (default) or '-1,1'")
    parser.add_argument("--difficulty", default="medium", choices=DIFFICULTIES,
                        help="of the training data, by correct answers out of 8 rollouts")
    args = parser.parse_args(_attach_scale(sys.argv[1:] if argv is None else list(argv)))
    try:
        text = to_yaml(recommend(args.model_type, args.model_size, args.max_completion_length, args.reward_scale,
                                 args.difficulty))
    except ValueError as err:
        parser.error(str(err))
    print(text, end="")
    return text
