"""Which verdicts of an earlier summary a report may carry instead of reading runs (`trl-lite-lab report --carry`),
and how a carried entry is made again. Part of the lab's engine (`trl_lite_lab.provenance`): these rules decide
verdicts.

An entry carries when the earlier summary was made under the same lab engine and seeds, the experiment's hash is the
same, its pilot record is the same registered one, its audit gates read the same on the current audit, no run of it
is in the output folder, and trl-lite computes today what it computed for its arms and initial policies then (the
summary's `fingerprints`, `trl_lite_lab.fingerprint`). An entry that fails only the last is *invalidated*: the report
names it and what changed.
"""

from __future__ import annotations

import json
import os

from .fingerprint import changed
from .provenance import engine_sha256, experiment_sha256
from .results import run_folder
from .stats import equivalence, paired_test
from .verdicts import EXPERIMENTS, gate_rows


def carried_entries(path: str, seeds: int | None = None) -> dict[str, dict]:
    """The entries of the earlier summary at `path` that a report may carry: `{experiment_sha256: entry}` of the
    experiments it ran (registered, past their audit gates), when it was made under the current engine and with the
    same seeds. Empty when the engine or the seeds differ: then nothing it holds is the current definitions' result."""
    with open(path, encoding="utf-8") as f:
        previous = json.load(f)
    if previous.get("engine_sha256") != engine_sha256() or previous.get("seeds_override") != seeds:
        return {}
    return {entry["experiment_sha256"]: entry for entry in previous["takeaways"]
            if entry.get("registered") and any(g["stage"] == "runs" for g in entry["gates"])}


def _any_run_here(name: str, output_dir: str, seeds: int | None) -> bool:
    """Whether any run of experiment `name` is in `output_dir` (then its runs are read, and a missing one is an error,
    never a reason to carry)."""
    experiment = EXPERIMENTS[name]
    return any(os.path.exists(run_folder(output_dir, a, seed))
               for seed in experiment.seed_list(count=seeds) for a in experiment.arms.values())


def _carriable(name: str, old: dict, record: dict | None, audit: dict) -> bool:
    """Whether `old` (an earlier entry under the same hash) may stand in for `name`'s runs: the same pilot record, a
    registered one, and audit gates that read the same on the current audit."""
    if not (record and record["passed"]) or old.get("pilot") != record:
        return False
    experiment = EXPERIMENTS[name]
    try:
        now = gate_rows(experiment, "audit", audit)
    except KeyError:  # the current audit has not measured this experiment's policies
        return False
    return now == [g for g in old["gates"] if g["stage"] == "audit"]


def carry_entry(name: str, old: dict, record: dict | None) -> dict:
    """Experiment `name`'s entry from an earlier summary's `old` (same `experiment_sha256`), as `gather` would make it
    from the runs: the recorded gates, details and cost, and the primary tests made again from the recorded per-seed
    effects (a gate that failed leaves them untested, as in `gather`). Holm is applied afterwards with the rest."""
    experiment = EXPERIMENTS[name]
    entry = {key: old[key] for key in ("id", "title", "claim", "seeds", "arms", "excluded", "gates", "details",
                                       "cost_min")}
    entry.update(registered=bool(record and record["passed"]), pilot=record, tests=[])
    gated = all(g["passed"] for g in entry["gates"])
    for primary, test in zip(experiment.primaries, old["tests"], strict=True):
        per_seed = test["per_seed"]
        if not gated:
            entry["tests"].append({"name": primary.name, "mean": test["mean"], "per_seed": per_seed,
                                   "verdict": None, "margin": primary.margin})
        else:
            entry["tests"].append(equivalence(primary.name, per_seed, primary.margin) if primary.margin
                                  else paired_test(primary.name, per_seed))
    return entry


def invalidated(path: str, names: list[str], seeds: int | None = None) -> dict[str, list[str]]:
    """{experiment name: what changed} for the experiments of the earlier summary at `path` (same engine, seeds and
    hash) whose arms or initial policies trl-lite now computes otherwise than the summary's fingerprints record."""
    with open(path, encoding="utf-8") as f:
        previous = json.load(f)
    old = carried_entries(path, seeds)
    out = {}
    for name in names:
        experiment = EXPERIMENTS[name]
        if experiment_sha256(experiment) in old:
            lines = changed(previous.get("fingerprints"), experiment.arms.values())
            if lines:
                out[name] = lines
    return out
