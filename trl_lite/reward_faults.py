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
import logging
import math
import numbers
import traceback
from dataclasses import dataclass, field

import torch

from .trl_contract import is_async_callable

logger = logging.getLogger(__name__)


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


class RewardFaultsMixin:
    """Puts every reward function (not reward models) in a guard, and applies `on_reward_error` after TRL's
    `_calculate_rewards` gathered the rewards (the trainer calls `_contain_reward_faults` there)."""

    def _guard_reward_funcs(self) -> None:
        for i, func in enumerate(self.reward_funcs):
            if not isinstance(func, torch.nn.Module):
                self.reward_funcs[i] = guard(func, self.reward_func_names[i], is_async_callable(func),
                                             self.args.reward_timeout)
        self._lite_warned_rewards: set[str] = set()

    def _contain_reward_faults(self, rewards_per_func: torch.Tensor, prompts: list, completions: list) -> None:
        """Applies `on_reward_error` to the faults the reward guards recorded in this call, on every process alike (the
        faults are gathered like the rewards); under "skip" the touched rows become NaN (unscorable)."""
        local = self._process_slice(len(prompts))
        faults = {}
        for i, func in enumerate(self.reward_funcs):
            if isinstance(func, RewardGuard):
                fault, func.fault = func.fault, None
            else:  # a reward model: no None to stand for unscorable, so any NaN/inf is a fault
                bad = (~torch.isfinite(rewards_per_func[local, i])).nonzero().flatten().tolist()
                fault = RewardFault("non-finite", f"returned non-finite rewards for {len(bad)} of {len(prompts)} "
                                    "completions", bad) if bad else None
            if fault is not None:
                faults[i] = fault
        touched = torch.zeros(len(prompts), len(self.reward_funcs), dtype=torch.int, device=rewards_per_func.device)
        for i, fault in faults.items():
            touched[fault.rows, i] = 1
        touched = self.accelerator.gather(touched).bool()  # (N, F)
        names, step = self.reward_func_names, self.state.global_step
        if self.args.on_reward_error == "raise":
            if faults:
                i, fault = next(iter(faults.items()))
                raise RewardFunctionError(
                    f"{describe(fault, names[i], step, prompts, completions)}. Nothing was trained on this batch; fix "
                    "the function, or set on_reward_error='skip' to train on without the samples it fails on."
                ) from fault.error
            if touched.any():
                i = int(touched.any(dim=0).nonzero()[0])
                raise RewardFunctionError(
                    f"reward function {names[i]!r} failed on another process at global_step={step}; that process's "
                    "error names the offending sample."
                )
            return
        rewards_per_func[touched.any(dim=1)] = torch.nan  # unscorable for every function: advantage 0, not counted
        mode = "train" if self.model.training else "eval"
        for i, name in enumerate(names):
            self._metrics[mode][f"rewards/{name}/errors"].append(touched[:, i].sum().item())
        for i, fault in faults.items():
            if names[i] not in self._lite_warned_rewards:
                self._lite_warned_rewards.add(names[i])
                logger.warning(
                    "%s. on_reward_error='skip': these samples are unscorable; further faults of %r are only counted "
                    "in rewards/%s/errors.\n%s", describe(fault, names[i], step, prompts, completions), names[i],
                    names[i], fault.traceback,
                )
