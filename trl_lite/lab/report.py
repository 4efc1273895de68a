"""Verdicts, figures and `summary.md` from the lab's finished runs.

The verdict rule, fixed before running (issue 13):

- *reproduced*: the per-seed effect (positive = the paper's direction) is positive on every seed and the 95% t-interval
  of its mean excludes 0;
- *not reproduced*: the same holds with the opposite sign;
- *inconclusive*: neither (including fewer than 2 seeds);
- *untestable*: the experiment's precondition failed on some seed (the reason is printed).
"""

from __future__ import annotations

import json
import math
import os

from .experiments import EXPERIMENTS
from .stats import mean

# Two-sided 95% Student t quantiles, t_{0.975, df}
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        15: 2.131, 20: 2.086, 30: 2.042}


def t_quantile(df: int) -> float:
    """t_{0.975, df}; between tabulated values the next smaller df (conservative), 1.96 beyond 30."""
    if df > 30:
        return 1.96
    return T975[max(d for d in T975 if d <= df)]


def interval(effects: list[float]) -> tuple[float, float, float]:
    """Mean and 95% t-interval of the per-seed effects; the interval is (nan, nan) with one seed."""
    n = len(effects)
    m = sum(effects) / n
    if n < 2:
        return m, float("nan"), float("nan")
    sd = math.sqrt(sum((e - m) ** 2 for e in effects) / (n - 1))
    half = t_quantile(n - 1) * sd / math.sqrt(n)
    return m, m - half, m + half


def verdict(effects: list[float], untestable: str | None = None) -> str:
    """The verdict of one experiment from its per-seed effects (see the module docstring)."""
    if untestable:
        return "untestable"
    if len(effects) < 2 or any(math.isnan(e) for e in effects):
        return "inconclusive"
    _, low, high = interval(effects)
    if all(e > 0 for e in effects) and low > 0:
        return "reproduced"
    if all(e < 0 for e in effects) and high < 0:
        return "not reproduced"
    return "inconclusive"


def evaluate_experiment(name: str, seeds: int, output_dir: str) -> dict:
    """One experiment's per-seed effects, details, verdict and cost, from its finished runs."""
    from .runner import run_arm

    experiment = EXPERIMENTS[name]
    effects, details, reasons, cost = [], {key: [] for key in experiment.details}, [], 0.0
    for seed in range(seeds):
        runs = {label: run_arm(arm, seed, output_dir) for label, arm in experiment.arms.items()}
        cost += sum(run.get("wall_s", 0.0) for run in runs.values())
        reason = experiment.requires(runs)
        if reason:
            reasons.append((seed, reason))
        effects.append(_safe(experiment.effect, runs))
        for key, get in experiment.details.items():
            details[key].append(_safe(get, runs))
    untestable = None
    if reasons:  # every seed's reason is in summary.json; the table shows the first
        untestable = f"{len(reasons)} of {seeds} seeds; seed {reasons[0][0]}: {reasons[0][1]}"
    m, low, high = interval(effects)
    return {"takeaway": experiment.takeaway, "title": experiment.title, "claim": experiment.claim,
            "metric": experiment.metric, "effects": effects, "mean": m, "low": low, "high": high,
            "verdict": verdict(effects, untestable), "untestable": untestable, "seeds": seeds,
            "untestable_per_seed": {seed: reason for seed, reason in reasons},
            "details": {key: {"per_seed": values, "mean": mean(values)} for key, values in details.items()},
            "cost_min": cost / 60, "arms": {label: arm.name for label, arm in experiment.arms.items()}}


def _safe(get, runs) -> float:
    try:
        value = float(get(runs))
    except (ValueError, ZeroDivisionError, KeyError):  # e.g. the log of a zero share, a class never seen
        return float("nan")
    return value


def _fmt(value: float, digits: int = 3) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:+.{digits}f}"


def figure(result: dict, output_dir: str) -> str:
    """`T<n>.png`: the per-seed effects with their mean and 95% interval, and the experiment's mechanism over
    training (mean over seeds per arm)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..ablate import _series, _smooth, read_metrics
    from .runner import run_folder

    experiment = EXPERIMENTS[str(result["takeaway"])]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1, 2]})
    effects = result["effects"]
    left.axhline(0, color="grey", lw=0.8)
    left.scatter(range(len(effects)), effects, color="C0", zorder=3, label="per seed")
    if not math.isnan(result["low"]):
        left.axhspan(result["low"], result["high"], color="C0", alpha=0.15, label="95% interval of the mean")
    left.axhline(result["mean"], color="C0", lw=1.5, label="mean")
    left.set_xlabel("seed")
    left.set_ylabel("effect (> 0: as the paper says)")
    left.set_title(f"T{result['takeaway']}: {result['verdict']}", fontsize=10)
    left.legend(fontsize=7)
    for label, arm in experiment.arms.items():
        histories = [read_metrics(os.path.join(run_folder(output_dir, arm, seed), "metrics.jsonl"))
                     for seed in range(result["seeds"])]
        steps, values, _ = _series(histories, experiment.curve)
        if steps:
            right.plot(steps, _smooth(values, 3), label=label)
    right.set_xlabel("optimizer step")
    right.set_title(f"{experiment.curve} (mean over seeds)", fontsize=10)
    right.legend(fontsize=7, ncol=2)
    fig.suptitle(result["metric"], fontsize=9)
    fig.tight_layout()
    path = os.path.join(output_dir, f"T{result['takeaway']}.png")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


REWARD_SCALE = ("Reward scale ({0,1} vs {-1,1}, the other half of Takeaway 1): with binary rewards r -> 2r-1 leaves "
                "every normalization that divides by a std unchanged up to epsilon (A' = (r - mu)/(sigma + eps/2)), so "
                "it cannot show in any run here; proved in tests/test_advantages.py rather than measured. Without the "
                "std the advantages double; without the mean the offset survives.")


def report(takeaways: list[str], seeds: int, output_dir: str) -> dict:
    """Writes `summary.md`, `summary.json` and one figure per experiment; returns the summary."""
    results = [evaluate_experiment(name, seeds, output_dir) for name in takeaways]
    for result in results:
        result["figure"] = os.path.basename(figure(result, output_dir))
    lines = [
        f"# trl-lite lab: {len(results)} takeaway(s) x {seeds} seed(s)", "",
        "| takeaway | verdict | metric (> 0: as the paper says) | effect, mean [95% interval] | per seed | seeds | "
        "cost (run-min) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        per_seed = ", ".join(_fmt(e) for e in r["effects"])
        verdict_cell = r["verdict"] + (f" ({r['untestable']})" if r["untestable"] else "")
        lines.append(f"| {r['takeaway']}: {r['title']} | **{verdict_cell}** | {r['metric']} | {_fmt(r['mean'])} "
                     f"[{_fmt(r['low'])}, {_fmt(r['high'])}] | {per_seed} | {r['seeds']} | {r['cost_min']:.1f} |")
    lines += ["", REWARD_SCALE, "", "## Mechanism measures (mean over seeds; per seed in summary.json)", ""]
    for r in results:
        lines.append(f"**T{r['takeaway']}** ({r['claim']}) figure: `{r['figure']}`")
        lines.append("")
        lines += [f"- {key}: {_fmt(value['mean'], 4)}" for key, value in r["details"].items()]
        lines.append("")
    with open(os.path.join(output_dir, "summary.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    with open(os.path.join(output_dir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
    return {"results": results, "table": "\n".join(lines[:4 + len(results)]) + "\n"}
