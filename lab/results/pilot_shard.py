"""A pilot's runs split over processes (version 3.1, 2026-11-27): `run_arm` exactly as `trl_lite_lab.pilot.pilot`
calls it (the pilot seeds, the full held-out evaluation); `trl-lite-lab pilot NAME --output-dir OUTPUT` then finds them
finished and evaluates the gates (its record's `made` is then the time of that command, after the runs).

    python lab/results/pilot_shard.py I N [EXPERIMENT] [OUTPUT]   # every N-th run from the I-th; EXPERIMENT 3 (T1-T3's
                                                                  # eight arms) unless given; OUTPUT /work/lab31
"""
import sys

from trl_lite_lab.design import EVAL_PROBLEMS, EXPERIMENTS
from trl_lite_lab.runner import initial_eval, run_arm

index, count = int(sys.argv[1]), int(sys.argv[2])
OUTPUT = sys.argv[4] if len(sys.argv) > 4 else "/work/lab31"
experiment = EXPERIMENTS[sys.argv[3] if len(sys.argv) > 3 else "3"]
jobs = [(a, seed) for seed in experiment.seed_list(pilot=True) for a in experiment.arms.values()]
for i, (a, seed) in enumerate(jobs):
    if i % count == index:
        initial_eval(a.task, a.policy, OUTPUT, EVAL_PROBLEMS, a.settings["temperature"])
        run_arm(a, seed, OUTPUT, progress=False, eval_problems=EVAL_PROBLEMS)
