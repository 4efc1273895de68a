"""`trl-lite-lab`: list the experiments, audit the initial policies, run the experiments, write the summary.

    trl-lite-lab list [--markdown]                       # the experiments, their arms, tests and gates
    trl-lite-lab audit --output-dir runs/lab             # fresh samples of the initial policies (minutes)
    trl-lite-lab pilot 4 --output-dir runs/lab           # pilot seeds: registers the experiment if every gate passes
    trl-lite-lab run all --output-dir runs/lab           # audit, then every registered run (resumes)
    trl-lite-lab run 4,5 --output-dir runs/lab --shard 0/2   # and --shard 1/2 in a second process
    trl-lite-lab report all --output-dir runs/lab        # verdicts, figures, summary.md / summary.json (reads only)
    trl-lite-lab report all --output-dir runs/lab --carry lab/results/summary.json   # runs not here: from that summary
    trl-lite-lab null --summary lab/results/summary.json  # a summary's tests: sign-flip p-values, resampled-null rate
"""

from __future__ import annotations

import argparse
import os
import sys

from .experiments import EXPERIMENTS


def describe() -> str:
    """`trl-lite-lab list`: one block per experiment."""
    lines = []
    for name in EXPERIMENTS.names():
        e = EXPERIMENTS[name]
        lines.append(f"{name}  {e.title}")
        lines.append(f"   the paper: {e.claim}")
        for primary in e.primaries:
            kind = f"equivalence, margin {primary.margin}" if primary.margin else "> 0: as the paper says"
            lines.append(f"   test:  {primary.metric} ({kind})")
        lines.append(f"   arms:  {', '.join(f'{label} [{a.name}]' for label, a in e.arms.items())} x {e.seeds} seeds"
                     + (f" ({e.first_seed}-{e.first_seed + e.seeds - 1})" if e.first_seed else ""))
        for gate in e.gates:
            lines.append(f"   gate ({gate.stage}): {gate.name} {'<=' if gate.at_most else '>='} {gate.threshold}")
    return "\n".join(lines)


def _names(value: str) -> list[str]:
    return list(EXPERIMENTS.names()) if value == "all" else [v.strip() for v in value.split(",") if v.strip()]


def _shard(value: str) -> tuple[int, int]:
    try:
        index, count = (int(x) for x in value.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard {value!r} is not supported; expected i/n, e.g. 0/2.") from None
    return index, count


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="trl-lite-lab", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    list_parser = sub.add_parser("list", help="the experiments, their arms, tests and gates")
    list_parser.add_argument("--markdown", action="store_true",
                             help="the pre-registration table (markdown), generated from the definitions")
    audit_parser = sub.add_parser("audit", help="fresh samples of the initial policies; which audit gates pass")
    audit_parser.add_argument("--output-dir", default="runs/lab")
    pilot_parser = sub.add_parser("pilot", help="pilot seeds; writes pilots/<id>.json and registers the experiment "
                                                "if every gate passed with the margin")
    pilot_parser.add_argument("takeaways", help=f"'all' or comma-separated among {EXPERIMENTS.names()}")
    pilot_parser.add_argument("--output-dir", default="runs/lab")
    run_parser = sub.add_parser("run", help="the audit, then the runs of the registered experiments whose audit gates "
                                            "pass")
    report_parser = sub.add_parser("report", help="verdicts, figures, summary.md and summary.json from finished runs")
    for p in (run_parser, report_parser):
        p.add_argument("takeaways", help=f"'all' or comma-separated among {EXPERIMENTS.names()}")
        p.add_argument("--output-dir", default="runs/lab")
        p.add_argument("--seeds", type=int, default=None,
                       help="Paired seeds per experiment instead of the pre-registered ones (a quick try; the summary "
                            "says so).")
    report_parser.add_argument("--carry", default=None, metavar="SUMMARY_JSON",
                               help="An earlier summary.json: an experiment whose runs are not in --output-dir and "
                                    "whose definitions it holds under the same hash is carried from it (its per-seed "
                                    "effects, gates and details; the tests are made again).")
    run_parser.add_argument("--steps", type=int, default=None,
                            help="Optimizer steps per run instead of 120 (ADD) / 128 (SUM-k) (a quick try).")
    run_parser.add_argument("--eval-problems", type=int, default=None,
                            help="Held-out problems per evaluation instead of 1000 (a quick try).")
    run_parser.add_argument("--shard", type=_shard, default=(0, 1), metavar="I/N",
                            help="Run every N-th run from the I-th (split a lab over processes).")
    null_parser = sub.add_parser("null", help="a summary's directional tests under the exact sign-flip test, and the "
                                              "family's wrong-direction rate under a null resampled from its effects")
    null_parser.add_argument("--summary", default="lab/results/summary.json", help="A summary.json (`report` writes it).")
    null_parser.add_argument("--draws", type=int, default=20_000, help="Simulated labs.")
    null_parser.add_argument("--seed", type=int, default=0, help="Seed of the resampling.")
    null_parser.add_argument("--output", default=None,
                             help="Also write the page (markdown) here, and what it reads beside it (.json).")
    args = parser.parse_args(argv)
    if args.command == "list":
        if args.markdown:
            from .report import preregistration

            print(preregistration(), end="")
        else:
            print(describe())
    elif args.command == "null":
        import json

        from .resampling import markdown, reanalysis

        if args.draws < 1:
            parser.error(f"--draws {args.draws} is not supported; expected a positive number of simulated labs")
        with open(args.summary, encoding="utf-8") as f:
            result = reanalysis(json.load(f), args.draws, args.seed)
        page = markdown(result, args.summary)
        if args.output:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(page)
            with open(os.path.splitext(args.output)[0] + ".json", "w", encoding="utf-8") as f:
                json.dump(result, f, indent=2)
                f.write("\n")
        print(page, end="")
    elif args.command == "pilot":
        from .pilot import pilot

        for name in _names(args.takeaways):
            record = pilot(name, args.output_dir)
            failed = [g["name"] for g in record["gates"] if not g["passed_with_margin"]]
            print(f"{record['id']}: pilot {'passed: registered' if record['passed'] else 'FAILED: ' + '; '.join(failed)}",
                  file=sys.stderr)
    elif args.command == "audit":
        from .audit import audit

        audit(args.output_dir)
        print(open(os.path.join(args.output_dir, "audit.md"), encoding="utf-8").read(), end="")
    elif args.command == "run":
        from .audit import audit, failed_audit_gates
        from .runner import run

        extra = {"eval_problems": args.eval_problems} if args.eval_problems else {}
        names = _names(args.takeaways)
        measures = audit(args.output_dir, names, progress=True, **extra)
        testable = [name for name in names if not failed_audit_gates(EXPERIMENTS[name], measures)]
        for name in sorted(set(names) - set(testable), key=names.index):
            print(f"{EXPERIMENTS[name].id}: an audit gate failed, not run (untestable; see audit.md)", file=sys.stderr)
        try:
            finished = run(testable, args.output_dir, seeds=args.seeds, steps=args.steps, shard=args.shard, **extra)
        except ValueError as err:  # e.g. an experiment not registered: no passed pilot under its definitions
            sys.exit(f"trl-lite-lab run: {err}")
        if not finished:
            print("runs of other shards are unfinished; `trl-lite-lab report` once they are", file=sys.stderr)
            return
        print("every run finished; `trl-lite-lab report` writes the verdicts", file=sys.stderr)
    else:
        from .report import report
        from .results import DefinitionMismatch, MissingRun
        from .stats import MetricError

        try:
            print(report(_names(args.takeaways), args.output_dir, seeds=args.seeds, carry=args.carry)["table"], end="")
        except (MissingRun, DefinitionMismatch, MetricError, FileNotFoundError) as err:
            sys.exit(f"trl-lite-lab report: {err}")
