"""Reward faults contained: a reward function that raises, returns the wrong number of values, returns NaN/inf or (if
async) runs past `reward_timeout` never puts garbage into the advantages.

[`LitePPOTrainer`] wraps each reward function in a [`RewardGuard`] after TRL built its list (names, processing
classes and async detection stay TRL's). A guard never raises into TRL's `_calculate_rewards`: it hands TRL `None`
(unscorable) for the samples a fault touches and records the fault. After TRL gathered the rewards over processes,
the trainer gathers the faults too and applies `on_reward_error` on every process alike (a fault on one process must
not leave the others waiting in a collective):

- `"raise"`: [`RewardFunctionError`] names the function, the global step and the first offending sample;
- `"skip"`: the touched samples are unscorable for every function (advantage 0, out of every statistic), counted in
  `rewards/<name>/errors`, and the first fault of each function is logged with its traceback.
"""

from __future__ import annotations

import asyncio
import math
import numbers
import traceback
from dataclasses import dataclass, field


class RewardFunctionError(RuntimeError):
    """A reward function failed and `on_reward_error="raise"`."""


@dataclass
class RewardFault:
    """What went wrong in one call of one reward function: `rows` are the local samples it touches."""

    kind: str  # "raised", "wrong count", "non-finite", "timed out", "not a number"
    detail: str
    rows: list[int]
    traceback: str = ""
    error: BaseException | None = None  # what the function raised, chained to the trainer's error


@dataclass
class RewardGuard:
    """Calls one reward function and checks its values; the fault of the last call, if any, is in `fault`.

    Catching every exception is the point here: a reward function is user code (often a remote service), and its
    failure must be reported with the step and sample (or contained), not surface as an anonymous crash in a gather.
    """

    func: object
    name: str
    timeout: float | None = None
    fault: RewardFault | None = field(default=None, init=False)

    def _check(self, values, size: int) -> list:
        """`values` with the faulty ones replaced by None (TRL's unscorable); records the fault."""
        try:
            values = list(values)
        except TypeError:
            self.fault = RewardFault("wrong count", f"returned {type(values).__name__}, not one value per completion",
                                     list(range(size)))
            return [None] * size
        if len(values) != size:
            self.fault = RewardFault("wrong count", f"returned {len(values)} values for {size} completions",
                                     list(range(size)))
            return [None] * size
        bad, kinds = [], set()
        for i, value in enumerate(values):
            if value is None:
                continue  # unscorable by the function's own choice, as in TRL
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                bad.append(i)
                kinds.add("not a number")
            elif not math.isfinite(float(value)):
                bad.append(i)
                kinds.add("non-finite")
        if bad:
            first = values[bad[0]]
            kind = "non-finite" if kinds == {"non-finite"} else "not a number"
            self.fault = RewardFault(kind, f"returned {first!r} for {len(bad)} of {size} completions", bad)
            dropped = set(bad)
            values = [None if i in dropped or v is None else float(v) for i, v in enumerate(values)]
        return values

    def _raised(self, error: BaseException, size: int) -> list:
        self.fault = RewardFault("raised", f"raised {type(error).__name__}: {error}", list(range(size)),
                                 "".join(traceback.format_exception(error)), error)
        return [None] * size


class SyncRewardGuard(RewardGuard):
    def __call__(self, prompts, completions, **kwargs):
        self.fault = None
        try:
            values = self.func(prompts=prompts, completions=completions, **kwargs)
        except Exception as error:  # noqa: BLE001 (see RewardGuard)
            return self._raised(error, len(prompts))
        return self._check(values, len(prompts))


class AsyncRewardGuard(RewardGuard):
    async def __call__(self, prompts, completions, **kwargs):
        self.fault = None
        try:
            call = self.func(prompts=prompts, completions=completions, **kwargs)
            values = await (call if self.timeout is None else asyncio.wait_for(call, self.timeout))
        except asyncio.TimeoutError:
            self.fault = RewardFault("timed out", f"took longer than reward_timeout={self.timeout}s",
                                     list(range(len(prompts))))
            return [None] * len(prompts)
        except Exception as error:  # noqa: BLE001 (see RewardGuard)
            return self._raised(error, len(prompts))
        return self._check(values, len(prompts))


def guard(func, name: str, is_async: bool, timeout: float | None) -> RewardGuard:
    """The guard for one reward function (async functions get an async guard, which TRL runs on its event loop)."""
    return AsyncRewardGuard(func, name, timeout) if is_async else SyncRewardGuard(func, name)


def describe(fault: RewardFault, name: str, global_step: int, prompts: list, completions: list) -> str:
    """The error message: function, global step, what went wrong and the first offending sample."""
    row = fault.rows[0]
    return (
        f"reward function {name!r} {fault.detail} at global_step={global_step}; first offending sample (#{row} of "
        f"this process's batch): prompt={_short(prompts[row])}, completion={_short(completions[row])}"
    )


def _short(value, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "...'"
