"""The TRL internals trl-lite relies on, the behaviour it assumes of each, and the check that the installed TRL still
provides them.

[`LitePPOTrainer`] wraps `trl.GRPOTrainer` rather than copying it: it overrides a few private methods, calls the
parent's version and post-processes what it returns. That is only as safe as the private names it touches. Each one is
listed in [`CONTRACT`] with what is assumed of it. [`check_trl`] checks the names, signatures and config fields before
a trainer is built, [`check_trainer`] checks the attributes TRL's constructor sets, and [`check_runtime`] checks, once,
the values that only exist once training runs (the first generation batch, before the first optimizer step). A mismatch
raises one [`TRLContractError`] that names the installed TRL, every broken assumption and the supported range, instead
of an AttributeError or a silently different loss in the middle of a run.

The private helpers trl-lite imports from TRL are imported here and only here, guarded, so that `import trl_lite` and
`from trl_lite import LitePPOTrainer` never fail first on a TRL import: a missing helper is `None` and is reported by
the check. What the check cannot see (what `_compute_loss` divides by, what `_prepare_inputs` buffers) is pinned by the
tests each entry names, which the `.ci/run` canary runs against the newest TRL.

Any adaptation to a TRL release belongs in this module, in its one version-conditional place (`adapt` and
`_release_problems`): 1.14.0 and 1.14.1 lack `eos_token_ids`, which `adapt` sets as those releases behave; 1.15.0 is
outside the range (it needs Triton to train).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import logging
import numbers
import warnings

logger = logging.getLogger(__name__)

from .trl_assumptions import (  # the table; this module checks the installed TRL against it
    _CONFIG_DEFAULTS,
    _VLLM_GENERATION,
    CONFIG_FIELDS,
    CONTRACT,
    SUPPORTED_TRL,
    TESTED_TRL,
    UPSTREAM_DEPRECATIONS,
    Assumption,
)


class TRLContractError(RuntimeError):
    """The installed TRL lacks, or has changed, an internal that trl-lite relies on."""


_WARNED: set[str] = set()  # the out-of-range TRL versions already warned about

# The private helpers, imported once and guarded: a missing one is None here and a broken assumption in `check_trl`.
_IMPORT_ERRORS: dict[str, str] = {}


def vllm_generation_module():
    """TRL's `trl.generation.vllm_generation`, imported on use (it imports vLLM): its `LLM` is the name TRL builds the
    colocated engine with. Raises [`TRLContractError`] when the module or that name is missing."""
    module = _VLLM_GENERATION.rpartition(".")[0]
    if _import(f"{module}.LLM") is None:
        sync = next(a for a in CONTRACT if a.name == "sync_weights" and a.owner == _VLLM_GENERATION)
        raise _error([(sync, f"`{module}.LLM` {_IMPORT_ERRORS.get(f'{module}.LLM', 'is missing')}")])
    return importlib.import_module(module)


def _import(path: str):
    module, _, name = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except Exception as error:  # noqa: BLE001  (any failure importing TRL's helper is reported by the check)
        _IMPORT_ERRORS[path] = f"cannot be imported ({type(error).__name__}: {error})"
        return None


_IMPORTED = {a.name: _import(a.name) for a in CONTRACT if a.kind == "import"}  # the contract's import entries
is_async_callable = _IMPORTED["trl.trainer.utils.is_async_callable"]
RepeatSampler = _IMPORTED["trl.trainer.utils.RepeatSampler"]
get_config_model_id = _IMPORTED["trl.trainer.utils.get_config_model_id"]
get_soft_overlong_punishment = _IMPORTED["trl.rewards.get_soft_overlong_punishment"]


def trl_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trl")
    except PackageNotFoundError:
        return "not installed"


def in_supported_range(version: str) -> bool:
    """Whether `version` is inside [`SUPPORTED_TRL`] (a PEP 440 specifier set; a pre-release is never inside)."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion

    try:
        return SpecifierSet(SUPPORTED_TRL).contains(version)
    except InvalidVersion:  # "not installed"
        return False


def _accepts(func, params: tuple[str, ...]) -> str | None:
    """None if `func` can be called as `func(self, *params)` with those names first, else what is wrong."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return None  # a builtin or C function: nothing to read, the call itself will tell
    positional = [
        p for p in signature.parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    if positional and positional[0].name in ("self", "cls"):
        positional = positional[1:]
    names = [p.name for p in positional[: len(params)]]
    if names == list(params):
        return None
    if len(names) < len(params) and any(p.kind == inspect.Parameter.VAR_POSITIONAL
                                        for p in signature.parameters.values()):
        return None  # `(model, *args, ...)` forwards the rest positionally (TRL 1.14's log-prob helper)
    return f"has signature {signature}, expected parameters ({', '.join(params)}, ...)"


def _class_problems(trainer_cls=None, config_cls=None, methods: bool = True) -> list[tuple[Assumption, str]]:
    """The broken assumptions that can be seen without a trainer: imports, method signatures, config fields."""
    if config_cls is None:
        from trl import GRPOConfig as config_cls
    if methods and trainer_cls is None:
        from trl import GRPOTrainer as trainer_cls
    problems = []
    config_fields = getattr(config_cls, "__dataclass_fields__", {})
    for assumption in CONTRACT + CONFIG_FIELDS:
        if assumption.kind == "import":
            value = _IMPORTED.get(assumption.name)
            if value is None:
                problems.append((assumption, _IMPORT_ERRORS.get(assumption.name, "is missing")))
            elif (problem := _accepts(value, assumption.params)) is not None:
                problems.append((assumption, problem))
        elif assumption.kind == "method" and methods:
            # VLLMGeneration is imported here, not with the module: `import trl_lite` stays light
            owner = _import(assumption.owner) if assumption.owner == _VLLM_GENERATION else trainer_cls
            method = getattr(owner, assumption.name, None)
            if owner is None:
                problems.append((assumption, _IMPORT_ERRORS.get(assumption.owner, "cannot be imported")))
            elif not callable(method):
                problems.append((assumption, f"is not a method of {owner.__name__}"))
            elif (problem := _accepts(method, assumption.params)) is not None:
                problems.append((assumption, problem))
        elif assumption.kind == "config" and assumption.name not in config_fields:
            problems.append((assumption, f"is not a field of {config_cls.__name__}"))
        elif assumption.kind == "config" and assumption.name in _CONFIG_DEFAULTS:
            default, expected = config_fields[assumption.name].default, _CONFIG_DEFAULTS[assumption.name]
            if default != expected:
                problems.append((assumption, f"defaults to {default!r}, expected {expected!r}"))
    return problems


def _error(problems: list[tuple[Assumption, str]]) -> TRLContractError:
    from . import __version__

    lines = [f"  - {_display(a)} ({a.kind}) {problem}; assumed: {a.assumes}" for a, problem in problems]
    count = f"{len(problems)} TRL internals it relies on are" if len(problems) > 1 else "1 TRL internal it relies on is"
    return TRLContractError(
        f"trl-lite {__version__} does not work with the installed TRL {trl_version()}: {count} missing or "
        "changed:\n" + "\n".join(lines) + "\n"
        f"trl-lite supports trl{SUPPORTED_TRL} (tested: {', '.join(TESTED_TRL)}); install one with "
        f"pip install \"trl{SUPPORTED_TRL}\"."
    )


# ------------------------------------------------------------------ the one version-conditional place
def _release_problems(version: str) -> list[tuple[Assumption, str]]:
    """What is known to break in a particular TRL release, although every name of the contract is there.

    - TRL 1.15.0 computes every log-prob through a fused LM head whose Triton kernel it imports without a fallback
      (`trl.trainer.utils._ChunkedLogProbFunction`); without Triton the first training step dies inside TRL with
      `'NoneType' object has no attribute 'apply'`, and Triton's kernels need a CUDA or XPU device. TRL 1.16.0 added
      the torch fallback. Checked here, so that the error comes before the model is built.
    """
    if version == "1.15.0":
        utils = importlib.import_module("trl.trainer.utils")
        if getattr(utils, "_ChunkedLogProbFunction", None) is None:
            return [(_RELEASE_1_15, "has no fused log-prob kernel on this machine (Triton is missing)")]
    return []


def adapt(trainer) -> None:
    """Fills in, on a trainer TRL has just built, what a supported older TRL release names differently.

    - TRL 1.14.0 and 1.14.1 have no `eos_token_ids`: a completion ends at the tokenizer's EOS alone (their generation
      config and truncation rule use `_tokenizer.eos_token_id`). 1.14.2 added every EOS id of the model's generation
      config. The same list is set here, so trl-lite's truncation rule ends completions where that TRL does.
    """
    from packaging.version import Version

    version = trl_version()
    if in_supported_range(version) and Version(version) < Version("1.14.2") and not hasattr(trainer, "eos_token_ids"):
        trainer.eos_token_ids = [trainer._tokenizer.eos_token_id]


_RELEASE_1_15 = Assumption(
    "_ChunkedLogProbFunction", "release", "trl.trainer.utils (TRL 1.15.0 only)",
    "TRL's own log-prob path runs on this machine (1.15.0 needs Triton and a GPU for it; 1.16.0 does not)",
)


def check_trl(trainer_cls=None, config_cls=None, methods: bool = True) -> None:
    """Raises [`TRLContractError`] unless the installed TRL provides every import, method and config field of
    [`CONTRACT`] (`methods=False`: all but the methods, so that `trl.GRPOTrainer` need not be imported). Called by
    [`LitePPOConfig`] and [`LitePPOTrainer`] before anything is built. Outside the supported range a passing check
    logs a warning once: the names are there, the behaviour is untested."""
    version = trl_version()
    problems = _class_problems(trainer_cls, config_cls, methods) + _release_problems(version)
    if problems:
        raise _error(problems)
    if not in_supported_range(version) and version not in _WARNED:  # once per process
        _WARNED.add(version)
        logger.warning(
            "TRL %s is outside the range trl-lite is tested on (trl%s). Every TRL internal trl-lite relies on is "
            "present, but their behaviour is untested with this release.", version, SUPPORTED_TRL,
        )


def check_trainer(trainer) -> None:
    """Raises [`TRLContractError`] unless `GRPOTrainer.__init__` set every attribute of [`CONTRACT`] as assumed."""
    problems = []
    for assumption in CONTRACT:
        if assumption.kind != "attribute":
            continue
        if not hasattr(trainer, assumption.name):
            problems.append((assumption, "is not set by the trainer's constructor"))
        elif assumption.check is not None and (problem := assumption.check(getattr(trainer, assumption.name))):
            problems.append((assumption, problem))
    if problems:
        raise _error(problems)


def check_runtime(name: str, problem: str | None) -> None:
    """Raises [`TRLContractError`] for the runtime assumption `name` when `problem` is not None."""
    if problem is not None:
        (assumption,) = [a for a in CONTRACT if a.name == name]
        raise _error([(assumption, problem)])


def check_generate_output(output, num_prompts: int) -> None:
    """`_generate`'s item 1 is one sequence of token ids per prompt (a `rollout_func`'s lists, tuples or numpy ints
    pass through TRL unchanged, so all are accepted)."""
    ids = output[1] if isinstance(output, tuple) and len(output) > 1 else None
    ok = isinstance(ids, (list, tuple)) and len(ids) == num_prompts and all(
        hasattr(row, "__len__") and all(isinstance(t, numbers.Integral) for t in row) for row in ids)
    check_runtime("_generate.output[1]", None if ok else f"is {type(ids).__name__}, not one id sequence per prompt")


def check_rewards(rewards, num_funcs: int) -> None:
    """`_calculate_rewards` returns a float tensor (N, F), one column per reward function."""
    import torch

    ok = isinstance(rewards, torch.Tensor) and rewards.ndim == 2 and rewards.shape[1] == num_funcs and (
        rewards.is_floating_point())
    shape = tuple(getattr(rewards, "shape", ()))
    check_runtime("_calculate_rewards.output", None if ok else f"has shape {shape}, expected (N, {num_funcs}) floats")


def check_buffer(buffer, steps_per_generation: int, accumulation) -> None:
    """After `_prepare_inputs` buffers a generation batch: `steps_per_generation` micro-batches, and the training
    loop's accumulation counter set."""
    ok = isinstance(buffer, list) and len(buffer) == steps_per_generation and all(isinstance(b, dict) for b in buffer)
    size = len(buffer) if isinstance(buffer, list) else type(buffer).__name__
    check_runtime("_buffered_inputs.length", None if ok else (
        f"holds {size} items, expected steps_per_generation={steps_per_generation} micro-batches"))
    check_runtime("current_gradient_accumulation_steps", None if isinstance(accumulation, int) and accumulation >= 1
                  else f"is {accumulation!r} when the first generation batch is buffered, expected an int >= 1")


def check_output_keys(output: dict, kl: bool) -> None:
    """Raises [`TRLContractError`] unless the batch `_generate_and_score_completions` returned has every key of
    [`CONTRACT`] (`ref_per_token_logps` only with a KL term, `kl=True`); checked on the first generation batch."""
    needed = [a for a in CONTRACT if a.kind == "output" and (kl or a.name != "ref_per_token_logps")]
    problems = [(a, "is not a key of the batch") for a in needed if a.name not in output]
    if problems:
        raise _error(problems)


def _display(assumption: Assumption) -> str:
    return assumption.name if assumption.kind == "import" else f"{assumption.owner}.{assumption.name}"


@contextlib.contextmanager
def quiet_upstream_deprecations():
    """Within it, the `UPSTREAM_DEPRECATIONS` (FutureWarning) are not shown; every other warning is."""
    with warnings.catch_warnings():
        for message in UPSTREAM_DEPRECATIONS:
            warnings.filterwarnings("ignore", message=message, category=FutureWarning)
        yield
