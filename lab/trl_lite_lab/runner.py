"""Runs the lab: the arms of the chosen experiments x their pre-registered seeds, each an ordinary `trl-lite ablate`
run of a `LitePPOTrainer` (`trl_lite.runs.run_one`), plus the initial policies' held-out evaluations.

Runs write results; `trl_lite_lab.results` reads them; `trl_lite_lab.report` turns them into verdicts. Layout of
`--output-dir`:

- `audit.json`, `audit.md`: the audit (`trl_lite_lab.audit`), made first; an experiment whose audit gate fails is never
  run;
- `initial/<task>-<policy>-<problems>.json`: the untrained policy's held-out evaluation;
- `pilots/<id>.json`: the pilots (`trl_lite_lab.pilot`); an experiment runs on its registered seeds only once its
  pilot has passed;
- `runs/<arm>/seed<k>/`: `metrics.jsonl`, `clipped_tokens.jsonl`, `result.json` (with `experiment_sha256`: the hash
  of every experiment that has the arm, `trl_lite_lab.provenance`). A run with a `result.json` is never repeated, so an interrupted lab resumes where it
  stopped; arms shared by experiments run once.
"""

from __future__ import annotations

import json
import os
import sys
import time

from trl_lite.runs import run_one
from .design import EVAL_PROBLEMS, EXPERIMENTS, TRAIN_PROBE, Arm, policy_dir, policy_sha256
from .fingerprint import fingerprints
from .provenance import engine_sha256, experiment_sha256, product_stamp
from .results import PILOTS, RESULT_FILE, initial_path, is_finished, registration, run_folder
from .training import LabTrainer, evaluate, train_set, training_accuracy


def initial_eval(task: str, policy: str, output_dir: str, problems: int = EVAL_PROBLEMS,
                 temperature: float = 1.0) -> dict:
    """The untrained policy's held-out evaluation (made once, then read from `initial/`)."""
    path = initial_path(output_dir, task, policy, problems, temperature)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_id = policy_dir(task, policy)
    result = evaluate(task, AutoModelForCausalLM.from_pretrained(model_id), AutoTokenizer.from_pretrained(model_id),
                      problems=problems, temperature=temperature)
    result.update(engine_sha256=engine_sha256(), policy_sha256=policy_sha256(model_id), product=product_stamp(),
                  fingerprints=fingerprints(evaluations=[(task, policy)]))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
    return result


################
# Runs
################
def run_arm(arm: Arm, seed: int, output_dir: str, *, steps: int | None = None, progress: bool = True,
            eval_problems: int = EVAL_PROBLEMS, pilots: dict | None = None) -> None:
    """Trains and evaluates one arm with one seed, unless it has finished before; writes its `result.json`, which
    names the pilot each of its registered experiments ran under (`pilots`: {experiment id: the pilot's `made`})."""
    if is_finished(output_dir, arm, seed):
        return
    folder = run_folder(output_dir, arm, seed)
    started = time.time()
    settings = dict(arm.settings)

    def evaluated(trainer, tokenizer) -> dict:
        """Held-out measures, how far training moved the weights, and the training reward before and after
        (`train_acc_initial`, `train_acc`, their difference `train_rise`: `training.training_accuracy`)."""
        from transformers import AutoModelForCausalLM

        from .measure import update_size

        result = evaluate(arm.task, trainer.model, tokenizer, eval_problems, settings["temperature"])
        initial = AutoModelForCausalLM.from_pretrained(policy_dir(arm.task, arm.policy))
        before = training_accuracy(arm, initial, tokenizer, min(TRAIN_PROBE, eval_problems))
        after = training_accuracy(arm, trainer.model, tokenizer, min(TRAIN_PROBE, eval_problems))
        return {**result, **update_size(trainer.model, initial), "train_acc_initial": before, "train_acc": after,
                "train_rise": after - before}

    run_one("lite_ppo", seed, output_dir, max_steps=steps or arm.steps, model=policy_dir(arm.task, arm.policy),
            folder=folder, train_set=train_set(arm, seed), settings=settings, trainer_cls=LabTrainer,
            evaluate=evaluated, eval_problems=0, progress=progress, desc=f"{arm.name} seed {seed}")
    path = os.path.join(folder, RESULT_FILE)
    with open(path, encoding="utf-8") as f:
        result = json.load(f)
    result.update(wall_s=time.time() - started, experiment_sha256=arm_hashes(arm),
                  policy_sha256=policy_sha256(policy_dir(arm.task, arm.policy)), steps=steps or arm.steps,
                  eval_problems=eval_problems, product=product_stamp(), fingerprints=fingerprints([arm]),
                  pilots=pilots)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)


def arm_hashes(arm: Arm) -> dict[str, str]:
    """{experiment id: its hash} of every registered experiment that has this arm (a run shared by two experiments
    counts for each only under its own current definitions)."""
    return {EXPERIMENTS[name].id: experiment_sha256(EXPERIMENTS[name]) for name in EXPERIMENTS.names()
            if arm in EXPERIMENTS[name].arms.values()}


def jobs(names: list[str], seeds: int | None = None) -> list[tuple[Arm, int]]:
    """The distinct (arm, seed) runs of the experiments, seed by seed (an interrupted lab has whole seeds done).
    `seeds` replaces the pre-registered seed counts (a quick try)."""
    out, seen = [], set()
    lists = {name: EXPERIMENTS[name].seed_list(count=seeds) for name in names}
    for i in range(max(map(len, lists.values())) if names else 0):
        for name in names:
            if i >= len(lists[name]):
                continue
            for a in EXPERIMENTS[name].arms.values():
                if (a, lists[name][i]) not in seen:
                    seen.add((a, lists[name][i]))
                    out.append((a, lists[name][i]))
    return out


def run(names: list[str], output_dir: str, *, seeds: int | None = None, steps: int | None = None,
        progress: bool = True, shard: tuple[int, int] = (0, 1), eval_problems: int = EVAL_PROBLEMS,
        pilots_dir: str | None = None) -> bool:
    """Runs (or resumes) the experiments' runs; returns whether every run of them has finished. Run only experiments
    whose audit gates pass (`trl-lite-lab run` audits first: `trl_lite_lab.audit`); only registered
    experiments (their pilot in `pilots_dir`, default `<output_dir>/pilots`, passed), `seeds` or not. `shard=(i, n)` runs every n-th run
    from the i-th (to split a lab over processes); `seeds`, `steps` and `eval_problems` shrink the lab for a quick try
    or a test."""
    from tqdm.auto import tqdm

    unknown = [name for name in names if name not in EXPERIMENTS]
    if unknown:
        raise ValueError(f"takeaways={','.join(names)!r} names {unknown}; expected among {EXPERIMENTS.names()} "
                         "or 'all'.")
    if seeds is not None and (not isinstance(seeds, int) or seeds < 2):
        raise ValueError(f"seeds={seeds!r} is not supported; expected an int >= 2 (a verdict needs a spread).")
    index, count = shard
    if not (isinstance(count, int) and count >= 1 and isinstance(index, int) and 0 <= index < count):
        raise ValueError(f"shard={index}/{count} is not supported; expected i/n with 0 <= i < n.")
    # the registered lab, a quick try with fewer seeds included: only experiments whose committed pilot passed under
    # today's definitions and fingerprints
    pilots = pilots_dir or os.path.join(output_dir, PILOTS)
    records = {name: registration(EXPERIMENTS[name], pilots) for name in names}
    unregistered = [name for name in names if not (records[name] or {}).get("passed")]
    if unregistered:
        raise ValueError(f"experiments {unregistered} are not registered: no pilot in {pilots} passed under their "
                         "current definitions and fingerprints (`trl-lite-lab pilot` first; a failed pilot is a "
                         "recorded negative pilot, never run).")
    os.makedirs(output_dir, exist_ok=True)
    todo = jobs(names, seeds)
    mine = [job for i, job in enumerate(todo) if i % count == index]
    bar = tqdm(mine, desc="lab", unit="run", disable=not progress, file=sys.stderr)
    for a, seed in bar:
        bar.set_postfix_str(f"{a.name} seed {seed}")
        initial_eval(a.task, a.policy, output_dir, eval_problems, a.settings["temperature"])
        made = {EXPERIMENTS[name].id: records[name].get("made") for name in names if a in EXPERIMENTS[name].arms.values()}
        run_arm(a, seed, output_dir, steps=steps, progress=progress, eval_problems=eval_problems, pilots=made)
    return all(is_finished(output_dir, a, seed) for a, seed in todo)
