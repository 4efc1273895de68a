"""math_accuracy: share of predictions whose final answer math-verify finds equivalent to the reference.

The same checker as `trl_lite.rewards.math_accuracy_reward` (last `\\boxed{}` first, then LaTeX and expression
fallbacks; each check in a worker process under a hard time limit, a timed-out check counts as wrong). References
that cannot be parsed are left out and counted.

    import evaluate, trl_lite.metrics
    metric = evaluate.load(trl_lite.metrics.path("math_accuracy"))
    metric.compute(predictions=["... \\boxed{\\frac{1}{2}}"], references=["0.5"])
    # {'accuracy': 1.0, 'scored': 1, 'unparsable_references': 0, 'timeouts': 0}
"""

import datasets
import evaluate

from trl_lite.rewards import CORRECT, GOLD_UNPARSABLE, TIMEOUT, MathChecker

_CITATION = """\
@article{liu2025tricks,
  title   = {Tricks or Traps? A Deep Dive into RL for LLM Reasoning},
  author  = {Zihe Liu and others},
  journal = {arXiv preprint arXiv:2508.08221},
  year    = {2025}
}
"""

_KWARGS = """
Args:
    predictions (`list[str]`): model completions.
    references (`list[str]`): gold final answers (raw text is wrapped in `$...$`).
    timeout (`float`, *optional*, defaults to 5.0): seconds per check.
Returns:
    accuracy: correct / scored; scored: predictions with a parsable reference; unparsable_references; timeouts.
"""


@evaluate.utils.file_utils.add_start_docstrings(__doc__, _KWARGS)
class MathAccuracy(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=__doc__,
            citation=_CITATION,
            inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
        )

    def _compute(self, predictions, references, timeout: float = 5.0):
        checker = MathChecker(timeout=timeout)
        try:
            outcomes = [checker.check(p, r) for p, r in zip(predictions, references)]
        finally:
            checker.close()
        scored = [o for o in outcomes if o != GOLD_UNPARSABLE]
        return {
            "accuracy": scored.count(CORRECT) / len(scored) if scored else float("nan"),
            "scored": len(scored),
            "unparsable_references": outcomes.count(GOLD_UNPARSABLE),
            "timeouts": outcomes.count(TIMEOUT),
        }
