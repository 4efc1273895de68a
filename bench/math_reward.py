"""Throughput of the math reward's checks: math-verify in this process vs the worker pool (1 worker, and the default).

    python bench/math_reward.py --checks 400 --repeats 3

Two batches, each of `--checks` completions of about 2,000 characters of reasoning:
- `boxed`: the answer is in a final `\\boxed{}` (the common case after a few RL steps);
- `fallback`: no `\\boxed{}`, so math-verify's LaTeX and expression extraction scans the whole text.
Half the answers are right. Every variant checks the same batch; the outcomes must agree (asserted). Workers are
started before the clock starts (a training run starts them once). Figures go to `bench/results/math_reward.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from trl_lite.rewards import MathChecker, check_answer, default_workers  # noqa: E402

STEPS = [
    "We expand the product and collect like terms, so that $({a}x + {b})({a}x - {b}) = {a2}x^2 - {b2}$.",
    "Substituting $x = {a}$ gives ${a2} \\cdot {a} - {b2}$, and we simplify the fraction $\\frac{{{b2}}}{{{a}}}$.",
    "Therefore the sum of the roots is ${b}$ and, checking the discriminant, the case $x < 0$ is impossible.",
]


def completion(rng: random.Random, answer: int, boxed: bool) -> str:
    parts = []
    while sum(map(len, parts)) < 2000:
        a, b = rng.randint(2, 30), rng.randint(2, 30)
        parts.append(rng.choice(STEPS).format(a=a, b=b, a2=a * a, b2=b * b))
    ending = f"The answer is $\\boxed{{{answer}}}$." if boxed else f"So the final answer is ${answer}$."
    return " ".join(parts) + " " + ending


def batch(n: int, boxed: bool, seed: int = 0) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        gold = rng.randint(1, 999)
        pairs.append((completion(rng, gold if i % 2 == 0 else gold + 1, boxed), str(gold)))
    return pairs


def timed(fn, pairs, repeats):
    times, outcomes = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        outcomes = fn(pairs)
        times.append(time.perf_counter() - start)
    return statistics.median(times), outcomes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checks", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", default=os.path.join(os.path.dirname(__file__), "results", "math_reward.json"))
    args = parser.parse_args()

    rows = []
    for name, boxed in (("boxed", True), ("fallback", False)):
        pairs = batch(args.checks, boxed)
        in_process = lambda ps: [check_answer(c, g) for c, g in ps]  # noqa: E731
        in_process(pairs[:4])  # import math-verify outside the clock
        base_time, expected = timed(in_process, pairs, args.repeats)
        row = {"batch": name, "checks": len(pairs), "in_process_checks_per_s": len(pairs) / base_time}
        for label, workers in (("1_worker", 1), ("pool", default_workers())):
            checker = MathChecker(timeout=30.0, workers=workers)
            checker.check_many(pairs[:workers])  # start the workers outside the clock
            elapsed, outcomes = timed(checker.check_many, pairs, args.repeats)
            checker.close()
            assert outcomes == expected, f"{label} disagrees with the in-process check"
            row[f"{label}_workers"] = workers
            row[f"{label}_checks_per_s"] = len(pairs) / elapsed
            row[f"{label}_speedup"] = base_time / elapsed
        rows.append(row)
        print(json.dumps(row), flush=True)

    result = {"command": "python bench/math_reward.py " + " ".join(sys.argv[1:]), "machine": platform.platform(),
              "cpus": len(os.sched_getaffinity(0)), "date": time.strftime("%Y-%m-%d"), "rows": rows}
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
