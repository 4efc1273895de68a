"""The lab's experiments: one per takeaway of arXiv 2508.08221, with its arms, its metric and its direction fixed here,
before anything is run.

An experiment's `effect(runs)` takes one seed's finished runs (arm label -> result, see `trl_lite.lab.runner`) and
returns one number whose sign is the paper's claim: positive means "as the paper says". The verdict is then read off
the per-seed effects (`trl_lite.lab.stats.verdict`). `details` are the mechanism measures reported next to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..registry import Registry
from .stats import mean

# LitePPOConfig fields every lab run shares (the ablation runner's built-in settings for ADD, and for SUM-k: 8 prompts
# x 8 completions per generation batch in 4 optimizer steps of 16 and 2 passes over each batch, so that the policy
# moves far enough from the sampling policy for the clip to act, Takeaways 4-5; lr 1e-4: at 4e-4 every arm fell
# below its initial held-out accuracy, at 1e-4 the aligned-like policy rises 0.367 -> 0.40-0.42 over 5 seeds;
# bench/lab/README.md)
ADD_SETTINGS = {
    "per_device_train_batch_size": 16, "steps_per_generation": 4, "num_generations": 8, "max_completion_length": 14,
    "learning_rate": 1e-4, "lr_scheduler_type": "constant", "temperature": 1.0, "clipped_tokens_top_k": 64,
}
SUMK_SETTINGS = {
    "per_device_train_batch_size": 16, "steps_per_generation": 4, "num_generations": 8, "max_completion_length": 96,
    "learning_rate": 1e-4, "lr_scheduler_type": "constant", "temperature": 1.0, "num_iterations": 2,
    "clipped_tokens_top_k": 64,
}
LOOSE, TIGHT = 96, 28  # SUM-k's maximum completion lengths: the tight one cuts full scratchpads for k >= 5
STEPS = {"add": 120, "sumk": 128}  # optimizer steps per run (ADD: 30 generation batches; SUM-k: 16 x 2 passes x 4)


SHORT = {"advantage_mean": "mean", "advantage_std": "std", "epsilon_high": "eps_high", "loss_aggregation": "agg",
         "max_completion_length": "len", "overlong_filter": "filter"}


@dataclass(frozen=True)
class Arm:
    """One training setting: a task (`add` or `sumk`), its data (`easy`/`hard`/`mixed` ADD mixes; the `base`/`aligned`
    policy for SUM-k) and the LitePPOConfig fields it changes from the lab's defaults (Lite PPO)."""

    task: str
    data: str
    overrides: tuple = ()

    @property
    def name(self) -> str:
        """The run folder's name, e.g. `add-easy-mean=group-std=none`."""
        return "-".join([self.task, self.data] + [f"{SHORT.get(k, k)}={v}" for k, v in self.overrides])

    @property
    def settings(self) -> dict:
        return {**(ADD_SETTINGS if self.task == "add" else SUMK_SETTINGS), **dict(self.overrides)}

    @property
    def steps(self) -> int:
        return STEPS[self.task]


def arm(task: str, data: str, **overrides) -> Arm:
    return Arm(task, data, tuple(sorted(overrides.items())))


@dataclass(frozen=True)
class Experiment:
    takeaway: int
    title: str
    claim: str
    arms: dict[str, Arm]
    metric: str  # what `effect` measures, in words (positive = the paper's direction)
    effect: Callable[[dict], float]
    details: dict[str, Callable[[dict], float]] = field(default_factory=dict)
    curve: str = "entropy"  # the metrics.jsonl key drawn over training, per arm
    requires: Callable[[dict], str | None] = lambda runs: None  # why this seed's runs cannot test the claim


EXPERIMENTS: Registry[Experiment] = Registry("experiment")


def _eval(key="acc"):
    """One held-out measure of a run's result (accuracy by default)."""
    return lambda result: result["eval"][key]


def _train(key):
    """One training measure of a run's result (see `runner.train_measures`)."""
    return lambda result: result["train"][key]


def diff(a: str, b: str, get=_eval()):
    """runs[a] - runs[b] of one measure."""
    return lambda runs: get(runs[a]) - get(runs[b])


def of(label: str, get):
    """One measure of one arm's run: `of("group/group", _train("grad_norm_max"))`."""
    return lambda runs: get(runs[label])


MIXES = ("easy", "hard", "mixed")
NORMS = {"batch/batch": ("batch", "batch"), "group/group": ("group", "group"), "group/batch": ("group", "batch"),
         "group/none": ("group", "none"), "auto": ("group", "auto")}


def _add(mix: str, norm: str) -> Arm:
    mean_level, std_level = NORMS[norm]
    return arm("add", mix, advantage_mean=mean_level, advantage_std=std_level)


def _over_mixes(norm: str, runs: dict, get=_eval()) -> list[float]:
    return [get(runs[f"{norm} {mix}"]) for mix in MIXES]


EXPERIMENTS.register("1")(Experiment(
    takeaway=1,
    title="group-level normalization is robust, batch-level fragile with {0,1} rewards",
    claim="Group-level mean and std normalization is robust across data; batch-level is fragile under {0,1} rewards.",
    arms={f"{norm} {mix}": _add(mix, norm) for norm in ("batch/batch", "group/group", "group/batch") for mix in MIXES},
    metric="held-out hard accuracy, group/group - batch/batch, mean over the three ADD mixes",
    effect=lambda runs: mean(_over_mixes("group/group", runs)) - mean(_over_mixes("batch/batch", runs)),
    details={
        "top-5% |A| share, batch/batch (hard mix)": of("batch/batch hard", _train("top5_adv_share")),
        "top-5% |A| share, group/group (hard mix)": of("group/group hard", _train("top5_adv_share")),
        "final entropy, batch/batch (hard mix)": of("batch/batch hard", _train("entropy_last")),
        "final entropy, group/group (hard mix)": of("group/group hard", _train("entropy_last")),
        "accuracy group/group - batch/batch, hard mix": diff("group/group hard", "batch/batch hard"),
        "accuracy group/group - batch/batch, easy mix": diff("group/group easy", "batch/batch easy"),
    },
    curve="lab/top5_abs_adv_share",
))

EXPERIMENTS.register("2")(Experiment(
    takeaway=2,
    title="on concentrated (easy) rewards, dropping the std avoids blowing up the gradients",
    claim="When rewards are concentrated (easy data), group mean without the std trains better than with it.",
    arms={norm: _add("easy", norm) for norm in ("group/batch", "group/none", "group/group", "auto")},
    metric="held-out hard accuracy, group/none - group/group, trained on the easy-skewed mix",
    effect=diff("group/none", "group/group"),
    details={
        "max 1/sigma_batch, group/group": of("group/group", _train("inv_sigma_max")),
        "max pre-clip grad norm, group/group": of("group/group", _train("grad_norm_max")),
        "max pre-clip grad norm, group/none": of("group/none", _train("grad_norm_max")),
        "late reward jitter, group/group": of("group/group", _train("reward_jitter")),
        "late reward jitter, group/none": of("group/none", _train("reward_jitter")),
        "accuracy auto - group/group": diff("auto", "group/group"),
        "accuracy group/batch - group/group": diff("group/batch", "group/group"),
    },
    curve="grad_norm",
))

_T3_NORMS = ("batch/batch", "group/group", "group/batch", "group/none", "auto")


def _t3_effect(runs: dict) -> float:
    """Group/batch's worst mix minus the best worst-mix among the other normalizations."""
    worst = {norm: min(_over_mixes(norm, runs)) for norm in _T3_NORMS}
    return worst["group/batch"] - max(v for norm, v in worst.items() if norm != "group/batch")


EXPERIMENTS.register("3")(Experiment(
    takeaway=3,
    title="group mean + batch std is the most robust normalization",
    claim="Group-level mean with batch-level std is the most robust across data difficulty.",
    arms={f"{norm} {mix}": _add(mix, norm) for norm in _T3_NORMS for mix in MIXES},
    metric="worst-mix held-out accuracy of group/batch - the best worst-mix accuracy of the others",
    effect=_t3_effect,
    details={f"worst-mix accuracy, {norm}": (lambda runs, norm=norm: min(_over_mixes(norm, runs)))
             for norm in _T3_NORMS},
    curve="reward",
))


def _clip_high_required(labels):
    def requires(runs):
        low = [label for label in labels if runs[label]["train"]["clip_high_frac"] < 0.01]
        if low:
            shares = ", ".join(f"{label}: {runs[label]['train']['clip_high_frac']:.4f}" for label in low)
            return f"under 1% of tokens clipped at the high bound ({shares})"
        return None
    return requires


EXPERIMENTS.register("4")(Experiment(
    takeaway=4,
    title="clip-higher helps aligned models, not base models",
    claim="Raising epsilon_high (0.2 -> 0.28) helps aligned (Instruct) models explore; little or harmful for base.",
    arms={f"{policy} {eps}": arm("sumk", policy, epsilon_high=eps) if eps != 0.2 else arm("sumk", policy)
          for policy in ("aligned", "base") for eps in (0.2, 0.28)},
    metric="held-out accuracy of the aligned-like policy, epsilon_high 0.28 - 0.2",
    effect=diff("aligned 0.28", "aligned 0.2"),
    details={
        "accuracy base-like, 0.28 - 0.2": diff("base 0.28", "base 0.2"),
        "pass@4 aligned-like, 0.28 - 0.2": diff("aligned 0.28", "aligned 0.2", _eval("pass@4")),
        "fork-token entropy aligned-like, 0.28 - 0.2": diff("aligned 0.28", "aligned 0.2", _eval("fork_entropy")),
        "Cov(log pi, A) aligned-like, 0.28 - 0.2": diff("aligned 0.28", "aligned 0.2", _train("cov_logp_adv")),
        "carry-drop rate aligned-like, 0.2": of("aligned 0.2", _eval("carry_drop_rate")),
        "carry-drop rate aligned-like, 0.28": of("aligned 0.28", _eval("carry_drop_rate")),
        "high-clip share aligned-like, 0.2": of("aligned 0.2", _train("clip_high_frac")),
        "high-clip share base-like, 0.2": of("base 0.2", _train("clip_high_frac")),
    },
    curve="entropy",
    requires=_clip_high_required(["aligned 0.2", "base 0.2"]),
))


def _over_representation(label: str, cls: str = "connective"):
    """(share of class among tokens clipped at the high bound) / (share among completion tokens trained on)."""
    def get(runs):
        train = runs[label]["train"]
        clipped, tokens = train["clipped_high_by_class"], train["tokens_by_class"]
        if not sum(clipped.values()) or not tokens.get(cls):
            return float("nan")
        return (clipped.get(cls, 0) / sum(clipped.values())) / (tokens[cls] / sum(tokens.values()))
    return get


MIN_EXPECTED_CLIPS = 5  # P(no connective clipped | 5 expected) = e^-5 < 1%: below it, "never clipped" is chance


def _t5_requires(runs):
    """T5 can tell only if, were clipping blind to the token class, enough clipped tokens would be connectives."""
    train = runs["base 0.2"]["train"]
    clipped, tokens = sum(train["clipped_high_by_class"].values()), train["tokens_by_class"]
    if not clipped:
        return "no token was clipped at the high bound"
    if not tokens.get("connective"):
        return "the policy emitted no connective tokens"
    share = tokens["connective"] / sum(tokens.values())
    if clipped * share < MIN_EXPECTED_CLIPS:
        return (f"{clipped:.0f} tokens clipped at the high bound; at the connectives' share of tokens ({share:.1%}) "
                f"{clipped * share:.1f} of them would be connectives by chance, under the {MIN_EXPECTED_CLIPS} needed")
    return None


EXPERIMENTS.register("5")(Experiment(
    takeaway=5,
    title="with a low upper bound, connective tokens are clipped most",
    claim="At epsilon_high 0.2, connective tokens ('therefore', 'if') are the ones clipped at the high bound most.",
    arms={"base 0.2": arm("sumk", "base"), "aligned 0.2": arm("sumk", "aligned")},
    metric="the connectives' over-representation among high-clipped tokens (share clipped / share of tokens) - 1, "
           "base-like policy at 0.2 (-1: never clipped)",
    effect=lambda runs: _over_representation("base 0.2")(runs) - 1,
    details={
        **{f"over-representation base-like, {cls}": _over_representation("base 0.2", cls)
           for cls in ("connective", "digit", "operator", "filler", "boxed", "eos")},
        "over-representation aligned-like, digit": _over_representation("aligned 0.2", "digit"),
    },
    curve="clip_ratio/high_mean",
    requires=_t5_requires,
))

_AGGS = {"token": "token-mean", "seq": "seq-mean-token-mean", "seqsum": "seq-mean-token-sum-norm"}


def _sumk(policy, agg):
    return arm("sumk", policy) if agg == "token" else arm("sumk", policy, loss_aggregation=_AGGS[agg])


EXPERIMENTS.register("6")(Experiment(
    takeaway=6,
    title="token-level loss for base models, sequence-level for aligned models",
    claim="Token-level loss aggregation helps base models; sequence-level suits aligned models.",
    arms={f"{policy} {agg}": _sumk(policy, agg) for policy in ("base", "aligned") for agg in _AGGS},
    metric="held-out accuracy of the base-like policy, token-mean - seq-mean-token-mean",
    effect=diff("base token", "base seq"),
    details={
        "accuracy aligned-like, seq-mean-token-mean - token-mean": diff("aligned seq", "aligned token"),
        "accuracy base-like, token-mean - seq-mean-token-sum-norm": diff("base token", "base seqsum"),
        "length gap (incorrect - correct) base-like, token-mean": of("base token", _eval("length_gap")),
        "length gap (incorrect - correct) base-like, seq-mean": of("base seq", _eval("length_gap")),
        "filler rate in incorrect base-like, token-mean": of("base token", _eval("filler_rate_incorrect")),
        "filler rate in incorrect base-like, seq-mean": of("base seq", _eval("filler_rate_incorrect")),
        "accuracy k>=5 base-like, token - seq": diff("base token", "base seq", _eval("acc_k5")),
    },
    curve="completions/mean_length",
))


def _t7_requires(runs):
    share = runs["off"]["train"]["trunc_first"]
    return None if share >= 0.02 else f"only {share:.3f} of the first batches' completions were truncated"


EXPERIMENTS.register("7")(Experiment(
    takeaway=7,
    title="overlong filtering helps at short maximum lengths",
    claim="Masking truncated completions helps when the maximum length is short (8k in the paper).",
    arms={"off": arm("sumk", "base", max_completion_length=TIGHT),
          "on": arm("sumk", "base", max_completion_length=TIGHT, overlong_filter=True)},
    metric="held-out accuracy for k >= 5 at the loose budget (96 tokens), filter on - off, trained at 28 tokens",
    effect=diff("on", "off", _eval("acc_k5")),
    details={
        "accuracy k>=5 at the tight budget (28), on - off": diff("on", "off", _eval("acc_k5@tight")),
        "accuracy at the loose budget, on - off": diff("on", "off"),
        "accuracy at the tight budget, on - off": diff("on", "off", _eval("acc@tight")),
        "truncated share at the tight budget, off": of("off", _eval("trunc_share@tight")),
        "truncated share at the tight budget, on": of("on", _eval("trunc_share@tight")),
    },
    curve="overlong/frac_truncated",
    requires=_t7_requires,
))

EXPERIMENTS.register("8")(Experiment(
    takeaway=8,
    title="at long maximum lengths, overlong filtering drops mostly degenerate repetition",
    claim="At a long maximum length (20k), the filter brings no gain; what it masks is mostly repetition that never "
          "ends.",
    arms={"off": arm("sumk", "base"), "on": arm("sumk", "base", overlong_filter=True)},
    metric="share of loops among the completions the filter masks (truncated at 96 tokens) of the filter-on run's "
           "policy, minus 0.5",
    effect=lambda runs: runs["on"]["eval"]["loop_share_of_truncated"] - 0.5,
    details={
        "accuracy on - off (the paper: about 0)": diff("on", "off"),
        "truncated share at 96 tokens (on)": of("on", _eval("trunc_share")),
        "truncated share at 96 tokens (off)": of("off", _eval("trunc_share")),
        "loop share of truncated (off)": of("off", _eval("loop_share_of_truncated")),
        "exact-repeat rate in training batches, last (on)": of("on", _train("loop_rate_last")),
    },
    curve="overlong/frac_truncated",
    requires=lambda runs: None if runs["on"]["eval"]["truncated_n"] >= 20 else
    f"only {runs['on']['eval']['truncated_n']} truncated held-out completions (20 needed)",
))
