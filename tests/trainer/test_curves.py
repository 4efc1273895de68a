"""`trl_lite.curves`: the training curves read from a log history, drawn, saved with what they show, and put into the
model card; then `trl-lite train` leaving the figure next to its model, checked against its card and its log."""

import json
import math
import os

import numpy as np
import pytest
from PIL import Image

from trl_lite import curves
from trl_lite import train as train_lite

# Three logging steps of a run, as `trainer.state.log_history` holds them: a NaN, a boolean and a missing key are left
# out, an entry without a step too; a numpy scalar counts.
LOG = [
    {"step": 10, "reward": 0.25, "advantages/std": 0.8, "clip_ratio/low_mean": 0.0, "clip_ratio/high_mean": 0.01,
     "math_eval/math500": 0.30, "loss": 0.1},
    {"step": 20, "reward": 0.5, "advantages/std": float("nan"), "clip_ratio/low_mean": 0.02,
     "clip_ratio/high_mean": 0.03},
    {"step": 30, "reward": 0.75, "advantages/std": 0.6, "clip_ratio/low_mean": 0.01, "clip_ratio/high_mean": 0.05,
     "math_eval/math500": np.float32(0.40), "repetition/frac": 0.125, "overlong/frac_truncated": True},
    {"train_runtime": 12.0, "reward": 99.0},
]


def test_series_reads_each_panels_keys_by_step():
    got = curves.series(LOG)
    # panels in PANELS' order; only those with data
    assert list(got) == ["reward", "held-out accuracy", "advantages", "clipped tokens", "repetition and truncation"]
    assert got["reward"] == {"training reward": ([10, 20, 30], [0.25, 0.5, 0.75])}  # the stepless 99.0 is not a point
    assert got["advantages"] == {"std": ([10, 30], [0.8, 0.6])}  # the NaN at step 20 is dropped
    # the math_eval/ prefix: MathEvalCallback's benchmarks, labelled by name
    assert got["held-out accuracy"] == {"math500": ([10, 30], [0.30, float(np.float32(0.40))])}
    assert got["clipped tokens"] == {"low bound (1 - epsilon)": ([10, 20, 30], [0.0, 0.02, 0.01]),
                                     "high bound (1 + epsilon_high)": ([10, 20, 30], [0.01, 0.03, 0.05])}
    assert got["repetition and truncation"] == {"repeating": ([30], [0.125])}  # the boolean is not a share
    assert curves.series([{"step": 1, "loss": 0.3}]) == {}  # nothing a panel draws


def test_plot_overlays_runs_and_adds_points_to_the_accuracy_panel():
    other = [{"step": 10, "reward": 0.5}, {"step": 30, "reward": 1.0}]
    fig = curves.plot({"a": LOG, "b": other}, {"a": {"sampled": [(0, 0.2), (30, 0.35), (40, float("nan"))]}})
    rows = {(r["panel"], r["run"], r["label"]): r for r in fig.trl_lite_curves}
    # one row per drawn line: run a's five panels' lines plus its accuracy points, run b's reward
    assert len(rows) == len(fig.trl_lite_curves) == 8
    assert rows[("reward", "b", "training reward")] == {"panel": "reward", "run": "b", "label": "training reward",
                                                        "points": 2, "first_step": 10, "first": 0.5,
                                                        "last_step": 30, "last": 1.0}
    assert rows[("held-out accuracy", "a", "sampled")]["first"] == 0.2
    assert rows[("held-out accuracy", "a", "sampled")]["last_step"] == 30
    assert len(fig.axes) == 5  # reward, accuracy, advantages, clipped tokens, repetition: 3 + 2 on two rows
    reward_axis = next(ax for ax in fig.axes if ax.get_title() == "reward")
    # two lines, one color per run: C0 and C1
    assert [line.get_color() for line in reward_axis.get_lines()] == ["C0", "C1"]
    # the panel's legend names its lines (styles), the figure's names the runs (colors)
    assert [t.get_text() for t in reward_axis.get_legend().get_texts()] == ["training reward"]
    (runs_legend,) = fig.legends
    assert [t.get_text() for t in runs_legend.get_texts()] == ["a", "b"]
    assert [h.get_color() for h in runs_legend.legend_handles] == ["C0", "C1"]
    # the accuracy points: dotted, a marker shape per line (two evaluations, not a curve)
    accuracy_axis = next(ax for ax in fig.axes if ax.get_title() == "held-out accuracy")
    styles = {line.get_label(): (line.get_linestyle(), line.get_marker()) for line in accuracy_axis.get_lines()}
    assert styles == {"math500": ("-", "o"), "sampled": (":", "s")}
    # one run: a color per line
    single = curves.plot(LOG)
    clipped = next(ax for ax in single.axes if ax.get_title() == "clipped tokens")
    assert [line.get_color() for line in clipped.get_lines()] == ["C0", "C1"] and not single.legends


def test_save_writes_a_png_that_holds_what_it_shows(tmp_path):
    fig = curves.plot(LOG)
    path = curves.save(fig, str(tmp_path / "c.png"), dpi=50)
    with Image.open(path) as image:
        # 3 panels a row: 4.2 in x 3 at 50 dpi = 630 px wide; 2 rows x 3.2 in x 50 dpi = 320 px high
        assert image.size == (630, 320)
        assert json.loads(image.text["Description"]) == fig.trl_lite_curves
        assert len(image.convert("RGB").getcolors(maxcolors=1 << 16)) > 20  # drawn, not blank


def test_table_and_card_section():
    rows = curves.plot(LOG).trl_lite_curves
    table = curves.table(rows).splitlines()
    assert table[:2] == ["| panel | line | first | last |", "|---|---|---|---|"]
    assert "| reward | training reward | 0.25 (step 10) | 0.75 (step 30) |" in table
    section = curves.card_section(rows)
    assert section.startswith("## Training curves\n\n![Training curves: reward, held-out accuracy, advantages, "
                              "clipped tokens, repetition and truncation](training_curves.png)")
    # several runs: a run column
    overlay = curves.table(curves.plot({"x": LOG, "y": LOG}).trl_lite_curves).splitlines()
    assert overlay[0] == "| panel | run | line | first | last |" and overlay[1] == "|---|---|---|---|---|"


def test_add_to_card_puts_the_section_before_the_versions(tmp_path):
    assert curves.add_to_card(str(tmp_path), LOG) is None  # no card: nothing written
    assert not (tmp_path / curves.FIGURE).exists()
    (tmp_path / "README.md").write_text("# m\n\n## Evaluation\n\nx\n\n## Framework versions\n\n- trl: 1\n")
    path = curves.add_to_card(str(tmp_path), LOG, {"greedy": [(0, 0.1), (30, 0.2)]})
    assert path == str(tmp_path / curves.FIGURE) and os.path.exists(path)
    card = (tmp_path / "README.md").read_text()
    assert card.index("## Evaluation") < card.index("## Training curves") < card.index("## Framework versions")
    assert "| held-out accuracy | greedy | 0.1 (step 0) | 0.2 (step 30) |" in card
    # again, with a longer log (a later save into the same folder): one section, the new one
    curves.add_to_card(str(tmp_path), LOG + [{"step": 40, "reward": 1.0}])
    card = (tmp_path / "README.md").read_text()
    assert card.count("## Training curves") == 1 and "| reward | training reward | 0.25 (step 10) | 1 (step 40) |" in card
    assert card.endswith("## Framework versions\n\n- trl: 1\n") and "| greedy |" not in card
    # then nothing to draw: the section and the figure both go, so neither is stale
    assert curves.add_to_card(str(tmp_path), [{"step": 1, "loss": 0.2}]) is None
    assert "## Training curves" not in (tmp_path / "README.md").read_text()
    assert not (tmp_path / curves.FIGURE).exists()


def test_add_to_card_follows_trls_own_template_and_cards_without_versions(tmp_path):
    # TRL's card template has "### Framework versions"; a card without the heading gets the section at its end
    (tmp_path / "README.md").write_text("# m\n\n### Framework versions\n\n- TRL: 1.16.0\n")
    curves.add_to_card(str(tmp_path), LOG)
    card = (tmp_path / "README.md").read_text()
    assert card.index("## Training curves") < card.index("### Framework versions")
    other = tmp_path / "other"
    other.mkdir()
    (other / "README.md").write_text("# m\n\nsome text\n")
    curves.add_to_card(str(other), LOG)
    assert (other / "README.md").read_text().startswith("# m\n\nsome text\n\n## Training curves\n")


def test_a_failed_figure_costs_the_save_nothing(tmp_path, caplog):
    # the card's mixin draws after the card is written: a figure that cannot be drawn is logged, never raised
    from trl_lite.hub import ModelCardMixin

    (tmp_path / "README.md").write_text("# m\n")

    class Trainer(ModelCardMixin):
        state = type("State", (), {"log_history": LOG})()
        curves_points = {"greedy": [(0, "not a number", "extra")]}  # unpacks badly: a ValueError

    with caplog.at_level("WARNING", logger="trl_lite.hub"):
        Trainer()._add_curves(str(tmp_path))
    assert "no training curves" in caplog.text and "ValueError" in caplog.text
    assert (tmp_path / "README.md").read_text() == "# m\n"


def test_every_lite_ppo_trainer_card_embeds_its_curves(tmp_path, tiny_model_dir):
    # LitePPOTrainer(...) as a notebook builds it, trained, then save_model(): the card embeds the curves figure it
    # sits beside, and so does a checkpoint's; the figure shows the run's own log
    from tests.tiny import train_run
    from trl_lite import LitePPOConfig, LitePPOTrainer

    trainer = train_run(LitePPOTrainer, LitePPOConfig, tiny_model_dir, tmp_path, max_steps=2, logging_steps=1,
                        save_strategy="steps", save_steps=1)
    trainer.save_model()
    for folder in (tmp_path, tmp_path / "checkpoint-1"):
        card = (folder / "README.md").read_text()
        assert "## Training curves" in card and "](training_curves.png)" in card, folder
        with Image.open(folder / curves.FIGURE) as image:
            shown = json.loads(image.text["Description"])
        reward = next(r for r in shown if r["panel"] == "reward")
        rewards = [row["reward"] for row in trainer.state.log_history if "reward" in row]
        assert reward["first"] == rewards[0] and reward["first_step"] == 1
        # the checkpoint's figure has the log up to its step; the final one, both steps
        assert reward["last_step"] == (1 if folder.name == "checkpoint-1" else 2)
        assert reward["last"] == rewards[reward["last_step"] - 1]


def _card_rows(card: str) -> list[tuple[str, str, float, int, float, int]]:
    """The card's curves table as (panel, line, first, first step, last, last step)."""
    section = card[card.index(curves.CARD_HEADING):card.index("## Framework versions")]
    out = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 4 and "(step" in cells[2]:
            (first, first_step), (last, last_step) = ([float(v.split(" (step ")[0]), int(v.split("step ")[1][:-1])]
                                                      for v in cells[2:])
            out.append((cells[0], cells[1], first, first_step, last, last_step))
    return out


@pytest.mark.slow
def test_train_leaves_the_figure_its_card_describes(tmp_path, capsys):
    # `trl-lite train`, 4 steps logged at each, a checkpoint at step 2: the figure sits next to the model and the
    # checkpoint, the card embeds it, and the PNG, the card and trainer_state.json agree line by line
    train_lite.main(*train_lite.parse_cli(["--max_steps", "4", "--logging_steps", "1", "--eval_problems", "50",
                                           "--save_steps", "2", "--save_total_limit", "2", "--output_dir", str(tmp_path)]))
    out = capsys.readouterr().out
    card = (tmp_path / "README.md").read_text()
    assert "![Training curves: reward, held-out accuracy, advantages, reward concentration, clipped tokens, " \
           "repetition and truncation, completion length, entropy](training_curves.png)" in card
    assert card.index("## Evaluation") < card.index("## Training curves") < card.index("## Framework versions")
    with Image.open(tmp_path / curves.FIGURE) as image:
        assert image.size == (1260, 960)  # 8 panels: 3 x 4.2 in, 3 x 3.2 in, at 100 dpi
        shown = json.loads(image.text["Description"])
        assert len(image.convert("RGB").getcolors(maxcolors=1 << 16)) > 50
    # the PNG's rows are the card's rows, to the card's 4 significant digits
    card_rows = _card_rows(card)
    assert [(r[0], r[1], r[3], r[5]) for r in card_rows] == [(r["panel"], r["label"], r["first_step"], r["last_step"])
                                                             for r in shown]
    for row, (_, _, first, _, last, _) in zip(shown, card_rows):
        assert float(f"{row['first']:.4g}") == first and float(f"{row['last']:.4g}") == last
    # ... and the log's: the reward at steps 1 and 4
    log = json.loads((tmp_path / "trainer_state.json").read_text())["log_history"]
    reward = next(r for r in shown if r["panel"] == "reward")
    assert (reward["first"], reward["last"], reward["points"]) == (log[0]["reward"], log[3]["reward"], 4)
    # the accuracy points are the printed before/after table (greedy, sampled), at step 0 and step 4
    printed = {line.split()[0]: [float(v) for v in line.split()[1:]] for line in out.splitlines()
               if line.split()[:1] in (["before"], ["after"])}
    accuracy = {r["label"]: r for r in shown if r["panel"] == "held-out accuracy"}
    for index, kind in enumerate(("greedy", "sampled")):
        row = accuracy[f"arithmetic/hard {kind}"]
        assert (row["first_step"], row["last_step"]) == (0, 4)
        assert math.isclose(round(row["first"], 3), printed["before"][index])
        assert math.isclose(round(row["last"], 3), printed["after"][index])
    # the checkpoint's card has its own figure, of the two steps it had seen
    with Image.open(tmp_path / "checkpoint-2" / curves.FIGURE) as image:
        assert {r["last_step"] for r in json.loads(image.text["Description"])} == {2}
    assert "](training_curves.png)" in (tmp_path / "checkpoint-2" / "README.md").read_text()
