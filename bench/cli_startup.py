"""Startup time of the `trl-lite` command: wall time from launch to exit of `--help` and other commands that do no
work, run through the installed console script (`<venv>/bin/trl-lite`) in fresh processes, and which heavy libraries
each one imported.

    OMP_NUM_THREADS=1 python bench/cli_startup.py --runs 5

Before and after a change (as `bench/results/cli_startup.json` was made):

    git worktree add /tmp/head HEAD
    OMP_NUM_THREADS=1 python bench/cli_startup.py --runs 5 --pythonpath /tmp/head --label before --out /tmp/before.json
    OMP_NUM_THREADS=1 python bench/cli_startup.py --runs 5 --label after --baseline /tmp/before.json

`--pythonpath DIR` puts DIR first on PYTHONPATH so that the `trl_lite` package there is the one imported (the editable
install's finder comes after PYTHONPATH); `--baseline` stores an earlier run's JSON in the output. Writes
`bench/results/cli_startup.json` by default. Timing varies with what else the machine runs: compare runs taken
back to back.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HEAVY = ("torch", "trl", "transformers", "peft", "datasets", "vllm")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Commands run from here, not from ROOT: `python -c` puts the working directory first on sys.path
NEUTRAL = os.path.expanduser("~") if os.path.isdir(os.path.expanduser("~")) else "/"


def commands(script: str) -> list[tuple[str, list[str]]]:
    return [
        ("trl-lite --help", [script, "--help"]),
        ("trl-lite train --help", [script, "train", "--help"]),
        ("trl-lite eval --help", [script, "eval", "--help"]),
        ("trl-lite recommend --help", [script, "recommend", "--help"]),
        ("trl-lite ablate --help", [script, "ablate", "--help"]),
        ('python -c "import trl_lite"', [sys.executable, "-c", "import trl_lite"]),
    ]


def machine() -> dict:
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu_model": cpu, "python": platform.python_version(),
            "platform": platform.platform()}


def loadavg() -> list[float] | None:
    """1, 5 and 15-minute load averages: what else the machine was running."""
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def heavy_imports(argv: list[str], env: dict) -> list[str]:
    """The heavy top-level packages a command imports, from `python -X importtime`."""
    argv = [sys.executable, "-X", "importtime", *argv[1:]] if argv[0] == sys.executable else \
        [sys.executable, "-X", "importtime", *argv]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=NEUTRAL)
    found = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name.split(".")[0] in HEAVY:
                found.add(name.split(".")[0])
    return sorted(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per command (the median is reported)")
    parser.add_argument("--pythonpath", default=None, help="a directory to put first on PYTHONPATH")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "cli_startup.json"))
    parser.add_argument("--label", default=None, help="a name for this measurement, stored in the JSON")
    parser.add_argument("--baseline", default=None,
                        help="a JSON this script wrote earlier (e.g. of the old code), stored as `baseline` in --out")
    args = parser.parse_args(argv)
    load_at_start = loadavg()

    script = os.path.join(os.path.dirname(sys.executable), "trl-lite")
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), HF_HUB_OFFLINE="1")
    if args.pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (args.pythonpath, env.get("PYTHONPATH")) if p)
    # whether the imported package has trl_lite/train.py (a file test, not find_spec: the editable install's finder
    # would find the checkout's train.py for a package imported from --pythonpath)
    probe = subprocess.run([sys.executable, "-c", "import os, trl_lite; print(trl_lite.__file__); "
                            "print(os.path.exists(os.path.join(os.path.dirname(trl_lite.__file__), 'train.py')))"],
                           env=env, capture_output=True, text=True, cwd=NEUTRAL)
    package_file, has_train = (probe.stdout.split("\n") + ["", ""])[:2]
    results = []
    for name, cmd in commands(script):
        if name.startswith("trl-lite train") and has_train.strip() != "True":
            results.append({"command": name, "skipped": "no trl_lite/train.py in the package measured"})
            print(f"{name:<32} skipped (no trl_lite.train)")
            continue
        times, rc = [], None
        for _ in range(args.runs):
            start = time.perf_counter()
            proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=NEUTRAL)
            times.append(time.perf_counter() - start)
            rc = proc.returncode
        heavy = heavy_imports(cmd, env)
        results.append({"command": name, "median_s": round(statistics.median(times), 3),
                        "min_s": round(min(times), 3), "max_s": round(max(times), 3),
                        "runs_s": [round(t, 3) for t in times], "exit_code": rc, "heavy_imports": heavy})
        print(f"{name:<32} median {statistics.median(times):6.3f} s  (min {min(times):.3f}, max {max(times):.3f})"
              f"  rc={rc}  heavy={heavy}")
    record = {"command": "OMP_NUM_THREADS=1 python bench/cli_startup.py " + " ".join(argv or sys.argv[1:]),
              "label": args.label, "date": time.strftime("%Y-%m-%d"), "package": package_file.strip(),
              "runs": args.runs, "machine": machine(), "loadavg_at_start": load_at_start,
              "loadavg_at_end": loadavg(), "results": results}
    if args.baseline:
        with open(args.baseline) as f:
            record["baseline"] = json.load(f)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
