"""Accuracy on the paper's six benchmarks: per benchmark (mean over n samples, pass@k when asked) and their average.

    trl-lite eval --model PATH_OR_ID --benchmarks math500,aime24 --n 4 --temperature 0.6 [--data-dir DIR] [--pass-k 4]

Generation uses vLLM when it is installed and a GPU is present, `transformers` otherwise. Results are written as JSON
and as a markdown table, and can be put in a model card (`trainer.evaluation_results`).
"""

from __future__ import annotations

import json
import math
import os
import sys
from typing import TYPE_CHECKING

from .data import BENCHMARKS, SOURCES, load_source
from .scoring import evaluate_benchmarks

if TYPE_CHECKING:
    from datasets import Dataset


def to_markdown(results: dict) -> str:
    rows = results["benchmarks"]
    extra = sorted({k for r in rows.values() for k in r if k.startswith("pass@")})
    lines = ["| benchmark | accuracy | " + " | ".join(extra) + (" | " if extra else "") + "problems |",
             "|---|---|" + "---|" * len(extra) + "---|"]
    for name, r in rows.items():
        cells = [f"{r['accuracy']:.4f}"] + [f"{r[k]:.4f}" for k in extra] + [str(r["problems"])]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append(f"| **average** | **{results['average']:.4f}** |" + " |" * len(extra) + " |")
    return "\n".join(lines) + "\n"


def card_results(results: dict) -> dict:
    """Flattens `evaluate_benchmarks` / `results.json` output for a model card: `trainer.evaluation_results =
    card_results(json.load(open("eval_results/results.json")))`."""
    flat = {}
    for name, r in results["benchmarks"].items():
        flat.update({f"{name}/{k}": v for k, v in r.items() if k == "accuracy" or k.startswith("pass@")})
    flat["average/accuracy"] = results["average"]
    return flat


def load_benchmarks(names: list[str], data_dir: str | None = None, limit: int | None = None) -> dict[str, Dataset]:
    """Benchmarks by name, from `data_dir/<name>.jsonl` (or `.parquet`, `.json`, `.csv`) when given, from the Hub
    otherwise."""
    out = {}
    for name in names:
        path = None
        if data_dir is not None:
            path = next((os.path.join(data_dir, f"{name}.{ext}") for ext in ("jsonl", "parquet", "json", "csv")
                         if os.path.exists(os.path.join(data_dir, f"{name}.{ext}"))), None)
            if path is None:
                raise ValueError(f"benchmark {name!r}: no {name}.jsonl / .parquet / .json / .csv in "
                                 f"data_dir={data_dir!r}.")
        dataset = load_source(name, path=path)
        out[name] = dataset.select(range(min(limit, len(dataset)))) if limit else dataset
    return out


def _data_dir_hint(names: list[str]) -> str:
    files = ", ".join(f"{name}.jsonl" for name in names)
    return f"pass --data-dir DIR with local files ({files}; .parquet or .json also read) with the Hub dataset's columns"


def _exit_if_hub_unreachable(err: BaseException, kind: str, name: str, alternative: str) -> None:
    """Exits with one line (no traceback) when `err` means the Hub could not be reached; returns otherwise."""
    from .offline import hub_unreachable, unreachable_message

    if hub_unreachable(err):
        sys.exit(unreachable_message(kind, name, alternative))


def main(argv: list[str] | None = None) -> dict:
    import argparse

    parser = argparse.ArgumentParser(prog="trl-lite eval", description="Accuracy on the paper's math benchmarks.")
    parser.add_argument("--model", required=True, help="Local path or Hub id of the policy.")
    parser.add_argument("--benchmarks", default=",".join(BENCHMARKS),
                        help=f"Comma-separated, among {list(BENCHMARKS)} (default: all six).")
    parser.add_argument("--n", type=int, default=4, help="Samples per problem; accuracy is their mean.")
    parser.add_argument("--pass-k", type=int, default=None, help="Also report pass@k (k <= n).")
    parser.add_argument("--temperature", type=float, default=0.6)
    parser.add_argument("--top-p", type=float, default=0.95)
    parser.add_argument("--max-new-tokens", type=int, default=4096)
    parser.add_argument("--data-dir", default=None, help="Folder with <benchmark>.jsonl/.parquet/.json/.csv files (offline).")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N problems of each benchmark.")
    parser.add_argument("--timeout", type=float, default=5.0, help="Seconds per answer check.")
    parser.add_argument("--output-dir", default="eval_results", help="Where results.json and results.md go.")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    names = [b.strip() for b in args.benchmarks.split(",") if b.strip()]
    unknown = [b for b in names if b not in BENCHMARKS]
    if unknown:
        parser.error(f"--benchmarks {args.benchmarks!r} names {unknown}; accepted: {list(BENCHMARKS)}")
    if args.pass_k is not None and args.pass_k > args.n:
        parser.error(f"--pass-k {args.pass_k} needs --n >= {args.pass_k}, got --n {args.n}")
    checks = [  # NaN passes every comparison: each float is also checked to be finite
        ("--temperature", args.temperature, math.isfinite(args.temperature) and args.temperature >= 0, "a float >= 0"),
        ("--top-p", args.top_p, math.isfinite(args.top_p) and 0 < args.top_p <= 1, "a float in (0, 1]"),
        ("--timeout", args.timeout, math.isfinite(args.timeout) and args.timeout > 0, "seconds > 0"),
        ("--n", args.n, args.n >= 1, "an int >= 1"),
        ("--max-new-tokens", args.max_new_tokens, args.max_new_tokens >= 1, "an int >= 1"),
    ]
    for flag, value, ok, accepted in checks:
        if not ok:
            parser.error(f"{flag} {value!r} is not supported; expected {accepted}")

    benchmarks = {}
    for name in names:  # one at a time, so that an unreachable Hub names the dataset
        try:
            benchmarks.update(load_benchmarks([name], args.data_dir, args.limit))
        except Exception as err:
            _exit_if_hub_unreachable(err, "dataset", SOURCES.get(name).hub_id, _data_dir_hint(names))
            raise
    try:
        from .sampling import make_sampler

        sample = make_sampler(args.model, max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                              top_p=args.top_p, seed=args.seed)
    except Exception as err:
        _exit_if_hub_unreachable(err, "model", args.model,
                                 "pass --model a local folder with the model's files (config.json, weights, tokenizer)")
        raise
    from .rewards import MathChecker

    checker = MathChecker(timeout=args.timeout)
    try:
        results = evaluate_benchmarks(sample, benchmarks, n=args.n, pass_k=args.pass_k, check=checker.check,
                                      progress=lambda line: print(line, file=sys.stderr))
    finally:
        checker.close()
    results["settings"] = dict(vars(args))
    os.makedirs(args.output_dir, exist_ok=True)
    with open(os.path.join(args.output_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    table = to_markdown(results)
    with open(os.path.join(args.output_dir, "results.md"), "w") as f:
        f.write(table)
    print(table)
    return results


def __getattr__(name: str):
    # `MathEvalCallback` subclasses transformers' `TrainerCallback`, which imports torch: it lives in
    # `trl_lite.eval_callback` and is imported from there on first use, so `trl-lite eval --help` stays light.
    if name == "MathEvalCallback":
        from .eval_callback import MathEvalCallback

        return MathEvalCallback
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
