"""One math-verify answer check, and the worker process that runs checks for [`~trl_lite.rewards.MathChecker`].

This file imports nothing from `trl_lite` (nor torch): the checker starts it as a plain script,

    python -c "<drop sys.path[0]; runpy.run_path(this file)>" FALLBACKS

so that the worker never imports the user's `__main__` (a script without an `if __name__ == "__main__":` guard, code
piped to `python -`, a notebook) and starts in about a second. The protocol is one JSON line per request on stdin,
`[completion, gold]`, and one JSON line per reply on stdout: the outcome. The worker prints `"ready"` once math-verify
is imported, so that the caller's per-check time limit covers checks only. It exits when stdin closes (its parent
ended, however it ended).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

# Outcomes of one check
CORRECT, WRONG, GOLD_UNPARSABLE, TIMEOUT = "correct", "wrong", "gold_unparsable", "timeout"
FALLBACKS = ("latex", "expr")
READY = "ready"


def last_boxed(text: str) -> str | None:
    """Content of the last `\\boxed{...}` (or `\\fbox{...}`) of `text`, with nested braces; None when there is none."""
    start = max(text.rfind("\\boxed{"), text.rfind("\\fbox{"))
    if start < 0:
        return None
    i = text.index("{", start) + 1
    depth, begin = 1, i
    while i < len(text):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[begin:i].strip()
        i += 1
    return None  # unbalanced: the answer was cut off


def _gold_text(gold) -> str:
    gold = str(gold).strip()
    return gold if "$" in gold or "\\boxed" in gold or "\\(" in gold else f"${gold}$"


def check_answer(completion: str, gold, fallbacks: Sequence[str] = FALLBACKS) -> str:
    """One check, in this process (no time limit): CORRECT, WRONG or GOLD_UNPARSABLE."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    parsed_gold = parse(_gold_text(gold), parsing_timeout=None)
    if not parsed_gold:
        return GOLD_UNPARSABLE
    boxed = last_boxed(completion)
    if boxed is not None:
        prediction = parse(f"${boxed}$", parsing_timeout=None)
    else:
        configs = {"latex": LatexExtractionConfig(), "expr": ExprExtractionConfig()}
        extraction = [configs[name] for name in fallbacks]
        prediction = parse(completion, extraction_config=extraction, parsing_timeout=None) if extraction else []
    if not prediction:
        return WRONG
    return CORRECT if verify(parsed_gold, prediction, timeout_seconds=None) else WRONG


def serve(fallbacks: Sequence[str], stdin=None, stdout=None) -> None:
    """The worker loop: reads `[completion, gold]` lines, writes outcome lines, until stdin closes."""
    import logging

    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    logging.getLogger("math_verify").setLevel(logging.ERROR)  # it warns that its own timeout is off: ours is on
    import math_verify  # noqa: F401  (imported before "ready", so the time limit covers checks only)

    stdout.write(json.dumps(READY) + "\n")
    stdout.flush()
    for line in stdin:
        completion, gold = json.loads(line)
        try:
            outcome = check_answer(completion, gold, fallbacks)
        except Exception:  # a parser bug on one odd input must score that input wrong, not kill the worker
            outcome = WRONG
        stdout.write(json.dumps(outcome) + "\n")
        stdout.flush()


if __name__ == "__main__":
    serve(tuple(name for name in sys.argv[1].split(",") if name) if len(sys.argv) > 1 else FALLBACKS)
