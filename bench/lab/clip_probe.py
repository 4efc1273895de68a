"""Clip census of one short SUM-k run with more updates per generation batch (Takeaways 4-5): the share of completion
tokens clipped at the high and the low bound, averaged over the run's optimizer steps (the lab's `clip_high_frac`).

    python bench/lab/clip_probe.py aligned 128 num_iterations=8 learning_rate=5e-4 [per_device_train_batch_size=8 ...]

Arguments: the policy (`base` or `aligned`), the optimizer steps, then LitePPOConfig fields that change the lab's SUM-k
settings (`trl_lite.lab.experiments.SUMK_SETTINGS`: 64 completions per generation batch in 4 steps of 16). One
generation batch spans 4 x num_iterations steps. Runs go to /tmp/clip-probe-<steps>/ (a finished run is reused).
"""

from __future__ import annotations

import ast
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from trl_lite.lab.experiments import arm  # noqa: E402
from trl_lite.lab.runner import run_arm  # noqa: E402


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[0] not in ("base", "aligned"):
        sys.exit(__doc__)
    policy, steps = argv[0], int(argv[1])
    fields = {key: ast.literal_eval(value) for key, value in (a.split("=", 1) for a in argv[2:])}
    result = run_arm(arm("sumk", policy, **fields), 0, f"/tmp/clip-probe-{steps}", steps=steps, heldout=False,
                     progress=False)
    train = result["train"]
    print(f"{policy} {steps} steps {fields}: clipped high {train['clip_high_frac']:.4f}, "
          f"low {train['clip_low_frac']:.4f}, {result['wall_s']:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
