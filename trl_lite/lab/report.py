"""Verdicts, figures, `summary.md` and `summary.json` from the lab's finished runs. Reads only: a missing run is an
error naming it, never a reason to train.

The verdict of an experiment, fixed before the runs (`trl_lite/lab/experiments.py` for the definitions,
`trl_lite/lab/stats.py` for the tests):

1. *untestable* when one of its gates fails: an audit gate (measured on the initial policy before training; the arms
   were never run) or a runs gate (measured on the finished runs, pooled over seeds). The gate and its value are
   reported; its primary tests leave the family.
2. Otherwise each primary test is a two-sided one-sample t-test on the per-seed paired effects (or a TOST equivalence
   test where the paper claims no effect), Holm-adjusted over every primary test of the testable experiments in this
   report (family-wise error 0.05). An experiment is *reproduced* when all its primary tests are, *not reproduced*
   when one of them is (in the opposite direction), else *inconclusive*, which reads "no effect larger than X" with X
   the smallest effect its seeds detect with 80% power at the adjusted level.

A missing or non-finite metric raises `trl_lite.lab.stats.MetricError`.
"""

from __future__ import annotations

import json
import math
import os

from .experiments import EXPERIMENTS, Experiment, preregistration_sha256
from .results import AUDIT_FILE, check_provenance, experiment_runs, load_initial, run_folder
from .stats import ALPHA, INCONCLUSIVE, combine, equivalence, family, finite, mean, t_test

UNTESTABLE = "untestable"


def _audit_measures(output_dir: str) -> dict:
    path = os.path.join(output_dir, AUDIT_FILE)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} is missing: run `trl-lite lab run` (or `trl-lite lab audit`) first.")
    with open(path, encoding="utf-8") as f:
        measures = json.load(f)
    check_provenance(f"the audit in {path}", measures, remedy=f" (delete {path} to audit again)")
    return measures


def _gate_rows(experiment: Experiment, stage: str, evidence: dict) -> list[dict]:
    rows = []
    for gate in experiment.gates:
        if gate.stage == stage:
            value = float(gate.value(evidence))
            rows.append({"name": gate.name, "stage": stage, "value": value, "threshold": gate.threshold,
                         "at_most": gate.at_most, "passed": gate.passes(value)})
    return rows


def _descriptive(values: list[float]) -> dict:
    """Mean and 95% t-interval of a mechanism measure over seeds: descriptive (no test, no correction)."""
    present = [v for v in values if v is not None and math.isfinite(v)]
    out = {"per_seed": values, "mean": mean(present), "interval": [float("nan"), float("nan")], "seeds": len(present)}
    if len(present) >= 2:
        test = t_test("detail", present)
        out["interval"] = list(test.interval)
    return out


def _safe(get, runs) -> float:
    """A descriptive measure, NaN where it is undefined (no correct completion to measure a length on, ...); a missing
    key is a typo in a definition and raises."""
    try:
        return float(get(runs))
    except ZeroDivisionError:
        return float("nan")


def gather(name: str, output_dir: str, audit: dict, seeds: int | None = None) -> dict:
    """One experiment's gates, primary tests (before the family's correction) and descriptive details."""
    experiment = EXPERIMENTS[name]
    seeds = seeds or experiment.seeds
    entry = {"id": experiment.id, "title": experiment.title, "claim": experiment.claim, "seeds": seeds,
             "arms": {label: a.name for label, a in experiment.arms.items()}, "excluded": experiment.excluded,
             "gates": _gate_rows(experiment, "audit", audit), "tests": [], "details": {}, "cost_min": 0.0}
    if not all(g["passed"] for g in entry["gates"]):
        return entry  # the arms were never run
    runs = experiment_runs(output_dir, experiment, seeds)
    first = next(iter(runs[0].values()))
    problems = first.get("eval_problems", 1000)
    policies = {a.policy: a for a in experiment.arms.values()}
    initial = {policy: load_initial(output_dir, a.task, policy, problems, a.settings["temperature"])
               for policy, a in policies.items()}
    entry["gates"] += _gate_rows(experiment, "runs", {"runs": runs, "initial": initial})
    entry["cost_min"] = sum(run.get("wall_s", 0.0) for by_arm in runs.values() for run in by_arm.values()) / 60
    gated = all(g["passed"] for g in entry["gates"])
    for primary in experiment.primaries:
        if not gated:  # untestable: the effects are shown, not tested (and may be undefined)
            per_seed = [_safe(primary.effect, runs[seed]) for seed in range(seeds)]
            entry["tests"].append({"name": primary.name, "mean": mean(per_seed), "per_seed": per_seed,
                                   "verdict": None})
            continue
        per_seed = [finite(f"{experiment.id} '{primary.name}' (seed {seed})", primary.effect(runs[seed]))
                    for seed in range(seeds)]
        entry["tests"].append(equivalence(primary.name, per_seed, primary.margin) if primary.margin
                              else t_test(primary.name, per_seed))
    entry["details"] = {key: _descriptive([_safe(get, runs[seed]) for seed in range(seeds)])
                        for key, get in experiment.details.items()}
    return entry


def verdicts(entries: list[dict]) -> list[dict]:
    """Holm over the primary tests of the testable experiments; each entry gets its `verdict` and summary fields."""
    testable = [e for e in entries if all(g["passed"] for g in e["gates"])]
    tested = [test for e in testable for test in e["tests"]]
    # the family is every registered primary test, whatever this report names or whichever gates passed: the
    # untested ones enter with p = 1
    registered = sum(len(EXPERIMENTS[name].primaries) for name in EXPERIMENTS.names())
    rows = iter(family(tested, untested=registered - len(tested)))
    for entry in entries:
        failed = [g for g in entry["gates"] if not g["passed"]]
        if failed:
            entry["verdict"] = UNTESTABLE
            entry["reads"] = "untestable: " + "; ".join(
                f"{g['name']} = {g['value']:.3f}, needs {'<=' if g['at_most'] else '>='} {g['threshold']}"
                for g in failed)
        else:
            entry["tests"] = [_with_interval(next(rows)) for _ in entry["tests"]]
            entry["verdict"] = combine([t["verdict"] for t in entry["tests"]])
            entry["reads"] = " | ".join(f"{t['name']}: {t['reads']}" for t in entry["tests"])
        head = entry["tests"][0] if entry["tests"] else {}
        entry.update(effect=head.get("mean"), interval=head.get("interval"), per_seed=head.get("per_seed"),
                     adjusted=head.get("adjusted_p"), mde=head.get("mde"))
    return entries


def _with_interval(row: dict) -> dict:
    """An inconclusive t-test reads its interval next to its power: the smallest detectable effect is not a bound on
    the effect, the interval is."""
    if row["verdict"] == INCONCLUSIVE and row.get("mde") is not None and math.isfinite(row["mde"]):
        low, high = row["interval"]
        row["reads"] = (f"inconclusive: {_f(row['mean'])} [{_f(low)}, {_f(high)}] (95%, unadjusted), Holm-adjusted p "
                        f"{_f(row['adjusted_p'], 3, False)}; no effect larger than {_f(row['mde'], 3, False)} was "
                        f"likely to be missed (80% power at the adjusted level)")
    return row


def _f(value, digits: int = 3, signed: bool = True) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def figure(entry: dict, output_dir: str) -> str | None:
    """`<id>.png`: the headline test's per-seed effects with mean and 95% interval, and the experiment's mechanism over
    training (mean over seeds per arm). None for an experiment that was never run."""
    if not entry["tests"] or entry["tests"][0].get("per_seed") is None:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..ablate import _series, _smooth, read_metrics

    experiment = EXPERIMENTS[next(n for n in EXPERIMENTS.names() if EXPERIMENTS[n].id == entry["id"])]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1, 2]})
    head = entry["tests"][0]
    effects = head["per_seed"]
    left.axhline(0, color="grey", lw=0.8)
    left.scatter(range(len(effects)), effects, color="C0", zorder=3, label="per seed")
    if head.get("interval") and all(math.isfinite(x) for x in head["interval"]):
        left.axhspan(*head["interval"], color="C0", alpha=0.15, label="95% interval of the mean (raw)")
    left.axhline(head["mean"], color="C0", lw=1.5, label="mean")
    left.set_xlabel("seed")
    left.set_ylabel(f"{head['name']} (> 0: as the paper says)")
    left.set_title(f"{entry['id']}: {entry['verdict']}", fontsize=10)
    left.legend(fontsize=7)
    for label, a in experiment.arms.items():
        histories = [read_metrics(os.path.join(run_folder(output_dir, a, seed), "metrics.jsonl"))
                     for seed in range(entry["seeds"])]
        steps, values, _ = _series(histories, experiment.curve)
        if steps:
            right.plot(steps, _smooth(values, 3), label=label)
    right.set_xlabel("optimizer step")
    right.set_title(f"{experiment.curve} (mean over seeds; descriptive)", fontsize=10)
    right.legend(fontsize=7, ncol=2)
    fig.suptitle(experiment.primaries[0].metric, fontsize=9)
    fig.tight_layout()
    path = os.path.join(output_dir, f"{entry['id']}.png")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


REWARD_SCALE = ("Reward scale ({0,1} vs {-1,1}, the other half of Takeaway 1): with binary rewards r -> 2r-1 leaves "
                "every normalization that divides by a std unchanged up to epsilon (A' = (r - mu)/(sigma + eps/2)), so "
                "it cannot show in any run here; tests/test_advantages.py proves it rather than measures it.")


def markdown(summary: dict) -> str:
    takeaways = summary["takeaways"]
    lines = [f"# trl-lite lab: {len(takeaways)} experiment(s)", "",
             "Definitions: `trl_lite/lab/experiments.py`, preregistration_sha256 "
             f"`{summary['preregistration_sha256']}`."
             f" Family-wise error {summary['alpha']}: Holm over the {summary['family_size']} registered primary tests "
             f"({summary['tested']} tested here, the others at p = 1)."
             + (f" **Seeds overridden: {summary['seeds_override']} (not the pre-registered lab).**"
                if summary["seeds_override"] else ""), "",
             "| experiment | verdict | primary test | effect, mean [95% interval, unadjusted] | Holm-adjusted p | "
             "smallest detectable effect (80% power) | seeds | cost (run-min) |", "|---|---|---|---|---|---|---|---|"]
    for e in takeaways:
        for i, t in enumerate(e["tests"] or [{"name": "(not run: an audit gate failed)"}]):
            interval = t.get("interval") or [None, None]
            power = _f(t.get("mde"), 3, False) if t.get("margin") is None else \
                f"margin {t['margin']}; showable {_f(t.get('showable_margin'), 3, False)}"
            head = f"| {e['id']}: {e['title']} | **{e['verdict']}** |" if i == 0 else "| | |"
            lines.append(f"{head} {t['name']} | {_f(t.get('mean'))} [{_f(interval[0])}, {_f(interval[1])}] | "
                         f"{_f(t.get('adjusted_p'), 4, False)} | {power} | {e['seeds']} | "
                         + (f"{e['cost_min']:.1f} |" if i == 0 else " |"))
    lines += ["", REWARD_SCALE, "", "## Each experiment", ""]
    for e in takeaways:
        lines += [f"### {e['id']}: {e['title']}", "", f"The paper: {e['claim']}", "", f"**{e['reads']}**", ""]
        for t in e["tests"]:
            if t.get("verdict") is not None:
                lines.append(f"- test `{t['name']}`: mean {_f(t['mean'])}, per seed "
                             f"{', '.join(_f(v) for v in t['per_seed'])}; raw p {_f(t['p_value'], 4, False)}, "
                             f"Holm-adjusted {_f(t['adjusted_p'], 4, False)}: {t['verdict']} "
                             f"(unadjusted: {t['raw_verdict']})")
            else:
                lines.append(f"- test `{t['name']}` (not tested: a gate failed): mean {_f(t['mean'])}, per seed "
                             f"{', '.join(_f(v) for v in t['per_seed'])}")
        for g in e["gates"]:
            sign = "<=" if g["at_most"] else ">="
            lines.append(f"- gate ({g['stage']}) {g['name']}: {_f(g['value'], 3, False)} ({sign} {g['threshold']}): "
                         f"{'passed' if g['passed'] else 'FAILED'}")
        for arm_label, why in e["excluded"].items():
            lines.append(f"- left out by design: {arm_label} ({why})")
        if e["details"]:
            lines += ["", "Mechanism measures (descriptive: mean over seeds, 95% t-interval, no test, no correction):",
                      ""]
            lines += [f"- {key}: {_f(d['mean'], 4)} [{_f(d['interval'][0], 4)}, {_f(d['interval'][1], 4)}]"
                      + (f" ({d['seeds']} of {e['seeds']} seeds defined)" if d["seeds"] < e["seeds"] else "")
                      for key, d in e["details"].items()]
        if e.get("figure"):
            lines += ["", f"Figure: `{e['figure']}`"]
        lines.append("")
    return "\n".join(lines)


def report(names: list[str], output_dir: str, seeds: int | None = None) -> dict:
    """Writes `summary.md`, `summary.json` and one figure per run experiment into `output_dir`; returns the summary
    with `table` (the markdown's verdict table)."""
    unknown = [name for name in names if name not in EXPERIMENTS]
    if unknown:
        raise ValueError(f"takeaways={','.join(names)!r} names {unknown}; expected among {EXPERIMENTS.names()} "
                         "or 'all'.")
    audit = _audit_measures(output_dir)
    entries = verdicts([gather(name, output_dir, audit, seeds) for name in names])
    for entry in entries:
        path = figure(entry, output_dir)
        entry["figure"] = os.path.basename(path) if path else None
    testable = [e for e in entries if e["verdict"] != UNTESTABLE]
    summary = {"preregistration_sha256": preregistration_sha256(), "alpha": ALPHA, "seeds_override": seeds,
               "family_size": sum(len(EXPERIMENTS[name].primaries) for name in EXPERIMENTS.names()),
               "tested": sum(len(e["tests"]) for e in testable), "takeaways": entries}
    text = markdown(summary)
    with open(os.path.join(output_dir, "summary.md"), "w", encoding="utf-8") as f:
        f.write(text)
    with open(os.path.join(output_dir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| experiment"))
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    return {**summary, "table": "\n".join(lines[start:end]) + "\n"}
