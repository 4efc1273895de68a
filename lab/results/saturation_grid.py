"""Would a steadier update make clip scaling's saturation test a fair one? Its arms with fewer passes per generation
batch, on exploratory seeds.

Not an experiment about the paper and not a pilot: it informs a possible redesign of clip scaling, which the eighth
session left as a new design not attempted (`lab/results/README.md`). Clip scaling's saturation test, (accuracy at
epsilon_high 0.32 - at 0.28) of the small policy minus the large policy's, spread so widely over its 16 registered seeds
(two runs of the large policy fell below their start) that an effect of 0.207 would have been needed for 80% power, and
about 100 seeds for a fair test at a true +0.05 (`v3.1-clip-16/fairness.json`). The registered design trains 960
optimizer steps at lr 1e-4 with 8 passes over each of 30 generation batches (`designs/clip_scaling.py`). Here each arm
keeps its policy, data, learning rate, temperature and 960 steps, and takes `K` passes over each of 240 / K generation
batches (K = 4: 60 batches; fresher batches, the same number of updates), on seeds 3000 and up (never a registered or
pilot seed).

Read per seed, as the design reads them: the saturation contrast and the small-gains contrast (0.32 - 0.2, small), each
arm's held-out gain over its initial policy and training-reward rise, the share of positive-advantage tokens whose
ratio lies in (1.2, 1.32] (where 0.2 and 0.32 clip differently: the design's sanity gate asks 0.5%) and in
(1.28, 1.32] (where 0.28 and 0.32 do), and runs that fell below their start. Over seeds: each contrast's mean,
standard deviation, and the smallest effect a sign test on 16, 32, 48 and 64 seeds detects with 80% power at the
strictest Holm level of the 16 designed tests (`stats.detectable_effect`, a normal planning figure, as the pilots'
power gates).

**How it decides, fixed 2026-11-29 07:45 UTC (commit d31a8c1), after its first runs were started and before any
was read** (the K = 4 runs on seeds 3000-3007 were started at 07:43; the K = 8 ones on the same seeds are added so that
the two settings are compared on the same seeds and machine):

1. A setting qualifies when, on the grid's seeds, every arm gains at least 0.03 held-out accuracy (mean over seeds)
   and raises its training reward, the small 0.2 arm's share in (1.2, 1.32] is at least 0.5%
   (the design's clip-band gate).
2. Of the qualifying settings, the redesign takes the one whose saturation contrast has the smaller standard deviation
   over the grid's seeds; neither contrast's mean or sign is read in choosing.
3. Its seed count is the smallest of 32, 48 and 64 at which the sign test at Holm's strictest level (0.05 / 12) calls
   "reproduced" in at least 80% of 20,000 labs drawn at a true +0.05 from the grid's saturation effects (each seed
   drawn with replacement from the effects centred on their median and shifted by +0.05: `fairness.py`'s yardstick).
   64 is this session's budget for runs (about 28 s a run here, 5 arms).
4. If no setting qualifies or none reaches 80% at 64 seeds, clip scaling is not redesigned, and the grid is reported
   as what a fair saturation test would take.

`decide` implements the rule; it was written at 08:08 UTC, after the K = 4 summary had been read. The one reading it
had to settle, whether the clip band is pooled over seeds (as the design's gate) or a mean of runs, did not matter:
both gave 0.47% at K = 4. What it decided: 8 passes and 32 seeds (`designs/clip_scaling.py`, version 3.2).

    python lab/results/saturation_grid.py run "large 0.28" 4 3000 --output-dir D   # one process per run
    python lab/results/saturation_grid.py summarize D 4 8 --json lab/results/saturation_grid.json
"""

from __future__ import annotations

import json
import os
import shlex
import statistics
import sys

from trl_lite_lab.designs.clip_scaling import LEARNING_RATE, SIZES, STEPS

POLICIES = dict(SIZES)  # {"small": "carry-tiny", "large": "carry-small"}
LABELS = ("small 0.2", "small 0.28", "small 0.32", "large 0.28", "large 0.32")  # the arms the two tests read
DESIGNED_TESTS = 16  # the Holm family the pilots plan against (`experiments.family_size()`)
SEED_COUNTS = (16, 32, 48, 64)
FAIR_AT, LEVEL, DRAWS = 0.05, 0.05 / 12, 20_000  # the decision rule's yardstick (3., above)
GAIN, WIDE_BAND, RULE_SEEDS = 0.03, 0.005, (32, 48, 64)  # the rule's gain (1.), clip band (1.) and seed counts (3.)


def fair_chance(effects: list[float], n: int, delta: float = FAIR_AT, level: float = LEVEL, draws: int = DRAWS,
                seed: int = 0) -> float:
    """Share of `draws` labs of `n` seeds, each drawn with replacement from `effects` centred on their median and
    shifted by `delta`, in which the sign test's p-value is below `level` with the median above 0 (`fairness.py`)."""
    import numpy as np

    from trl_lite_lab.resampling import _sign_p
    from trl_lite_lab.stats import near_ties

    values = near_ties(effects)
    shifted = values - np.median(values) + delta
    samples = shifted[np.random.default_rng(seed).integers(0, len(values), size=(draws, n))]
    return float(((_sign_p(samples) < level) & (np.median(samples, axis=1) > 0.0)).mean())


def grid_arm(label: str, k: int):
    """Clip scaling's arm `label` ("small 0.28"), with `k` passes over each generation batch and the same 960 steps."""
    from trl_lite_lab.design import arm

    size, eps = label.split()
    if STEPS % (4 * k):
        raise ValueError(f"K={k}: {STEPS} steps are not a whole number of generation batches of {4 * k} steps")
    return arm("add", POLICIES[size], "mixed", steps=STEPS, epsilon_high=float(eps), temperature=1.0,
               num_iterations=k, learning_rate=LEARNING_RATE)


def run(label: str, k: int, seed: int, output_dir: str) -> None:
    from trl_lite_lab.design import EVAL_PROBLEMS
    from trl_lite_lab.runner import initial_eval, run_arm

    if seed < 3000:
        raise ValueError(f"seed={seed}: the grid's seeds are 3000 and up (below are registered or pilot seeds)")
    a = grid_arm(label, k)
    initial_eval(a.task, a.policy, output_dir, EVAL_PROBLEMS, a.settings["temperature"])
    run_arm(a, seed, output_dir, progress=False, eval_problems=EVAL_PROBLEMS)


def contrasts(per_arm: dict[str, float]) -> dict[str, float]:
    """The design's two primaries from one seed's held-out accuracies per arm."""
    small, large = (per_arm[f"{size} 0.32"] - per_arm[f"{size} 0.28"] for size in ("small", "large"))
    return {"saturation": small - large,
            "small gains": per_arm["small 0.32"] - per_arm["small 0.2"]}


def summarize(output_dir: str, k: int) -> dict:
    from trl_lite_lab.design import EVAL_PROBLEMS
    from trl_lite_lab.results import initial_path, run_folder, train_measures
    from trl_lite_lab.stats import detectable_effect

    runs: dict[int, dict[str, dict]] = {}
    initial = {}
    for label in LABELS:
        a = grid_arm(label, k)
        with open(initial_path(output_dir, a.task, a.policy, EVAL_PROBLEMS, 1.0), encoding="utf-8") as f:
            initial[label] = json.load(f)["acc"]
        parent = os.path.dirname(run_folder(output_dir, a, 0))
        for name in sorted(os.listdir(parent)) if os.path.isdir(parent) else ():
            folder = os.path.join(parent, name)
            if not os.path.exists(os.path.join(folder, "result.json")):
                continue
            with open(os.path.join(folder, "result.json"), encoding="utf-8") as f:
                held = json.load(f)["eval"]
            train = train_measures(folder)
            positive = train["pos_adv_tokens"]
            runs.setdefault(int(name.removeprefix("seed")), {})[label] = {
                "acc": held["acc"], "gain": held["acc"] - initial[label], "train_rise": held["train_rise"],
                "update_norm": held["update_norm"], "wide_band": train["ratio_wide_band_tokens"] / positive,
                "wide_band_tokens": train["ratio_wide_band_tokens"], "positive_tokens": positive,
                "upper_band": (train["ratio_wide_band_tokens"] - train["ratio_band_tokens"]) / positive}
    complete = sorted(seed for seed, arms in runs.items() if len(arms) == len(LABELS))
    per_seed = {seed: contrasts({label: runs[seed][label]["acc"] for label in LABELS}) for seed in complete}
    tests = {}
    for name in ("saturation", "small gains"):
        values = [per_seed[s][name] for s in complete]
        sd = statistics.stdev(values) if len(values) > 1 else float("nan")
        tests[name] = {"per_seed": values, "mean": sum(values) / len(values) if values else float("nan"), "sd": sd,
                       "detectable": {str(n): detectable_effect(sd, n, DESIGNED_TESTS) for n in SEED_COUNTS},
                       "fair_chance": {str(n): fair_chance(values, n) for n in SEED_COUNTS} if len(values) > 1 else {}}
    arms = {}
    for label in LABELS:
        rows = [runs[s][label] for s in complete]
        arms[label] = ({key: sum(r[key] for r in rows) / len(rows) for key in rows[0] if not key.endswith("tokens")}
                       if rows else {})
        arms[label]["fell"] = sum(r["gain"] < 0 for r in rows)
        # pooled over seeds, as the design's clip-band gate reads it (`design.band_share`)
        band, positive = (sum(r[key] for r in rows) for key in ("wide_band_tokens", "positive_tokens"))
        arms[label]["wide_band_pooled"] = band / positive if positive else float("nan")
        arms[label]["acc_sd"] = statistics.stdev([r["acc"] for r in rows]) if len(rows) > 1 else float("nan")
    return {"num_iterations": k, "steps": STEPS, "generation_batches": STEPS // (4 * k), "seeds": complete,
            "initial": initial, "arms": arms, "tests": tests,
            "runs": {str(s): runs[s] for s in complete}}


def decide(by_passes: dict[str, dict]) -> dict:
    """The decision rule (above) over the settings' summaries: which qualify (1.), which is taken (2.), how many
    seeds (3.), or none (4.)."""
    qualifies = {}
    for k, result in by_passes.items():
        arms = result["arms"]
        qualifies[k] = (all(a["gain"] >= GAIN and a["train_rise"] > 0.0 for a in arms.values())
                        and arms["small 0.2"]["wide_band_pooled"] >= WIDE_BAND)
    eligible = [k for k in by_passes if qualifies[k]]
    taken = min(eligible, key=lambda k: by_passes[k]["tests"]["saturation"]["sd"]) if eligible else None
    chances = by_passes[taken]["tests"]["saturation"]["fair_chance"] if taken else {}
    seeds = next((n for n in RULE_SEEDS if chances.get(str(n), 0.0) >= 0.8), None)
    return {"qualifies": qualifies, "taken": taken if seeds else None, "seeds": seeds}


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[0] == "run":
        run(args[1], int(args[2]), int(args[3]), args[args.index("--output-dir") + 1])
    else:
        by_passes = {k: summarize(args[1], int(k)) for k in args[2:] if not k.startswith("--") and k.isdigit()}
        result = {"by_passes": by_passes, "decision": decide(by_passes)}
        for k, one in by_passes.items():
            print(k, json.dumps({key: v for key, v in one.items() if key != "runs"}, indent=1))
        print(result["decision"])
        from script_json import write_json

        write_json(result, "python lab/results/saturation_grid.py " + " ".join(shlex.quote(a) for a in args))
