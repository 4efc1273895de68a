"""Multi-process tests, run again and again beside CPU-bound processes: does any process fail after it has finished?

A finished multi-process run used to abort now and then with SIGABRT ("terminate called without an active
exception") on a loaded machine (`trl_lite/teardown.py`). This runs each given pytest node `--repeat` times, one
after the other, while `--burners` processes spin on the CPU, and counts passes, failures and runs whose output
mentions "terminate called" or SIGABRT.

    python bench/multiprocess_soak.py --repeat 10 --burners 2 \\
        tests/distributed/test_multiprocess.py tests/distributed/test_multinode.py [--out bench/results/soak_mp.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _spin() -> None:
    while True:
        pass


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("nodes", nargs="+", help="pytest node ids (a file, a test, or a test with parameters)")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--burners", type=int, default=os.cpu_count() or 2, help="CPU-bound processes beside the tests")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    burners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.burners)]
    for burner in burners:
        burner.start()
    rows = []
    try:
        for node in args.nodes:
            for attempt in range(1, args.repeat + 1):
                started = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "pytest", node, "-q", "-p", "no:cacheprovider"],
                                      cwd=ROOT, capture_output=True, text=True)
                output = done.stdout + done.stderr
                row = {"node": node, "attempt": attempt, "returncode": done.returncode,
                       "seconds": round(time.perf_counter() - started, 1),
                       "abort": "terminate called" in output or "SIGABRT" in output,
                       "summary": (done.stdout.strip().splitlines() or [""])[-1]}
                rows.append(row)
                print(f"{node} #{attempt}: rc {row['returncode']}, {row['seconds']} s, {row['summary']}"
                      + (" ABORT" if row["abort"] else ""), flush=True)
    finally:
        for burner in burners:
            burner.terminate()
    print()
    for node in args.nodes:
        mine = [row for row in rows if row["node"] == node]
        passed = sum(row["returncode"] == 0 for row in mine)
        print(f"{node}: {passed}/{len(mine)} passed, {sum(row['abort'] for row in mine)} with an abort")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"machine": platform.platform(), "cpus": os.cpu_count(), "burners": args.burners, "runs": rows},
                      f, indent=1)
    return 0 if all(row["returncode"] == 0 for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
