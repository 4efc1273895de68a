"""Verifiable math rewards that never hang and never crash training.

`math_accuracy_reward` extracts the final answer (the last `\\boxed{}` first, then math-verify's LaTeX and expression
fallbacks) and checks it against the gold answer with math-verify. math-verify's own timeout uses `signal.alarm`,
which fails off the main thread and cannot interrupt some sympy work, so every check runs in a worker process under a
hard time limit: a check that overruns kills its worker (a fresh one replaces it) and is scored wrong. A batch is
spread over a small pool of workers. The workers run `trl_lite/math_check.py` as a plain script, so they never import
the user's `__main__`: unguarded scripts, `python -`, notebooks, threads (TRL's async reward path) and every process
of an accelerate / torchrun / DeepSpeed run all work.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence

from . import math_check
from .math_check import CORRECT, FALLBACKS, GOLD_UNPARSABLE, TIMEOUT, WRONG, check_answer, last_boxed  # noqa: F401
from .registry import Registry

# Reward functions selectable by name (e.g. `--reward_funcs math_accuracy,boxed_format` in `trl-lite train`)
REWARDS = Registry("reward")

REWARD_SCALES = {"0,1": (0.0, 1.0), "-1,1": (-1.0, 1.0)}
STARTUP_TIMEOUT = 120.0  # seconds for a fresh worker to import math-verify
MAX_DEFAULT_WORKERS = 4  # each worker holds sympy (~100 MB); more rarely pays off next to generation
PIPELINE = 2  # requests in flight per worker: the next check is queued while one runs
# Runs the worker file as __main__ without putting the current directory (`-c`) on sys.path: nothing of the user's
# can shadow what math-verify imports, and nothing of trl_lite (torch, transformers) is imported.
_BOOT = "import runpy, sys; del sys.path[0]; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"


def default_workers() -> int:
    """Workers per checker: the CPUs this process may use, shared among the processes of this node (torchrun's and
    accelerate's `LOCAL_WORLD_SIZE`), between 1 and 4."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    per_process = cpus // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1))
    return max(1, min(MAX_DEFAULT_WORKERS, per_process))


class _Worker:
    """One `math_check.py` process. Requests are answered in order; `pending` holds the indices sent and not yet
    answered, and `deadline` is the time limit of the first of them (the one the worker is checking now)."""

    def __init__(self, fallbacks: tuple[str, ...]):
        self.process = subprocess.Popen(
            [sys.executable, "-c", _BOOT, math_check.__file__, ",".join(fallbacks)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True,  # a Ctrl-C goes to the trainer
        )
        self.fd = self.process.stdout.fileno()
        self.pending: deque[int] = deque()
        self.deadline = float("inf")
        self._buffer = b""

    def wait_ready(self, deadline: float):
        replies = []
        while not replies and select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            replies = self.read()
            if replies is None:
                break
        if replies != [math_check.READY]:
            self.kill()
            raise RuntimeError(
                f"the math-verify worker did not start within {STARTUP_TIMEOUT} s (is math-verify installed for "
                f"{sys.executable}?)"
            )

    def send(self, index: int, completion: str, gold: str, timeout: float):
        if not self.pending:  # the worker starts on it now
            self.deadline = time.monotonic() + timeout
        self.pending.append(index)
        self.process.stdin.write((json.dumps([completion, gold]) + "\n").encode())
        self.process.stdin.flush()

    def read(self) -> list[str] | None:
        """The complete replies available now (call when the pipe is readable); None when the worker died. Read with
        `os.read`, not a buffered reader, so no reply hides in a buffer that `select` cannot see."""
        data = os.read(self.fd, 1 << 16)
        if not data:
            return None
        *lines, self._buffer = (self._buffer + data).split(b"\n")
        return [json.loads(line) for line in lines]

    def kill(self):
        self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            stream.close()


class MathChecker:
    """math-verify checks in a small pool of worker processes, each check under a hard time limit (thread-safe).

    Args:
        timeout (`float`, *optional*, defaults to `5.0`):
            Seconds one check may take; an overrun is scored wrong and its worker is replaced.
        fallbacks (`Sequence[str]`, *optional*, defaults to `("latex", "expr")`):
            math-verify extractions tried, in order, when the completion has no `\\boxed{}`.
        workers (`int`, *optional*):
            Worker processes checking a batch in parallel; defaults to [`default_workers`] (the CPUs per training
            process on this node, 1 to 4). Workers start on first use.
    """

    def __init__(self, timeout: float = 5.0, fallbacks: Sequence[str] = FALLBACKS, workers: int | None = None):
        unknown = [f for f in fallbacks if f not in FALLBACKS]
        if unknown:
            raise ValueError(f"fallbacks={tuple(fallbacks)!r} has unknown entries {unknown}; accepted: {FALLBACKS}.")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
            raise ValueError(f"timeout={timeout!r} is not supported; expected seconds > 0.")
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
            raise ValueError(f"workers={workers!r} is not supported; expected an int >= 1 or None.")
        self.timeout, self.fallbacks = timeout, tuple(fallbacks)
        self.workers = workers or default_workers()
        self._lock = threading.Lock()
        self._pool: list[_Worker] = []

    def _ensure(self, count: int):
        """Starts workers until `count` are alive (in parallel; each is waited for until it has imported math-verify)."""
        self._pool = [w for w in self._pool if w.process.poll() is None]
        fresh = [_Worker(self.fallbacks) for _ in range(count - len(self._pool))]
        deadline = time.monotonic() + STARTUP_TIMEOUT
        try:
            for worker in fresh:
                worker.wait_ready(deadline)
        except RuntimeError:
            for worker in fresh:
                if worker.process.poll() is None:
                    worker.kill()
            raise
        self._pool += fresh

    def check(self, completion: str, gold) -> str:
        """CORRECT, WRONG, GOLD_UNPARSABLE or TIMEOUT."""
        return self.check_many([(completion, gold)])[0]

    def check_many(self, pairs: Sequence[tuple[str, object]]) -> list[str]:
        """Outcomes of `(completion, gold)` pairs, in order, checked in parallel over the pool.

        Each worker has up to `PIPELINE` requests in flight, so it starts the next check without waiting for a round
        trip through this process; the time limit of a check starts when the worker starts it.
        """
        if not pairs:
            return []
        with self._lock:
            self._ensure(min(self.workers, len(pairs)))
            outcomes: list[str | None] = [None] * len(pairs)
            todo = deque(range(len(pairs)))
            while todo or any(worker.pending for worker in self._pool):
                for worker in sorted(self._pool, key=lambda w: len(w.pending)):
                    while todo and len(worker.pending) < PIPELINE:
                        index = todo.popleft()
                        completion, gold = pairs[index]
                        worker.send(index, completion, str(gold), self.timeout)
                busy = {worker.fd: worker for worker in self._pool if worker.pending}
                first_deadline = min(worker.deadline for worker in busy.values())
                ready = select.select(list(busy), [], [], max(0.0, first_deadline - time.monotonic()))[0]
                for fd in ready:
                    worker = busy[fd]
                    replies = worker.read()
                    if replies is None:  # the check crashed the worker: score it wrong, replace the worker
                        outcomes[worker.pending.popleft()] = WRONG
                        self._replace(worker, todo)
                        continue
                    for outcome in replies:
                        outcomes[worker.pending.popleft()] = outcome
                        worker.deadline = time.monotonic() + self.timeout  # the next one has just started
                now = time.monotonic()
                for worker in list(busy.values()):
                    if worker.pending and worker.deadline <= now and worker.fd not in ready:  # overran its limit
                        outcomes[worker.pending.popleft()] = TIMEOUT
                        self._replace(worker, todo)
            return outcomes

    def _replace(self, worker: _Worker, todo: deque):
        """Kills `worker`, hands back the checks it had not started, and starts a fresh one in its place."""
        todo.extendleft(reversed(worker.pending))
        worker.kill()
        self._pool.remove(worker)
        fresh = _Worker(self.fallbacks)
        fresh.wait_ready(time.monotonic() + STARTUP_TIMEOUT)
        self._pool.append(fresh)

    def close(self):
        with self._lock:
            for worker in self._pool:
                worker.kill()
            self._pool = []

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
        workers (`int`, *optional*): worker processes per batch (see [`MathChecker`]).
    """

    __name__ = "math_accuracy"

    def __init__(self, reward_scale: str = "0,1", timeout: float = 5.0, fallbacks: Sequence[str] = FALLBACKS,
                 workers: int | None = None):
        if reward_scale not in REWARD_SCALES:
            raise ValueError(f"reward_scale={reward_scale!r} is not supported; expected one of {list(REWARD_SCALES)}.")
        self.wrong_value, self.correct_value = REWARD_SCALES[reward_scale]
        self.checker = MathChecker(timeout=timeout, fallbacks=fallbacks, workers=workers)

    def __call__(self, completions, answer, log_metric=None, **kwargs) -> list[float | None]:
        outcomes = self.checker.check_many([(completion_text(c), gold) for c, gold in zip(completions, answer)])
        if log_metric is not None and outcomes:
            log_metric("math_accuracy/gold_unparsable", outcomes.count(GOLD_UNPARSABLE) / len(outcomes))
            log_metric("math_accuracy/timeouts", outcomes.count(TIMEOUT) / len(outcomes))
        value = {CORRECT: self.correct_value, WRONG: self.wrong_value, TIMEOUT: self.wrong_value}
        return [value.get(outcome) for outcome in outcomes]


math_accuracy_reward = REWARDS.register("math_accuracy")(MathAccuracyReward())  # the worker starts on first use
REWARDS.register("math_accuracy_pm1")(MathAccuracyReward(reward_scale="-1,1"))


@REWARDS.register("exact_answer")
def exact_answer_reward(completions, answer, **kwargs) -> list[float]:
    """1.0 when the last `\\boxed{}` of the completion holds exactly the gold answer, else 0.0 (the built-in tasks'
    reward: `trl_lite.tasks.arithmetic`, `trl_lite.tasks.sumk`)."""
    return [float(last_boxed(completion_text(c)) == str(a).strip()) for c, a in zip(completions, answer)]


def exact_check(completion: str, gold: str) -> str:
    """`exact_answer_reward` as an answer check for `trl_lite.scoring.score_benchmark`: `"correct"` or `"wrong"`."""
    return "correct" if exact_answer_reward([completion], [gold])[0] == 1.0 else "wrong"


@REWARDS.register("boxed_format")
def boxed_format_reward(completions, **kwargs) -> list[float]:
    """1.0 when the completion puts a final answer inside `\\boxed{}`, else 0.0."""
    return [float(last_boxed(completion_text(c)) is not None) for c in completions]


def soft_overlong_punishment(max_completion_len: int = 8192, soft_punish_cache: int | None = None):
    """TRL's soft overlong punishment (DAPO Eq. 13) at the paper's 8k maximum length. The cache defaults to DAPO's
    proportion, 20% of the maximum length (4096 of 20480)."""
    from .trl_contract import get_soft_overlong_punishment

    cache = soft_punish_cache if soft_punish_cache is not None else int(max_completion_len * 0.2)
    return get_soft_overlong_punishment(max_completion_len=max_completion_len, soft_punish_cache=cache)
