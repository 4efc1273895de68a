"""Moves lab results made under one version of the lab's engine to the next, without a rerun, when the change between
them only adds measures (2026-11-28, issue 38: T5's credit link read off the connective token, which added
`chk_after_drop_rate` and `connective_link` to every SUM-k evaluation and `connective_link` to the audit).

A result records the hash of the engine that made it (`engine_sha256`) or of the engine and its experiment's design
modules (`experiment_sha256`), and is refused under any other (`trl_lite_lab.provenance`), so an engine change that
leaves every existing measure as it was would otherwise throw away every run. This script moves a record only when
each of these holds, and checks them before it writes anything:

1. **Made by the old engine.** Its recorded hash is the one the old commit's files give (computed from a worktree of
   that commit, in another process), for the engine or, for an experiment, with a design module that did not change
   between the two commits. Any other hash (another design, an older engine) is left as it is and stays refused.
2. **The same measures.** One initial evaluation per `--check` (`task/policy`) is made again under the new engine,
   and every measure the old record holds must equal the new one to the last digit (a run made twice on one machine
   gives the same figures: `lab/results/README.md`). Training and the runs' measures are not re-made; the engine's
   diff between the two commits is recorded so that a reader can see it touches only the added measures.
3. **Nothing else moves.** Only the hash fields change, and a `migrated` block is added: the two engine hashes, the
   two commits, the files the engine's diff touched, the checks made, and this script's path.

    python lab/scripts/migrate_engine.py --old-commit C --check sumk/long add/carry-tiny \\
        --dirs lab/results lab/results/lab31 [--dry-run]
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import subprocess
import sys
import tempfile
import time

from trl_lite_lab.experiments import EXPERIMENTS
from trl_lite_lab.provenance import (
    PACKAGE,
    design_modules,
    engine_modules,
    engine_sha256,
    experiment_sha256,
)

ROOT = os.path.dirname(os.path.dirname(PACKAGE))  # the clone
LAB_PACKAGE = os.path.relpath(PACKAGE, ROOT)  # lab/trl_lite_lab
# what the old commit's engine hashes to, read in a fresh process with the old commit's lab on the path
HASHES = """
import json
from trl_lite_lab.experiments import EXPERIMENTS
from trl_lite_lab.provenance import engine_sha256, experiment_sha256
print(json.dumps({"engine": engine_sha256(),
                  "experiments": {EXPERIMENTS[n].id: experiment_sha256(EXPERIMENTS[n]) for n in EXPERIMENTS.names()}}))
"""
# the records a report, a pilot or a carry reads; archived summaries (`v2/`, `v3.1-family-12/`, ...) and superseded
# pilots are history and keep the hashes they were made under
RECORDS = ("summary.json", "audit.json", "pilots/*.json", "initial/*.json", "runs/*/seed*/result.json")


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True, check=True).stdout.strip()


def old_hashes(commit: str) -> dict:
    """{"engine": ..., "experiments": {id: ...}} as the lab of `commit` computes them (a detached worktree of it)."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = os.path.join(tmp, "old")
        _git("worktree", "add", "--detach", tree, commit)
        try:
            env = {**os.environ, "PYTHONPATH": os.path.join(tree, "lab") + os.pathsep + tree}
            out = subprocess.run([sys.executable, "-c", HASHES], env=env, capture_output=True, text=True, check=True)
        finally:
            _git("worktree", "remove", "--force", tree)
    return json.loads(out.stdout.strip().splitlines()[-1])


def unchanged_designs(commit: str) -> set[str]:
    """The experiments whose design modules are byte for byte the same at `commit` and in the working tree."""
    kept = set()
    for name in EXPERIMENTS.names():
        experiment = EXPERIMENTS[name]
        files = [os.path.join(LAB_PACKAGE, *module.split(".")) + ".py"
                 for module in design_modules(experiment.design[:-3].replace("/", "."))]
        changed = subprocess.run(["git", "-C", ROOT, "diff", "--quiet", commit, "--", *files], check=False).returncode
        if changed == 0:
            kept.add(experiment.id)
    return kept


def hash_map(old: dict, kept: set[str]) -> dict[str, str]:
    """{old hash: new hash}: the engine's, and each experiment's whose design did not change."""
    mapping = {old["engine"]: engine_sha256()}
    for name in EXPERIMENTS.names():
        experiment = EXPERIMENTS[name]
        if experiment.id in kept:
            mapping[old["experiments"][experiment.id]] = experiment_sha256(experiment)
    return mapping


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def check_measures(task: str, policy: str, old_record: dict, problems: int) -> list[str]:
    """The measures of `old_record` (an initial evaluation) that the new engine, evaluating again, gives otherwise."""
    from trl_lite_lab.runner import initial_eval

    from trl_lite_lab.fingerprint import changed

    with tempfile.TemporaryDirectory() as tmp:
        new = initial_eval(task, policy, tmp, problems)  # at temperature 1, as the `--check` files are named
    # the fingerprint holds the added measures too (it is the lab's evaluation, in float64, on a few problems): it is
    # checked as the report checks it, on the measures it recorded (`fingerprint.changed`)
    skip = {"engine_sha256", "product", "eval_s", "migrated", "fingerprints"}
    differ = [key for key in old_record if key not in skip and not _same(old_record[key], new.get(key))]
    return differ + changed(old_record.get("fingerprints"), evaluations=[(task, policy)])


def move(record: dict, mapping: dict[str, str], migrated: dict) -> bool:
    """Replaces the hashes in `record` (and in a summary's entries and their pilot records) found in `mapping`; adds
    `migrated` where one moved. Returns whether anything did."""
    moved = False
    if record.get("engine_sha256") in mapping:
        record["engine_sha256"], moved = mapping[record["engine_sha256"]], True
    sha = record.get("experiment_sha256")
    if isinstance(sha, str) and sha in mapping:
        record["experiment_sha256"], moved = mapping[sha], True
    elif isinstance(sha, dict):
        for key, value in sha.items():
            if value in mapping:
                sha[key], moved = mapping[value], True
    for entry in record.get("takeaways", []):
        moved |= move(entry, mapping, migrated)
        if isinstance(entry.get("pilot"), dict):
            moved |= move(entry["pilot"], mapping, migrated)
    if moved:
        record["migrated"] = migrated
    return moved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old-commit", required=True)
    parser.add_argument("--check", nargs="+", required=True, help="task/policy initial evaluations to make again")
    parser.add_argument("--dirs", nargs="+", default=["lab/results"])
    parser.add_argument("--problems", type=int, default=1000)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()

    old_commit, new_commit = _git("rev-parse", args.old_commit), _git("rev-parse", "HEAD")
    old = old_hashes(old_commit)
    if old["engine"] == engine_sha256():
        sys.exit("the engine did not change between the two commits: nothing to migrate")
    kept = unchanged_designs(old_commit)
    mapping = hash_map(old, kept)
    engine_files = [os.path.join(LAB_PACKAGE, *m.split(".")) + ".py" for m in engine_modules()]
    touched = _git("diff", "--name-only", old_commit, "--", *engine_files).split()

    checks = {}
    for spec in args.check:
        task, policy = spec.split("/")
        paths = [p for d in args.dirs for p in glob.glob(os.path.join(d, "initial", f"{task}-{policy}-{args.problems}.json"))]
        if not paths:
            sys.exit(f"--check {spec}: no initial evaluation of it under {args.dirs}")
        with open(paths[0], encoding="utf-8") as f:
            record = json.load(f)
        if record.get("engine_sha256") != old["engine"]:
            sys.exit(f"--check {spec}: {paths[0]} was not made by the old engine")
        differ = check_measures(task, policy, record, args.problems)
        if differ:
            sys.exit(f"--check {spec}: the new engine gives other values for {differ}: not a change that only adds")
        checks[spec] = f"every measure of {paths[0]} made again, equal"
        print(f"checked {spec}: {checks[spec]}")

    migrated = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "from_engine_sha256": old["engine"], "to_engine_sha256": engine_sha256(),
                "from_commit": old_commit, "engine_changed_in": touched, "checks": checks,
                "experiments_moved": sorted(kept), "why": "lab/scripts/migrate_engine.py"}
    counts = {"moved": 0, "left": 0}
    for folder in args.dirs:
        for pattern in RECORDS:
            for path in sorted(glob.glob(os.path.join(folder, pattern))):
                with open(path, encoding="utf-8") as f:
                    record = json.load(f)
                if not move(record, mapping, migrated):
                    counts["left"] += 1
                    continue
                counts["moved"] += 1
                if not args.dry_run:
                    with open(path, "w", encoding="utf-8") as f:
                        json.dump(record, f, indent=2)
    print(json.dumps({**counts, "engine": [old["engine"][:16], engine_sha256()[:16]], "new_commit": new_commit,
                      "experiments_moved": sorted(kept), "engine_changed_in": touched}))


if __name__ == "__main__":
    main()
