"""SUM-k's lab-only parts: the policies' tokenizer and SFT completions (`lab/scripts/build_lab_policies.py`), and
the measures the lab reads off completions (format, carry errors, rechecks, token classes).

The task itself (problems, the train/test split, the dataset) is trl-lite's `trl_lite.tasks.sumk`. The answer formats
a completion can take:

| format  | example (`a5+b6+c9+d2`)                     | tokens for k = 6 |
|---------|---------------------------------------------|------------------|
| direct  | `\\boxed{22}`                                | 5                |
| step    | `b6=11;c9=20;d2=22;\\boxed{22}`              | about 35         |
| careful | `chkb6=11;thenc9=20;thend2=22;so\\boxed{22}` | about 41         |
| filler  | runs of `.` before or between steps         | 45-96            |
| loop    | one step repeated, never ending (no EOS)    | up to the limit  |
| long    | a scratchpad padded with `.` runs, ending   | 80-120           |

Each operand carries a tag (`a`-`f`) in the prompt, and a step names the next tag, copies its digit and writes the
running sum: the next operand is found by content, not by counting (with untagged operands, the policies could not
learn which operand came next). `then`, `so`, `chk` and `\\boxed` are single tokens (the connectives of Takeaway 5);
everything else is one character per token. Problems are split into train and test by a hash of their text, so a
held-out problem is never trained on.
"""

from __future__ import annotations

import random
import re

from trl_lite.tasks.char_tokenizer import SPECIALS
from trl_lite.tasks.sumk import TAGS

CONNECTIVES = ("then", "so", "chk")
WORDS = ("\\boxed",) + CONNECTIVES
CHARS = "0123456789+=;.{}abcdef"
# The user turn is followed by "="; no system prompt (a model this small has no use for it).
CHAT_TEMPLATE = (
    "{%- for m in messages -%}"
    "{%- if m['role'] == 'user' -%}{{ m['content'] }}={%- elif m['role'] == 'assistant' -%}"
    "{% generation %}{{ m['content'] }}{{ eos_token }}{% endgeneration %}{%- endif -%}"
    "{%- endfor -%}"
)
# Token classes for the clip census (Takeaway 5)
TOKEN_CLASSES = {"connective": set(CONNECTIVES), "boxed": {"\\boxed"}, "digit": set("0123456789"),
                 "operator": set("+=;"), "brace": set("{}"), "filler": {"."}, "tag": set("abcdef")}


def token_class(token: str) -> str:
    """The class of a decoded token: connective, boxed, digit, operator, brace, filler, tag, or eos (anything else)."""
    for name, members in TOKEN_CLASSES.items():
        if token in members:
            return name
    return "eos"


def sumk_tokenizer():
    """A word-and-character WordLevel tokenizer (the specials, `\\boxed then so chk`, then one token per character)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(SPECIALS + list(WORDS) + list(CHARS))}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    words = "|".join(re.escape(w) for w in WORDS)
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(f"{words}|."), behavior="isolated")
    backend.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", eos_token="<eos>",
                                        bos_token="<bos>", unk_token="<unk>", padding_side="left")
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


################
# Completions (the SFT data of the lab's policies)
################
def steps(nums: list[int], rng: random.Random, carry_error: float = 0.0,
          step_noise: float = 0.0) -> tuple[list[str], int]:
    """The scratchpad's steps (`b6=11`: the next operand's tag, its digit, the running sum) and the final sum.
    `carry_error`: the chance that an addition whose units carry drops the carry (`c9=10` after 11); `step_noise`:
    the chance that an addition is off by 1 or 10."""
    total, out = nums[0], []
    for tag, digit in zip(TAGS[1:], nums[1:]):
        result = total + digit
        if carry_error and (total % 10 + digit) >= 10 and rng.random() < carry_error:
            result -= 10  # the habit: the units' carry is forgotten
        elif step_noise and rng.random() < step_noise:
            result = max(0, result + rng.choice([-10, -1, 1, 10]))
        out.append(f"{tag}{digit}={result}")
        total = result
    return out, total


def write_completion(nums: list[int], style: str, rng: random.Random, *, carry_error: float = 0.0,
                     step_noise: float = 0.0, direct_noise: float = 0.0, max_len: int = 96,
                     recheck: float = 0.0) -> tuple[str, bool]:
    """A completion in `style` (direct, step, careful, filler, loop, long) and whether it ends (False: a loop, no EOS).

    `recheck`: in the careful style, the chance that a step is followed by `chk` and the same step written again
    instead of going straight on with `then` (a connective fork that does not change the answer, Takeaway 5). The
    long style is a scratchpad padded with `.` runs to 80-120 tokens that does end (Takeaway 8: a long completion that
    is not a loop)."""
    if style == "direct":
        answer = sum(nums)
        if rng.random() < direct_noise:
            answer = max(0, answer + rng.choice([-10, -1, 1, 10]))
        return f"\\boxed{{{answer}}}", True
    parts, total = steps(nums, rng, carry_error, step_noise)
    if style == "step":
        return "".join(p + ";" for p in parts) + f"\\boxed{{{total}}}", True
    if style == "careful":
        text = "chk"
        for i, p in enumerate(parts):
            text += ("then" if i else "") + p + ";"
            if recheck and rng.random() < recheck:
                text += "chk" + p + ";"
        return text + f"so\\boxed{{{total}}}", True
    if style == "recheck":  # careful steps; a dropped carry is followed by `chk` and the step written right
        return _recheck(nums, rng, carry_error, recheck), True
    if style == "long":  # `.` runs before the steps, up to a length drawn in [80, 120] tokens (one per character)
        body, answer = [p + ";" for p in parts], f"\\boxed{{{total}}}"
        pad = max(0, rng.randint(80, 120) - sum(map(len, body)) - (len(answer) - len("\\boxed") + 1))
        cuts = sorted(rng.randint(0, pad) for _ in range(len(body) - 1))
        runs = [b - a for a, b in zip([0] + cuts, cuts + [pad])]  # pad split into len(body) runs
        return "".join("." * r + b for r, b in zip(runs, body)) + answer, True
    if style == "filler":
        dots = lambda: "." * rng.randint(3, 14)  # noqa: E731
        return dots() + "".join(p + ";" + (dots() if rng.random() < 0.5 else "") for p in parts) + \
            f"\\boxed{{{total}}}", True
    if style == "loop":  # gets stuck repeating one step until the limit
        stuck = rng.randrange(len(parts))
        text = "".join(p + ";" for p in parts[: stuck + 1])
        while len(text) < max_len * 2:
            text += parts[stuck] + ";"
        return text, False
    raise ValueError(f"style={style!r} is not supported; expected direct, step, careful, recheck, filler, loop or "
                     "long.")


def _recheck(nums: list[int], rng: random.Random, carry_error: float, recheck: float) -> str:
    """The `recheck` style (Takeaway 5 with credit): careful steps where a units carry is dropped with `carry_error`;
    after a step that dropped it, `chk` and the step written right follow with probability `recheck` (else `then` and
    the wrong total goes on), after a right step `chk` and the same step again with probability `recheck / 4`. So the
    connective after a wrong step decides the answer: `chk` saves it, `then` keeps the error."""
    total, text = nums[0], "chk"
    for i, (tag, digit) in enumerate(zip(TAGS[1:], nums[1:])):
        right = total + digit
        dropped = (total % 10 + digit) >= 10 and rng.random() < carry_error
        written = right - 10 if dropped else right
        text += ("then" if i else "") + f"{tag}{digit}={written};"
        if dropped and rng.random() < recheck:
            text, written = text + f"chk{tag}{digit}={right};", right
        elif not dropped and rng.random() < recheck / 4:
            text += f"chk{tag}{digit}={right};"
        total = written
    return text + f"so\\boxed{{{total}}}"


################
# Reading completions
################
BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
STEP = re.compile(r"([a-f])(\d)=(\d+)")


def completion_format(text: str, truncated: bool, k: int | None = None) -> str:
    """The format a completion took: loop (truncated, and either repeating itself exactly or running past its last
    operand: more than k steps for k operands), truncated (cut otherwise), careful (opened by `chk`), filler (has
    `..`), step (has a step), direct, or other.

    The policies' loops are rarely exact repeats: a runaway scratchpad goes on writing steps with tags it has already
    used (`e8=34;e8=33;f1=21;d5=31;...`), which is the task's form of the paper's degenerate repetition."""
    from trl_lite.diagnostics import repeats_itself

    if truncated:
        runaway = k is not None and len(STEP.findall(text)) > k
        return "loop" if runaway or repeats_itself(list(text)) else "truncated"
    if text.startswith("chk"):
        return "careful"
    if ".." in text:
        return "filler"
    if ";" in text:
        return "step"
    return "direct" if BOXED.fullmatch(text) else "other"


def carry_errors(text: str, problem: str) -> tuple[int, int]:
    """(additions whose units carry, those of them written with the carry dropped) in a completion's scratchpad;
    `problem` is the prompt (`a5+b6+c9`), whose first digit starts the running sum."""
    first = re.match(r"a(\d)", problem)
    if first is None:
        return 0, 0
    total, carries, dropped = int(first.group(1)), 0, 0
    for _, digit, result in STEP.findall(text):
        digit, result = int(digit), int(result)
        if (total % 10 + digit) >= 10:
            carries += 1
            dropped += result == total + digit - 10
        total = result
    return carries, dropped


def recheck_outcome(text: str, problem: str) -> str | None:
    """How a completion's scratchpad handled its dropped carries (`problem` is the prompt, `a5+b6+c9`): `"fixed"` when
    every step that dropped a units carry is followed by the same step written right (the recheck style's `chk`),
    `"kept"` when one is not, None when no step dropped a carry. A right step written again is skipped."""
    first = re.match(r"a(\d)", problem)
    if first is None:
        return None
    total, found = int(first.group(1)), STEP.findall(text)
    dropped = fixed = i = 0
    while i < len(found):
        tag, digit, result = found[i][0], int(found[i][1]), int(found[i][2])
        carries, right = total % 10 + digit >= 10, total + digit
        total, i = result, i + 1
        if carries and result == right - 10:
            dropped += 1
            if i < len(found) and found[i][0] == tag and int(found[i][2]) == right:
                fixed, total, i = fixed + 1, right, i + 1
        elif i < len(found) and found[i][0] == tag:  # a right step written again
            total, i = int(found[i][2]), i + 1
    if not dropped:
        return None
    return "fixed" if fixed == dropped else "kept"


def connective_after_drops(text: str, problem: str) -> str | None:
    """Which connective a completion wrote after its dropped carries (`problem` is the prompt, `a5+b6+c9`): `"chk"`
    when every step that dropped a units carry is followed directly by the connective `chk`, `"other"` when one is
    followed by anything else (`then`, `so`, another step), None when no step dropped a carry. The same step written
    again right after (a recheck's rewrite, right or not) sets the running sum and is not an addition of its own.

    Unlike `recheck_outcome`, which reads whether the dropped step was written again right, this reads the connective
    token itself: Takeaway 5's credit link is what choosing `chk` at the fork does for the answer, including a `chk`
    followed by a rewrite that repeats the error (issue 38)."""
    first = re.match(r"a(\d)", problem)
    if first is None:
        return None
    total, found = int(first.group(1)), list(STEP.finditer(text))
    dropped = checked = i = 0
    while i < len(found):
        step = found[i]
        tag, digit, result = step.group(1), int(step.group(2)), int(step.group(3))
        carries, right = total % 10 + digit >= 10, total + digit
        total, i = result, i + 1
        if carries and result == right - 10:
            dropped += 1
            checked += text.startswith(";chk", step.end())
        if i < len(found) and found[i].group(1) == tag:  # the same step written again
            total, i = int(found[i].group(3)), i + 1
    if not dropped:
        return None
    return "chk" if checked == dropped else "other"
