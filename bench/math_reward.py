"""Throughput of the math reward's checks: math-verify in this process vs the worker pool (1 worker, and the default).

    python bench/math_reward.py --checks 400 --repeats 3

Two batches, each of `--checks` completions of about 2,000 characters of reasoning:
- `boxed`: the answer is in a final `\\boxed{}` (the common case after a few RL steps);
- `fallback`: no `\\boxed{}`, so math-verify's LaTeX and expression extraction scans the whole text.
Gold answers are fractions `\\frac{a}{b}`; the completions give an equivalent but unreduced fraction (right) or
another one (wrong), half each, so sympy has real work. math-verify caches parses, so every timed batch is new to the
process that checks it (a fresh seed per variant and repeat); the outcomes are then checked against math-verify in
this process, untimed (asserted equal). Workers are started before the clock starts (a training run starts them
once). Figures go to `bench/results/math_reward.json`.
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


def completion(rng: random.Random, answer: str, boxed: bool) -> str:
    parts = []
    while sum(map(len, parts)) < 2000:
        a, b = rng.randint(2, 30), rng.randint(2, 30)
        parts.append(rng.choice(STEPS).format(a=a, b=b, a2=a * a, b2=b * b))
    ending = f"The answer is $\\boxed{{{answer}}}$." if boxed else f"So the final answer is ${answer}$."
    return " ".join(parts) + " " + ending


def batch(n: int, boxed: bool, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        a, b, k = rng.randint(1, 97), rng.randint(2, 98), rng.randint(2, 9)
        answer = f"\\frac{{{k * a}}}{{{k * b}}}" if i % 2 == 0 else f"\\frac{{{k * a + 1}}}{{{k * b}}}"
        pairs.append((completion(rng, answer, boxed), f"\\frac{{{a}}}{{{b}}}"))
    return pairs


def timed(fn, n, boxed, seeds):
    """Median seconds of `fn` over fresh batches (one per seed), and whether every outcome matched math-verify."""
    times, agree = [], True
    for seed in seeds:
        pairs = batch(n, boxed, seed)
        start = time.perf_counter()
        outcomes = fn(pairs)
        times.append(time.perf_counter() - start)
        agree &= outcomes == [check_answer(c, g) for c, g in pairs]
    return statistics.median(times), agree


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checks", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", default=os.path.join(os.path.dirname(__file__), "results", "math_reward.json"))
    args = parser.parse_args()

    rows = []
    for name, boxed in (("boxed", True), ("fallback", False)):
        in_process = lambda ps: [check_answer(c, g) for c, g in ps]  # noqa: E731
        in_process(batch(4, boxed, seed=-1))  # import math-verify outside the clock
        base_time, _ = timed(in_process, args.checks, boxed, [100 + r for r in range(args.repeats)])
        row = {"batch": name, "checks": args.checks, "in_process_checks_per_s": args.checks / base_time}
        for offset, (label, workers) in enumerate((("1_worker", 1), ("pool", default_workers())), start=2):
            checker = MathChecker(timeout=30.0, workers=workers)
            checker.check_many(batch(workers, boxed, seed=-offset))  # start the workers outside the clock
            elapsed, agree = timed(checker.check_many, args.checks, boxed,
                                   [100 * offset + r for r in range(args.repeats)])
            checker.close()
            assert agree, f"{label} disagrees with math-verify in this process"
            row[f"{label}_workers"] = workers
            row[f"{label}_checks_per_s"] = args.checks / elapsed
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
