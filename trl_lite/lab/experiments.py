"""The lab's pre-registration: every experiment's arms, primary tests, metric, direction, gates, thresholds and seeds.

This file is the definition the lab's verdicts are read against. `preregistration_sha256()` hashes it together with
the code that measures and decides (`HASHED`: the verdict engine, the measures, the runner's training and evaluation,
the tasks); every run, initial evaluation and audit records the hash, and with it the SHA-256 of the policy weights
it started from. A report refuses to mix runs made under different hashes or from other weights, and any change made
after results were seen is listed, dated, in `bench/lab/README.md` ("Changes to the definitions").

Reading an experiment:

- `arms`: labelled training settings (`Arm`); the arms of one seed share the initial policy, the data order and the
  sampling seeds, so per-seed differences between arms are paired.
- `primaries`: the primary tests. Each maps one seed's finished runs (arm label -> result) to one number whose sign is
  the paper's claim (positive = as the paper says), or, with a `margin`, to a number whose absolute value the paper
  claims is small (an equivalence test). They enter the lab run's Holm family (`trl_lite.lab.stats`).
- `gates`: what must hold for the experiment to be a fair test. An `audit` gate is measured on fresh samples of the
  initial policy before any training (`trl-lite lab audit`); a failed one means the arms are never run. A `runs`
  gate is measured on the finished runs, pooled over seeds (what only training can show, e.g. how many tokens clip).
  A failed gate makes the verdict `untestable`, with the measured value.
- `details`: mechanism measures reported next to the verdict, labelled descriptive (no test, no correction).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Callable

from ..registry import Registry
from .stats import mean

################
# Settings every run of a task shares
################
# ADD (Takeaways 1-3 and clip scaling): the carry-habit policy (`trl_lite/assets/arith_carry`, 0.86M parameters), which
# drops the carry into the hundreds; 8 prompts per generation batch in 4 optimizer steps of 16 completions; lr 1e-4 as
# the main job's demo. Temperature 0.6 for the normalization takeaways: at 1.0 the easy problems are right only 0.85 of
# the time and 31% of groups of 8 have zero std, under the gates below (issue 20's audit, `bench/lab/README.md`).
ADD_SETTINGS = {
    "per_device_train_batch_size": 16, "steps_per_generation": 4, "num_generations": 8, "max_completion_length": 14,
    "learning_rate": 1e-4, "lr_scheduler_type": "constant", "temperature": 0.6, "clipped_tokens_top_k": 64,
}
# SUM-k (Takeaways 4-8): 8 prompts x 8 completions per generation batch in 4 optimizer steps of 16, 2 passes over each
# batch so that the policy moves away from the sampling policy and the clip can act; lr 1e-4 (at 4e-4 every arm fell
# below its start; bench/lab/README.md).
SUMK_SETTINGS = {
    "per_device_train_batch_size": 16, "steps_per_generation": 4, "num_generations": 8, "max_completion_length": 96,
    "learning_rate": 1e-4, "lr_scheduler_type": "constant", "temperature": 1.0, "num_iterations": 2,
    "clipped_tokens_top_k": 64,
}
LOOSE, TIGHT = 96, 28  # SUM-k's maximum completion lengths: the tight one cuts full scratchpads for k >= 5
# SUM-k's held-out samples run this far: the terminating formats end by 120 tokens (the long one, the longest), so a
# completion cut at 96 that has not ended by 130 is not one of them; 130 + the prompt stays inside the positions the
# policies were trained on (the long format reaches 120 + up to 19 prompt tokens)
HORIZON = 130
STEPS = {"add": 120, "sumk": 128}  # optimizer steps per run (ADD: 30 generation batches; SUM-k: 16 x 2 passes x 4)
# Paired seeds per experiment: 8, where a true effect of 2 seed stds is found in 91% of simulated labs after Holm's
# correction over 8 tests (5 seeds: 42%; tests/test_lab_stats.py). ADD runs cost about 25 s, SUM-k runs about 60 s.
SEEDS = {"add": 8, "sumk": 8}
EVAL_PROBLEMS, EVAL_SAMPLES = 1000, 4  # held-out: 1000 problems x 4 samples (evaluation noise about 0.008 at p = 0.5)
AUDIT_PROBLEMS = 200  # audit: fresh samples of the initial policy on this many training problems per mix

SHORT = {"advantage_mean": "mean", "advantage_std": "std", "epsilon_high": "eps_high", "loss_aggregation": "agg",
         "max_completion_length": "len", "overlong_filter": "filter", "num_generations": "G",
         "max_grad_norm": "clip_grad", "temperature": "T", "num_iterations": "passes",
         "per_device_train_batch_size": "bs"}
ADD_POLICIES = {"carry": "carry-habit", "carry-small": "carry-habit-small"}  # arm.policy -> embedded policy kind


@dataclass(frozen=True)
class Arm:
    """One training setting: a task (`add` or `sumk`), its initial policy, its data (`easy`/`hard`/`mixed` ADD mixes,
    `train` for SUM-k) and the LitePPOConfig fields it changes from the task's settings."""

    task: str
    policy: str
    data: str = "train"
    overrides: tuple = ()

    @property
    def name(self) -> str:
        """The run folder's name, e.g. `add-carry-easy-mean=group-std=none`."""
        return "-".join([self.task, self.policy, self.data] + [f"{SHORT.get(k, k)}={v}" for k, v in self.overrides])

    @property
    def settings(self) -> dict:
        return {**(ADD_SETTINGS if self.task == "add" else SUMK_SETTINGS), **dict(self.overrides)}

    @property
    def steps(self) -> int:
        return STEPS[self.task]


def arm(task: str, policy: str, data: str = "train", **overrides) -> Arm:
    """An `Arm`; overrides equal to the task's settings are dropped, so two arms that train alike compare equal."""
    base = ADD_SETTINGS if task == "add" else SUMK_SETTINGS
    kept = {k: v for k, v in overrides.items() if base.get(k, _DEFAULTS.get(k)) != v}
    return Arm(task, policy, data, tuple(sorted(kept.items())))


# LitePPOConfig defaults the lab's arms may name (an arm that sets one of these to its default trains alike)
_DEFAULTS = {"advantage_mean": "group", "advantage_std": "batch", "epsilon_high": 0.2, "overlong_filter": False,
             "loss_aggregation": "token-mean"}


@dataclass(frozen=True)
class Primary:
    """One primary test: `effect(runs)` of one seed's runs (arm label -> result); > 0 is the paper's direction. With a
    `margin`, the paper claims `abs(effect) < margin` and the test is an equivalence test (TOST)."""

    name: str
    metric: str
    effect: Callable[[dict], float]
    margin: float | None = None


@dataclass(frozen=True)
class Gate:
    """A condition for a fair test: `value(evidence) >= threshold` (or `<=` with `at_most`). `stage` is `audit`
    (evidence: the audit's measures, before training) or `runs` (evidence: `{"runs": {seed: {label: result}},
    "initial": {policy: evaluation}}`, after training)."""

    name: str
    value: Callable[[dict], float]
    threshold: float
    at_most: bool = False
    stage: str = "audit"

    def passes(self, value: float) -> bool:
        if math.isnan(value):
            return False
        return value <= self.threshold if self.at_most else value >= self.threshold


@dataclass(frozen=True)
class Experiment:
    id: str
    title: str
    claim: str  # the paper's, in the paper's terms
    arms: dict[str, Arm]
    primaries: tuple[Primary, ...]
    gates: tuple[Gate, ...] = ()
    details: dict[str, Callable[[dict], float]] = field(default_factory=dict)
    curve: str = "entropy"  # the metrics.jsonl key drawn over training, per arm
    excluded: dict[str, str] = field(default_factory=dict)  # arms left out by design -> why
    seed_count: int | None = None  # paired seeds; defaults to the task's (`SEEDS`)

    def __post_init__(self):
        seen: dict[Arm, str] = {}
        for label, a in self.arms.items():
            if a in seen:
                raise ValueError(f"experiment {self.id}: arms {seen[a]!r} and {label!r} train alike ({a.name}); an arm "
                                 "identical to another by construction cannot be compared with it.")
            seen[a] = label
        tasks = {a.task for a in self.arms.values()}
        if len(tasks) != 1:
            raise ValueError(f"experiment {self.id}: arms of one task expected, got {sorted(tasks)}.")

    @property
    def task(self) -> str:
        return next(iter(self.arms.values())).task

    @property
    def seeds(self) -> int:
        return self.seed_count or SEEDS[self.task]


EXPERIMENTS: Registry[Experiment] = Registry("experiment")


def held_out(key: str = "acc") -> Callable[[dict], float]:
    """One held-out measure of a run's result (accuracy by default)."""
    return lambda result: result["eval"][key]


def training(key: str) -> Callable[[dict], float]:
    """One training measure of a run's result (`trl_lite.lab.results.train_measures`)."""
    return lambda result: result["train"][key]


def difference(a: str, b: str, measure=held_out()) -> Callable[[dict], float]:
    """runs[a] - runs[b] of one measure."""
    return lambda runs: measure(runs[a]) - measure(runs[b])


def one_arm(label: str, measure) -> Callable[[dict], float]:
    """One measure of one arm's run: `one_arm("group/group", training("grad_norm_max"))`."""
    return lambda runs: measure(runs[label])


def pooled(label: str, key: str) -> Callable[[dict], float]:
    """A runs gate's value: the sum over seeds of one training count of one arm."""
    return lambda evidence: sum(runs[label]["train"][key] for runs in evidence["runs"].values())


def audit_value(key: str) -> Callable[[dict], float]:
    """An audit gate's value: one of the audit's measures (`trl_lite.lab.audit.MEASURES`)."""
    return lambda evidence: evidence[key]


################
# Takeaways 1-3: advantage normalization on ADD, difficulty by a feature of the problem
################
# easy: sums without a carry into the hundreds (the carry-habit policy gets them right); hard: sums with one (it drops
# it); mixed: the two interleaved (clip scaling's data). Training problems of the medium and hard levels. T1 and T3 use
# the easy and the hard mix only: a third mix would add 4 arms x 8 seeds (about 13 min of the lab's 3 hours).
MIXES = ("easy", "hard")
NORMS = {"batch/batch": ("batch", "batch"), "group/group": ("group", "group"), "group/batch": ("group", "batch"),
         "group/none": ("group", "none")}
MIX_GATES = (
    Gate("easy mix: pass rate of fresh samples (groups of 8)", audit_value("add/easy/pass"), 0.8),
    Gate("easy mix: share of zero-std groups of 8", audit_value("add/easy/zero_std@8"), 0.5),
    Gate("hard mix: pass rate of fresh samples", audit_value("add/hard/pass"), 0.35, at_most=True),
)


def _add(mix: str, norm: str, **overrides) -> Arm:
    mean_level, std_level = NORMS[norm]
    return arm("add", "carry", mix, advantage_mean=mean_level, advantage_std=std_level, **overrides)


def _over_mixes(norm: str, runs: dict) -> list[float]:
    return [held_out()(runs[f"{norm} {mix}"]) for mix in MIXES]


EXPERIMENTS.register("1")(Experiment(
    id="T1",
    title="group-level normalization is robust, batch-level fragile with {0,1} rewards",
    claim="Group-level mean and std normalization is robust across data; batch-level is fragile under {0,1} rewards.",
    arms={f"{norm} {mix}": _add(mix, norm) for norm in ("batch/batch", "group/group") for mix in MIXES},
    primaries=(Primary(
        "T1", "held-out accuracy, group/group - batch/batch, mean over the easy and hard mixes",
        lambda runs: mean(_over_mixes("group/group", runs)) - mean(_over_mixes("batch/batch", runs))),),
    gates=MIX_GATES,
    details={
        "top-5% |A| share, batch/batch (hard mix)": one_arm("batch/batch hard", training("top5_adv_share")),
        "top-5% |A| share, group/group (hard mix)": one_arm("group/group hard", training("top5_adv_share")),
        "accuracy group/group - batch/batch, hard mix": difference("group/group hard", "batch/batch hard"),
        "accuracy group/group - batch/batch, easy mix": difference("group/group easy", "batch/batch easy"),
    },
    curve="lab/top5_abs_adv_share",
))

EXPERIMENTS.register("2")(Experiment(
    id="T2",
    title="on concentrated (easy) rewards, dropping the std avoids blowing up the gradients",
    claim="When rewards are concentrated (easy data), group mean without the std trains better than with it.",
    # groups of 16 (more zero-std groups, and a small sigma where the std stays); no gradient clipping (a bound of 1e6
    # is never reached, and keeps the pre-clip norm logged), so that what the std does to the update reaches the weights
    arms={norm: _add("easy", norm, num_generations=16, per_device_train_batch_size=32, max_grad_norm=1e6)
          for norm in ("group/none", "group/group")},
    primaries=(Primary("T2", "held-out accuracy, group/none - group/group, trained on the easy mix",
                       difference("group/none", "group/group")),),
    gates=(Gate("easy mix: pass rate of fresh samples (groups of 16)", audit_value("add/easy/pass"), 0.8),
           Gate("easy mix: share of zero-std groups of 16", audit_value("add/easy/zero_std@16"), 0.5)),
    details={
        "max grad norm, group/group": one_arm("group/group", training("grad_norm_max")),
        "max grad norm, group/none": one_arm("group/none", training("grad_norm_max")),
        "late reward jitter, group/group": one_arm("group/group", training("reward_jitter")),
        "late reward jitter, group/none": one_arm("group/none", training("reward_jitter")),
    },
    curve="grad_norm",
    excluded={"group/batch, auto": "T2's claim is about dropping the std against keeping the group's; the others "
                                   "are T3's"},
))


def _worst_mix(norm: str) -> Callable[[dict], float]:
    return lambda runs: min(_over_mixes(norm, runs))


EXPERIMENTS.register("3")(Experiment(
    id="T3",
    title="group mean + batch std is the most robust normalization",
    claim="Group-level mean with batch-level std is the most robust across data difficulty.",
    arms={f"{norm} {mix}": _add(mix, norm) for norm in NORMS for mix in MIXES},
    # "most robust" = better than each other normalization: three pre-registered pairwise contrasts on the worst-mix
    # accuracy, reproduced only if all three are (no max over competitors, which is biased against a tie)
    primaries=tuple(
        Primary(f"T3 vs {other}", f"worst-mix held-out accuracy, group/batch - {other}",
                (lambda runs, other=other: _worst_mix("group/batch")(runs) - _worst_mix(other)(runs)))
        for other in ("batch/batch", "group/group", "group/none")),
    gates=MIX_GATES,
    details={f"worst-mix accuracy, {norm}": _worst_mix(norm) for norm in NORMS},
    curve="reward",
    excluded={"auto": "advantage_std='auto' equals group/batch on every batch where under half the groups have zero "
                      "std, so it is group/batch or group/none batch by batch, not a normalization the paper tests"},
))


################
# Clip-higher (Takeaway 4), and its scaling with model size, on SUM-k and ADD
################
def _band_share(label: str, key: str = "ratio_band_tokens") -> Callable[[dict], float]:
    """Runs gate: share of positive-advantage tokens (pooled over seeds) whose ratio lies in the band where the arms'
    clip bounds differ."""
    def value(evidence):
        band = pooled(label, key)(evidence)
        positive = pooled(label, "pos_adv_tokens")(evidence)
        return band / positive if positive else float("nan")
    return value


EXPERIMENTS.register("4")(Experiment(
    id="T4",
    title="clip-higher helps aligned models, not base models",
    claim="Raising epsilon_high (0.2 -> 0.28) helps aligned (Instruct) models explore; little or harmful for base.",
    # the aligned-like policy with a real fork: it drops the units' carry 60% of the time in its SFT data (sumk_fork)
    arms={"aligned 0.2": arm("sumk", "fork"), "aligned 0.28": arm("sumk", "fork", epsilon_high=0.28),
          "base 0.2": arm("sumk", "long"), "base 0.28": arm("sumk", "long", epsilon_high=0.28)},
    primaries=(Primary("T4", "held-out accuracy of the aligned-like (fork) policy, epsilon_high 0.28 - 0.2",
                       difference("aligned 0.28", "aligned 0.2")),),
    gates=(Gate("aligned 0.2: share of positive-advantage tokens with ratio in (1.2, 1.28]",
                _band_share("aligned 0.2"), 0.01, stage="runs"),),
    details={
        "accuracy base-like, 0.28 - 0.2": difference("base 0.28", "base 0.2"),
        "pass@4 aligned-like, 0.28 - 0.2": difference("aligned 0.28", "aligned 0.2", held_out("pass@4")),
        "fork-token entropy aligned-like, 0.28 - 0.2": difference("aligned 0.28", "aligned 0.2",
                                                                  held_out("fork_entropy")),
        "carry-drop rate aligned-like, 0.2": one_arm("aligned 0.2", held_out("carry_drop_rate")),
        "carry-drop rate aligned-like, 0.28": one_arm("aligned 0.28", held_out("carry_drop_rate")),
        "high-clip share aligned-like, 0.2": one_arm("aligned 0.2", training("clip_high_frac")),
    },
    curve="entropy",
))

EPS_GRID = (0.2, 0.24, 0.28, 0.32)


def _slope(policy: str) -> Callable[[dict], float]:
    """Least-squares slope of held-out accuracy against epsilon_high over `EPS_GRID` (accuracy per unit epsilon)."""
    def slope(runs):
        xs, ys = EPS_GRID, [held_out()(runs[f"{policy} {eps}"]) for eps in EPS_GRID]
        mx, my = mean(xs), mean(ys)
        return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return slope


EXPERIMENTS.register("clip-scaling")(Experiment(
    id="clip-scaling",
    title="clip-higher keeps helping small models up to 0.32; larger ones saturate near 0.28",
    claim="Small models keep gaining as epsilon_high rises to 0.32; larger models saturate near 0.28.",
    # two sizes of the carry-habit ADD policy, same data and steps: 0.24M (2 x 96) and 0.86M (4 x 128) parameters; at
    # temperature 1 and 2 passes per batch, where the carry digit is a real fork the clip can act on
    arms={f"{size} {eps}": arm("add", policy, "mixed", epsilon_high=eps, temperature=1.0, num_iterations=2)
          for size, policy in (("small", "carry-small"), ("large", "carry")) for eps in EPS_GRID},
    # both halves: the small policy gains with epsilon_high, and more than the large one (a difference of two negative
    # slopes alone would not be the claim)
    primaries=(Primary("clip-scaling small gains", "slope of the small policy's held-out accuracy over epsilon_high "
                                                   "0.2-0.32 (accuracy per unit epsilon)", _slope("small")),
               Primary("clip-scaling small - large", "slope of held-out accuracy over epsilon_high 0.2-0.32, small - "
                                                     "large policy",
                       lambda runs: _slope("small")(runs) - _slope("large")(runs))),
    gates=tuple(Gate(f"{size} 0.2: share of positive-advantage tokens with ratio in (1.2, 1.32]",
                     _band_share(f"{size} 0.2", "ratio_wide_band_tokens"), 0.01, stage="runs")
                for size in ("small", "large")),
    details={"slope large": _slope("large"),
             **{f"accuracy {size} {eps}": one_arm(f"{size} {eps}", held_out())
                for size in ("small", "large") for eps in EPS_GRID}},
    curve="clip_ratio/high_mean",
))


################
# Takeaway 5: which tokens the low upper bound clips
################
def _shares(train: dict, key: str) -> tuple[float, float]:
    """(connective count, total count) of one of a run's by-class token counts."""
    counts = train[key]
    return counts.get("connective", 0), sum(counts.values())


def _ratio(part: float, whole: float) -> float:
    return part / whole if whole else float("nan")


def _connective_excess(runs: dict) -> float:
    """(connectives' share among tokens clipped at the high bound) - (their share among the tokens that could be:
    positive advantage and an old probability below 1/1.2, the only tokens whose ratio can pass 1.2), in the
    connective policy's run at epsilon_high 0.2: > 0 when a connective that can be clipped is clipped more often."""
    train = runs["connective 0.2"]["train"]
    clipped, total_clipped = _shares(train, "clipped_high_by_class")
    eligible, total_eligible = _shares(train, "eligible_by_class")
    if not total_clipped or not total_eligible:
        return float("nan")  # an error in the verdict engine: the gates below keep it from happening
    return clipped / total_clipped - eligible / total_eligible


def _expected_connective_clips(evidence: dict, smallest: bool = False) -> float:
    """How many clipped tokens would be connectives were clipping blind to the class among the tokens that can be
    clipped (pooled over seeds, or the smallest seed's count)."""
    counts = []
    for runs in evidence["runs"].values():
        train = runs["connective 0.2"]["train"]
        eligible, total_eligible = _shares(train, "eligible_by_class")
        counts.append(_shares(train, "clipped_high_by_class")[1] * eligible / max(total_eligible, 1))
    return min(counts) if smallest else sum(counts)


EXPERIMENTS.register("5")(Experiment(
    id="T5",
    title="with a low upper bound, connective tokens are clipped most",
    claim="At epsilon_high 0.2, connective tokens ('therefore', 'if') are the ones clipped at the high bound most.",
    # sumk_connective: after each step, `then` or a `chk` recheck of it, 50/50 (the choice does not change the answer)
    arms={"connective 0.2": arm("sumk", "connective")},
    primaries=(Primary("T5", "connectives' share of high-clipped tokens - their share of the tokens that can be "
                             "clipped (connective policy, epsilon_high 0.2)", _connective_excess),),
    gates=(Gate("connectives expected among high-clipped tokens by chance, pooled over seeds",
                _expected_connective_clips, 15, stage="runs"),
           Gate("the same, the smallest seed", lambda e: _expected_connective_clips(e, smallest=True), 2,
                stage="runs")),
    details={"connective share of completion tokens": one_arm("connective 0.2", lambda r: _ratio(
                 *_shares(r["train"], "tokens_by_class"))),
             "connective share of the tokens that can be clipped": one_arm("connective 0.2", lambda r: _ratio(
                 *_shares(r["train"], "eligible_by_class"))),
             "connective share of the high-clipped tokens": one_arm("connective 0.2", lambda r: _ratio(
                 *_shares(r["train"], "clipped_high_by_class")))},
    curve="clip_ratio/high_mean",
))


################
# Takeaway 6: loss aggregation
################
_AGGREGATIONS = {"token": "token-mean", "seq": "seq-mean-token-mean"}


def _moves(label: str, policy: str) -> Callable[[dict], float]:
    """Runs gate: |mean held-out accuracy over seeds - the initial policy's| / the seeds' std (> 1: RL moved it by more
    than the seed spread)."""
    def value(evidence):
        accs = [runs[label]["eval"]["acc"] for runs in evidence["runs"].values()]
        if len(accs) < 2:
            return float("nan")
        m = mean(accs)
        sd = math.sqrt(sum((a - m) ** 2 for a in accs) / (len(accs) - 1))
        moved = abs(m - evidence["initial"][policy]["acc"])
        return moved / sd if sd > 0 else (float("inf") if moved > 0 else 0.0)
    return value


EXPERIMENTS.register("6")(Experiment(
    id="T6",
    title="token-level loss for base models, sequence-level for aligned models",
    claim="Token-level loss aggregation helps base models; sequence-level suits aligned models.",
    # the base-like policy with the long format (sumk_long): long wrong completions are common
    arms={f"{kind} {agg}": arm("sumk", policy, loss_aggregation=loss)
          for kind, policy in (("base", "long"), ("aligned", "fork")) for agg, loss in _AGGREGATIONS.items()},
    primaries=(Primary("T6", "held-out accuracy of the base-like policy, token-mean - seq-mean-token-mean",
                       difference("base token", "base seq")),),
    gates=(Gate("base token: accuracy moved from the start, in seed stds", _moves("base token", "long"), 1.0,
                stage="runs"),
           Gate("base seq: accuracy moved from the start, in seed stds", _moves("base seq", "long"), 1.0,
                stage="runs"),
           Gate("base-like policy: share of its completions that are wrong and longer than 40 tokens",
                audit_value("sumk/long/long_wrong_share"), 0.15)),
    details={
        "accuracy aligned-like, seq - token": difference("aligned seq", "aligned token"),
        "length gap (incorrect - correct) base-like, token-mean": one_arm("base token", held_out("length_gap")),
        "length gap (incorrect - correct) base-like, seq-mean": one_arm("base seq", held_out("length_gap")),
    },
    curve="completions/mean_length",
))


################
# Takeaways 7-8: overlong filtering
################
EXPERIMENTS.register("7")(Experiment(
    id="T7",
    title="overlong filtering helps at short maximum lengths",
    claim="Masking truncated completions helps when the maximum length is short (8k in the paper).",
    arms={"off": arm("sumk", "long", max_completion_length=TIGHT),
          "on": arm("sumk", "long", max_completion_length=TIGHT, overlong_filter=True)},
    primaries=(Primary("T7", "held-out accuracy for k >= 5 at 96 tokens, filter on - off, trained at 28 tokens",
                       difference("on", "off", held_out("acc_k5"))),),
    # the paper's premise: what the short length cuts is reasoning that would have been right with more room
    gates=(Gate("initial policy: share of completions cut at 28 tokens that would be correct with more room",
                audit_value("sumk/long/would_be_correct_share@tight"), 0.40),),
    details={
        "accuracy at 28 tokens, on - off": difference("on", "off", held_out("acc@tight")),
        "truncated share at 28 tokens, off": one_arm("off", held_out("trunc_share@tight")),
        "truncated share at 28 tokens, on": one_arm("on", held_out("trunc_share@tight")),
    },
    curve="overlong/frac_truncated",
))

# T8: "no gain" = held-out accuracy on - off within +-0.03: 3 points of accuracy, about 4x the evaluation noise of one
# run (0.008); a trick that moves accuracy by less is not worth a switch at this scale
EQUIVALENCE_MARGIN = 0.03

EXPERIMENTS.register("8")(Experiment(
    id="T8",
    title="at long maximum lengths, overlong filtering drops mostly degenerate repetition",
    claim="At a long maximum length (20k), the filter brings no gain; what it masks is mostly repetition that never "
          "ends.",
    arms={"off": arm("sumk", "long"), "on": arm("sumk", "long", overlong_filter=True)},
    primaries=(
        Primary("T8 loops", f"share of the filter-on policy's completions cut at {LOOSE} tokens that do not end by "
                            f"{HORIZON}, minus 0.5", lambda runs: runs["on"]["eval"]["unending_share"] - 0.5),
        Primary("T8 no gain", f"held-out accuracy, filter on - off (equivalence margin {EQUIVALENCE_MARGIN})",
                difference("on", "off"), margin=EQUIVALENCE_MARGIN),
    ),
    # not by construction: the initial policy's cut completions include ones that would end (the long format)
    gates=(Gate(f"initial policy: completions cut at {LOOSE} tokens, of 4000", audit_value("sumk/long/truncated_n"),
                20),
           Gate(f"initial policy: share of those that end by {HORIZON} tokens",
                audit_value("sumk/long/ending_share_of_truncated"), 0.10),
           Gate(f"filter on: fewest held-out completions cut at {LOOSE} tokens in a seed",
                lambda e: min(runs["on"]["eval"]["truncated_n"] for runs in e["runs"].values()), 5, stage="runs")),
    details={
        "truncated share at 96 tokens (on)": one_arm("on", held_out("trunc_share")),
        "truncated share at 96 tokens (off)": one_arm("off", held_out("trunc_share")),
        "unending share of truncated (off)": one_arm("off", held_out("unending_share")),
    },
    curve="overlong/frac_truncated",
))


# What the hash covers, relative to the package: the definitions, the verdict engine, the measures, the runner's
# training and held-out evaluation, and the tasks. Not the report's formatting, the CLI or the audit's bookkeeping.
HASHED = ("lab/experiments.py", "lab/stats.py", "lab/measure.py", "lab/runner.py", "tasks/sumk.py",
          "tasks/arithmetic.py")


def preregistration_sha256() -> str:
    """SHA-256 of the `HASHED` files, in order: the definitions every run, audit and summary is tied to."""
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    digest = hashlib.sha256()
    for name in HASHED:
        with open(os.path.join(root, name), "rb") as f:
            digest.update(name.encode() + b"\0" + f.read())
    return digest.hexdigest()


def policy_dir(task: str, policy: str) -> str:
    """The local folder of an arm's initial policy: `ADD_POLICIES` for ADD, `trl_lite.tasks.sumk.SUMK_POLICIES`."""
    if task == "add":
        from ..tasks.arithmetic import embedded_policy_path

        return embedded_policy_path(ADD_POLICIES[policy])
    from ..tasks.sumk import sumk_policy_path

    return sumk_policy_path(policy)


def weights_sha256(model_dir: str) -> str:
    """SHA-256 of a policy's weights (`model.safetensors`), recorded by every run that starts from it."""
    import os

    with open(os.path.join(model_dir, "model.safetensors"), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()
