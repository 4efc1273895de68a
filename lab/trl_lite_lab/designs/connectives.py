"""Takeaway 5: which tokens the low upper bound clips.

Version 2 (issue 29): in version 1 the connective choice (`then` or a `chk` recheck that changed nothing) carried no
reward, so RL had no reason to push it. Here the connective carries credit: the recheck policy drops a units carry
half the time, and after a dropped carry `chk` and the step written right follow half the time (`then` keeps the
error). An audit gate requires the link to show on fresh samples: answers after a recheck that fixed a dropped carry
are right far more often than answers after a dropped carry left alone.

The comparison is with eligible tokens of matched probability: positive-advantage tokens whose old probability lies
in the same bin (the ratio pi/pi_old of a token sampled with probability p can pass 1 + epsilon only if
p < 1 / (1 + epsilon), so how far a token can move is set by its old probability; matching on it is the closest
per-token counterpart of matching on entropy that the trainer's hook can see). The effect is the connectives' clip
rate minus other tokens' clip rate in the same bin, averaged over bins with the connectives' eligible counts as
weights.

Version 3 (issue 38), 2026-11-27: not yet redesigned. The engine's gates are now signed (`design.gain_gates`: every
arm must gain +0.03 held-out accuracy and raise its training reward) and its test is the exact sign-flip test, so
these definitions changed and their version 2 pilots register nothing; version 2's runs, in which every arm lost
held-out accuracy, are superseded (`lab/results/README.md`). Until a redesign is piloted, T5 is untestable (no
pilot).
"""

from __future__ import annotations

from ..design import (
    Experiment,
    Gate,
    Primary,
    arm,
    audit_value,
    gain_gates,
    one_arm,
    register,
    training,
)
from .clip import CLIP, SUMK_STEPS

ARMS = {"recheck 0.2": arm("sumk", "recheck", steps=SUMK_STEPS, **CLIP)}


def matched_excess(runs: dict) -> float:
    """sum_b w_b (clip rate of connectives in bin b - clip rate of other tokens in bin b), w_b = the connectives'
    share of their eligible tokens in bin b, over the bins where both classes have eligible tokens; bins of the old
    probability (`trl_lite_lab.training.PROB_BINS`), over the run's training."""
    strata = runs["recheck 0.2"]["train"]["strata"]  # {"<class>/<bin>/<eligible|clipped>": count}
    bins = sorted({key.split("/")[1] for key in strata})
    # only bins holding eligible tokens of both classes compare like with like; the weights are over those bins
    weight = {b: strata.get(f"connective/{b}/eligible", 0.0) for b in bins
              if strata.get(f"connective/{b}/eligible", 0.0) and strata.get(f"other/{b}/eligible", 0.0)}
    total = sum(weight.values())
    if not total:
        return float("nan")
    return sum(w / total * (strata.get(f"connective/{b}/clipped", 0.0) / w
                            - strata.get(f"other/{b}/clipped", 0.0) / strata[f"other/{b}/eligible"])
               for b, w in weight.items())


def _clipped(cls: str):
    return lambda evidence: sum(value for runs in evidence["runs"].values()
                                for key, value in runs["recheck 0.2"]["train"]["strata"].items()
                                if key.startswith(f"{cls}/") and key.endswith("/clipped"))


def _rate(cls: str, stage: str):
    def value(result):
        strata = result["train"]["strata"]
        part = sum(v for k, v in strata.items() if k.startswith(f"{cls}/") and k.endswith(f"/{stage}"))
        eligible = sum(v for k, v in strata.items() if k.startswith(f"{cls}/") and k.endswith("/eligible"))
        return part / eligible if eligible else float("nan")
    return value


register("5", Experiment(
    id="T5",
    title="with a low upper bound, connective tokens are clipped most",
    claim="At epsilon_high 0.2, connective tokens ('therefore', 'if') are the ones clipped at the high bound most.",
    arms=ARMS,
    primaries=(Primary("T5", "high-clip rate of eligible connectives - of other eligible tokens of matched old "
                             "probability (recheck policy, epsilon_high 0.2)", matched_excess),),
    gates=(Gate("recheck policy: accuracy after a fixed dropped carry - after one left alone (fresh samples)",
                audit_value("sumk/recheck/recheck_link"), 0.3, kind="the connective's credit"),
           Gate("connective tokens clipped at the high bound, pooled over seeds", _clipped("connective"), 20,
                stage="runs", kind="the clip band"))
    + gain_gates(ARMS),
    details={"clip rate of eligible connectives": one_arm("recheck 0.2", _rate("connective", "clipped")),
             "clip rate of other eligible tokens": one_arm("recheck 0.2", _rate("other", "clipped")),
             "recheck rate after a dropped carry": one_arm("recheck 0.2", lambda r: r["eval"]["recheck_rate"]),
             "high-clip share": one_arm("recheck 0.2", training("clip_high_frac"))},
    curve="clip_ratio/high_mean",
    seeds=6,
    notes="One arm: the recheck policy at epsilon_high 0.2 with the clip experiments' updates (8 passes, lr 5e-4). "
          "Connectives: `then`, `so`, `chk`.",
), __file__)
