"""Training curves: a run's main metrics from `trainer.state.log_history`, drawn as one figure.

The paper argues with curves: reward, accuracy, the tokens clipped at each bound, repetition, how concentrated the
rewards are. A run of [`LitePPOTrainer`] logs the same diagnostics (docs/diagnostics.md). [`series`] reads them from a
log history, [`plot`] draws one run or several over each other (the notebook's comparison of two settings), [`save`]
writes the PNG with what it shows in its metadata, and [`add_to_card`] puts the figure into a model card:
[`LitePPOTrainer`] does so for every model and checkpoint it saves (`trl_lite.hub.ModelCardMixin`). For several seeds
of several settings, [`seed_bands`] draws the mean over seeds with a +/- 1 std band (`trl-lite ablate`'s figures, the
lab's report), from [`over_seeds`] and [`smooth`].

Plain matplotlib `Figure`s (no pyplot state): safe in a training process, shown inline by Jupyter.
"""

from __future__ import annotations

import io
import json
import math
import numbers
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass


FIGURE = "training_curves.png"
CARD_HEADING = "## Training curves"
# the card's section the curves go in front of (model_cards/lite_ppo.md; TRL's own template has "### Framework versions")
_BEFORE = re.compile(r"^#{2,3} Framework versions\s*$", re.M)
_SECTION = re.compile(r"^## Training curves\s*$.*?(?=^#{1,3} |\Z)", re.M | re.S)  # an earlier section, to replace


@dataclass(frozen=True)
class Panel:
    """One panel of the figure: a title, a y label, and the logged keys it draws, as `(key, label)` pairs.

    `prefix` also draws every logged key that starts with it (the math benchmarks of `MathEvalCallback`).
    """

    title: str
    ylabel: str
    keys: tuple[tuple[str, str], ...] = ()
    prefix: str | None = None


PANELS = (
    Panel("reward", "mean reward per completion", (("reward", "training reward"),)),
    Panel("held-out accuracy", "accuracy", prefix="math_eval/"),
    Panel("advantages", "value", (("advantages/std", "std"), ("advantages/abs_mean", "mean absolute advantage"))),
    Panel("reward concentration", "share of groups", (("rewards/frac_groups_all_correct", "all correct"),
                                                     ("rewards/frac_groups_all_wrong", "all wrong"),
                                                     ("advantages/frac_zero_std_groups", "zero std (no signal)"))),
    Panel("clipped tokens", "share of completion tokens", (("clip_ratio/low_mean", "low bound (1 - epsilon)"),
                                                           ("clip_ratio/high_mean", "high bound (1 + epsilon_high)"))),
    Panel("repetition and truncation", "share of completions", (("repetition/frac", "repeating"),
                                                                ("overlong/frac_truncated", "cut at the budget"))),
    Panel("completion length", "tokens", (("completions/mean_length", "all"),
                                          ("completions/mean_length_correct", "correct"),
                                          ("completions/mean_length_incorrect", "incorrect"))),
    Panel("entropy", "nats per token", (("entropy", "all"), ("entropy/correct", "correct"),
                                        ("entropy/incorrect", "incorrect"))),
    Panel("KL to the reference", "KL", (("kl", "kl"),)),  # logged by TRL only when beta > 0
)
ACCURACY = "held-out accuracy"  # the panel that extra points (before/after evaluations) go on


def _number(value) -> float | None:
    """A finite real number (numpy scalars included) as a float; None for anything else, booleans too."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return float(value) if math.isfinite(value) else None


def series(log_history: list[dict]) -> dict[str, dict[str, tuple[list[int], list[float]]]]:
    """`{panel title: {label: (steps, values)}}` of every panel key the log holds a finite number for, in `PANELS`'
    order; panels with no data are left out. A step is the log entry's `step` (the optimizer step it was logged at)."""
    out: dict[str, dict[str, tuple[list[int], list[float]]]] = {}
    for panel in PANELS:
        keys = list(panel.keys)
        if panel.prefix:
            seen = {k for log in log_history for k in log if k.startswith(panel.prefix)}
            keys += [(k, k[len(panel.prefix):]) for k in sorted(seen)]
        for key, label in keys:
            points = [(log["step"], _number(log[key])) for log in log_history if key in log and "step" in log]
            points = [(step, value) for step, value in points if value is not None]
            if points:
                out.setdefault(panel.title, {})[label] = ([s for s, _ in points], [v for _, v in points])
    return out


def plot(runs: Mapping[str, list[dict]] | list[dict], points: Mapping[str, Mapping[str, list]] | None = None, *,
         columns: int = 3, title: str | None = None):
    """Draws the curves of one run (a log history) or of several (`{run name: log history}`) over each other: one
    color per line for one run; for several, one color per run (named in a legend below) and a line style per line.
    `points` adds, per run name (`""` for a single run), `{label: [(step, value), ...]}` to the held-out accuracy
    panel, e.g. the accuracy before and after training (drawn as dotted markers: two evaluations, not a curve).
    Returns a matplotlib `Figure`, `columns` panels wide; its `trl_lite_curves` attribute is what it shows (see
    [`summary`])."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    runs = {"": runs} if isinstance(runs, list) else dict(runs)
    drawn = {name: series(history) for name, history in runs.items()}
    pointed = set()  # (run, label) drawn from `points`
    for name, extra in dict(points or {}).items():
        for label, pairs in extra.items():
            pairs = [(int(s), _number(v)) for s, v in pairs]
            pairs = [(s, v) for s, v in pairs if v is not None]
            if pairs:
                drawn.setdefault(name, {}).setdefault(ACCURACY, {})[label] = ([s for s, _ in pairs],
                                                                              [v for _, v in pairs])
                pointed.add((name, label))
    titles = [p.title for p in PANELS if any(p.title in d for d in drawn.values())]
    width = min(columns, max(1, len(titles)))
    rows = max(1, math.ceil(len(titles) / columns))
    fig = Figure(figsize=(4.2 * width, 3.2 * rows + (0.4 if len(drawn) > 1 else 0)), layout="constrained")
    if title:
        fig.suptitle(title)
    styles, markers = ("-", "--", ":", "-."), ("o", "s", "^", "D")
    several = len(drawn) > 1

    def look(line: int, is_point: bool) -> dict:
        # a curve: a line style per line (several runs) or a plain line; points: a marker shape per line, dotted
        if is_point:
            return {"linestyle": ":", "marker": markers[line % len(markers)], "markersize": 6}
        return {"linestyle": styles[line % len(styles)] if several else "-", "marker": "o", "markersize": 3}

    for index, panel_title in enumerate(titles):
        ax = fig.add_subplot(rows, width, index + 1)
        labels = list(dict.fromkeys(label for panels in drawn.values() for label in panels.get(panel_title, {})))
        is_point = {label: any((name, label) in pointed for name in drawn) for label in labels}
        for run, (name, panels) in enumerate(drawn.items()):
            for label, (steps, values) in panels.get(panel_title, {}).items():
                line = labels.index(label)
                ax.plot(steps, values, color=f"C{run if several else line}", label=label,
                        **look(line, is_point[label]))
        if several:  # the lines by style, in gray; the runs' colors are in the figure's legend
            ax.legend([Line2D([], [], color="0.3", **look(i, is_point[label])) for i, label in enumerate(labels)],
                      labels, fontsize="x-small")
        else:
            ax.legend(fontsize="x-small")
        ax.set_title(panel_title)
        ax.set_xlabel("optimizer step")
        ax.set_ylabel(next(p.ylabel for p in PANELS if p.title == panel_title))
        ax.grid(alpha=0.3)
    if several:
        fig.legend([Line2D([], [], color=f"C{run}", linewidth=3) for run in range(len(drawn))], list(drawn),
                   loc="outside lower center", ncols=len(drawn), fontsize="small")
    fig.trl_lite_curves = summary(drawn)
    return fig


def summary(drawn: Mapping[str, Mapping[str, Mapping[str, tuple[list[int], list[float]]]]]) -> list[dict]:
    """What a figure shows, one row per line: `{panel, run, label, points, first_step, first, last_step, last}`."""
    rows = []
    for panel in PANELS:
        for name, panels in drawn.items():
            for label, (steps, values) in panels.get(panel.title, {}).items():
                rows.append({"panel": panel.title, "run": name, "label": label, "points": len(steps),
                             "first_step": steps[0], "first": values[0], "last_step": steps[-1], "last": values[-1]})
    return rows


def png(fig, dpi: int = 100) -> bytes:
    """`fig` (from [`plot`]) as PNG bytes whose `Description` text chunk is its [`summary`] as JSON, so a reader (or
    a test) can check the picture against the log it came from; `IPython.display.Image(curves.png(fig))` shows it."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, metadata={"Title": "trl-lite training curves",
                                                         "Description": json.dumps(fig.trl_lite_curves)})
    return buffer.getvalue()


def save(fig, path: str, dpi: int = 100) -> str:
    """Writes [`png`]`(fig)` to `path`; returns `path`."""
    with open(path, "wb") as f:
        f.write(png(fig, dpi))
    return path


def table(rows: list[dict]) -> str:
    """A Markdown table of a figure's [`summary`]: each line's first and last value, with their steps (a `run` column
    when the figure overlays runs)."""
    runs = any(row["run"] for row in rows)
    head = "| panel | " + ("run | " if runs else "") + "line | first | last |"
    lines = [head, "|---" * head.count(" | ") + "|---|"]
    for row in rows:
        lines.append(f"| {row['panel']} | " + (f"{row['run']} | " if runs else "") + f"{row['label']} | "
                     f"{row['first']:.4g} (step {row['first_step']}) | {row['last']:.4g} (step {row['last_step']}) |")
    return "\n".join(lines) + "\n"


def card_section(rows: list[dict], figure: str = FIGURE) -> str:
    """The model card's "Training curves" section: the figure, then a table of each line's first and last value."""
    panels = list(dict.fromkeys(row["panel"] for row in rows))
    return "\n".join([CARD_HEADING, "", f"![Training curves: {', '.join(panels)}]({figure})", "",
                      "Each line's first and last value: the run's log (`log_history` in `trainer_state.json`) and, "
                      "on the held-out accuracy panel, the evaluations made before and after training. The figure's "
                      "PNG holds the same rows in its `Description` metadata.", "", table(rows)])


def draw(log_history: list[dict], points: Mapping[str, list] | None = None) -> tuple[list[dict], bytes | None]:
    """The figure of one run, `log_history` with `points` (`{label: [(step, value), ...]}`) on the held-out accuracy
    panel: its [`summary`] rows and its [`png`] (None when there is nothing to draw)."""
    fig = plot(log_history, {"": dict(points or {})})
    return fig.trl_lite_curves, (png(fig) if fig.trl_lite_curves else None)


def add_to_card(output_dir: str, log_history: list[dict], points: Mapping[str, list] | None = None, *,
                drawn: tuple[list[dict], bytes | None] | None = None) -> str | None:
    """Draws `log_history` (and `points`, `{label: [(step, value), ...]}` on the held-out accuracy panel) into
    `output_dir/training_curves.png` and puts its section into the model card there (`README.md`): in front of
    "Framework versions", or in place of the section an earlier call wrote. `drawn` is that figure's [`draw`] when it
    was drawn already (for another folder of the same run). Returns the figure's path; None when there is no card, or
    nothing to draw (then a figure left by an earlier call is removed, so the folder never shows a stale one)."""
    card, path = os.path.join(output_dir, "README.md"), os.path.join(output_dir, FIGURE)
    if not os.path.exists(card):
        return None
    rows, image = drawn if drawn is not None else draw(log_history, points)
    with open(card, encoding="utf-8") as f:
        text = _SECTION.sub("", f.read())
    if rows:
        with open(path, "wb") as f:
            f.write(image)
        section = card_section(rows)
        match = _BEFORE.search(text)
        text = (text[:match.start()] + section + "\n" + text[match.start():] if match
                else text.rstrip("\n") + "\n\n" + section)
    elif os.path.exists(path):
        os.remove(path)
    with open(card, "w", encoding="utf-8") as f:
        f.write(text)
    return path if rows else None


################
# Several seeds: mean and a +/- 1 std band
################
def mean_std(values: list) -> tuple[float, float]:
    """Mean and sample standard deviation (n - 1) of the finite values (None and NaN left out); the std of one value is
    0, and both are NaN when none is left."""
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not values:
        return float("nan"), float("nan")
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1) if len(values) > 1 else 0.0
    return mean, math.sqrt(var)


def over_seeds(histories: list[list[dict]], key: str) -> tuple[list[int], list[float], list[float]]:
    """Per logged step: the mean and std ([`mean_std`]) of `key` over the runs (log histories, one per seed) that
    logged it at that step."""
    by_step: dict[int, list[float]] = {}
    for history in histories:
        for row in history:
            if row.get(key) is not None:
                by_step.setdefault(row["step"], []).append(float(row[key]))
    steps = sorted(by_step)
    stats = [mean_std(by_step[s]) for s in steps]
    return steps, [m for m, _ in stats], [s for _, s in stats]


def smooth(values: list[float], window: int) -> list[float]:
    """Trailing moving average over up to `window` points (the first points average what there is)."""
    return [sum(values[max(0, i - window + 1) : i + 1]) / len(values[max(0, i - window + 1) : i + 1])
            for i in range(len(values))]


def seed_bands(panels: Mapping[str, Mapping[str, tuple[list[list[dict]], str]]], *, ylabel: str, window: int = 5):
    """One panel per title of `panels` (`{title: {line label: (log histories over seeds, key)}}`), each line the mean
    over seeds ([`over_seeds`]) smoothed over `window` logged points ([`smooth`]), with a +/- 1 std band.
    Returns a matplotlib `Figure`."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6 * len(panels), 4), layout="constrained")
    axes = [fig.add_subplot(1, len(panels), i + 1) for i in range(len(panels))]
    for ax, (title, lines) in zip(axes, panels.items()):
        for label, (histories, key) in lines.items():
            steps, mean, std = over_seeds(histories, key)
            if not steps:
                continue
            mean, std = smooth(mean, window), smooth(std, window)
            line = ax.plot(steps, mean, label=label)[0]
            ax.fill_between(steps, [m - s for m, s in zip(mean, std)], [m + s for m, s in zip(mean, std)],
                            color=line.get_color(), alpha=0.15)
        ax.set_xlabel("optimizer step")
        ax.set_title(title)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small")
    axes[0].set_ylabel(ylabel)
    return fig


def save_figure(fig, path: str, dpi: int = 100) -> str:
    """Writes a plain PNG of `fig` to `path` (no metadata: [`save`] adds what a [`plot`] figure shows); returns
    `path`."""
    fig.savefig(path, dpi=dpi)
    return path
