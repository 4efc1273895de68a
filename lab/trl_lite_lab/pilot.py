"""Pilot, then register: an experiment runs on its registered seeds only after a pilot on other seeds has passed every
gate, the gain gates included, with a margin.

`trl-lite-lab pilot 4 --output-dir runs/lab` audits the initial policies the experiment needs, and, if its audit gates
pass with the margin, runs every arm on the pilot seeds (`PILOT_SEED`, `PILOT_SEED + 1`, ...; never a registered
seed) with the registered settings. It then evaluates every gate on the pilot (audit, runs and `pilot`-stage gates,
such as whether the registered seeds can detect half of what training gains), and writes
`<output-dir>/pilots/<id>.json`: each gate's value, threshold and whether it passed with the margin
(`PILOT_MARGIN`: beyond the threshold by a quarter of it for runs and pilot gates; `AUDIT_MARGIN`, a tenth, for
audit gates, measured once on many fresh samples), the primary effects per pilot seed (not tested: a pilot
is not evidence), the wall time, and the experiment's hash. The lab's committed pilots are in `lab/results/pilots/`.

An experiment whose pilot failed is a recorded negative pilot: it is never run, and its verdict is untestable with the
pilot's failed gates. A pilot made under other definitions (another hash) does not register anything.
"""

from __future__ import annotations

import json
import os
import time

from .design import AUDIT_MARGIN, EXPERIMENTS, PILOT_MARGIN, Experiment
from .fingerprint import fingerprints
from .provenance import experiment_sha256, product_stamp
from .results import PILOTS, pilot_path, registration  # noqa: F401  (registration is read here and by the runner)
from .stats import mean

def _rows(experiment: Experiment, stage: str, evidence: dict) -> list[dict]:
    from .verdicts import gate_rows

    rows = gate_rows(experiment, stage, evidence)
    by_name = {g.name: g for g in experiment.gates}
    for row in rows:
        row["margin"] = AUDIT_MARGIN if stage == "audit" else PILOT_MARGIN
        row["passed_with_margin"] = by_name[row["name"]].passes(row["value"], row["margin"])
    return rows


def pilot(name: str, output_dir: str, *, progress: bool = True, eval_problems: int | None = None) -> dict:
    """Pilots experiment `name` (see the module's docstring); returns and writes its record."""
    from .audit import audit
    from .design import EVAL_PROBLEMS
    from .experiments import family_size
    from .runner import initial_eval, run_arm
    from .verdicts import evidence as gather_evidence

    experiment = EXPERIMENTS[name]
    problems = eval_problems or EVAL_PROBLEMS
    started = time.time()
    made = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started))
    measures = audit(output_dir, [name], progress=progress, eval_problems=problems)
    record = {"id": experiment.id, "made": made, "experiment_sha256": experiment_sha256(experiment),
              "product": product_stamp(), "fingerprints": fingerprints(experiment.arms.values()),
              "margin": {"audit": AUDIT_MARGIN, "runs": PILOT_MARGIN, "pilot": PILOT_MARGIN},
              "seeds": experiment.seed_list(pilot=True), "registered_seeds": experiment.seeds,
              "gates": _rows(experiment, "audit", measures), "effects": {}, "eval_problems": problems}
    if all(g["passed_with_margin"] for g in record["gates"]):
        for seed in record["seeds"]:
            for a in experiment.arms.values():
                initial_eval(a.task, a.policy, output_dir, problems, a.settings["temperature"])
                run_arm(a, seed, output_dir, progress=progress, eval_problems=problems)
        found = gather_evidence(experiment, output_dir, record["seeds"])
        found.update(registered_seeds=experiment.seeds, family=family_size())
        record["gates"] += _rows(experiment, "runs", found) + _rows(experiment, "pilot", found)
        record["effects"] = {p.name: [p.effect(runs) for runs in found["runs"].values()]
                             for p in experiment.primaries}
        record["effect_means"] = {key: mean(values) for key, values in record["effects"].items()}
        record["cost_min"] = sum(run.get("wall_s", 0.0) for by_arm in found["runs"].values()
                                 for run in by_arm.values()) / 60
    else:
        record["not_run"] = "an audit gate failed with the margin: the arms were not piloted"
    record["passed"] = all(g["passed_with_margin"] for g in record["gates"])
    record["wall_s"] = time.time() - started
    os.makedirs(os.path.join(output_dir, PILOTS), exist_ok=True)
    with open(pilot_path(os.path.join(output_dir, PILOTS), experiment), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2)
    return record
