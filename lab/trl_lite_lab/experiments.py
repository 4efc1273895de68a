"""The lab's pre-registration: every experiment, loaded from its design module (`lab/trl_lite_lab/designs/`).

What an experiment is made of (arms, primary tests, gates, seeds) is `trl_lite_lab.design`; each design module says
what it tests and why. Every run, initial evaluation, audit and pilot records the hash of what it was made under
(`trl_lite_lab.provenance`): per experiment, its design module with the code that runs and judges it. A report
refuses runs made under another hash or from other policy weights; an experiment runs only once its committed pilot
has passed every gate (`trl_lite_lab.pilot`); a change made after results were seen is listed, dated, in
`lab/results/README.md`.
"""

from __future__ import annotations

import importlib

from .design import (  # noqa: F401  (the lab's vocabulary, re-exported)
    ADD_SETTINGS,
    AUDIT_PROBLEMS,
    EVAL_PROBLEMS,
    EVAL_SAMPLES,
    EXPERIMENTS,
    HORIZON,
    LONG,
    LOOSE,
    SUMK_SETTINGS,
    TIGHT,
    Arm,
    Experiment,
    Gate,
    Primary,
    arm,
    policy_dir,
    policy_sha256,
)
from .provenance import engine_sha256, experiment_sha256  # noqa: F401

# the design modules register their experiments when imported, in the order the lab lists them
DESIGNS = ("normalization_t1", "normalization_t2", "normalization_t3", "clip", "clip_scaling", "connectives",
           "aggregation", "overlong", "headline")
for _module in DESIGNS:
    importlib.import_module(f"{__package__}.designs.{_module}")


def experiment_named(experiment_id: str) -> Experiment:
    """The experiment whose `id` (`T4`, `clip-scaling`) is `experiment_id`."""
    for name in EXPERIMENTS.names():
        if EXPERIMENTS[name].id == experiment_id:
            return EXPERIMENTS[name]
    raise KeyError(f"no experiment has id {experiment_id!r}; expected one of "
                   f"{[EXPERIMENTS[n].id for n in EXPERIMENTS.names()]}")


def family_size() -> int:
    """Every designed primary test: the Holm family a pilot plans its power against."""
    return sum(len(EXPERIMENTS[name].primaries) for name in EXPERIMENTS.names())
