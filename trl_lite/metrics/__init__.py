"""`evaluate` metric modules, loadable by path: `evaluate.load(trl_lite.metrics.path("math_accuracy"))`."""

import os


def path(name: str) -> str:
    """Path of the metric module folder `name`, for `evaluate.load`."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
