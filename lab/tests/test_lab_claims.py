"""Every figure the README, `docs/lab.md` and `lab/results/` state about the lab comes from a committed file.

- The README's lab table is `trl_lite_lab.report.readme_table(lab/results/summary.json)`, verbatim.
- `lab/results/preregistration.md` is `trl-lite-lab list --markdown`, generated from the definitions (never typed), and
  `docs/lab.md` renders the same table through a hook.
- Every other decimal number or percentage in those pages (outside code) is a value held by
  `lab/results/summary.json`, `lab/results/audit.json`, a pilot in `lab/results/pilots/`, `lab/results/builds.json`
  (policy builds tried), `lab/results/null.json` (the version 3 statistics on that summary, `trl-lite-lab null`),
  version 2's superseded results (`lab/results/v2/`), version 3.0's (`lab/results/v3.0/`) and version 3.1's first
  design's (`lab/results/v3.1-720/`) and second design's on its first machine (`lab/results/v3.1-machine-1/`) and in
  the family of 7 (`lab/results/v3.1-family-7/`), of 10 (`lab/results/v3.1-family-10/`), of 12 before T2 reported
  (`lab/results/v3.1-family-12/`) and with T5 reported before its premise gate (`lab/results/v3.1-t5-reported/`),
  the methods study
  `lab/results/variance_study.json`, `lab/results/feasibility.json` (what a fair test would take), the clip grid
  `lab/results/clip_grid.json`, T8's exploratory runs `lab/results/t8_grid.json` and its pilot's reading
  `lab/results/t8_reading.json`, T5's update grid
  `lab/results/t5_grid.json`, T4's design grid
  `lab/results/t4_grid.json` and its reading `lab/results/t4_reading.json`, the resampled null at more seeds
  `lab/results/null_seeds.json`, each experiment's chance of "reproduced" `lab/results/fairness.json`, or the
  definitions (a gate's threshold, a margin, a setting), at the precision printed: a figure typed from memory, or left from an older lab, fails here.
"""

import glob
import json
import math
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the clone
LAB = os.path.join(ROOT, "lab", "results")
PAGES = [os.path.join(ROOT, "docs", "lab.md"), os.path.join(LAB, "README.md")]
README_START, README_END = "<!-- lab-table -->", "<!-- /lab-table -->"


def _numbers(value):
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        if math.isfinite(value):
            yield float(value)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _numbers(v)


def committed_numbers() -> list[float]:
    """Every number in the lab's committed JSON files, and in the definitions (thresholds, margins, settings)."""
    from trl_lite_lab import design
    from trl_lite_lab.experiments import EXPERIMENTS

    values = []
    for path in [os.path.join(LAB, "summary.json"), os.path.join(LAB, "audit.json"), os.path.join(LAB, "builds.json"),
                 os.path.join(LAB, "null.json"), os.path.join(LAB, "variance_study.json"),
                 os.path.join(LAB, "feasibility.json"), os.path.join(LAB, "clip_grid.json"),
                 os.path.join(LAB, "t8_grid.json"), os.path.join(LAB, "t5_grid.json"),
                 os.path.join(LAB, "t8_reading.json"), os.path.join(LAB, "t4_grid.json"),
                 os.path.join(LAB, "t4_reading.json"), os.path.join(LAB, "null_seeds.json"),
                 os.path.join(LAB, "fairness.json"),
                 *glob.glob(os.path.join(LAB, "pilots", "**", "*.json"), recursive=True),
                 *glob.glob(os.path.join(LAB, "v2", "*.json")),  # version 2's results, kept as its history
                 *glob.glob(os.path.join(LAB, "v3.0", "*.json")),  # and version 3.0's
                 *glob.glob(os.path.join(LAB, "v3.1-720", "*.json")),  # and version 3.1's first design's
                 *glob.glob(os.path.join(LAB, "v3.1-machine-1", "*.json")),  # and its second's, on the first machine
                 *glob.glob(os.path.join(LAB, "v3.1-family-7", "*.json")),  # the summary of 07:31 UTC, 2026-11-28
                 *glob.glob(os.path.join(LAB, "v3.1-family-10", "*.json")),  # and of 10:48 UTC, the same day
                 *glob.glob(os.path.join(LAB, "v3.1-family-12", "*.json")),  # and of 13:33 UTC, before T2 reported
                 # and of 04:07 UTC, 2026-11-29, with T5 reported before its premise gate
                 *glob.glob(os.path.join(LAB, "v3.1-t5-reported", "*.json")),
                 *glob.glob(os.path.join(LAB, "v3.1-before-t6", "*.json")),  # and of 04:25 UTC, before T6 reported
                 # and clip scaling's 16 seeds (its summary, pilot and readings), before its version 3.2
                 *glob.glob(os.path.join(LAB, "v3.1-clip-16", "*.json")),
                 # and clip scaling's 32 seeds, before its version 3.3
                 *glob.glob(os.path.join(LAB, "v3.2-clip-32", "*.json")),
                 os.path.join(LAB, "saturation_grid.json"), os.path.join(LAB, "clip_remake.json"),
                 os.path.join(LAB, "clip_seed_count.json")]:
        with open(path, encoding="utf-8") as f:
            values += list(_numbers(json.load(f)))
    for name in EXPERIMENTS.names():
        e = EXPERIMENTS[name]
        values += [g.threshold for g in e.gates] + [p.margin for p in e.primaries if p.margin]
        values += [v for a in e.arms.values() for v in _numbers(dict(a.settings))]
    from trl_lite_lab import stats

    # the family-wise error and the power the engine uses (a "95% interval" is 1 - ALPHA, "80% power" POWER, an
    # equivalence test's "90% interval" 1 - 2 ALPHA: TOST at level ALPHA)
    values += [design.PILOT_MARGIN, design.AUDIT_MARGIN, design.GAIN, 1 - stats.ALPHA, 1 - 2 * stats.ALPHA, stats.POWER]
    return values


def _prose(text: str) -> str:
    """The text without fenced code, inline code, links' targets and HTML comments."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return re.sub(r"<!--.*?-->", " ", text, flags=re.S)


CLAIM = re.compile(r"(?<![\w.])[-+]?\d+\.\d+(?:%|(?![\w.]))|(?<![\w.])\d+(?:\.\d+)?%")


def claims(text: str) -> list[str]:
    """Decimal numbers and percentages in prose (versions such as 5.24.0 and names such as arXiv 2508.08221 are not
    claims: the former has a second dot, the latter is in a link or code)."""
    return CLAIM.findall(_prose(text))


def _held(claim: str, values: list[float]) -> bool:
    """Whether some value prints as `claim` at the claim's precision (as a percentage for `12.5%`), up to its sign
    (prose says "fell by 0.011" of an effect of -0.011)."""
    percent = claim.endswith("%")
    text = claim.rstrip("%")
    number = float(text)
    digits = len(text.split(".")[1]) if "." in text else 0
    for v in values:
        printed = float(f"{(v * 100 if percent else v):.{digits}f}")
        if printed == number or abs(printed) == abs(number):
            return True
    return False


def test_claims_helper_finds_numbers_and_matches_at_the_printed_precision():
    # prose numbers, not code, versions or links
    text = "accuracy 0.454 -> 0.802, 12.5% cut; `lr 3e-4 0.123` transformers 5.24.0 [x](a/0.999.md)"
    assert claims(text) == ["0.454", "0.802", "12.5%"]
    # 0.1249 prints as 0.125 at 3 decimals and 12.5% at 1; 0.1249 does not print as 0.124
    assert _held("0.125", [0.1249]) and _held("12.5%", [0.1249]) and not _held("0.124", [0.1249])
    assert _held("-0.011", [-0.0112]) and _held("+0.013", [0.0131])


def test_every_lab_figure_comes_from_a_committed_file():
    values = committed_numbers()
    missing = {}
    for path in PAGES + [os.path.join(ROOT, "README.md")]:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if path == os.path.join(ROOT, "README.md"):  # the project README: its lab section only
            text = text[text.index("## The lab"):]
            text = text[: text.index("\n## ", 1)]
        bad = [c for c in claims(text) if not _held(c, values)]
        if bad:
            missing[os.path.relpath(path, ROOT)] = bad
    assert not missing, f"figures not held by lab/results/*.json or the definitions: {missing}"


def test_readme_lab_table_is_generated_from_summary_json():
    from trl_lite_lab.report import readme_table

    with open(os.path.join(LAB, "summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    table = readme[readme.index(README_START) + len(README_START): readme.index(README_END)].strip()
    assert table == readme_table(summary).strip()


def test_preregistration_table_is_generated_from_the_definitions():
    from trl_lite_lab.report import preregistration

    with open(os.path.join(LAB, "preregistration.md"), encoding="utf-8") as f:
        committed = f.read()
    assert committed == preregistration(), "regenerate: trl-lite-lab list --markdown > lab/results/preregistration.md"
    with open(os.path.join(ROOT, "docs", "lab.md"), encoding="utf-8") as f:
        assert "<!-- lab-preregistration -->" in f.read()  # rendered by docs/hooks/lab_preregistration.py


def test_summary_json_is_the_current_definitions(monkeypatch):
    """The committed summary was made under the definitions the lab holds now (a redesign without a new lab fails
    here), and every piloted experiment's pilot is committed (one not piloted under these definitions reads
    "untestable (no pilot)"), with the fingerprints of its arms as the summary records them. (That trl-lite still computes those fingerprints: `tests/test_lab_fingerprint.py`; here the
    stand-in fingerprints of `conftest.py` are replaced by the summary's own.)"""
    from trl_lite_lab import fingerprint
    from trl_lite_lab.experiments import EXPERIMENTS, engine_sha256, experiment_named, experiment_sha256
    from trl_lite_lab.pilot import registration

    with open(os.path.join(LAB, "summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    arms, evaluations = dict(summary["fingerprints"]["arms"]), dict(summary["fingerprints"]["evaluations"])
    for path in glob.glob(os.path.join(LAB, "pilots", "*.json")):  # an experiment still running: its pilot's own
        with open(path, encoding="utf-8") as f:
            printed = json.load(f)["fingerprints"]
        arms, evaluations = {**printed["arms"], **arms}, {**printed["evaluations"], **evaluations}
    monkeypatch.setattr(fingerprint, "arm_fingerprint", lambda arm, seed=0: arms[arm.name])
    monkeypatch.setattr(fingerprint, "evaluation_fingerprint", lambda task, policy: evaluations[f"{task}/{policy}"])
    assert summary["engine_sha256"] == engine_sha256()
    # every experiment is reported, but one whose registered runs are still under way (T3 since 2026-11-27): it must
    # be registered (its committed pilot passed under the current definitions), and its tests count in the family
    reported = {entry["id"] for entry in summary["takeaways"]}
    running = [EXPERIMENTS[n] for n in EXPERIMENTS.names() if EXPERIMENTS[n].id not in reported]
    pilots = os.path.join(LAB, "pilots")
    assert all((registration(e, pilots) or {}).get("passed") for e in running), [e.id for e in running]
    registered = [EXPERIMENTS[n] for n in EXPERIMENTS.names()
                  if (registration(EXPERIMENTS[n], pilots) or {}).get("passed")]
    assert summary["family_size"] == sum(len(e.primaries) for e in registered)
    for entry in summary["takeaways"]:
        experiment = experiment_named(entry["id"])
        assert entry["experiment_sha256"] == experiment_sha256(experiment), entry["id"]
        record = registration(experiment, os.path.join(LAB, "pilots"))
        if entry["pilot"] is None:  # not piloted under these definitions (version 3 has not redesigned it yet)
            assert record is None and not entry["registered"], entry["id"]
            assert entry["reads"].startswith("untestable (no pilot)"), entry["id"]
            continue
        assert record is not None, f"{entry['id']}: no committed pilot under the current definitions"
        assert entry["registered"] == record["passed"] and entry["pilot"] == record


@pytest.mark.parametrize("name, extra", [("fairness", ()), ("null_seeds", ()), ("t5_reading", ()), ("t8_reading", ()),
                                         ("clip_grid", ()), ("t5_grid", ("made",)), ("t8_grid", ("made",)),
                                         ("saturation_grid", ()), ("clip_remake", ()), ("clip_seed_count", ())])
def test_the_scripts_json_writer_writes_the_committed_files(tmp_path, name, extra):
    """`lab/results/script_json.py`, the `--json` writer of these scripts, given what a committed file holds (less its
    `made_by` and the scripts' other fixed keys), writes that file again byte for byte; without `--json`, nothing."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("script_json", os.path.join(LAB, "script_json.py"))
    writer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(writer)
    path = os.path.join(LAB, f"{name}.json")
    with open(path, encoding="utf-8") as f:
        committed = json.load(f)
    fixed = {key: committed.pop(key) for key in ("made_by", *extra)}
    out = tmp_path / f"{name}.json"
    writer.write_json(committed, fixed.pop("made_by"), argv=["script.py", "--json", str(out)], **fixed)
    assert out.read_bytes() == open(path, "rb").read()
    writer.write_json(committed, "made", argv=["script.py"])
    assert sorted(os.listdir(tmp_path)) == [f"{name}.json"]
