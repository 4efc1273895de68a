"""`lab/scripts/migrate_engine.py`: which hashes a migration moves, and that nothing else changes."""

from __future__ import annotations

import copy
import importlib.util
import os

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts", "migrate_engine.py")


@pytest.fixture(scope="module")
def migrate():
    spec = importlib.util.spec_from_file_location("migrate_engine", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


OLD_ENGINE, NEW_ENGINE = "e0" * 32, "e1" * 32
OLD_T6, NEW_T6, OLD_T5 = "60" * 32, "61" * 32, "50" * 32  # T5 redesigned: its old hash has no new one
MAPPING = {OLD_ENGINE: NEW_ENGINE, OLD_T6: NEW_T6}
MIGRATED = {"why": "lab/scripts/migrate_engine.py"}


def test_a_run_a_pilot_and_an_initial_evaluation_move(migrate):
    run = {"eval": {"acc": 0.25}, "experiment_sha256": {"T6": OLD_T6}, "policy_sha256": "p" * 64}
    assert migrate.move(run, MAPPING, MIGRATED)
    assert run == {"eval": {"acc": 0.25}, "experiment_sha256": {"T6": NEW_T6}, "policy_sha256": "p" * 64,
                   "migrated": MIGRATED}
    pilot = {"id": "T6", "experiment_sha256": OLD_T6, "gates": [{"value": 0.1}]}
    assert migrate.move(pilot, MAPPING, MIGRATED) and pilot["experiment_sha256"] == NEW_T6
    initial = {"acc": 0.128, "engine_sha256": OLD_ENGINE}
    assert migrate.move(initial, MAPPING, MIGRATED) and initial["engine_sha256"] == NEW_ENGINE


def test_a_redesigned_experiment_or_another_engine_stays_refused(migrate):
    # T5's design changed with the engine: its old hash is not in the mapping, so its run keeps it (and is refused)
    run = {"experiment_sha256": {"T5": OLD_T5}}
    assert not migrate.move(run, MAPPING, MIGRATED) and run == {"experiment_sha256": {"T5": OLD_T5}}
    # a run shared by two experiments: the one whose design is unchanged moves, the other keeps its old hash
    shared = {"experiment_sha256": {"T5": OLD_T5, "T6": OLD_T6}}
    assert migrate.move(shared, MAPPING, MIGRATED)
    assert shared["experiment_sha256"] == {"T5": OLD_T5, "T6": NEW_T6}
    older = {"engine_sha256": "ab" * 32}  # made by an engine older than the migration's: left as it is
    assert not migrate.move(older, MAPPING, MIGRATED) and "migrated" not in older


def test_a_summary_moves_with_its_entries_and_their_pilot_records(migrate):
    pilot = {"id": "T6", "experiment_sha256": OLD_T6, "passed": True}
    summary = {"engine_sha256": OLD_ENGINE, "takeaways": [
        {"id": "T6", "experiment_sha256": OLD_T6, "pilot": copy.deepcopy(pilot), "verdict": "inconclusive"},
        {"id": "T5", "experiment_sha256": OLD_T5, "pilot": None, "verdict": "untestable"}]}
    assert migrate.move(summary, MAPPING, MIGRATED)
    assert summary["engine_sha256"] == NEW_ENGINE and summary["migrated"] == MIGRATED
    t6, t5 = summary["takeaways"]
    assert t6["experiment_sha256"] == NEW_T6 and t6["verdict"] == "inconclusive"
    # the embedded pilot record is moved as the pilot file is, so the two stay equal (test_lab_claims compares them)
    assert migrate.move(pilot, MAPPING, MIGRATED) and t6["pilot"] == pilot
    assert t5 == {"id": "T5", "experiment_sha256": OLD_T5, "pilot": None, "verdict": "untestable"}


def test_same_reads_nan_as_equal_to_nan_and_nothing_else(migrate):
    nan = float("nan")
    assert migrate._same({"a": [1.0, nan]}, {"a": [1.0, nan]})
    assert not migrate._same({"a": 0.1}, {"a": 0.1 + 2.8e-17})  # one float step apart: not equal
    assert not migrate._same({"a": 1.0}, {"a": 1.0, "b": 2.0}) and not migrate._same([1.0], [1.0, 2.0])


def test_an_evaluation_is_compared_on_the_measures_it_recorded(monkeypatch):
    # an engine change that only adds measures (T5's connective_link) adds them to today's evaluation fingerprint too;
    # a record made before it lacks them, which is no difference in what trl-lite computes
    from trl_lite_lab import fingerprint

    now = {"arms": {}, "evaluations": {"sumk/long": {"acc": 0.125, "connective_link": 0.5}}}
    monkeypatch.setattr(fingerprint, "fingerprints", lambda arms=(), evaluations=(): now)
    where = [("sumk", "long")]
    assert fingerprint.changed({"evaluations": {"sumk/long": {"acc": 0.125}}}, evaluations=where) == []
    # a recorded measure not computed today, or one whose value moved, still is a difference
    assert fingerprint.changed({"evaluations": {"sumk/long": {"acc": 0.125, "gone": 1.0}}}, evaluations=where) == [
        "evaluation sumk/long: gone: not computed now"]
    (line,) = fingerprint.changed({"evaluations": {"sumk/long": {"acc": 0.25}}}, evaluations=where)
    assert line.startswith("evaluation sumk/long: acc")
    assert fingerprint.changed({"evaluations": {}}, evaluations=where) == ["evaluation sumk/long: not recorded"]
