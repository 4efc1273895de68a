"""What a lab experiment is made of: arms, primary tests, gates, the settings every run of a task shares, and the
registry the experiments are registered in (`lab/trl_lite_lab/designs/`, loaded by `trl_lite_lab.experiments`).

Reading an experiment:

- `arms`: labelled training settings (`Arm`); the arms of one seed share the initial policy, the data order and the
  sampling seeds, so per-seed differences between arms are paired.
- `primaries`: the primary tests. Each maps one seed's finished runs (arm label -> result) to one number whose sign is
  the paper's claim (positive = as the paper says), or, with a `margin`, to a number whose absolute value the paper
  claims is small (an equivalence test). They enter the lab's Holm family (`trl_lite_lab.stats`).
- `gates`: what must hold for the experiment to be a fair test, each with the `kind` of thing it checks (the audit,
  the clip band, gain, ...), which an untestable verdict names. An `audit` gate is measured on fresh samples of
  the initial policy before any training (`trl-lite-lab audit`); a `runs` gate on the finished runs, pooled over seeds
  (what only training shows: how many tokens reach the clip band, whether every arm gained); a `pilot` gate only on the
  pilot (`trl_lite_lab.pilot`: e.g. whether the registered seeds can detect half of what training moves).
- `details`: mechanism measures reported next to the verdict, labelled descriptive (no test, no correction).

An experiment is registered only once its pilot, on seeds outside the registered ones, has passed every gate with a
margin (`trl_lite_lab.pilot`); its definition, with the code that runs and judges it, is hashed on its own
(`trl_lite_lab.provenance`), so redesigning one experiment leaves the others' runs valid.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass, field
from typing import Callable

from trl_lite.registry import Registry
from .stats import mean

################
# Settings every run of a task shares
################
# ADD (Takeaways 1-3, clip scaling): 8 prompts per generation batch in 4 optimizer steps of 16 completions.
ADD_SETTINGS = {
    "per_device_train_batch_size": 16, "steps_per_generation": 4, "num_generations": 8, "max_completion_length": 14,
    "learning_rate": 1e-4, "lr_scheduler_type": "constant", "temperature": 0.6, "clipped_tokens_top_k": 64,
}
# SUM-k (Takeaways 4-8): 8 prompts x 8 completions per generation batch in 4 optimizer steps of 16, 2 passes.
SUMK_SETTINGS = {
    "per_device_train_batch_size": 16, "steps_per_generation": 4, "num_generations": 8, "max_completion_length": 96,
    "learning_rate": 1e-4, "lr_scheduler_type": "constant", "temperature": 1.0, "num_iterations": 2,
    "clipped_tokens_top_k": 64,
}
# SUM-k's budgets: LOOSE the usual maximum completion length, TIGHT the short one (cuts full scratchpads for k >= 5),
# LONG one that every terminating format ends within (the long format ends by 120 tokens). Held-out samples run to
# HORIZON, so a completion cut at LONG that has not ended by HORIZON is not a terminating format; HORIZON + the prompt
# (up to 18 tokens) stays inside the 160 positions the policies were trained on.
LOOSE, TIGHT, LONG = 96, 28, 124
HORIZON = 140
STEPS = {"add": 120, "sumk": 128}  # optimizer steps per run unless an experiment says otherwise
EVAL_PROBLEMS, EVAL_SAMPLES = 1000, 4  # held-out: 1000 problems x 4 samples (evaluation noise about 0.008 at p = 0.5)
AUDIT_PROBLEMS = 200  # audit: fresh samples of the initial policy on this many training problems per mix
PILOT_SEED = 1000  # pilot seeds are PILOT_SEED, PILOT_SEED + 1, ...: never a registered seed (those count from an
# experiment's `first_seed`, 0 unless its design says otherwise)
PILOT_MARGIN = 0.25  # a pilot passes a runs or pilot gate only beyond it by this fraction of the threshold
# an audit gate (measured once on 200-1000 fresh problems, little noise) by this fraction: a quarter of a 0.8 pass-rate
# threshold would ask for a pass rate of 1.0
AUDIT_MARGIN = 0.1
# gain gates (version 3): an arm's mean held-out measure must rise this far above the initial policy's, and its training
# reward must rise by at least REWARD_RISE (it need only rise: the gain gate sizes it). Version 3.1 reads the training
# reward's rise off TRAIN_PROBE fixed problems of the arm's own training data, sampled like held-out ones before and
# after training (`training.training_accuracy`), not off the generation batches' rewards, whose problems change batch
# by batch (on the mostly-easy mix that noise hid a rise of about 0.02: issue 38's pilots)
GAIN = 0.03
REWARD_RISE = 0.0
TRAIN_PROBE = 400

SHORT = {"advantage_mean": "mean", "advantage_std": "std", "epsilon_high": "eps_high", "loss_aggregation": "agg",
         "max_completion_length": "len", "overlong_filter": "filter", "num_generations": "G",
         "max_grad_norm": "clip_grad", "temperature": "T", "num_iterations": "passes",
         "per_device_train_batch_size": "bs", "learning_rate": "lr"}
# LitePPOConfig defaults the arms may name (an arm that sets one of these to its default trains alike)
_DEFAULTS = {"advantage_mean": "group", "advantage_std": "batch", "epsilon_high": 0.2, "overlong_filter": False,
             "loss_aggregation": "token-mean"}


@dataclass(frozen=True)
class Arm:
    """One training setting: a task (`add` or `sumk`), its initial policy, its data (`easy`/`hard`/`mixed` ADD mixes,
    `train` for SUM-k), the LitePPOConfig fields it changes from the task's settings, and its optimizer steps."""

    task: str
    policy: str
    data: str = "train"
    overrides: tuple = ()
    max_steps: int | None = None

    @property
    def name(self) -> str:
        """The run folder's name, e.g. `add-carry-easy-mean=group-std=none`."""
        parts = [self.task, self.policy, self.data] + [f"{SHORT.get(k, k)}={v}" for k, v in self.overrides]
        return "-".join(parts + ([f"steps={self.max_steps}"] if self.max_steps else []))

    @property
    def settings(self) -> dict:
        return {**(ADD_SETTINGS if self.task == "add" else SUMK_SETTINGS), **dict(self.overrides)}

    @property
    def steps(self) -> int:
        return self.max_steps or STEPS[self.task]


def arm(task: str, policy: str, data: str = "train", *, steps: int | None = None, **overrides) -> Arm:
    """An `Arm`; overrides equal to the task's settings are dropped, so two arms that train alike compare equal."""
    base = ADD_SETTINGS if task == "add" else SUMK_SETTINGS
    kept = {k: v for k, v in overrides.items() if base.get(k, _DEFAULTS.get(k)) != v}
    return Arm(task, policy, data, tuple(sorted(kept.items())), None if steps in (None, STEPS[task]) else steps)


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
    (evidence: the audit's measures, before training), `runs` (evidence: `{"runs": {seed: {label: result}},
    "initial": {policy: evaluation}}`, after training) or `pilot` (the same evidence, from the pilot's seeds, plus
    `"registered_seeds"`; checked by the pilot only). `kind` names what the gate checks (`the audit`, `the clip band`,
    `gain`, ...): an untestable verdict says which kind failed."""

    name: str
    value: Callable[[dict], float]
    threshold: float
    at_most: bool = False
    stage: str = "audit"
    kind: str = "the audit"

    def passes(self, value: float, margin: float = 0.0) -> bool:
        """Whether `value` passes, beyond the threshold by `margin` times its size (a pilot's margin)."""
        if math.isnan(value):
            return False
        slack = abs(self.threshold) * margin
        bound = self.threshold - slack if self.at_most else self.threshold + slack
        # 1e-12: a bound such as 0.8 + 0.2 * 0.8 lands a rounding error off the value it names (1.0 must pass it)
        return value <= bound + 1e-12 if self.at_most else value >= bound - 1e-12

    @property
    def sign(self) -> str:
        return "<=" if self.at_most else ">="


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
    seeds: int = 8  # registered paired seeds: first_seed .. first_seed + seeds - 1
    pilot_seeds: int = 2  # pilot seeds: PILOT_SEED .. PILOT_SEED + pilot_seeds - 1
    design: str = ""  # the design module's file, relative to the package (set by `register`)
    notes: str = ""  # what the design is and why, one paragraph (printed with the pre-registration)
    first_seed: int = 0  # the first registered seed (a later version on seeds its earlier ones have not seen)

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
        if self.seeds < 2 or self.pilot_seeds < 2:
            raise ValueError(f"experiment {self.id}: seeds={self.seeds}, pilot_seeds={self.pilot_seeds}; a test and "
                             "a pilot's spread need at least 2 each.")
        pilots = range(PILOT_SEED, PILOT_SEED + self.pilot_seeds)
        if self.first_seed < 0 or set(self.seed_list()) & set(pilots):
            raise ValueError(f"experiment {self.id}: first_seed={self.first_seed} gives registered seeds "
                             f"{self.first_seed}-{self.first_seed + self.seeds - 1}; expected an int >= 0 whose seeds "
                             f"miss the pilot seeds {pilots.start}-{pilots.stop - 1}.")

    @property
    def task(self) -> str:
        return next(iter(self.arms.values())).task

    def seed_list(self, pilot: bool = False, count: int | None = None) -> list[int]:
        """The pilot seeds, or the registered ones (`count` of them from `first_seed`: a quick try's; default all)."""
        if pilot:
            return [PILOT_SEED + i for i in range(self.pilot_seeds)]
        return [self.first_seed + i for i in range(self.seeds if count is None else count)]


EXPERIMENTS: Registry[Experiment] = Registry("experiment")


def register(name: str, experiment: Experiment, module_file: str) -> Experiment:
    """Registers `experiment` under `name`, recording the design module it is defined in (`__file__`)."""
    import dataclasses

    package = os.path.dirname(os.path.abspath(__file__))  # `design` is relative to the lab's package
    design = os.path.relpath(os.path.abspath(module_file), package).replace(os.sep, "/")
    return EXPERIMENTS.register(name)(dataclasses.replace(experiment, design=design))


################
# Measures and gate values
################
def held_out(key: str = "acc") -> Callable[[dict], float]:
    """One held-out measure of a run's result (accuracy by default)."""
    return lambda result: result["eval"][key]


def training(key: str) -> Callable[[dict], float]:
    """One training measure of a run's result (`trl_lite_lab.results.train_measures`)."""
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
    """An audit gate's value: one of the audit's measures (`trl_lite_lab.audit`)."""
    return lambda evidence: evidence[key]


def gained(label: str, policy: str, key: str = "acc") -> Callable[[dict], float]:
    """A gain gate's value (signed, version 3): the mean over seeds of the arm's held-out `key` minus the initial
    policy's. An arm that falls gives a negative value: it fails the gate, never passes it by moving."""
    def value(evidence):
        return (mean([runs[label]["eval"][key] for runs in evidence["runs"].values()])
                - evidence["initial"][policy][key])
    return value


def reward_rise(label: str) -> Callable[[dict], float]:
    """A gain gate's value (version 3.1): the mean over seeds of how far the arm's training reward rose, measured on
    fixed training problems before and after training (the run's `train_rise`: `training.training_accuracy`)."""
    return lambda evidence: mean([runs[label]["eval"]["train_rise"] for runs in evidence["runs"].values()])


def mean_gain(labels: tuple[str, ...], policies: dict[str, str]) -> Callable[[dict], float]:
    """What training gains, for a power gate: the mean over `labels` of their gain gates' values."""
    return lambda evidence: mean([gained(label, policies[label])(evidence) for label in labels])


def gain_gates(arms: dict[str, Arm], key: str = "acc", amount: float = GAIN, what: str = "held-out accuracy",
               labels: tuple[str, ...] | None = None) -> tuple[Gate, ...]:
    """Two gates per arm (or per `labels`), both signed (version 3): the arm's mean held-out `key` must rise by at
    least `amount` above the initial policy's (kind "gain"), and its training reward must rise (kind "training-reward
    rise": [`reward_rise`]). An arm that falls makes the experiment untestable with that value, never a verdict about
    a trick."""
    out = []
    for label in labels or tuple(arms):
        out.append(Gate(f"{label}: {what}, mean over seeds, minus the initial policy's (a gain)",
                        gained(label, arms[label].policy, key), amount, stage="runs", kind="gain"))
        out.append(Gate(f"{label}: training reward (accuracy on {TRAIN_PROBE} fixed training problems), trained minus "
                        "initial, mean over seeds (a rise)", reward_rise(label), REWARD_RISE, stage="runs",
                        kind="training-reward rise"))
    return tuple(out)


def band_share(label: str, key: str = "ratio_band_tokens") -> Callable[[dict], float]:
    """Runs gate: share of positive-advantage tokens (pooled over seeds) whose ratio lies in the band where the arms'
    clip bounds differ."""
    def value(evidence):
        band = pooled(label, key)(evidence)
        positive = pooled(label, "pos_adv_tokens")(evidence)
        return band / positive if positive else float("nan")
    return value


def effect_sd(primary: Primary) -> Callable[[dict], float]:
    """The per-seed standard deviation of a primary's effect over the evidence's runs (the pilot's seeds)."""
    def value(evidence):
        values = [primary.effect(runs) for runs in evidence["runs"].values()]
        m = mean(values)
        return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else float("nan")
    return value


def power_ratio(primary: Primary, movement: Callable[[dict], float]) -> Callable[[dict], float]:
    """Pilot gate: the smallest effect the registered seeds (`evidence["registered_seeds"]`) detect with 80% power at
    the strictest Holm level of the family (`evidence["family"]`: every designed primary test), from the pilot's
    spread of the effect (`stats.detectable_effect`: infinite where a sign-flip test on that few seeds cannot reach
    the level), divided by what training gains (`movement(evidence)`, e.g. `mean_gain`). At most 0.5: the test can
    find an effect half as large as training's own."""
    def value(evidence):
        from .stats import detectable_effect

        sd, move = effect_sd(primary)(evidence), movement(evidence)
        if not (math.isfinite(sd) and move > 0):
            return float("nan")
        return detectable_effect(sd, evidence["registered_seeds"], evidence["family"]) / move
    return value


# The lab's own policies (`lab/scripts/build_lab_policies.py`, `scripts/build_embedded_policy.py`): ship with the lab.
# The other one, ADD's "carry", is trl-lite's demo policy (`trl_lite.tasks.arithmetic.embedded_policy_path()`).
LAB_POLICIES = {("add", "carry-small"): "arith_carry_small", ("add", "carry-tiny"): "arith_carry_tiny",
                **{("sumk", kind): f"sumk_{kind}" for kind in ("base", "aligned", "fork", "connective", "long",
                                                                "recheck", "verbose", "scratch")}}
POLICIES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "policies")


def policy_dir(task: str, policy: str) -> str:
    """The local folder of an arm's initial policy: the lab's own (`LAB_POLICIES`), or trl-lite's demo policy (ADD's
    "carry")."""
    if (task, policy) in LAB_POLICIES:
        return os.path.join(POLICIES_DIR, LAB_POLICIES[task, policy])
    if (task, policy) == ("add", "carry"):
        from trl_lite.tasks.arithmetic import embedded_policy_path

        return embedded_policy_path()
    known = sorted([*LAB_POLICIES, ("add", "carry")])
    raise ValueError(f"(task, policy)=({task!r}, {policy!r}) names no lab policy; known: {known}.")


def policy_sha256(model_dir: str) -> str:
    """SHA-256 of a policy's folder: every file's name and bytes (weights, config, tokenizer, chat template), recorded
    by every run that starts from it."""
    digest = hashlib.sha256()
    for name in sorted(os.listdir(model_dir)):
        path = os.path.join(model_dir, name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                digest.update(name.encode() + b"\0" + f.read() + b"\0")
    return digest.hexdigest()
