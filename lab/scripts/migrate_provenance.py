"""One-time record (2026-11-26, issue 37): moves the committed lab results from the old provenance (a hash of 25
trl-lite modules' source with the lab's) to the new one (the lab's own modules hashed; trl-lite's commit, versions and
behavioural fingerprints recorded: `trl_lite_lab.provenance`), without a rerun.

Why that is sound: at commit 3f3126c the old engine hash, read from the source as it was, equalled the one every
committed result recorded (52d123d8...), so those results were made by the code of 3f3126c. The fingerprints
(`--fingerprints`, computed with `trl_lite_lab/fingerprint.py` in a worktree of 3f3126c, before anything moved) are
what that code computes for each arm and initial evaluation; the same fingerprints computed after the move are equal
(`lab/tests/test_lab_fingerprint.py` recomputes them against today's trl-lite). Each policy's recorded
`model.safetensors` hash is checked before its folder hash (`policy_sha256`: every file) replaces it.

    python lab/scripts/migrate_provenance.py --fingerprints FP.json --commit 3f3126c [--results lab/results]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess

from trl_lite_lab.design import policy_dir, policy_sha256
from trl_lite_lab.experiments import EXPERIMENTS, experiment_named
from trl_lite_lab.provenance import engine_sha256, experiment_sha256, product_stamp

OLD_ENGINE = "52d123d868e9c2a8160b94b8b46766d296be3e212be230fe3e8e60fec299fb4f"
REFERENCE = {"trl-lite": "0.1.0", "torch": "2.13.0+cpu", "trl": "1.16.0", "transformers": "5.24.0",
             "accelerate": "1.15.0"}  # .ci/reference.txt, the stack the lab ran on


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout.strip()


def _subset(fingerprints: dict, arms) -> dict:
    arms = list(arms)
    pairs = sorted({f"{a.task}/{a.policy}" for a in arms})
    return {"arms": {a.name: fingerprints["arms"][a.name] for a in sorted(arms, key=lambda a: a.name)},
            "evaluations": {p: fingerprints["evaluations"][p] for p in pairs}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fingerprints", required=True)
    parser.add_argument("--commit", required=True)
    parser.add_argument("--results", default="lab/results")
    args = parser.parse_args()
    with open(args.fingerprints, encoding="utf-8") as f:
        fingerprints = json.load(f)
    assert fingerprints["computed"]["engine_sha256"] == OLD_ENGINE, "fingerprints not made under the results' code"
    commit = _git("rev-parse", args.commit)
    versions = product_stamp()["versions"]  # this machine's, which computed the fingerprints (the reference stack)
    assert versions == REFERENCE, versions
    product = {"commit": commit, "dirty": False, "versions": versions}
    migrated = {"date": "2026-11-26", "from_engine_sha256": OLD_ENGINE, "verified_at": commit,
                "why": "lab/scripts/migrate_provenance.py"}

    pilots = {}
    for name in EXPERIMENTS.names():
        experiment = EXPERIMENTS[name]
        path = os.path.join(args.results, "pilots", f"{experiment.id}.json")
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
        # the last commit up to `--commit` that changed the record: the pilot that holds these contents ran before it
        made = _git("log", "-1", "--format=%cI", commit, "--", path.replace("lab/results", "bench/lab")) or None
        new = {"id": record["id"], "made": made,
               "made_source": "the time of the last commit that changed this record before the migration (the pilot "
                              "ran shortly before it and recorded no time)",
               "experiment_sha256": experiment_sha256(experiment), "product": product,
               "fingerprints": _subset(fingerprints, experiment.arms.values()), "migrated": migrated}
        new.update({k: v for k, v in record.items() if k not in ("id", "experiment_sha256")})
        pilots[experiment.id] = new
        with open(path, "w", encoding="utf-8") as f:
            json.dump(new, f, indent=2)

    path = os.path.join(args.results, "audit.json")
    with open(path, encoding="utf-8") as f:
        audit = json.load(f)
    assert audit["engine_sha256"] == OLD_ENGINE
    audit.update(engine_sha256=engine_sha256(), product=product, migrated=migrated)
    for key in [k for k in audit if k.startswith("weights/")]:
        task, policy = key.split("/")[1:]
        folder = policy_dir(task, policy)
        with open(os.path.join(folder, "model.safetensors"), "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == audit[key], f"{folder}: other weights than the audit's"
        audit[key] = policy_sha256(folder)
        audit[f"fingerprints/{task}/{policy}"] = {"arms": {}, "evaluations": {
            f"{task}/{policy}": fingerprints["evaluations"][f"{task}/{policy}"]}}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(audit, f, indent=2)

    path = os.path.join(args.results, "summary.json")
    with open(path, encoding="utf-8") as f:
        summary = json.load(f)
    assert summary["engine_sha256"] == OLD_ENGINE
    arms = [a for name in EXPERIMENTS.names() for a in EXPERIMENTS[name].arms.values()]
    out = {"engine_sha256": engine_sha256(), "product": product, "fingerprints": _subset(fingerprints, set(arms)),
           "migrated": migrated}
    out.update({k: v for k, v in summary.items() if k != "engine_sha256"})
    for entry in out["takeaways"]:
        experiment = experiment_named(entry["id"])
        entry["experiment_sha256"] = experiment_sha256(experiment)
        entry["design"] = experiment.design
        entry["pilot"] = pilots[entry["id"]]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
