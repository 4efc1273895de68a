"""Clip scaling's two checks of 2026-11-29 (ninth session): its registered runs made again on this machine
(`lab/results/clip_remake.py`) and its arms at fewer passes on exploratory seeds (`lab/results/saturation_grid.py`)."""

from __future__ import annotations

import json
import os

import pytest

from trl_lite_lab.experiments import EXPERIMENTS


def _run(folder, acc, losses, extra=None):
    """A run folder as the runner writes it, with only what `clip_remake` reads."""
    folder.mkdir(parents=True)
    result = {"eval": {"acc": acc, "train_rise": 0.2, "update_norm": 2.0, "eval_s": 1.0},
              "product": {"commit": "c0ffee"}}
    (folder / "result.json").write_text(json.dumps(result))
    rows = [{"step": i + 1, "loss": loss, "step_time": 0.1 * (i + 1), **(extra or {})} for i, loss in enumerate(losses)]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_a_remade_run_against_the_registered_one(tmp_path, results_script):
    remake = results_script("clip_remake")
    registered = _run(tmp_path / "registered", 0.463, [-0.086, -0.345, 0.119, 0.2])
    # the same first step, a rounding difference at step 2 (1e-8: not a different trajectory), 0.01 apart from step 3
    remade = _run(tmp_path / "remade", 0.730, [-0.086, -0.345 + 1e-8, 0.109, 0.25])
    row = remake.compare(str(remade), str(registered))
    assert (row["first_step_differing"], row["diverged_at"]) == (2, 3)
    assert row["step1_loss_diff"] == 0.0 and (row["acc"], row["acc_registered"]) == (0.730, 0.463)
    # made twice on one machine: every logged figure and held-out measure equal, wall times aside
    again = _run(tmp_path / "again", 0.730, [-0.086, -0.345 + 1e-8, 0.109, 0.25])
    logged = (again / "metrics.jsonl").read_text()
    (again / "metrics.jsonl").write_text(logged.replace('"step_time": 0.1', '"step_time": 9.9'))
    assert remake.same_everywhere(str(remade), str(again)) and not remake.same_everywhere(str(remade), str(registered))
    # a NaN measure (nothing to count) is the same NaN in both; a different count of steps is not the same run
    nan = _run(tmp_path / "nan", 0.730, [-0.086, -0.345 + 1e-8, 0.109, 0.25],
               {"repetition/frac_truncated": float("nan")})
    assert not remake.same_everywhere(str(remade), str(nan))
    assert remake.same_everywhere(str(nan), str(nan))
    short = _run(tmp_path / "short", 0.730, [-0.086, -0.345])
    with pytest.raises(ValueError, match="2 logged steps, the registered run 4"):
        remake.compare(str(short), str(registered))


def test_the_saturation_grid_by_hand(results_script):
    grid = results_script("saturation_grid")
    e = EXPERIMENTS["clip-scaling"]
    # at 8 passes the grid's arm is the registered one; at 4 only the passes (and so the generation batches) change
    for label in grid.LABELS:
        assert grid.grid_arm(label, 8) == e.arms[label]
        four = grid.grid_arm(label, 4)
        assert four.settings["num_iterations"] == 4 and four.steps == e.arms[label].steps == 960
        assert {k: v for k, v in four.settings.items() if k != "num_iterations"} == {
            k: v for k, v in e.arms[label].settings.items() if k != "num_iterations"}
    with pytest.raises(ValueError, match="K=7: 960 steps are not a whole number"):
        grid.grid_arm("small 0.2", 7)  # 960 / (4 x 7) is not whole
    with pytest.raises(ValueError, match="seed=15: the grid's seeds are 3000 and up"):
        grid.run("small 0.2", 4, 15, "/nonexistent")
    # one seed: small 0.70 / 0.72 / 0.75 at 0.2 / 0.28 / 0.32, large 0.73 / 0.735 at 0.28 / 0.32:
    # saturation (0.75 - 0.72) - (0.735 - 0.73) = 0.025; small gains 0.75 - 0.70 = 0.05; the design's primaries agree
    accs = {"small 0.2": 0.70, "small 0.28": 0.72, "small 0.32": 0.75, "large 0.28": 0.73, "large 0.32": 0.735}
    assert grid.contrasts(accs) == pytest.approx({"saturation": 0.025, "small gains": 0.05})
    runs = {label: {"eval": {"acc": acc}} for label, acc in {**accs, "large 0.2": 0.70}.items()}
    assert [p.effect(runs) for p in e.primaries] == pytest.approx([0.05, 0.025])


def test_the_grids_yardstick_by_hand(results_script):
    grid = results_script("saturation_grid")
    # effects -0.1, 0, +0.1: centred on their median (0) and shifted by +0.05, a drawn seed is positive with
    # probability 2/3. At 16 seeds the sign test is below 0.05 / 12 = 0.004167 only with 15 or more on one side
    # (2 x P(Bin(16, 1/2) <= 1) = 2 x 17 / 65536 = 0.00052; with 2, 2 x 137 / 65536 = 0.00418, just above), so
    # P(at least 15 of 16 positive) = 16 x (2/3)^15 x (1/3) + (2/3)^16 = 6 x (2/3)^15 = 0.0137; standard error at
    # 20,000 draws sqrt(0.0137 x 0.9863 / 20000) = 0.00082
    assert grid.fair_chance([-0.1, 0.0, 0.1], 16) == pytest.approx(6 * (2 / 3) ** 15, abs=4 * 0.00082)
    # shifted the other way every drawn seed of a tight sample is negative: the median is on the wrong side, never
    assert grid.fair_chance([-0.001, 0.0, 0.001], 16, delta=-0.05) == 0.0
    # a tight sample shifted by +0.05: every seed positive, always (2 / 2^16 < 0.05 / 12)
    assert grid.fair_chance([-0.001, 0.0, 0.001], 16) == 1.0


def test_the_seed_count_rule_by_hand(results_script, tmp_path):
    """`lab/results/clip_seed_count.py`, which chose version 3.3's 64 seeds: version 3.2's own gate, read at more seeds
    on version 3.2's registered effects rebuilt from each arm's per-seed accuracy."""
    count = results_script("clip_seed_count")
    # the rule: the smallest multiple of 8 whose miss is under a quarter of the allowed 0.2, i.e. under 0.05
    assert count.choose({32: 0.4, 48: 0.14, 56: 0.087, 64: 0.029}, 0.2) == 64
    assert count.choose({48: 0.049, 64: 0.01}, 0.2) == 48
    assert count.choose({48: 0.05, 56: 0.06}, 0.2) is None  # 0.05 is not under 0.05
    assert count.choose({50: 0.0, 56: 0.01}, 0.2) == 56  # 50 is not a multiple of 8
    # the rebuilt evidence gives version 3.2's own gate value at its own 32 seeds, 0.40085 (v3.2-clip-32/summary.json:
    # "0.401 of labs"), and the committed reading is what the script makes now
    archived = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results", "v3.2-clip-32",
                            "summary.json")
    with open(archived, encoding="utf-8") as f:
        (v32,) = [t for t in json.load(f)["takeaways"] if t["id"] == "clip-scaling"]
    gate = [g for g in v32["gates"] if g["name"].startswith("tests that do not reject")][0]
    made = count.reading(archived)
    assert made["miss"]["32"] == gate["value"] == pytest.approx(0.40085)
    with open(os.path.join(os.path.dirname(archived), "..", "clip_seed_count.json"), encoding="utf-8") as f:
        committed = json.load(f)
    assert committed["summary"] == "lab/results/v3.2-clip-32/summary.json"  # the path as given, from the clone's root
    assert {k: v for k, v in committed.items() if k not in ("made_by", "summary")} == {
        k: v for k, v in made.items() if k != "summary"} and made["chosen"] == 64
    # one arm short of the summary's seed count is refused, naming the file and both counts
    v32["details"]["accuracy small 0.2"]["per_seed"].pop()
    short = tmp_path / "summary.json"
    short.write_text(json.dumps({"takeaways": [v32]}))
    with pytest.raises(ValueError, match=r"summary.json: clip scaling's arms hold \[31, 32\] seeds, its summary says 32"):
        count.registered_runs(str(short))
