"""The lab's finished runs, read only: where they live, what a run's logs say, and the evidence the verdicts use.

Nothing here trains or evaluates. A run that has not finished is an error naming it (run `trl-lite-lab run` first);
a run made under other definitions (its `experiment_sha256` for the experiment that reads it is not the current one)
is refused, and so is an audit or initial evaluation made by other lab code (`engine_sha256`), and any of them whose
recorded fingerprint differs from what trl-lite computes today (`trl_lite_lab.fingerprint`).
"""

from __future__ import annotations

import json
import math
import os

from .design import Arm, Experiment, policy_dir, policy_sha256
from .fingerprint import changed
from .provenance import engine_sha256, experiment_sha256
from .stats import mean

RESULT_FILE = "result.json"
AUDIT_FILE = "audit.json"
PILOTS = "pilots"  # <output-dir>/pilots/<id>.json: the pilots (`trl_lite_lab.pilot`)


def pilot_path(pilots_dir: str, experiment: Experiment) -> str:
    return os.path.join(pilots_dir, f"{experiment.id}.json")


def registration(experiment: Experiment, pilots_dir: str) -> dict | None:
    """The experiment's pilot record if one was made under its current definitions and what trl-lite computes today
    for its arms (None otherwise, `why_unregistered` says why): registered when `record["passed"]`."""
    return None if why_unregistered(experiment, pilots_dir) else _read(pilot_path(pilots_dir, experiment))


def _read(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def stale_pilot(experiment: Experiment, pilots_dir: str) -> list[str]:
    """What changed in trl-lite since the experiment's pilot (made under its current definitions) ran: the arms and
    parts whose fingerprints differ; empty when there is no such pilot or nothing changed."""
    path = pilot_path(pilots_dir, experiment)
    if not os.path.exists(path):
        return []
    record = _read(path)
    if record.get("experiment_sha256") != experiment_sha256(experiment):
        return []
    return changed(record.get("fingerprints"), experiment.arms.values())


def why_unregistered(experiment: Experiment, pilots_dir: str) -> list[str]:
    """Why the experiment's pilot record in `pilots_dir` does not count (empty when it does): missing, made under
    other definitions, or under other fingerprints (each arm and part that changed)."""
    path = pilot_path(pilots_dir, experiment)
    if not os.path.exists(path):
        return [f"no pilot ({path})"]
    record = _read(path)
    if record.get("experiment_sha256") != experiment_sha256(experiment):
        return [f"its pilot was made under experiment_sha256={record.get('experiment_sha256')!r}, the definitions "
                f"now hash to {experiment_sha256(experiment)!r}"]
    return changed(record.get("fingerprints"), experiment.arms.values())


class MissingRun(FileNotFoundError):
    """A run the verdicts need has not finished."""


class DefinitionMismatch(ValueError):
    """A run, initial evaluation or audit was made under other definitions (`experiment_sha256`, `engine_sha256`) or from other
    policy weights than the current ones."""


def check_provenance(what: str, record: dict, weights_dir: str | None = None, experiment: Experiment | None = None,
                     remedy: str = "", arms=(), evaluations=()) -> None:
    """Raises `DefinitionMismatch` when `record` was made under other definitions (for `experiment`: its runs'
    `experiment_sha256[id]`; otherwise the engine's `engine_sha256`) or (given `weights_dir`) from other weights than
    the current ones."""
    if experiment is not None:
        expected, found = experiment_sha256(experiment), (record.get("experiment_sha256") or {}).get(experiment.id)
        label = f"experiment_sha256[{experiment.id!r}]"
    else:
        expected, found, label = engine_sha256(), record.get("engine_sha256"), "engine_sha256"
    if found != expected:
        raise DefinitionMismatch(
            f"{what} was made under {label}={found!r}, the definitions now hash to {expected!r}; a summary does not "
            f"mix results made under different definitions{remedy}.")
    if arms or evaluations:
        lines = changed(record.get("fingerprints"), arms, evaluations)
        if lines:
            raise DefinitionMismatch(f"{what} was made by a trl-lite that computed otherwise ("
                                     f"{record.get('product', {}).get('commit')!r}): " + "; ".join(lines) + remedy)
    if weights_dir is not None and record.get("policy_sha256") != policy_sha256(weights_dir):
        raise DefinitionMismatch(f"{what} started from other weights than {weights_dir} holds now "
                                 f"(policy_sha256={record.get('policy_sha256')!r}){remedy}.")


def run_folder(output_dir: str, arm: Arm, seed: int) -> str:
    return os.path.join(output_dir, "runs", arm.name, f"seed{seed}")


def initial_path(output_dir: str, task: str, policy: str, problems: int, temperature: float = 1.0) -> str:
    name = policy if temperature == 1.0 else f"{policy}-T{temperature}"
    return os.path.join(output_dir, "initial", f"{task}-{name}-{problems}.json")


def is_finished(output_dir: str, arm: Arm, seed: int) -> bool:
    return os.path.exists(os.path.join(run_folder(output_dir, arm, seed), RESULT_FILE))


def load_run(output_dir: str, arm: Arm, seed: int, experiment: Experiment) -> dict:
    """A finished run's result (`eval`, `wall_s`, `experiment_sha256`) with its training measures (`train`), checked
    against `experiment`'s current definitions."""
    folder = run_folder(output_dir, arm, seed)
    path = os.path.join(folder, RESULT_FILE)
    if not os.path.exists(path):
        raise MissingRun(f"run {arm.name} seed {seed} has not finished ({path} is missing); run `trl-lite-lab run` "
                         "first.")
    with open(path, encoding="utf-8") as f:
        result = json.load(f)
    check_provenance(f"run {arm.name} seed {seed}", result, policy_dir(arm.task, arm.policy), experiment,
                     f" (delete {folder} to run it again)", arms=[arm])
    result["train"] = train_measures(folder)
    return result


def load_initial(output_dir: str, task: str, policy: str, problems: int, temperature: float = 1.0) -> dict:
    path = initial_path(output_dir, task, policy, problems, temperature)
    if not os.path.exists(path):
        raise MissingRun(f"the initial evaluation of {task}-{policy} is missing ({path}); run `trl-lite-lab run` "
                         "first.")
    with open(path, encoding="utf-8") as f:
        initial = json.load(f)
    check_provenance(f"the initial evaluation of {task}-{policy}", initial, policy_dir(task, policy),
                     remedy=f" (delete {path} to make it again)", evaluations=[(task, policy)])
    return initial


def experiment_runs(output_dir: str, experiment: Experiment, seeds: list[int]) -> dict[int, dict[str, dict]]:
    """{seed: {arm label: run}} of one experiment."""
    return {seed: {label: load_run(output_dir, arm, seed, experiment) for label, arm in experiment.arms.items()}
            for seed in seeds}


def finite_max(values) -> float:
    """Max of the finite values (NaN when none is): `max` over a list with NaN depends on the order."""
    present = [v for v in values if v is not None and math.isfinite(v)]
    return max(present) if present else float("nan")


def quarters_rise(rewards: list[float]) -> float:
    """How far a run's training reward rose: the mean over its last quarter of generation batches minus the mean over
    its first quarter (the trainer logs `reward` once per generation batch; NaN with fewer than 4 batches)."""
    quarter = len(rewards) // 4
    if quarter == 0:
        return float("nan")
    return mean(rewards[-quarter:]) - mean(rewards[:quarter])


def train_measures(folder: str) -> dict:
    """What the lab reads from a run's logs: advantage concentration, 1/sigma, gradient norms (largest and mean), the
    training reward's rise over the generation batches, reward jitter, clip shares and the clip census by token class, the ratio band counts, loops and truncation."""
    from trl_lite.runs import read_metrics
    from trl_lite.diagnostics_window import CLIPPED_TOKENS_FILE
    from .sumk import token_class
    from .measure import late_jitter

    rows = read_metrics(os.path.join(folder, "metrics.jsonl"))

    def series(key):
        return [row[key] for row in rows if row.get(key) is not None]

    def total(key):
        return float(sum(series(key)))

    def by_class(prefix):
        counts: dict[str, float] = {}
        for row in rows:
            for key, value in row.items():
                if key.startswith(prefix) and value is not None:
                    counts[key[len(prefix):]] = counts.get(key[len(prefix):], 0.0) + value
        return counts

    tokens = by_class("lab/tokens/")
    strata = by_class("lab/strata/")
    clipped: dict[str, int] = {}
    path = os.path.join(folder, CLIPPED_TOKENS_FILE)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                for token in json.loads(line)["tokens"]:
                    if token["bound"] == "high":
                        cls = token_class(token["token"])
                        clipped[cls] = clipped.get(cls, 0) + token["count"]
    return {
        "top5_adv_share": mean(series("lab/top5_abs_adv_share")),
        "abs_adv_mean": mean(series("lab/abs_adv_mean")),
        "strata": strata,
        "inv_sigma_max": finite_max(series("lab/inv_sigma_batch")),
        "grad_norm_max": finite_max(series("grad_norm")),
        "grad_norm_mean": mean(series("grad_norm")),
        "reward_rise": quarters_rise(series("reward")),
        "reward_jitter": late_jitter(series("reward")),
        "clip_high_frac": mean(series("clip_ratio/high_mean")),
        "pos_adv_tokens": total("lab/pos_adv_tokens"),
        "ratio_band_tokens": total("lab/ratio_band_tokens"),
        "ratio_wide_band_tokens": total("lab/ratio_wide_band_tokens"),
        "trunc_first": mean(series("overlong/frac_truncated")[:3]),
        "tokens_by_class": tokens,
        "eligible_by_class": by_class("lab/eligible/"),
        "clipped_high_by_class": clipped,
    }
