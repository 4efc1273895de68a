"""The ablation runner end to end: 2 recipes x 1 seed x 2 steps on the built-in task, figures, table, resume."""

from __future__ import annotations

import json
import os

import pytest

from trl_lite import ablate as ablate_module
from trl_lite.ablate import FIGURES, ablate, summarize
from trl_lite.curves import mean_std, over_seeds, seed_bands, smooth
from trl_lite.cli import main as cli_main

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_two_recipes_end_to_end_then_resume(tmp_path, monkeypatch, capsys):
    out = tmp_path / "ablation"
    # 2 steps of 16 completions (the built-in CPU setting), 10 held-out problems: a few seconds per run
    argv = ["ablate", "--recipes", "lite_ppo,dapo", "--seeds", "1", "--max-steps", "2", "--output-dir", str(out),
            "--eval-problems", "10"]
    assert cli_main(argv) == 0
    table = capsys.readouterr().out
    for name in FIGURES:
        with open(out / name, "rb") as f:
            assert f.read(8) == PNG_MAGIC, name
    for recipe in ("lite_ppo", "dapo"):
        folder = out / "runs" / recipe / "seed0"
        rows = [json.loads(line) for line in open(folder / "metrics.jsonl")]
        assert [row["step"] for row in rows] == [1, 2]
        assert all("entropy" in row and "clip_ratio/high_mean" in row for row in rows)
        assert "rewards/exact_answer_reward/mean" in rows[0]  # rewards are logged on generation steps (step 1 of 4)
        result = json.load(open(folder / "result.json"))
        assert result["steps"] == 2 and 0.0 <= result["heldout_accuracy"] <= 1.0
        # 2 steps of one generation batch (8 prompts x 8): 64 completions per generation round
        assert result["completions_generated"] == 64 * result["mean_generation_rounds"]
    lines = (out / "summary.md").read_text().splitlines()
    assert lines[2].startswith("| recipe | seeds | final train accuracy") and len(lines) == 6
    assert lines[4].startswith("| lite_ppo | 1 |") and lines[5].startswith("| dapo | 1 |")
    assert lines[4] in table.splitlines() and lines[5] in table.splitlines()  # printed too

    # Resume: finished runs are not repeated
    def no_rerun(*args, **kwargs):
        raise AssertionError("a finished run was repeated")

    monkeypatch.setattr(ablate_module, "run_one", no_rerun)
    again = ablate(["lite_ppo", "dapo"], 1, 2, str(out), progress=False)
    assert again["table"] == "\n".join(lines[2:]) + "\n"


def test_unfinished_run_starts_over(tmp_path, monkeypatch):
    calls = []

    def fake_run(recipe, seed, output_dir, **kwargs):
        calls.append((recipe, seed))
        folder = ablate_module.run_dir(output_dir, recipe, seed)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "metrics.jsonl"), "w") as f:
            f.write(json.dumps({"step": 1, "rewards/r/mean": 0.5}) + "\n")
        result = {"recipe": recipe, "seed": seed, "accuracy_key": "rewards/r/mean", "final_train_accuracy": 0.5,
                  "completions_generated": 64, "mean_generation_rounds": 1.0}
        with open(os.path.join(folder, "result.json"), "w") as f:
            json.dump(result, f)
        return result

    monkeypatch.setattr(ablate_module, "run_one", fake_run)
    os.makedirs(ablate_module.run_dir(str(tmp_path), "grpo", 0))  # interrupted: a folder without result.json
    ablate(["grpo"], 2, 1, str(tmp_path), progress=False)
    assert calls == [("grpo", 0), ("grpo", 1)]
    ablate(["grpo"], 2, 1, str(tmp_path), progress=False)
    assert calls == [("grpo", 0), ("grpo", 1)]  # both finished now


def test_bad_input_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"recipes='lite_ppo,ppo' names \['ppo'\]; expected recipes among"):
        ablate(["lite_ppo", "ppo"], 1, 1, str(tmp_path))
    with pytest.raises(ValueError, match="seeds=0 is not supported; expected an int >= 1"):
        ablate(["lite_ppo"], 0, 1, str(tmp_path))
    with pytest.raises(ValueError, match=r"--set 'epsilon_high' is not supported; expected field=value"):
        ablate_module._parse_set(["epsilon_high"])
    assert ablate_module._parse_set(["epsilon_high=0.32", "overlong_filter=true"]) == {
        "epsilon_high": 0.32, "overlong_filter": True}


def test_seed_band_and_summary_numbers():
    # two seeds logging accuracy 0.5 / 0.7 at step 1 and 0.6 / 1.0 at step 2
    runs = [[{"step": 1, "acc": 0.5}, {"step": 2, "acc": 0.6}], [{"step": 1, "acc": 0.7}, {"step": 2, "acc": 1.0}]]
    steps, mean, std = over_seeds(runs, "acc")
    assert steps == [1, 2]
    assert mean == pytest.approx([0.6, 0.8])
    assert std == pytest.approx([0.1414214, 0.2828427])  # sqrt((0.1^2 + 0.1^2) / 1), sqrt((0.2^2 + 0.2^2) / 1)
    assert mean_std([None, float("nan"), 2.0]) == (2.0, 0.0)
    assert smooth([1.0, 2.0, 3.0, 4.0], 2) == [1.0, 1.5, 2.5, 3.5]  # the first point alone, then (1+2)/2, (2+3)/2, ...
    # the figure draws that mean, and its band spans mean -/+ std: at step 2, 0.8 -/+ 0.2828 = 0.5172 .. 1.0828
    ax = seed_bands({"acc": {"lite_ppo": (runs, "acc")}}, ylabel="accuracy", window=1).axes[0]
    assert list(ax.lines[0].get_xdata()) == [1, 2] and list(ax.lines[0].get_ydata()) == pytest.approx([0.6, 0.8])
    ys = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert (min(ys), max(ys)) == pytest.approx((0.6 - 0.1414214, 0.8 + 0.2828427))
    table, rows = summarize({"dapo": [
        {"final_train_accuracy": 0.6, "heldout_accuracy": 0.5, "mean_generation_rounds": 2.0,
         "completions_generated": 256},
        {"final_train_accuracy": 1.0, "heldout_accuracy": 0.7, "mean_generation_rounds": 1.0,
         "completions_generated": 128},
    ]})
    assert rows[0]["completions_generated"] == 192 and rows[0]["generation_rounds"] == 1.5
    assert "| dapo | 2 | 0.800 ± 0.283 | 0.600 ± 0.141 | 192 | 1.50 |" in table


def test_local_dataset_and_overrides(tmp_path):
    from trl_lite.tasks.arithmetic import arithmetic_dataset

    data = tmp_path / "problems.jsonl"
    arithmetic_dataset("hard", split="train", num_per_level=16, seed=0).to_json(str(data))
    # the built-in CPU settings are not applied to other datasets: --set gives the short completions and batch
    summary = ablate(["grpo"], 1, 1, str(tmp_path / "out"), progress=False, dataset=str(data),
                     reward_funcs=["exact_answer"],
                     overrides={"max_completion_length": 14, "per_device_train_batch_size": 16})
    result = json.load(open(tmp_path / "out" / "runs" / "grpo" / "seed0" / "result.json"))
    assert result["completions_generated"] == 16 and "heldout_accuracy" not in result  # no held-out set
    assert "| grpo | 1 |" in summary["table"] and "| n/a |" in summary["table"]
