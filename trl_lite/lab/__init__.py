"""The paper's lab: each takeaway of arXiv 2508.08221 as a measured mechanism on a laptop, with a verdict.

    trl-lite lab list                                   # the experiments, their arms and metrics
    trl-lite lab audit --output-dir runs/lab            # cheap checks (minutes): can the experiments show anything?
    trl-lite lab run all --seeds 5 --output-dir runs/lab
    trl-lite lab run 4,5 --seeds 5 --output-dir runs/lab --shard 0/2   # and --shard 1/2 in a second process

Two toy tasks stand in for the paper's math data: ADD (3-digit additions, with the policy shipped for the main job;
three data mixes bucketed by the initial policy's correct answers out of 8, as the paper buckets its data) for the
normalization takeaways 1-3, and SUM-k (`trl_lite.tasks.sumk`: variable-length scratchpads, connective tokens,
truncation, loops) with a base-like and an aligned-like policy (`scripts/build_lab_policies.py`) for takeaways 4-8.
Every run is a `trl-lite ablate` run (`trl_lite.ablate.run_one`) of a `LitePPOTrainer`; the arms of an experiment share
the initial policy, the data order and the sampling seeds, so their per-seed differences are paired. The experiments,
metrics and directions are fixed in `trl_lite/lab/experiments.py`; the verdict rule in `trl_lite/lab/report.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from .experiments import EXPERIMENTS, NORMS, Arm, arm
from .report import report, verdict

__all__ = ["EXPERIMENTS", "Arm", "arm", "audit", "jobs", "report", "run", "verdict"]


def __getattr__(name: str):
    # the runner (torch, the trainer) loads on first use, so `trl-lite lab list` and `--help` stay light
    if name in ("jobs", "run"):
        from . import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def describe() -> str:
    """`trl-lite lab list`: one block per experiment."""
    lines = []
    for name in EXPERIMENTS:
        e = EXPERIMENTS[name]
        lines.append(f"{name}  {e.title}")
        lines.append(f"   claim:  {e.claim}")
        lines.append(f"   metric: {e.metric} (> 0: as the paper says)")
        lines.append(f"   arms:   {', '.join(f'{label} [{a.name}]' for label, a in e.arms.items())}")
    return "\n".join(lines)


def _advantage_audit(rewards, group_size: int) -> dict:
    """Top-5% abs(A) share and max abs(A) under each normalization, and the batch's reward statistics. `(N,)`."""
    from ..advantages import normalize_advantages, resolve_auto_std
    from .measure import top_share

    out = {}
    for norm, (mean_level, std_level) in NORMS.items():
        std = resolve_auto_std(rewards, group_size, 0.5) if std_level == "auto" else std_level
        advantages = normalize_advantages(rewards, group_size, mean=mean_level, std=std)
        out[norm] = {"top5_abs_adv_share": top_share(advantages), "max_abs_adv": advantages.abs().max().item()}
    sigma = rewards.double().std().item()
    groups = rewards.view(-1, group_size)
    out["batch"] = {"mean_reward": rewards.mean().item(), "inv_sigma_batch": 1 / sigma if sigma > 0 else float("inf"),
                    "frac_zero_std_groups": (groups.std(dim=1) == 0).float().mean().item()}
    return out


def audit(output_dir: str, *, progress: bool = True, prompts: int = 32, steps: int = 32,
          eval_problems: int | None = None) -> dict:
    """The cheap checks, before any long run: an advantage audit on initial-policy batches (no training), a clip
    census and a length-gap pilot (`steps` optimizer steps per policy, 4 generation batches by default; the runs are
    kept in `audit-<steps>steps/`), and a truncation census (the initial policies' held-out evaluation,
    `eval_problems` x 4 samples). Writes `audit.md` and `audit.json` into `output_dir`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ..ablate import read_metrics
    from .measure import mean, sample_completions, sample_rewards
    from .experiments import LOOSE
    from .runner import ADD_BUDGET, EVAL_PROBLEMS, add_mixes, initial_eval, policy_path, run_arm, run_folder, train_set

    eval_problems = eval_problems or EVAL_PROBLEMS
    os.makedirs(output_dir, exist_ok=True)
    out: dict = {"advantages": {}, "clip_census": {}, "truncation": {}, "length_pilot": {}}
    sources = [arm("add", mix) for mix in ("easy", "hard", "mixed")] + [arm("sumk", p) for p in ("base", "aligned")]
    for source in sources:  # 1. advantage audit: `prompts` prompts x 8 samples of the initial policy
        model_id = policy_path(source)
        tokenizer, model = AutoTokenizer.from_pretrained(model_id), AutoModelForCausalLM.from_pretrained(model_id)
        data = train_set(source, output_dir, seed=0).select(range(prompts))
        budget = ADD_BUDGET if source.task == "add" else LOOSE
        groups = sample_completions(model, tokenizer, list(data["prompt"]), samples=8, max_new_tokens=budget)
        rewards = torch.tensor([r for group in sample_rewards(groups, data["answer"], tokenizer) for r in group])
        out["advantages"][f"{source.task}-{source.data}"] = _advantage_audit(rewards, 8)
    pilots = os.path.join(output_dir, f"audit-{steps}steps")
    for policy in ("base", "aligned"):  # 2. clip census and 4. length-gap pilot: short runs
        for label, agg in (("token-mean", None), ("seq-mean-token-mean", "seq-mean-token-mean")):
            source = arm("sumk", policy) if agg is None else arm("sumk", policy, loss_aggregation=agg)
            run_arm(source, 0, pilots, steps=steps, progress=progress, heldout=False)
            rows = read_metrics(os.path.join(run_folder(pilots, source, 0), "metrics.jsonl"))
            series = lambda key: [r[key] for r in rows if r.get(key) is not None]  # noqa: E731
            if agg is None:
                out["clip_census"][policy] = {"clip_low_frac": mean(series("clip_ratio/low_mean")),
                                              "clip_high_frac": mean(series("clip_ratio/high_mean"))}
            gaps = [r["completions/mean_length_incorrect"] - r["completions/mean_length_correct"] for r in rows
                    if r.get("completions/mean_length_incorrect") is not None
                    and r.get("completions/mean_length_correct") is not None]  # batches with both kinds
            out["length_pilot"][f"{policy} {label}"] = {"gap_first": gaps[0] if gaps else float("nan"),
                                                        "gap_last": gaps[-1] if gaps else float("nan"),
                                                        "batches": len(gaps)}
        initial = initial_eval(arm("sumk", policy), output_dir, eval_problems)  # 3. truncation census
        out["truncation"][policy] = {
            "accuracy": {"loose": initial["acc"], "tight": initial["acc@tight"]},
            "truncated_share": {"loose": initial["trunc_share"], "tight": initial["trunc_share@tight"]},
            "loop_share_of_truncated": {"loose": initial["loop_share_of_truncated"],
                                        "tight": initial["loop_share_of_truncated@tight"]},
            "would_be_correct_share_of_truncated": {"tight": initial["would_be_correct_share@tight"]},
            "formats": initial["formats"], "carry_drop_rate": initial["carry_drop_rate"],
            "entropy": initial["entropy"], "fork_entropy": initial["fork_entropy"],
        }
    out["initial_add"] = initial_eval(arm("add", "easy"), output_dir, eval_problems)
    out["add_mixes"] = {mix: {"problems": len(rows), "initial_pass_rate": mean([r["num_correct"] / 8 for r in rows])}
                        for mix, rows in add_mixes(output_dir).items()}
    with open(os.path.join(output_dir, "audit.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=2)
    text = audit_markdown(out)
    with open(os.path.join(output_dir, "audit.md"), "w", encoding="utf-8") as f:
        f.write(text)
    return out


def audit_markdown(out: dict) -> str:
    f3 = lambda v: "n/a" if v is None or v != v else f"{v:.3f}"  # noqa: E731
    lines = ["# trl-lite lab audit", "", "## Advantage audit (initial policy, no training)", "",
             "| data | mean reward | zero-std groups | 1/sigma_batch | " +
             " | ".join(f"top-5% abs(A) share {n}" for n in NORMS) + " |", "|---|---|---|---|" + "---|" * len(NORMS)]
    for name, row in out["advantages"].items():
        batch = row["batch"]
        lines.append(f"| {name} | {f3(batch['mean_reward'])} | {f3(batch['frac_zero_std_groups'])} | "
                     f"{f3(batch['inv_sigma_batch'])} | " +
                     " | ".join(f3(row[n]["top5_abs_adv_share"]) for n in NORMS) + " |")
    lines += ["", "ADD mixes (initial pass rate over 8 samples): " + ", ".join(
        f"{mix} {v['initial_pass_rate']:.2f} ({v['problems']} problems)" for mix, v in out["add_mixes"].items()), "",
        "## Clip census (the first generation batches, epsilon 0.2 / 0.2, token-mean)", "",
        "| policy | clipped low | clipped high |",
        "|---|---|---|"]
    lines += [f"| {p} | {f3(v['clip_low_frac'])} | {f3(v['clip_high_frac'])} |" for p, v in out["clip_census"].items()]
    lines += ["", "## Truncation census (initial policy, held-out problems x 4 samples; tight = 28, loose = 96 tokens)",
              "",
              "| policy | accuracy loose / tight | truncated loose / tight | loops among truncated loose / tight | "
              "would-be-correct among truncated at tight | formats |", "|---|---|---|---|---|---|"]
    for p, v in out["truncation"].items():
        formats = ", ".join(f"{k} {x:.2f}" for k, x in v["formats"].items())
        lines.append(f"| {p} | {f3(v['accuracy']['loose'])} / {f3(v['accuracy']['tight'])} | "
                     f"{f3(v['truncated_share']['loose'])} / {f3(v['truncated_share']['tight'])} | "
                     f"{f3(v['loop_share_of_truncated']['loose'])} / {f3(v['loop_share_of_truncated']['tight'])} | "
                     f"{f3(v['would_be_correct_share_of_truncated']['tight'])} | {formats} |")
    lines += ["", "## Length-gap pilot (mean length of incorrect - correct completions, first / last generation batch)",
              "", "| run | gap first | gap last | batches |", "|---|---|---|---|"]
    lines += [f"| {k} | {f3(v['gap_first'])} | {f3(v['gap_last'])} | {v['batches']} |"
              for k, v in out["length_pilot"].items()]
    return "\n".join(lines) + "\n"


def _takeaways(value: str) -> list[str]:
    return list(EXPERIMENTS.names()) if value == "all" else [v.strip() for v in value.split(",") if v.strip()]


def _shard(value: str) -> tuple[int, int]:
    try:
        index, count = (int(x) for x in value.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard {value!r} is not supported; expected i/n, e.g. 0/2.") from None
    return index, count


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="trl-lite lab", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the experiments, their arms and metrics")
    audit_parser = sub.add_parser("audit", help="cheap checks (minutes): advantage audit, clip and truncation census, "
                                                "length-gap pilot")
    audit_parser.add_argument("--output-dir", default="runs/lab")
    run_parser = sub.add_parser("run", help="run experiments x seeds, then verdicts, figures and summary.md")
    run_parser.add_argument("takeaways", help=f"'all' or comma-separated among {EXPERIMENTS.names()}")
    run_parser.add_argument("--seeds", type=int, default=5, help="Paired seeds per arm (0, 1, ...).")
    run_parser.add_argument("--output-dir", default="runs/lab")
    run_parser.add_argument("--steps", type=int, default=None,
                            help="Optimizer steps per run (default: 120 on ADD, 128 on SUM-k; for a quick try).")
    run_parser.add_argument("--eval-problems", type=int, default=None,
                            help="Held-out problems per evaluation (default 1000, x 4 samples; for a quick try).")
    run_parser.add_argument("--shard", type=_shard, default=(0, 1), metavar="I/N",
                            help="Run every N-th run from the I-th (split a lab over processes); the shard that "
                                 "finds all runs finished writes the summary.")
    args = parser.parse_args(argv)
    if args.command == "list":
        print(describe())
    elif args.command == "audit":
        audit(args.output_dir)
        print(open(os.path.join(args.output_dir, "audit.md"), encoding="utf-8").read(), end="")
    else:
        from .runner import run

        summary = run(_takeaways(args.takeaways), args.seeds, args.output_dir, steps=args.steps, shard=args.shard,
                      **({"eval_problems": args.eval_problems} if args.eval_problems else {}))
        if summary is None:
            print("runs of other shards are unfinished; run again without --shard (or wait) for the summary",
                  file=sys.stderr)
        else:
            print(summary["table"], end="")

