"""Runs the lab: the arms of the chosen experiments x seeds (each an ordinary `trl-lite ablate` run), then the verdicts,
the figures and `summary.md`.

Layout of `--output-dir`:

- `data/add_mixes.json`: the ADD mixes (training problems bucketed by the initial policy's correct answers out of 8,
  the paper's Easy/Medium/Hard method); built once.
- `initial/<task>-<data>.json`: the untrained policy's held-out evaluation.
- `runs/<arm>/seed<k>/`: `metrics.jsonl`, `clipped_tokens.jsonl`, `result.json` (a run with one is never repeated, so
  an interrupted lab resumes where it stopped; arms shared by experiments run once).
- `T<n>.png`, `summary.md`, `summary.json`.
"""

from __future__ import annotations

import json
import os
import sys
import time

import torch

from ..ablate import read_metrics, run_one
from ..trainer import LitePPOTrainer
from .experiments import ADD_SETTINGS, EXPERIMENTS, LOOSE, TIGHT, Arm
from .measure import late_jitter, mean, score_samples, token_covariance, top_share

ADD_BUDGET = ADD_SETTINGS["max_completion_length"]  # ADD's held-out budget: its training length
EVAL_PROBLEMS, EVAL_SAMPLES = 1000, 4  # held-out: 1000 problems x 4 samples (evaluation noise ~0.007 at p = 0.5)
FORK_QUANTILE = 0.8  # "fork tokens": the 20% of completion tokens where the policy's entropy is highest


class LabTrainer(LitePPOTrainer):
    """`LitePPOTrainer` that also logs what the lab measures on each generation batch (single process):
    `lab/top5_abs_adv_share`, `lab/inv_sigma_batch`, `lab/cov_logp_adv`, `lab/tokens/<class>`."""

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        if not self.model.training:
            return output
        metrics = self._metrics["train"]
        advantages, counted, _ = self._lite_last_advantages
        metrics["lab/top5_abs_adv_share"].append(top_share(advantages[counted]))
        rewards = output["lite_rewards"].double()  # (N,)
        sigma = rewards[~torch.isnan(rewards)].std().item()
        metrics["lab/inv_sigma_batch"].append(1.0 / sigma if sigma > 0 else float("nan"))
        mask = output["completion_mask"]  # (B, T), truncated rows already masked out by the overlong filter
        if output.get("old_per_token_logps") is not None:
            metrics["lab/cov_logp_adv"].append(token_covariance(output["old_per_token_logps"], output["advantages"],
                                                                mask))
        classes = self._lab_token_classes()
        ids = output["completion_ids"][mask.bool()]  # (n,)
        for name, members in classes.items():
            metrics[f"lab/tokens/{name}"].append(float(torch.isin(ids, members).sum()))
        return output

    def _lab_token_classes(self) -> dict[str, torch.Tensor]:
        if not hasattr(self, "_lab_classes"):
            from ..tasks.sumk import token_class

            vocab = self.processing_class.get_vocab()
            by_class: dict[str, list[int]] = {}
            for token, index in vocab.items():
                by_class.setdefault(token_class(token), []).append(index)
            self._lab_classes = {name: torch.tensor(ids) for name, ids in by_class.items()}
        return self._lab_classes


################
# Tasks, data, policies, evaluation
################
def policy_path(arm: Arm) -> str:
    from ..tasks.arithmetic import embedded_policy_path
    from ..tasks.sumk import sumk_policy_path

    return embedded_policy_path() if arm.task == "add" else sumk_policy_path(arm.data)


def add_mixes(output_dir: str, pool: int = 1600) -> dict[str, list[dict]]:
    """The ADD mixes: `pool` medium and hard training problems, each sampled 8 times by the initial policy; easy =
    7-8 correct, hard = 1-3 correct (pass rate 0.1-0.3, no all-wrong groups), mixed = the two interleaved 50/50."""
    path = os.path.join(output_dir, "data", "add_mixes.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ..data import count_correct, transformers_sampler
    from ..rewards import last_boxed
    from ..tasks.arithmetic import arithmetic_dataset, embedded_policy_path

    model_id = embedded_policy_path()
    tokenizer, model = AutoTokenizer.from_pretrained(model_id), AutoModelForCausalLM.from_pretrained(model_id)
    problems = arithmetic_dataset("medium,hard", split="train", num_per_level=pool // 2, seed=0)
    sample = transformers_sampler(model, tokenizer, max_new_tokens=14, temperature=1.0, top_p=None, top_k=None,
                                  batch_size=256, seed=0)
    counts = count_correct(problems, sample, lambda text, gold: "correct" if last_boxed(text) == gold else "wrong", k=8)
    rows = [{"prompt": p, "answer": a, "num_correct": c}
            for p, a, c in zip(problems["prompt"], problems["answer"], counts)]
    mixes = {"easy": [r for r in rows if r["num_correct"] >= 7],
             "hard": [r for r in rows if 1 <= r["num_correct"] <= 3]}
    n = min(len(mixes["easy"]), len(mixes["hard"]))
    mixes["mixed"] = [row for pair in zip(mixes["easy"][:n], mixes["hard"][:n]) for row in pair]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(mixes, f)
    return mixes


def train_set(arm: Arm, output_dir: str, seed: int):
    from datasets import Dataset

    if arm.task == "add":
        rows = add_mixes(output_dir)[arm.data]
        return Dataset.from_dict({"prompt": [r["prompt"] for r in rows], "answer": [r["answer"] for r in rows]})
    from ..tasks.sumk import sumk_dataset

    return sumk_dataset(4000, split="train", seed=1000 + seed)


def heldout(task: str):
    if task == "add":
        from ..tasks.arithmetic import arithmetic_dataset

        data = arithmetic_dataset("hard", split="test", num_per_level=EVAL_PROBLEMS, seed=0)
        return data, [3] * len(data)
    from ..tasks.sumk import sumk_dataset

    data = sumk_dataset(EVAL_PROBLEMS, split="test", seed=0)
    return data, list(data["k"])


def evaluate(task: str, model, tokenizer, problems: int = EVAL_PROBLEMS, samples: int = EVAL_SAMPLES) -> dict:
    """The held-out evaluation every run of a task gets: `problems` x `samples` completions at temperature 1."""
    from .measure import sample_completions, token_entropies

    data, ks = heldout(task)
    data, ks = data.select(range(min(problems, len(data)))), ks[:problems]
    budget = ADD_BUDGET if task == "add" else LOOSE
    started = time.time()
    groups = sample_completions(model, tokenizer, list(data["prompt"]), samples=samples, max_new_tokens=budget)
    if task == "add":
        out = score_samples(groups, list(data["answer"]), ks, tokenizer, budgets={"max": budget})
    else:
        from ..tasks.sumk import carry_errors, completion_format

        out = score_samples(groups, list(data["answer"]), ks, tokenizer, budgets={"loose": LOOSE, "tight": TIGHT},
                            classify=completion_format, carry=carry_errors,
                            problems=[p[-1]["content"] for p in data["prompt"]])
    first = min(256, len(groups))  # entropies on one sample of the first 256 problems
    values = sorted(token_entropies(model, tokenizer, list(data["prompt"])[:first], [g[0][0] for g in groups[:first]]))
    out["entropy"] = mean(values)
    out["fork_entropy"] = mean(values[int(len(values) * FORK_QUANTILE):])
    out["eval_s"] = time.time() - started
    return out


def initial_eval(arm: Arm, output_dir: str, problems: int = EVAL_PROBLEMS) -> dict:
    """The untrained policy's evaluation (cached)."""
    policy = arm.data if arm.task == "sumk" else "policy"
    path = os.path.join(output_dir, "initial", f"{arm.task}-{policy}-{problems}.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_id = policy_path(arm)
    result = evaluate(arm.task, AutoModelForCausalLM.from_pretrained(model_id), AutoTokenizer.from_pretrained(model_id),
                      problems=problems)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
    return result


################
# Runs
################
def run_folder(output_dir: str, arm: Arm, seed: int) -> str:
    return os.path.join(output_dir, "runs", arm.name, f"seed{seed}")


def run_arm(arm: Arm, seed: int, output_dir: str, *, steps: int | None = None, progress: bool = True,
            heldout: bool = True, eval_problems: int = EVAL_PROBLEMS) -> dict:
    """One arm with one seed, unless it has finished before; returns its result with the training measures.
    `heldout=False` skips the held-out evaluation (the audit's short runs)."""
    folder = run_folder(output_dir, arm, seed)
    done = os.path.join(folder, "result.json")
    if not os.path.exists(done):
        started = time.time()
        settings = dict(arm.settings)
        run_one("lite_ppo", seed, output_dir, max_steps=steps or arm.steps, model=policy_path(arm),
                folder=folder, train_set=train_set(arm, output_dir, seed), settings=settings, trainer_cls=LabTrainer,
                evaluate=(lambda trainer, tokenizer: evaluate(arm.task, trainer.model, tokenizer, eval_problems))
                if heldout else None,
                eval_problems=0, progress=progress,
                desc=f"{arm.name} seed {seed}")
        with open(done, encoding="utf-8") as f:
            result = json.load(f)
        result["wall_s"] = time.time() - started
        with open(done, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
    with open(done, encoding="utf-8") as f:
        result = json.load(f)
    result["train"] = train_measures(folder)
    return result


def train_measures(folder: str) -> dict:
    """What the lab reads from a run's logs: advantage concentration, 1/sigma, gradient norms, reward jitter, the
    covariance term, clip shares, loops, truncation, and the clip census by token class."""
    from ..diagnostics_window import CLIPPED_TOKENS_FILE
    from ..tasks.sumk import token_class

    rows = read_metrics(os.path.join(folder, "metrics.jsonl"))

    def series(key):
        return [row[key] for row in rows if row.get(key) is not None]

    def first_last(key, n=3):
        values = series(key)
        return mean(values[:n]), mean(values[-n:])

    tokens: dict[str, float] = {}
    for row in rows:
        for key, value in row.items():
            if key.startswith("lab/tokens/"):
                tokens[key.split("/")[-1]] = tokens.get(key.split("/")[-1], 0.0) + value
    clipped: dict[str, int] = {}
    path = os.path.join(folder, CLIPPED_TOKENS_FILE)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                for token in json.loads(line)["tokens"]:
                    if token["bound"] == "high":
                        cls = token_class(token["token"])
                        clipped[cls] = clipped.get(cls, 0) + token["count"]
    loops_first, loops_last = first_last("repetition/frac")
    return {
        "top5_adv_share": mean(series("lab/top5_abs_adv_share")),
        "inv_sigma_max": max(series("lab/inv_sigma_batch") or [float("nan")]),
        "grad_norm_max": max(series("grad_norm") or [float("nan")]),
        "grad_norm_mean": mean(series("grad_norm")),
        "reward_jitter": late_jitter(series("reward")),
        "cov_logp_adv": mean(series("lab/cov_logp_adv")),
        "clip_high_frac": mean(series("clip_ratio/high_mean")),
        "clip_low_frac": mean(series("clip_ratio/low_mean")),
        "entropy_last": first_last("entropy")[1],
        "loop_rate_first": loops_first,
        "loop_rate_last": loops_last,
        "dropped_loop_share": mean(series("repetition/frac_truncated")),
        "trunc_first": first_last("overlong/frac_truncated")[0],
        "tokens_by_class": tokens,
        "clipped_high_by_class": clipped,
    }


def jobs(takeaways: list[str], seeds: int) -> list[tuple[Arm, int]]:
    """The distinct (arm, seed) runs of the experiments, seed by seed (an interrupted lab has whole seeds done)."""
    out, seen = [], set()
    for seed in range(seeds):
        for name in takeaways:
            for arm in EXPERIMENTS[name].arms.values():
                if (arm, seed) not in seen:
                    seen.add((arm, seed))
                    out.append((arm, seed))
    return out


def run(takeaways: list[str], seeds: int, output_dir: str, *, steps: int | None = None, progress: bool = True,
        shard: tuple[int, int] = (0, 1), eval_problems: int = EVAL_PROBLEMS) -> dict | None:
    """Runs (or resumes) the experiments' runs, then writes the verdicts, figures and summary. `shard=(i, n)` runs only
    every n-th run from the i-th (to split a lab over processes or machines); the summary is written by the shard
    that finds every run finished. `steps` and `eval_problems` shrink every run (for a quick try or a test)."""
    from tqdm.auto import tqdm

    from .report import report

    unknown = [name for name in takeaways if name not in EXPERIMENTS]
    if unknown:
        raise ValueError(f"takeaways={','.join(takeaways)!r} names {unknown}; expected among {EXPERIMENTS.names()} "
                         "or 'all'.")
    if not isinstance(seeds, int) or seeds < 1:
        raise ValueError(f"seeds={seeds!r} is not supported; expected an int >= 1.")
    index, count = shard
    if not (isinstance(count, int) and count >= 1 and isinstance(index, int) and 0 <= index < count):
        raise ValueError(f"shard={index}/{count} is not supported; expected i/n with 0 <= i < n.")
    os.makedirs(output_dir, exist_ok=True)
    todo = jobs(takeaways, seeds)
    mine = [job for i, job in enumerate(todo) if i % count == index]
    bar = tqdm(mine, desc="lab", unit="run", disable=not progress, file=sys.stderr)
    for arm, seed in bar:
        bar.set_postfix_str(f"{arm.name} seed {seed}")
        initial_eval(arm, output_dir, eval_problems)
        run_arm(arm, seed, output_dir, steps=steps, progress=progress, eval_problems=eval_problems)
    if not all(os.path.exists(os.path.join(run_folder(output_dir, arm, seed), "result.json")) for arm, seed in todo):
        return None  # another shard is still running
    return report(takeaways, seeds, output_dir)
