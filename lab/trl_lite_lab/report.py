"""Summary, figures and tables of the lab from its finished runs (`trl_lite_lab.verdicts` decides; this module only
writes): `summary.md`, `summary.json`, one figure per run experiment, the README's lab table, and the pre-registration
table generated from the definitions. Reads only: a missing run is an error naming it, never a reason to train.

An earlier `summary.json` can stand in for an experiment's run folders (`carry`): where its entry was made under the
same engine and definitions (the same `experiment_sha256`), with the same seeds, from the same pilot record as the
current one, with audit gates that read the same on the current audit (a rebuilt policy reads otherwise), and none
of the experiment's runs is on this machine, the report takes the recorded per-seed effects, gates, details and
per-arm summary, and runs the same tests and the same Holm adjustment on them (`trl_lite_lab.stats`), with the family
of the current registrations. A lab can then add an experiment without training the others again; the entry names
the file it was carried from and that file's SHA-256.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil

from .experiments import EXPERIMENTS, engine_sha256, experiment_named, experiment_sha256
from .carry import _any_run_here, _carriable, carried_entries, carry_entry, invalidated
from .fingerprint import fingerprints
from .provenance import product_stamp
from .results import (AUDIT_FILE, PILOTS, DefinitionMismatch, check_provenance, registration, run_folder,
                      stale_pilot, why_unregistered)
from .stats import ALPHA, NOISE, POWER
from .verdicts import UNTESTABLE, family_size, gather, verdicts


def _audit_measures(output_dir: str) -> dict:
    path = os.path.join(output_dir, AUDIT_FILE)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} is missing: run `trl-lite-lab pilot` (or `trl-lite-lab audit`) first.")
    with open(path, encoding="utf-8") as f:
        measures = json.load(f)
    check_provenance(f"the audit in {path}", measures, remedy=f" (delete {path} to audit again)")
    return measures


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

    from trl_lite.runs import read_metrics
    from trl_lite.curves import over_seeds, smooth

    experiment = experiment_named(entry["id"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1, 2]})
    head = entry["tests"][0]
    effects = head["per_seed"]
    left.axhline(0, color="grey", lw=0.8)
    left.scatter(experiment.seed_list(count=len(effects)), effects, color="C0", zorder=3, label="per seed")
    tost = head.get("margin") is not None  # a TOST: its interval is the 90% one, its claim |effect| < margin
    if head.get("interval") and all(math.isfinite(x) for x in head["interval"]):
        left.axhspan(*head["interval"], color="C0", alpha=0.15,
                     label="90% interval of the mean (TOST, raw)" if tost else "95% interval of the mean (raw)")
    left.axhline(head["mean"], color="C0", lw=1.5, label="mean")
    if tost:
        for bound in (-head["margin"], head["margin"]):
            left.axhline(bound, color="grey", ls="--", lw=0.8)
    left.set_xlabel("seed")
    left.set_ylabel(f"{head['name']} ({'within the dashed margin' if tost else '> 0'}: as the paper says)")
    left.set_title(f"{entry['id']}: {entry['verdict']}", fontsize=10)
    left.legend(fontsize=7)
    for label, a in experiment.arms.items():
        histories = [read_metrics(os.path.join(run_folder(output_dir, a, seed), "metrics.jsonl"))
                     for seed in experiment.seed_list(count=entry["seeds"])]
        steps, values, _ = over_seeds(histories, experiment.curve)
        if steps:
            right.plot(steps, smooth(values, 3), label=label)
    right.set_xlabel("optimizer step")
    right.set_title(f"{experiment.curve} (mean over seeds; descriptive)", fontsize=10)
    right.legend(fontsize=7, ncol=2)
    fig.suptitle(experiment.primaries[0].metric, fontsize=9)
    fig.tight_layout()
    path = os.path.join(output_dir, f"{entry['id']}.png")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def arm_summary(entry: dict, output_dir: str) -> dict[str, dict[str, float]]:
    """Per arm of an experiment that ran, means over its seeds (descriptive, no test): held-out accuracy and the
    initial policy's, the training reward on the fixed training problems after and before training (version 3.1's
    gate), the training reward over the first and the last quarter of the generation batches (the trainer
    logs it once per batch), the mean |advantage|, the mean gradient norm and the weight distance from the initial
    policy (how far each arm moved: `measure.update_size`). What training did to each arm, next to the verdict. Empty
    for an experiment never run."""
    if not entry["tests"] or entry["tests"][0].get("per_seed") is None:
        return {}
    from trl_lite.runs import read_metrics
    from .stats import mean
    from .verdicts import evidence

    experiment = experiment_named(entry["id"])
    seeds = experiment.seed_list(count=entry["seeds"])
    found = evidence(experiment, output_dir, seeds)
    out = {}
    for label, a in experiment.arms.items():
        runs = [found["runs"][seed][label] for seed in seeds]
        rows = [read_metrics(os.path.join(run_folder(output_dir, a, seed), "metrics.jsonl")) for seed in seeds]
        rewards = [[r["reward"] for r in log if r.get("reward") is not None] for log in rows]
        out[label] = {
            "held_out_acc": mean([run["eval"].get("acc", math.nan) for run in runs]),
            "initial_acc": runs[0]["initial"].get("acc", math.nan),
            "train_reward_first_quarter": mean([mean(r[:max(1, len(r) // 4)]) for r in rewards]),
            "train_reward_last_quarter": mean([mean(r[-max(1, len(r) // 4):]) for r in rewards]),
            "train_acc_initial": mean([run["eval"].get("train_acc_initial", math.nan) for run in runs]),
            "train_acc": mean([run["eval"].get("train_acc", math.nan) for run in runs]),
            "update_norm": mean([run["eval"].get("update_norm", math.nan) for run in runs]),
            "abs_adv_mean": mean([run["train"]["abs_adv_mean"] for run in runs]),
            "grad_norm_mean": mean([run["train"]["grad_norm_mean"] for run in runs]),
        }
    return out


REWARD_SCALE = ("Reward scale ({0,1} vs {-1,1}, the other half of Takeaway 1): with binary rewards r -> 2r-1 leaves "
                "every normalization that divides by a std unchanged up to epsilon (A' = (r - mu)/(sigma + eps/2)), so "
                "it cannot show in any run here; tests/unit/test_advantages.py proves it rather than measures it.")


def _pilot_lines(pilot: dict | None) -> list[str]:
    if pilot is None:
        return ["- pilot: none for these definitions (not registered)"]
    lines = [f"- pilot (seeds {', '.join(map(str, pilot['seeds']))}; {'passed' if pilot['passed'] else 'FAILED'}, "
             f"margin {pilot['margin']['audit']:.0%} of an audit gate's threshold, {pilot['margin']['runs']:.0%} of "
             "a runs or pilot gate's):"]
    for g in pilot["gates"]:
        sign = "<=" if g["at_most"] else ">="
        lines.append(f"  - ({g['stage']}, {g['kind']}) {g['name']}: {_f(g['value'], 3, False)} ({sign} "
                     f"{g['threshold']}): {'passed' if g['passed_with_margin'] else 'FAILED'}")
    for name, values in pilot.get("effects", {}).items():
        lines.append(f"  - effect `{name}` per pilot seed (not a test): {', '.join(_f(v) for v in values)}")
    for g in pilot["gates"]:
        if g["kind"] == "power" and not g["passed_with_margin"]:
            needed = seeds_needed(g, pilot)
            if needed:
                lines.append(f"  - what it would take: {needed} seeds per arm")
            elif not math.isfinite(g["value"]):
                lines.append("  - what it would take: not measurable from this pilot (its registered seeds could "
                             "detect no effect at the family's level, or training did not gain)")
            else:
                lines.append("  - what it would take: more than 1,000 seeds per arm at this spread")
    return lines


def seeds_needed(gate: dict, pilot: dict, limit: int = 1000) -> int | None:
    """For a failed power gate of a pilot: the fewest seeds at which the pilot's spread would pass it with the margin
    (its value scales as the smallest detectable effect at n seeds over that at the registered seeds); None beyond
    `limit`."""
    from .experiments import family_size as designed
    from .stats import detectable_effect

    registered, family = pilot["registered_seeds"], designed()  # the family the pilot planned against
    target = gate["threshold"] * (1 - pilot["margin"]["pilot"])
    base = detectable_effect(1.0, registered, family)
    if not math.isfinite(base):  # the registered seeds could detect nothing: the gate's value gives no spread
        return None
    for n in range(2, limit + 1):
        if gate["value"] * detectable_effect(1.0, n, family) / base <= target:
            return n
    return None


def markdown(summary: dict) -> str:
    takeaways = summary["takeaways"]
    lines = [f"# trl-lite-lab: {len(takeaways)} experiment(s)", "",
             f"Engine `{summary['engine_sha256'][:16]}` (`trl_lite_lab.provenance`). Family-wise error "
             f"{summary['alpha']}: Holm over the {summary['family_size']} primary tests of the registered experiments "
             f"({summary['tested']} tested here"
             + (", the others at p = 1)." if summary["family_size"] > summary["tested"] else ").")
             + (f" **Seeds overridden: {summary['seeds_override']} (not the pre-registered lab).**"
                if summary["seeds_override"] else ""), "",
             "| experiment | verdict | primary test | effect, mean [95% interval, unadjusted] | Holm-adjusted p | "
             f"effect detected with {POWER:.0%} power | seeds | cost (run-min) |", "|---|---|---|---|---|---|---|---|"]
    for e in takeaways:
        for i, t in enumerate(e["tests"] or [{"name": "(not run)"}]):
            interval = t.get("interval") or [None, None]
            power = _f(t.get("mde"), 3, False) if t.get("margin") is None else \
                f"margin {t['margin']}; showable {_f(t.get('showable_margin'), 3, False)}"
            head = f"| {e['id']}: {e['title']} | **{e['verdict']}** |" if i == 0 else "| | |"
            lines.append(f"{head} {t['name']} | {_f(t.get('mean'))} [{_f(interval[0])}, {_f(interval[1])}] | "
                         f"{_f(t.get('adjusted_p'), 4, False)} | {power} | {e['seeds']} | "
                         + (f"{e['cost_min']:.1f} |" if i == 0 else " |"))
    lines += ["", REWARD_SCALE, "", "## Each experiment", ""]
    for e in takeaways:
        lines += [f"### {e['id']}: {e['title']}", "", f"The paper: {e['claim']}", "",
                  f"Definitions: `lab/trl_lite_lab/{e['design']}`, experiment_sha256 `{e['experiment_sha256'][:16]}`.", "",
                  f"**{e['reads']}**", ""]
        if e.get("carried"):
            lines += [f"Carried: the per-seed effects, gates, details and per-arm summary below are those of "
                      f"`{os.path.basename(e['carried']['file'])}` (SHA-256 `{e['carried']['sha256'][:16]}`), made "
                      "under this experiment_sha256 from the same pilot (its runs were not on the machine that wrote "
                      "this report); the tests and the Holm adjustment were made again from them.", ""]
        lines += _pilot_lines(e["pilot"])
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
            lines.append(f"- gate ({g['stage']}, {g['kind']}) {g['name']}: {_f(g['value'], 3, False)} ({sign} "
                         f"{g['threshold']}): {'passed' if g['passed'] else 'FAILED'}")
        for arm_label, why in e["excluded"].items():
            lines.append(f"- left out by design: {arm_label} ({why})")
        if e["details"]:
            lines += ["", "Mechanism measures (descriptive: mean over seeds, 95% t-interval, no test, no correction):",
                      ""]
            lines += [f"- {key}: {_f(d['mean'], 4)} [{_f(d['interval'][0], 4)}, {_f(d['interval'][1], 4)}]"
                      + (f" ({d['seeds']} of {e['seeds']} seeds defined)" if d["seeds"] < e["seeds"] else "")
                      for key, d in e["details"].items()]
        if e.get("arm_summary"):
            lines += ["", "What training did to each arm (descriptive: means over seeds):", "",
                      "| arm | held-out accuracy (initial) | training reward on the fixed training problems "
                      "(initial) | training reward, first / last quarter of the generation batches | mean abs(A) | "
                      "mean gradient norm | weight distance from the initial policy |",
                      "|---|---|---|---|---|---|---|"]
            lines += [f"| {label} | {_f(d['held_out_acc'], 4, False)} ({_f(d['initial_acc'], 4, False)}) | "
                      f"{_f(d.get('train_acc'), 4, False)} ({_f(d.get('train_acc_initial'), 4, False)}) | "
                      f"{_f(d.get('train_reward_first_quarter'), 3, False)} / "
                      f"{_f(d.get('train_reward_last_quarter'), 3, False)} | {_f(d['abs_adv_mean'], 3, False)} | "
                      f"{_f(d['grad_norm_mean'], 3, False)} | {_f(d.get('update_norm'), 3, False)} |"
                      for label, d in e["arm_summary"].items()]
        if e.get("figure"):
            lines += ["", f"Figure: `{e['figure']}`"]
        lines.append("")
    return "\n".join(lines)


def _failed_gate(entry: dict) -> str:
    """What made an experiment untestable, in a few words: the first failed gate's kind, value and threshold."""
    pilot = entry["pilot"]
    if not entry["registered"] and pilot is None:
        return "no pilot for these definitions"
    negative = not entry["registered"]
    failed = [g for g in (pilot["gates"] if negative else entry["gates"])
              if not (g["passed_with_margin"] if negative else g["passed"])]
    g = failed[0]
    more = f", +{len(failed) - 1} more" if len(failed) > 1 else ""
    value, threshold = g["value"], g["threshold"]
    passes_unmargined = math.isfinite(value) and (value <= threshold if g["at_most"] else value >= threshold)
    compared = (f"not past {threshold} by the margin" if passes_unmargined
                else f"{'>' if g['at_most'] else '<'} {threshold}")
    return f"{'pilot, ' if negative else ''}{_what(g)} {_f(value, 3, False)} {compared}{more}"


def _what(gate: dict) -> str:
    """A failed gate in a few words: its kind ("gain": the held-out gain of `design.gain_gates`; version 3.0's records
    gave its training-reward gate that kind too, told apart by name)."""
    if gate["kind"] != "gain":
        return gate["kind"]
    return "training-reward rise" if "training reward" in gate["name"] else "held-out gain"


def readme_table(summary: dict) -> str:
    """The README's lab table, from `summary.json` only: verdict, and the headline figure or the reason. An effect
    is shown with its 95% interval, or, for an equivalence test, its 90% interval (TOST) and the margin; a directional
    test first with what its sign test reads, the seeds whose effect is above 0 (near-ties are ties: neither)."""
    lines = ["| experiment | verdict | seeds > 0, mean [95%] |", "|---|---|---|"]
    for e in summary["takeaways"]:
        if e["verdict"] == UNTESTABLE:
            what = _failed_gate(e)
        else:
            what = "; ".join((f"{t['name'].removeprefix(e['id'] + ' ')} " if len(e["tests"]) > 1 else "")
                             + ("" if t.get("margin") else f"{_above(t['per_seed'])}/{len(t['per_seed'])}, ")
                             + f"{_f(t['mean'])} [{_f(t['interval'][0])}, {_f(t['interval'][1])}]"
                             + (f" (90%, margin {t['margin']})" if t.get("margin") else "") for t in e["tests"])
        title = re.split(r"[,;]", e["title"])[0]
        lines.append(f"| {e['id']} {title} | {e['verdict']} | {what} |")
    return "\n".join(lines) + "\n"


def _above(per_seed: list) -> int:
    """The seeds whose effect is above 0 as the sign test reads it (`stats.near_ties`: within float noise is 0)."""
    return int(sum(v >= NOISE for v in per_seed))


def preregistration(names: list[str] | None = None) -> str:
    """The pre-registration table, generated from the definitions (never typed): per experiment its arms, primary
    tests, gates, seeds and hash."""
    lines = ["| experiment | arms | primary tests (> 0: as the paper says) | gates | seeds (pilot) | definitions |",
             "|---|---|---|---|---|---|"]
    for name in names or EXPERIMENTS.names():
        e = EXPERIMENTS[name]
        arms = "<br>".join(f"{label}: `{a.name}`" for label, a in e.arms.items())
        tests = "<br>".join(f"`{p.name}`: {p.metric}" + (f" (equivalence, margin {p.margin})" if p.margin else "")
                            for p in e.primaries)
        gates = "<br>".join(f"({g.stage}, {g.kind}) {g.name} {g.sign} {g.threshold}" for g in e.gates)
        first = f", seeds {e.first_seed}-{e.first_seed + e.seeds - 1}" if e.first_seed else ""
        lines.append(f"| {e.id}: {e.title} | {arms} | {tests} | {gates} | {e.seeds} ({e.pilot_seeds}){first} | "
                     f"`lab/trl_lite_lab/{e.design}` `{experiment_sha256(e)[:12]}` |")
    return "\n".join(lines) + "\n"


def report(names: list[str], output_dir: str, seeds: int | None = None, pilots_dir: str | None = None,
           carry: str | None = None) -> dict:
    """Writes `summary.md`, `summary.json` and one figure per run experiment into `output_dir`; returns the summary
    with `table` (the markdown's verdict table). `pilots_dir` (default `<output_dir>/pilots`) holds the pilots.
    `carry`: an earlier `summary.json` whose entries stand in for the runs of an experiment with the same hash whose
    runs are not in `output_dir` (the module's docstring); its figure is copied from beside it."""
    unknown = [name for name in names if name not in EXPERIMENTS]
    if unknown:
        raise ValueError(f"takeaways={','.join(names)!r} names {unknown}; expected among {EXPERIMENTS.names()} "
                         "or 'all'.")
    pilots_dir = pilots_dir or os.path.join(output_dir, PILOTS)
    audit = _audit_measures(output_dir)
    # a pilot that trl-lite no longer computes alike is not "no pilot": the experiment (and the Holm family it is part
    # of) cannot be reported until it is piloted again
    stale = {name: stale_pilot(EXPERIMENTS[name], pilots_dir) for name in EXPERIMENTS.names()}
    stale = {name: lines for name, lines in stale.items() if lines}
    if stale:
        raise DefinitionMismatch(
            "the results of " + ", ".join(EXPERIMENTS[n].id for n in stale) + f" (their pilots in {pilots_dir}) no "
            "longer hold: trl-lite computes otherwise for them than when they were made; pilot and run them again "
            "(`trl-lite-lab pilot`, then `trl-lite-lab run`). What changed:\n"
            + "\n".join(f"  {EXPERIMENTS[n].id}: {line}" for n, lines in stale.items() for line in lines))
    records = {name: registration(EXPERIMENTS[name], pilots_dir) for name in EXPERIMENTS.names()}
    size = family_size(records)
    hashes = {name: experiment_sha256(EXPERIMENTS[name]) for name in names}  # each reads the engine's files
    old = carried_entries(carry, seeds) if carry else {}
    changed_since = invalidated(carry, names, seeds) if carry else {}
    lost = {name: changed_since[name] for name in names
            if name in changed_since and not _any_run_here(name, output_dir, seeds)}
    if lost:  # results that trl-lite no longer computes alike: which, and why
        raise DefinitionMismatch(
            "the results of " + ", ".join(EXPERIMENTS[n].id for n in lost) + f" in {carry} no longer hold: trl-lite "
            "computes otherwise for them than when they were made; pilot and run them again (`trl-lite-lab pilot`, "
            "then `trl-lite-lab run`). What "
            "changed:\n" + "\n".join(f"  {EXPERIMENTS[n].id}: {line}" for n, lines in lost.items() for line in lines))
    carried = {name: old[hashes[name]] for name in names
               if hashes[name] in old and not _any_run_here(name, output_dir, seeds)
               and _carriable(name, old[hashes[name]], records[name], audit)}
    if carried:
        with open(carry, "rb") as f:
            source = {"file": os.path.abspath(carry), "sha256": hashlib.sha256(f.read()).hexdigest()}
    entries = verdicts([carry_entry(name, carried[name], records[name]) if name in carried
                        else gather(name, output_dir, audit, records[name], seeds) for name in names], size)
    for name, entry in zip(names, entries):
        entry["design"] = EXPERIMENTS[name].design
        entry["experiment_sha256"] = hashes[name]
        if records[name] is None:  # why its pilot does not count: none, other definitions, or other fingerprints
            entry["unregistered_because"] = why_unregistered(EXPERIMENTS[name], pilots_dir)
        if name in carried:
            entry["carried"] = source
            entry["arm_summary"] = carried[name].get("arm_summary", {})
            # the earlier figure, where its verdict (in its title) still holds; it cannot be drawn again without runs
            figure_name = carried[name].get("figure")
            origin = os.path.join(os.path.dirname(source["file"]), figure_name or "")
            entry["figure"] = None
            if figure_name and entry["verdict"] == carried[name]["verdict"] and os.path.isfile(origin):
                target = os.path.join(output_dir, figure_name)
                if os.path.abspath(origin) != os.path.abspath(target):
                    shutil.copyfile(origin, target)
                entry["figure"] = figure_name
            entry["seeds_needed"] = {}
            continue
        path = figure(entry, output_dir) if entry["verdict"] != UNTESTABLE or entry["tests"] else None
        entry["figure"] = os.path.basename(path) if path else None
        entry["arm_summary"] = arm_summary(entry, output_dir)
        pilot = entry["pilot"]
        entry["seeds_needed"] = {g["name"]: seeds_needed(g, pilot) for g in (pilot or {}).get("gates", [])
                                 if g["kind"] == "power" and not g["passed_with_margin"]}
    testable = [e for e in entries if e["verdict"] != UNTESTABLE]
    summary = {"engine_sha256": engine_sha256(), "product": product_stamp(),
               "fingerprints": fingerprints([a for name in names for a in EXPERIMENTS[name].arms.values()]),
               "alpha": ALPHA, "seeds_override": seeds, "family_size": size,
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
