"""What the lab's runs compute, measured: a behavioural fingerprint of each arm and each initial evaluation.

A lab result stays valid while trl-lite computes the same things for it. Rather than hashing trl-lite's source (which
froze the product: a docstring edit invalidated every result), each arm's configuration is run for a few optimizer
steps in float64 on its own initial policy and task, through the very path its runs take (`trl_lite.runs.run_one`
with the lab's `LabTrainer`), and what it computed is recorded: the generation batch's advantages, each step's logged
loss, gradient norm, clip ratios, entropy and the lab's own measures, and the updated weights. The initial policies'
held-out evaluation (the lab's `evaluate`, through trl-lite's sampler and reward parsing) is fingerprinted the same way
on a few problems.

The fingerprint run differs from a real run only where it must be short and exercise every trick:

- the first `FINGERPRINT_PASSES` passes over one generation batch (`steps_per_generation` optimizer steps each, 4 in
  every arm; a second pass only for arms with `num_iterations` > 1), on the CPU wherever it runs;
- SGD at `FINGERPRINT_LR` instead of AdamW at the arm's rate, so that the policy moves far enough in four steps for
  the PPO ratio to leave the clip band (the clip arms' bounds bind) while the update stays a smooth function of the
  gradient (Adam's m / sqrt(v) turns a rounding-level gradient into a full step, whose sign could differ between
  CPUs);
- `FINGERPRINT_PROMPTS` training prompts.

Fingerprints are compared with relative tolerances: `ADVANTAGES_RTOL` for the advantages (made from the rewards before
any update, in float64), `RTOL` for the rest. The rest is not float64 throughout: TRL computes the log-probabilities
from float32 logits, and the updates amplify that rounding. Measured (2026-11-26, one Intel Xeon, all 27 arms): the
same fingerprints with 1 and 2 threads differed by up to 1.3e-3 relative in an update's norm and 6.2e-4 in a gradient
norm, both in the 8-step verbose arms (at 4 steps: 7e-6); `RTOL` leaves sevenfold room. A change to what is computed
(another normalization, aggregation or clip) moves them by far more: doubling the batch std halves the advantages, and
rescaling the second pass's advantages (an independent review's test) moved its gradient norms 1.9x to 8x. `changed` names each arm whose fingerprint changed, where it first
differs and both values.
"""

from __future__ import annotations

import functools
import json
import math
import os
import tempfile

FINGERPRINT_LR = 0.5
FINGERPRINT_PROMPTS = 16
EVAL_PROBLEMS = 8
RTOL, ATOL = 1e-2, 1e-7
ADVANTAGES_RTOL, ADVANTAGES_ATOL = 1e-9, 1e-12
# a folder where today's fingerprints are kept between processes (unset: none is; `_cached` says what keys them)
CACHE = "TRL_LITE_LAB_FINGERPRINT_CACHE"
FINGERPRINT_PASSES = 2  # passes over the generation batch (an arm's `num_iterations`, at most this many)
# the resolved config, less what names places, trackers and saving (the same computation whatever they are)
_NOT_CONFIG = ("dir", "hub", "token", "run_name", "report_to", "logging", "save", "push", "tqdm", "output")
# what each logged step contributes (besides every `lab/*` measure): what the lab's measures and verdicts read
LOGGED = ("loss", "grad_norm", "entropy", "reward", "reward_std", "clip_ratio/low_mean", "clip_ratio/high_mean",
          "clip_ratio/region_mean", "completions/mean_length", "completions/clipped_ratio")


def _settings(arm) -> dict:
    return {**arm.settings, "optim": "sgd", "learning_rate": FINGERPRINT_LR}


def _steps(arm) -> int:
    """The first `FINGERPRINT_PASSES` passes over one generation batch: `steps_per_generation` optimizer steps each."""
    passes = min(arm.settings.get("num_iterations", 1), FINGERPRINT_PASSES)
    return arm.settings.get("steps_per_generation", 1) * passes


def _config(args) -> dict:
    """The run's resolved config (every scalar field but paths, trackers and saving): a default that changes in
    trl-lite (a recipe's `max_grad_norm`, an optimizer setting) changes the fingerprint even where a few steps do
    not show it."""
    import dataclasses

    out = {}
    for f in dataclasses.fields(args):
        value = getattr(args, f.name)
        if any(word in f.name for word in _NOT_CONFIG):
            continue
        if value is None or isinstance(value, (bool, int, float, str)):
            out[f.name] = value
    return dict(sorted(out.items()))


def arm_fingerprint(arm, seed: int = 0) -> dict:
    """The fingerprint of `arm`: {"advantages": [...], "steps": [{key: value}], "weights": [the update's norm per
    parameter tensor], "config": {field: value}}."""
    import torch
    from datasets import Dataset

    from trl_lite.runs import read_metrics, run_one
    from .design import policy_dir
    from .training import LabTrainer, train_set

    captured: dict = {}

    class FingerprintTrainer(LabTrainer):
        def __init__(self, *args, model, **kwargs):
            model = model.double()
            captured["initial"] = [p.detach().clone() for p in model.parameters()]
            captured["config"] = _config(kwargs["args"])
            super().__init__(*args, model=model, **kwargs)

        def on_generation_batch(self, output, advantages, counted):
            super().on_generation_batch(output, advantages, counted)
            if self.model.training:
                captured.setdefault("advantages", []).extend(advantages.double().tolist())

    def finish(trainer, tokenizer):
        # the update's norm per parameter tensor: sums of squares, well conditioned (a signed sum of the update cancels:
        # it moved by 0.5% between 1 and 2 threads where the norms agree to 1e-5)
        captured["weights"] = [(p.detach() - p0).double().norm().item()
                               for p, p0 in zip(trainer.model.parameters(), captured["initial"])]
        return {}

    data = train_set(arm, seed)
    data = Dataset.from_dict(data[:FINGERPRINT_PROMPTS])
    default = torch.get_default_dtype()
    with tempfile.TemporaryDirectory() as folder:
        try:
            torch.set_default_dtype(torch.float64)
            run_one("lite_ppo", seed, folder, max_steps=_steps(arm), model=policy_dir(arm.task, arm.policy),
                    folder=os.path.join(folder, "run"), train_set=data, settings=_settings(arm),
                    trainer_cls=FingerprintTrainer, evaluate=finish, eval_problems=0, progress=False,
                    overrides={"use_cpu": True})  # on CPU wherever it runs: a GPU computes other digits
        finally:
            torch.set_default_dtype(default)
        rows = read_metrics(os.path.join(folder, "run", "metrics.jsonl"))
    steps = [{k: v for k, v in row.items() if k in LOGGED or k.startswith("lab/")} for row in rows if "loss" in row]
    return {"advantages": captured.get("advantages", []), "steps": steps, "weights": captured["weights"],
            "config": captured["config"]}


def evaluation_fingerprint(task: str, policy: str) -> dict:
    """The lab's held-out evaluation of the initial policy `policy` on `EVAL_PROBLEMS` problems, in float64."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from .design import policy_dir
    from .training import evaluate

    torch.manual_seed(0)
    path = policy_dir(task, policy)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float64)
    out = evaluate(task, model, AutoTokenizer.from_pretrained(path), problems=EVAL_PROBLEMS)
    return {k: v for k, v in sorted(out.items()) if isinstance(v, (int, float)) and k != "eval_s"}


@functools.lru_cache(maxsize=1)
def _installed() -> str:
    """What decides a fingerprint besides the arm: trl-lite's files (its source and its demo policy), the lab engine,
    every installed distribution's version and Python's. A disk cache entry is keyed on it, so any change to them
    computes the fingerprint again."""
    import hashlib
    import sys
    from importlib.metadata import distributions

    import trl_lite

    from .provenance import engine_sha256

    digest = hashlib.sha256()
    root = os.path.dirname(os.path.abspath(trl_lite.__file__))
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                digest.update(os.path.relpath(path, root).encode() + b"\0" + f.read() + b"\0")
    versions = sorted(f"{d.metadata['Name']}=={d.version}" for d in distributions())
    digest.update("\n".join([*versions, sys.version, engine_sha256()]).encode())
    return digest.hexdigest()


def _cached(kind: str, name: str, policy: str, compute) -> dict:
    """`compute()`, or its copy in the folder `CACHE` names (opt-in: the lab's tests set it so that the CLI's
    processes compute each fingerprint once), keyed on `_installed()`, the kind, the name and the initial policy's
    files. Written whole (a temporary file, then renamed), so processes sharing the folder never read half a file."""
    folder = os.environ.get(CACHE)
    if not folder:
        return compute()
    import hashlib

    from .design import policy_sha256

    key = hashlib.sha256("\0".join([_installed(), kind, name, policy_sha256(policy)]).encode()).hexdigest()
    path = os.path.join(folder, f"{kind}-{key[:40]}.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    value = compute()
    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as f:
        json.dump(value, f)
    os.replace(temporary, path)
    return json.loads(json.dumps(value))  # what a cached read gives (lists, not tuples)


@functools.lru_cache(maxsize=None)
def current_arm(arm) -> dict:
    """`arm_fingerprint(arm)` under today's trl-lite, computed once per process (and once per `CACHE` folder)."""
    from .design import policy_dir

    return _cached("arm", arm.name, policy_dir(arm.task, arm.policy), lambda: arm_fingerprint(arm))


@functools.lru_cache(maxsize=None)
def current_evaluation(task: str, policy: str) -> dict:
    """`evaluation_fingerprint(task, policy)` under today's trl-lite, computed once per process (and once per `CACHE`
    folder)."""
    from .design import policy_dir

    return _cached("evaluation", f"{task}/{policy}", policy_dir(task, policy),
                   lambda: evaluation_fingerprint(task, policy))


def fingerprints(arms=(), evaluations=()) -> dict:
    """{"arms": {arm name: fingerprint}, "evaluations": {"<task>/<policy>": fingerprint}} of `arms`, their initial
    policies' evaluations and the `(task, policy)` pairs in `evaluations`, under today's trl-lite: what a result that
    used them records."""
    arms = sorted(set(arms), key=lambda a: a.name)
    pairs = sorted({(a.task, a.policy) for a in arms} | set(evaluations))
    return {"arms": {a.name: current_arm(a) for a in arms},
            "evaluations": {f"{t}/{p}": current_evaluation(t, p) for t, p in pairs}}


def changed(recorded: dict | None, arms=(), evaluations=()) -> list[str]:
    """Why a result that used `arms` (and the initial evaluations `evaluations`) no longer holds under today's
    trl-lite (empty: it holds): for each arm or initial evaluation whose recorded fingerprint (`recorded`, as
    `fingerprints` returns it) differs from today's, the parts that differ; an evaluation is compared on the measures
    it recorded. A result that recorded no fingerprint does not hold."""
    if not recorded:
        return ["no fingerprint recorded (made before fingerprints, or by hand)"]
    now = fingerprints(arms, evaluations)
    out = []
    for kind in ("arms", "evaluations"):
        for name, current in now[kind].items():
            old = recorded.get(kind, {}).get(name)
            if old is not None and kind == "evaluations":
                # a measure the lab's evaluation computes today that the record lacks was added to the lab after it
                # (an engine change that only adds measures, moved by `lab/scripts/migrate_engine.py`): no difference
                # in what trl-lite computes. A recorded measure not computed today still is one.
                current = {k: v for k, v in current.items() if k in old}
            lines = ["not recorded"] if old is None else differences(old, current)
            out.extend(f"{kind[:-1]} {name}: {line}" for line in lines)
    return out


def _close(a, b, rtol: float = RTOL, atol: float = ATOL) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=rtol, abs_tol=atol)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, rtol, atol) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], rtol, atol) for k in a)
    return a == b


def _first_difference(a, b, rtol: float, atol: float, where: str = "") -> str:
    """Where `a` and `b` first differ beyond the tolerance, and both values there: `steps[5].grad_norm: 0.33 -> 1.48`."""
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} values -> {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            if not _close(x, y, rtol, atol):
                return _first_difference(x, y, rtol, atol, f"{where}[{i}]")
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{where}: keys {sorted(set(a) ^ set(b))} only on one side"
        for k in a:
            if not _close(a[k], b[k], rtol, atol):
                return _first_difference(a[k], b[k], rtol, atol, f"{where}.{k}")
    return f"{where}: {json.dumps(a)[:60]} -> {json.dumps(b)[:60]}"


def _tolerance(key: str) -> tuple[float, float]:
    return (ADVANTAGES_RTOL, ADVANTAGES_ATOL) if key == "advantages" else (RTOL, ATOL)


def differences(recorded: dict, current: dict) -> list[str]:
    """Which parts of `current` differ from `recorded` (empty: the same computation), one line each, naming where the
    part first differs and both values there (recorded -> now). The config is compared on the fields recorded: a
    field a newer transformers adds is no difference."""
    out = []
    for key in sorted(set(recorded) | set(current)):
        if key not in current:
            out.append(f"{key}: not computed now")
        elif key not in recorded:
            out.append(f"{key}: not recorded")
        else:
            old, now = recorded[key], current[key]
            if key == "config" and isinstance(old, dict) and isinstance(now, dict):
                now = {k: now.get(k, "(no such field)") for k in old}
            rtol, atol = _tolerance(key)
            if not _close(old, now, rtol, atol):
                out.append(_first_difference(old, now, rtol, atol, key))
    return out
