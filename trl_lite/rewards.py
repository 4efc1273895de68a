"""Verifiable math rewards that never hang and never crash training.

`math_accuracy_reward` extracts the final answer (the last `\\boxed{}` first, then math-verify's LaTeX and expression
fallbacks) and checks it against the gold answer with math-verify. math-verify's own timeout uses `signal.alarm`,
which fails off the main thread and cannot interrupt some sympy work, so every check here runs in a reusable worker
process under a hard time limit: a check that overruns kills the worker (a fresh one replaces it) and is scored wrong.
This works from any thread (TRL's async reward path) and in every process of a multi-process run.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Sequence

from trl.rewards import get_soft_overlong_punishment

from .registry import Registry

# Reward functions selectable by name (e.g. `--reward_funcs math_accuracy,boxed_format` in examples/train_lite.py)
REWARDS = Registry("reward")

# Outcomes of one check
CORRECT, WRONG, GOLD_UNPARSABLE, TIMEOUT = "correct", "wrong", "gold_unparsable", "timeout"
REWARD_SCALES = {"0,1": (0.0, 1.0), "-1,1": (-1.0, 1.0)}
FALLBACKS = ("latex", "expr")
STARTUP_TIMEOUT = 120.0  # seconds for a fresh worker to import math-verify


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


def _worker(conn, fallbacks):
    import logging

    logging.getLogger("math_verify").setLevel(logging.ERROR)  # it warns that its own timeout is off: ours is on
    import math_verify  # noqa: F401  (imported before "ready", so the time limit covers checks only)

    conn.send("ready")
    while True:
        try:
            completion, gold = conn.recv()
        except EOFError:
            return
        try:
            conn.send(check_answer(completion, gold, fallbacks))
        except Exception:  # a parser bug on one odd input must score that input wrong, not kill the worker
            conn.send(WRONG)


class MathChecker:
    """math-verify checks in a reusable worker process with a hard per-check time limit (thread-safe).

    Args:
        timeout (`float`, *optional*, defaults to `5.0`):
            Seconds one check may take; an overrun is scored wrong and the worker is replaced.
        fallbacks (`Sequence[str]`, *optional*, defaults to `("latex", "expr")`):
            math-verify extractions tried, in order, when the completion has no `\\boxed{}`.
    """

    def __init__(self, timeout: float = 5.0, fallbacks: Sequence[str] = FALLBACKS):
        unknown = [f for f in fallbacks if f not in FALLBACKS]
        if unknown:
            raise ValueError(f"fallbacks={tuple(fallbacks)!r} has unknown entries {unknown}; accepted: {FALLBACKS}.")
        if timeout <= 0:
            raise ValueError(f"timeout={timeout!r} is not supported; expected seconds > 0.")
        self.timeout, self.fallbacks = timeout, tuple(fallbacks)
        self._lock = threading.Lock()
        self._process = None
        self._conn = None

    def _start(self):
        ctx = multiprocessing.get_context("spawn")  # no fork: the trainer process holds threads and CUDA state
        self._conn, child = ctx.Pipe()
        self._process = ctx.Process(target=_worker, args=(child, self.fallbacks), daemon=True)
        self._process.start()
        child.close()
        if not self._conn.poll(STARTUP_TIMEOUT) or self._conn.recv() != "ready":
            self._kill()
            raise RuntimeError(f"the math-verify worker did not start within {STARTUP_TIMEOUT} s")

    def _kill(self):
        if self._process is not None:
            self._process.kill()
            self._process.join()
        self._process = self._conn = None

    def check(self, completion: str, gold) -> str:
        """CORRECT, WRONG, GOLD_UNPARSABLE or TIMEOUT."""
        with self._lock:
            if self._process is None or not self._process.is_alive():
                self._start()
            self._conn.send((completion, str(gold)))
            if self._conn.poll(self.timeout):
                return self._conn.recv()
            self._kill()
            return TIMEOUT

    def close(self):
        with self._lock:
            self._kill()

    def __del__(self):
        try:
            self.close()
        except (AttributeError, TypeError, OSError):  # interpreter shutdown may have torn down what close() uses
            pass


def completion_text(completion) -> str:
    """The text of a completion, plain or conversational (the last message's content)."""
    return completion if isinstance(completion, str) else completion[-1]["content"]


class MathAccuracyReward:
    """TRL reward function: math-verify accuracy of the final answer against the `answer` column.

    Returns `correct` or `wrong` per completion on the chosen scale, and `None` (unscorable, ignored by TRL and by the
    advantage statistics) when the gold answer cannot be parsed. A timed-out check is scored wrong. Counts are logged
    through TRL's `log_metric` as `math_accuracy/gold_unparsable` and `math_accuracy/timeouts` (shares of the batch).

    Args:
        reward_scale (`str`, *optional*, defaults to `"0,1"`): `"0,1"` or `"-1,1"` (the paper uses both).
        timeout (`float`, *optional*, defaults to `5.0`): seconds per check.
        fallbacks: extractions tried when there is no `\\boxed{}` (see [`MathChecker`]).
    """

    __name__ = "math_accuracy"

    def __init__(self, reward_scale: str = "0,1", timeout: float = 5.0, fallbacks: Sequence[str] = FALLBACKS):
        if reward_scale not in REWARD_SCALES:
            raise ValueError(f"reward_scale={reward_scale!r} is not supported; expected one of {list(REWARD_SCALES)}.")
        self.wrong_value, self.correct_value = REWARD_SCALES[reward_scale]
        self.checker = MathChecker(timeout=timeout, fallbacks=fallbacks)

    def __call__(self, completions, answer, log_metric=None, **kwargs) -> list[float | None]:
        outcomes = [self.checker.check(completion_text(c), gold) for c, gold in zip(completions, answer)]
        if log_metric is not None and outcomes:
            log_metric("math_accuracy/gold_unparsable", outcomes.count(GOLD_UNPARSABLE) / len(outcomes))
            log_metric("math_accuracy/timeouts", outcomes.count(TIMEOUT) / len(outcomes))
        value = {CORRECT: self.correct_value, WRONG: self.wrong_value, TIMEOUT: self.wrong_value}
        return [value.get(outcome) for outcome in outcomes]


math_accuracy_reward = REWARDS.register("math_accuracy")(MathAccuracyReward())  # the worker starts on first use
REWARDS.register("math_accuracy_pm1")(MathAccuracyReward(reward_scale="-1,1"))


@REWARDS.register("boxed_format")
def boxed_format_reward(completions, **kwargs) -> list[float]:
    """1.0 when the completion puts a final answer inside `\\boxed{}`, else 0.0."""
    return [float(last_boxed(completion_text(c)) is not None) for c in completions]


def soft_overlong_punishment(max_completion_len: int = 8192, soft_punish_cache: int | None = None):
    """TRL's soft overlong punishment (DAPO Eq. 13) at the paper's 8k maximum length. The cache defaults to DAPO's
    proportion, 20% of the maximum length (4096 of 20480)."""
    cache = soft_punish_cache if soft_punish_cache is not None else int(max_completion_len * 0.2)
    return get_soft_overlong_punishment(max_completion_len=max_completion_len, soft_punish_cache=cache)
