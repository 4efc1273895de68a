"""The one evaluator of held-out accuracy: pass@k, one benchmark's accuracy, a set of benchmarks.

Pure functions over sampled completions (`trl_lite.sampling` makes them) and an answer check (the math checker of
`trl_lite.rewards` by default; `exact_check` for the built-in tasks). Everything that reports accuracy scores with it:
`trl-lite eval` (`trl_lite.evaluation`), the training callback (`trl_lite.eval_callback`), the built-in tasks'
`pass_rate` (the main job's before/after table, `trl-lite ablate`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datasets import Dataset


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c correct (Chen et al., 2021): 1 - C(n-c, k) / C(n, k)."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples per problem, got n={n}.")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def score_benchmark(completions: list[list[str]], answers: list[str], check: Callable[[str, str], str],
                    pass_k: int | None = None) -> dict:
    """Accuracy (mean over all samples) and pass@k of one benchmark; problems with an unparsable gold are skipped."""
    correct_counts, n = [], len(completions[0]) if completions else 0
    skipped = 0
    for outs, gold in zip(completions, answers):
        outcomes = [check(c, gold) for c in outs]
        if "gold_unparsable" in outcomes:
            skipped += 1
            continue
        correct_counts.append(sum(o == "correct" for o in outcomes))
    scored = len(correct_counts)
    result = {
        "accuracy": sum(correct_counts) / (scored * n) if scored else float("nan"),
        "problems": scored,
        "samples_per_problem": n,
        "skipped_unparsable_gold": skipped,
    }
    if pass_k is not None:
        result[f"pass@{pass_k}"] = (sum(pass_at_k(n, c, pass_k) for c in correct_counts) / scored) if scored else float("nan")
    return result


def evaluate_benchmarks(
    sample: Callable[[list[list[dict]], int], list[list[str]]],
    benchmarks: dict[str, Dataset],
    *,
    n: int = 4,
    pass_k: int | None = None,
    check: Callable[[str, str], str] | None = None,
    progress: Callable[[str], None] | None = print,
) -> dict:
    """Scores `sample(prompts, n)` on each benchmark dataset (schema of `trl_lite.data`) and averages them."""
    if check is None:
        from .rewards import MathChecker

        check = MathChecker().check
    results = {}
    for name, dataset in benchmarks.items():
        start = time.monotonic()
        completions = sample(list(dataset["prompt"]), n)
        results[name] = score_benchmark(completions, list(dataset["answer"]), check, pass_k)
        if progress:
            progress(f"{name}: accuracy {results[name]['accuracy']:.4f} on {results[name]['problems']} problems "
                     f"x {n} samples ({time.monotonic() - start:.1f} s)")
    accuracies = [r["accuracy"] for r in results.values() if not math.isnan(r["accuracy"])]
    return {"benchmarks": results, "average": sum(accuracies) / len(accuracies) if accuracies else float("nan")}
