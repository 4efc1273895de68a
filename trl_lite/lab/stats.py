"""The lab's plain-number helpers, apart from `measure.py` so that the experiments' definitions and the report (and
so `trl-lite lab list` and `--help`) load without torch."""

from __future__ import annotations

import math


def mean(values) -> float:
    """Mean of the values that are present (None and NaN left out); NaN when none is."""
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(values) / len(values) if values else float("nan")
