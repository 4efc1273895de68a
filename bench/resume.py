"""Resume exactness per setting: the largest weight, loss and logged-value differences between an uninterrupted run
and the same run resumed from checkpoint-k (tests/resume_run.py, float64, sampled generation).

    python bench/resume.py [--settings defaults,dapo] [--no-two-processes] [--out bench/results/resume.json]

Each setting runs in its own process; the `dapo` setting runs a second time on 2 processes (torchrun, gloo).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.resume_run import SETTINGS  # noqa: E402
from tests.distributed.test_multiprocess import torchrun  # noqa: E402


def run(setting: str, processes: int, model_dir: str, work: str) -> dict:
    out = os.path.join(work, f"{setting}-{processes}")
    script = os.path.join(ROOT, "tests", "resume_run.py")
    # the "vllm" setting generates through the test-only vLLM stand-in (tests/vllm_standin)
    path = [ROOT, os.path.join(ROOT, "tests", "vllm_standin")] if setting == "vllm" else [ROOT]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(path), "HF_HUB_OFFLINE": "1"}
    launcher = [sys.executable] if processes == 1 else torchrun(processes)
    done = subprocess.run([*launcher, script, model_dir, out, setting], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{setting} on {processes} process(es) failed:\n{done.stderr[-3000:]}")
    with open(os.path.join(out, "result.json")) as f:
        result = json.load(f)
    return {key: result[key] for key in ("setting", "world", "resume_step", "weights", "trained", "losses")} | {
        "logged": max(result["logged"].values(), default=0.0),
        "logged_keys_differing": sorted(k for k, v in result["logged"].items() if v >= 1e-6),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--settings", default=",".join(SETTINGS), help=f"comma-separated, from {list(SETTINGS)}")
    parser.add_argument("--no-two-processes", action="store_true")
    parser.add_argument("--out", default=None)
    cli = parser.parse_args()
    from tests.tiny import build_tiny_model

    rows = []
    with tempfile.TemporaryDirectory() as work:
        model_dir = build_tiny_model(os.path.join(work, "model"))
        plan = [(name, 1) for name in cli.settings.split(",")]
        if not cli.no_two_processes and "dapo" in cli.settings.split(","):
            plan.append(("dapo", 2))
        for name, processes in plan:
            rows.append(run(name, processes, model_dir, work))
            row = rows[-1]
            print(f"{row['setting']:>22} x{row['world']}  resumed at {row['resume_step']}  weights {row['weights']:.1e}"
                  f"  (trained {row['trained']:.1e})  losses {row['losses']:.1e}  logged {row['logged']:.1e}",
                  flush=True)
    if cli.out:
        with open(cli.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
