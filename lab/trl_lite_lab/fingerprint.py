"""What the lab's runs compute, measured: a behavioural fingerprint of each arm and each initial evaluation.

A lab result stays valid while trl-lite computes the same things for it. Rather than hashing trl-lite's source (which
froze the product: a docstring edit invalidated every result), each arm's configuration is run for a few optimizer
steps in float64 on its own initial policy and task, through the very path its runs take (`trl_lite.ablate.run_one`
with the lab's `LabTrainer`), and what it computed is recorded: the generation batch's advantages, each step's logged
loss, gradient norm, clip ratios, entropy and the lab's own measures, and the updated weights. The initial policies'
held-out evaluation (the lab's `evaluate`, through trl-lite's sampler and reward parsing) is fingerprinted the same way
on a few problems.

The fingerprint run differs from a real run only where it must be short and exercise every trick:

- `max_steps=FINGERPRINT_STEPS` (one generation batch: `steps_per_generation` is 4 in every arm);
- SGD at `FINGERPRINT_LR` instead of AdamW at the arm's rate, so that the policy moves far enough in four steps for
  the PPO ratio to leave the clip band (the clip arms' bounds bind) while the update stays a smooth function of the
  gradient (Adam's m / sqrt(v) turns a rounding-level gradient into a full step, whose sign could differ between
  CPUs);
- `FINGERPRINT_PROMPTS` training prompts.

Fingerprints are compared with relative tolerances: `ADVANTAGES_RTOL` for the advantages (made from the rewards before
any update, in float64), `RTOL` for the rest. The rest is not float64 throughout: TRL computes the log-probabilities
from float32 logits, and four updates amplify that rounding. Measured (2026-11-26, one Intel Xeon): the same
fingerprints with 1 and 2 threads differed by up to 7e-6 relative in the updated weights and 7e-10 in the gradient
norms; `RTOL` leaves a hundredfold room. A change to what is computed (another normalization, aggregation or clip)
moves them by percents. `changed` names each arm whose fingerprint changed and which part.
"""

from __future__ import annotations

import functools
import json
import math
import os
import tempfile

FINGERPRINT_STEPS = 4
FINGERPRINT_LR = 0.5
FINGERPRINT_PROMPTS = 16
EVAL_PROBLEMS = 8
RTOL, ATOL = 1e-3, 1e-7
ADVANTAGES_RTOL = 1e-9
# what each logged step contributes (besides every `lab/*` measure): what the lab's measures and verdicts read
LOGGED = ("loss", "grad_norm", "entropy", "reward", "reward_std", "clip_ratio/low_mean", "clip_ratio/high_mean",
          "clip_ratio/region_mean", "completions/mean_length", "completions/clipped_ratio")


def _settings(arm) -> dict:
    return {**arm.settings, "optim": "sgd", "learning_rate": FINGERPRINT_LR, "max_grad_norm":
            arm.settings.get("max_grad_norm", 1.0)}


def arm_fingerprint(arm, seed: int = 0) -> dict:
    """The fingerprint of `arm`: {"advantages": [...], "steps": [{key: value}], "weights": [sum, norm] of the update}."""
    import torch
    from datasets import Dataset

    from trl_lite.ablate import read_metrics, run_one
    from .design import policy_dir
    from .runner import LabTrainer, train_set

    captured: dict = {}

    class FingerprintTrainer(LabTrainer):
        def __init__(self, *args, model, **kwargs):
            model = model.double()
            captured["initial"] = [p.detach().clone() for p in model.parameters()]
            super().__init__(*args, model=model, **kwargs)

        def on_generation_batch(self, output, advantages, counted):
            super().on_generation_batch(output, advantages, counted)
            if self.model.training:
                captured.setdefault("advantages", []).extend(advantages.double().tolist())

    def finish(trainer, tokenizer):
        deltas = [(p.detach() - p0).double() for p, p0 in zip(trainer.model.parameters(), captured["initial"])]
        captured["weights"] = [sum(d.sum().item() for d in deltas), math.sqrt(sum((d * d).sum().item() for d in deltas))]
        return {}

    data = train_set(arm, seed)
    data = Dataset.from_dict(data[:FINGERPRINT_PROMPTS])
    default = torch.get_default_dtype()
    with tempfile.TemporaryDirectory() as folder:
        try:
            torch.set_default_dtype(torch.float64)
            run_one("lite_ppo", seed, folder, max_steps=FINGERPRINT_STEPS, model=policy_dir(arm.task, arm.policy),
                    folder=os.path.join(folder, "run"), train_set=data, settings=_settings(arm),
                    trainer_cls=FingerprintTrainer, evaluate=finish, eval_problems=0, progress=False)
        finally:
            torch.set_default_dtype(default)
        rows = read_metrics(os.path.join(folder, "run", "metrics.jsonl"))
    steps = [{k: v for k, v in row.items() if k in LOGGED or k.startswith("lab/")} for row in rows if "loss" in row]
    return {"advantages": captured.get("advantages", []), "steps": steps, "weights": captured["weights"]}


def evaluation_fingerprint(task: str, policy: str) -> dict:
    """The lab's held-out evaluation of the initial policy `policy` on `EVAL_PROBLEMS` problems, in float64."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from .design import policy_dir
    from .runner import evaluate

    torch.manual_seed(0)
    path = policy_dir(task, policy)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float64)
    out = evaluate(task, model, AutoTokenizer.from_pretrained(path), problems=EVAL_PROBLEMS)
    return {k: v for k, v in sorted(out.items()) if isinstance(v, (int, float)) and k != "eval_s"}


@functools.lru_cache(maxsize=None)
def current_arm(arm) -> dict:
    """`arm_fingerprint(arm)` under today's trl-lite, computed once per process."""
    return arm_fingerprint(arm)


@functools.lru_cache(maxsize=None)
def current_evaluation(task: str, policy: str) -> dict:
    """`evaluation_fingerprint(task, policy)` under today's trl-lite, computed once per process."""
    return evaluation_fingerprint(task, policy)


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
    `fingerprints` returns it) differs from today's, the parts that differ. A result that recorded no fingerprint does
    not hold."""
    if not recorded:
        return ["no fingerprint recorded (made before fingerprints, or by hand)"]
    now = fingerprints(arms, evaluations)
    out = []
    for kind in ("arms", "evaluations"):
        for name, current in now[kind].items():
            old = recorded.get(kind, {}).get(name)
            lines = ["not recorded"] if old is None else differences(old, current)
            out.extend(f"{kind[:-1]} {name}: {line}" for line in lines)
    return out


def _close(a, b, rtol: float = RTOL) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=rtol, abs_tol=ATOL)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, rtol) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], rtol) for k in a)
    return a == b


def differences(recorded: dict, current: dict) -> list[str]:
    """Which parts of `current` differ from `recorded` (empty: the same computation), one line each."""
    out = []
    for key in sorted(set(recorded) | set(current)):
        if key not in current:
            out.append(f"{key}: not computed now")
        elif key not in recorded:
            out.append(f"{key}: not recorded")
        elif not _close(recorded[key], current[key], ADVANTAGES_RTOL if key == "advantages" else RTOL):
            out.append(f"{key}: recorded {json.dumps(recorded[key])[:120]}, now {json.dumps(current[key])[:120]}")
    return out
