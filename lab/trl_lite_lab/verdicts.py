"""The lab's verdicts from finished runs: gates, primary tests, Holm over the family. Reads only: a missing run is an
error naming it, never a reason to train.

The verdict of an experiment, fixed before the runs (`lab/trl_lite_lab/designs/` for the definitions,
`lab/trl_lite_lab/stats.py` for the tests):

1. *untestable* when its pilot failed (it was never registered: `trl_lite_lab.pilot`) or one of its gates fails: an
   audit gate (the initial policy, before training; the arms were never run) or a runs gate (the finished runs,
   pooled over seeds: the clip band, movement, ...). The reason names the kind of gate that failed and its value; the
   experiment's primary tests are not tested.
2. Otherwise each primary test is an exact two-sided sign-flip test on the per-seed paired effects (version 3:
   `stats.paired_test`; effects within 1e-12 of zero are zero), or a TOST equivalence test where the paper claims no
   effect, Holm-adjusted over every primary test of the registered experiments (family-wise error 0.05). An experiment is *reproduced* when all its primary tests are, *not reproduced* when one
   of them is (in the opposite direction), else *inconclusive*. A test whose seeds all give the same effect has no
   spread and is inconclusive.

A missing or non-finite metric raises `trl_lite_lab.stats.MetricError`.
"""

from __future__ import annotations

import math

from .design import EXPERIMENTS, Experiment
from .results import experiment_runs, load_initial
from .stats import equivalence, family, finite, mean, paired_test, t_test

UNTESTABLE = "untestable"


def gate_rows(experiment: Experiment, stage: str, evidence: dict) -> list[dict]:
    """Each gate of `stage` with its value on `evidence`, its threshold and whether it passes."""
    rows = []
    for gate in experiment.gates:
        if gate.stage == stage:
            value = float(gate.value(evidence))
            rows.append({"name": gate.name, "stage": stage, "kind": gate.kind, "value": value,
                         "threshold": gate.threshold, "at_most": gate.at_most, "passed": gate.passes(value)})
    return rows


def _descriptive(values: list[float]) -> dict:
    """Mean and 95% t-interval of a mechanism measure over seeds: descriptive (no test, no correction)."""
    present = [v for v in values if v is not None and math.isfinite(v)]
    out = {"per_seed": values, "mean": mean(present), "interval": [float("nan"), float("nan")], "seeds": len(present)}
    if len(present) >= 2 and len(set(present)) > 1:
        out["interval"] = list(t_test("detail", present).interval)
    return out


def _safe(get, runs) -> float:
    """A descriptive measure, NaN where it is undefined (no correct completion to measure a length on, ...); a missing
    key is a typo in a definition and raises."""
    try:
        return float(get(runs))
    except ZeroDivisionError:
        return float("nan")


def evidence(experiment: Experiment, output_dir: str, seeds: list[int]) -> dict:
    """`{"runs": {seed: {label: run}}, "initial": {policy: evaluation}}`; each run also holds its policy's initial
    evaluation (`run["initial"]`), which a primary may compare with."""
    runs = experiment_runs(output_dir, experiment, seeds)
    first = next(iter(runs[seeds[0]].values()))
    problems = first.get("eval_problems", 1000)
    initial = {a.policy: load_initial(output_dir, a.task, a.policy, problems, a.settings["temperature"])
               for a in experiment.arms.values()}
    for by_arm in runs.values():
        for label, run in by_arm.items():
            run["initial"] = initial[experiment.arms[label].policy]
    return {"runs": runs, "initial": initial}


def gather(name: str, output_dir: str, audit: dict, registration: dict | None, seeds: int | None = None) -> dict:
    """One experiment's gates, primary tests (before the family's correction) and descriptive details.
    `registration`: its pilot's record (`trl_lite_lab.pilot.registration`); an experiment whose pilot failed or is
    missing is not run."""
    experiment = EXPERIMENTS[name]
    seed_list = experiment.seed_list(count=seeds)
    entry = {"id": experiment.id, "title": experiment.title, "claim": experiment.claim, "seeds": len(seed_list),
             "arms": {label: a.name for label, a in experiment.arms.items()}, "excluded": experiment.excluded,
             "gates": [], "tests": [], "details": {}, "cost_min": 0.0, "registered": bool(registration and
                                                                                        registration["passed"]),
             "pilot": registration}
    if not entry["registered"]:
        return entry  # never run: the pilot failed or is missing
    entry["gates"] = gate_rows(experiment, "audit", audit)
    if not all(g["passed"] for g in entry["gates"]):
        return entry  # the arms were never run
    found = evidence(experiment, output_dir, seed_list)
    runs = found["runs"]
    entry["gates"] += gate_rows(experiment, "runs", found)
    entry["cost_min"] = sum(run.get("wall_s", 0.0) for by_arm in runs.values() for run in by_arm.values()) / 60
    gated = all(g["passed"] for g in entry["gates"])
    for primary in experiment.primaries:
        if not gated:  # untestable: the effects are shown, not tested (and may be undefined)
            per_seed = [_safe(primary.effect, runs[seed]) for seed in seed_list]
            entry["tests"].append({"name": primary.name, "mean": mean(per_seed), "per_seed": per_seed,
                                   "verdict": None, "margin": primary.margin})
            continue
        per_seed = [finite(f"{experiment.id} '{primary.name}' (seed {seed})", primary.effect(runs[seed]))
                    for seed in seed_list]
        entry["tests"].append(equivalence(primary.name, per_seed, primary.margin) if primary.margin
                              else paired_test(primary.name, per_seed))
    entry["details"] = {key: _descriptive([_safe(get, runs[seed]) for seed in seed_list])
                        for key, get in experiment.details.items()}
    return entry


def untestable_reason(entry: dict) -> str | None:
    """Why an experiment is untestable, naming the kind of gate that failed and its value; None if it is not."""
    if not entry["registered"]:
        pilot = entry["pilot"]
        if pilot is None:
            return "untestable (no pilot): no committed pilot for these definitions, so it was never registered"
        failed = [g for g in pilot["gates"] if not g["passed_with_margin"]]
        return "untestable (negative pilot: " + ", ".join(dict.fromkeys(g["kind"] for g in failed)) + "): " + "; ".join(
            f"{g['name']} = {g['value']:.3f} on the pilot, needs {'<=' if g['at_most'] else '>='} {g['threshold']} "
            f"with a margin" for g in failed)
    failed = [g for g in entry["gates"] if not g["passed"]]
    if not failed:
        return None
    return "untestable (" + ", ".join(dict.fromkeys(g["kind"] for g in failed)) + "): " + "; ".join(
        f"{g['name']} = {g['value']:.3f}, needs {'<=' if g['at_most'] else '>='} {g['threshold']}" for g in failed)


def family_size(registrations: dict[str, dict | None]) -> int:
    """The Holm family: every primary test of the registered experiments (`{name: pilot record or None}` over every
    experiment; registered = its pilot passed), whether or not a report names them or their gates pass."""
    return sum(len(EXPERIMENTS[name].primaries) for name, record in registrations.items()
               if record is not None and record["passed"])


def verdicts(entries: list[dict], family_size: int) -> list[dict]:
    """Holm over the primary tests of the testable experiments (the family's other registered tests at p = 1); each
    entry gets its `verdict`, `reads` and summary fields."""
    testable = [e for e in entries if untestable_reason(e) is None]
    tested = [test for e in testable for test in e["tests"]]
    rows = iter(family(tested, untested=family_size - len(tested)))
    for entry in entries:
        reason = untestable_reason(entry)
        if reason is not None:
            entry["verdict"], entry["reads"] = UNTESTABLE, reason
        else:
            entry["tests"] = [next(rows) for _ in entry["tests"]]
            entry["verdict"] = _combine(entry["tests"])
            entry["reads"] = " | ".join(f"{t['name']}: {t['reads']}" for t in entry["tests"])
        head = entry["tests"][0] if entry["tests"] else {}
        entry.update(effect=head.get("mean"), interval=head.get("interval"), per_seed=head.get("per_seed"),
                     adjusted=head.get("adjusted_p"), mde=head.get("mde"))
    return entries


def _combine(tests: list[dict]) -> str:
    from .stats import combine

    return combine([t["verdict"] for t in tests])
