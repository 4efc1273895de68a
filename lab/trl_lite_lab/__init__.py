"""The paper's lab: each takeaway of arXiv 2508.08221 as a fair test on a laptop, with a verdict a skeptic accepts.

Modules, in the order a lab runs:

- `experiments`: the pre-registration (arms, primary tests, directions, gates, thresholds, seeds), hashed;
- `audit`: fresh samples of the initial policies before training, and which audit gates pass;
- `runner`: the runs (each a `trl-lite ablate` run of a `LitePPOTrainer`), which write results;
- `results`: reads finished runs (never trains);
- `stats`: the verdict engine (t-tests, Holm, smallest detectable effect, equivalence);
- `report`: verdicts, figures and the summary, from results only;
- `measure`: the measures (pure functions) and the held-out sampling; `cli`: `trl-lite-lab`.

See `lab/results/README.md` for the results and `docs/lab.md` for the design.
"""

from __future__ import annotations

from .cli import main
from .experiments import (
    EXPERIMENTS,
    Arm,
    Experiment,
    Gate,
    Primary,
    arm,
    experiment_sha256,
)

__all__ = ["EXPERIMENTS", "Arm", "Experiment", "Gate", "Primary", "arm", "experiment_sha256", "main"]
