"""T4's redesign grid (issue 38: "T4: aligned-like and base-like policies that really differ in the skill the claim is
about"): can an RL-sharpened ADD policy serve as T4's aligned-like policy, and does it still gain under more RL?

Not an experiment about the paper: it picks a design. The paper's aligned models are post-trained (RL among it) and
sample with lower entropy than their base models; its account of clip-higher is that a low-entropy policy needs room to
raise unlikely tokens. Here the base-like policy is clip scaling's large ADD policy (`arith_carry_small`, SFT only) and
an aligned-like candidate is the same policy after `K` steps of the lab's own RL on the mixed ADD data (temperature 1,
lr 1e-4, 8 passes per generation batch of 8 prompts x 8 completions, epsilon_high 0.2; seed 4000, never a registered,
pilot or grid seed). For each candidate the grid reads:

- its initial held-out accuracy and token entropy at temperature 1 (`training.evaluate`), beside the base-like's:
  whether the two "really differ";
- from it, the epsilon_high 0.2 and 0.28 arms at lr 1e-4, 8 passes, `STEPS` steps, seed 3000: the gain over the
  candidate's own start (the signed gain gate asks +0.03), the training reward's rise, the share of positive-advantage
  tokens in the band (1.2, 1.28] where the two bounds differ, and the weight distance.

    python lab/results/t4_grid.py sharpen K --output-dir D            # builds D/candidate-rlK
    python lab/results/t4_grid.py scale T --output-dir D              # builds D/candidate-sT
    python lab/results/t4_grid.py run SPEC EPS [STEPS] --output-dir D  # SPEC 0 (the base-like policy), rlK or sT
    python lab/results/t4_grid.py summarize D --json lab/results/t4_grid.json --made "..."
"""

from __future__ import annotations

import argparse
import json
import os

BASE = "carry-small"  # clip scaling's large policy, `arith_carry_small`
SHARPEN_SEED, GRID_SEED = 4000, 3000
STEPS = 960  # 30 generation batches x 8 passes x 4 optimizer steps: clip scaling's budget
SETTINGS = {"temperature": 1.0, "num_iterations": 8, "learning_rate": 1e-4}


def candidate(spec: str, output_dir: str) -> str:
    """The policy name of candidate `spec` ("0": the base-like policy; "rlK": sharpened by K steps of RL; "sT": its
    logits divided by T), registered for this process only."""
    from trl_lite_lab import design

    if spec == "0":
        return BASE
    name = f"{BASE}-{spec}"
    design.LAB_POLICIES["add", name] = os.path.abspath(os.path.join(output_dir, f"candidate-{spec}"))
    return name


def grid_arm(policy: str, eps: float, steps: int = STEPS):
    from trl_lite_lab.design import arm

    return arm("add", policy, "mixed", steps=steps, epsilon_high=eps, **SETTINGS)


def sharpen(k: int, output_dir: str) -> None:
    """`k` steps of RL from the base-like policy, saved with its tokenizer as `candidate-rlK`."""
    from trl_lite.runs import run_one
    from trl_lite_lab.design import policy_dir
    from trl_lite_lab.training import LabTrainer, train_set

    a = grid_arm(BASE, 0.2, steps=k)
    target = os.path.join(output_dir, f"candidate-rl{k}")

    def save(trainer, tokenizer) -> dict:
        trainer.model.save_pretrained(target)
        tokenizer.save_pretrained(target)
        return {}

    run_one("lite_ppo", SHARPEN_SEED, output_dir, max_steps=k, model=policy_dir(a.task, a.policy),
            folder=os.path.join(output_dir, f"sharpen-{k}"), train_set=train_set(a, SHARPEN_SEED),
            settings=dict(a.settings), trainer_cls=LabTrainer, evaluate=save, eval_problems=0, progress=False)


def scale(temperature: float, output_dir: str) -> None:
    """The base-like policy with its logits divided by `temperature` (`lab/scripts/sharpen_policy.py`), saved as
    `candidate-sT`: at temperature 1 it samples as the base-like policy does at `temperature`."""
    import sys

    from trl_lite_lab.design import policy_dir

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
    from sharpen_policy import sharpen as sharpen_logits

    sharpen_logits(policy_dir("add", BASE), os.path.join(output_dir, f"candidate-s{temperature}"), temperature)


def run(spec: str, eps: float, output_dir: str, steps: int = STEPS) -> None:
    from trl_lite_lab.design import EVAL_PROBLEMS
    from trl_lite_lab.runner import initial_eval, run_arm

    a = grid_arm(candidate(spec, output_dir), eps, steps)
    initial_eval(a.task, a.policy, output_dir, EVAL_PROBLEMS, 1.0)
    run_arm(a, GRID_SEED, output_dir, progress=False, eval_problems=EVAL_PROBLEMS)


def summarize(output_dir: str, made: str | None = None) -> dict:
    from trl_lite_lab.design import EVAL_PROBLEMS
    from trl_lite_lab.results import initial_path, run_folder, train_measures

    out = {"made_by": f"python lab/results/t4_grid.py summarize {output_dir}", "made": made, "candidates": []}
    specs = ["0"] + sorted(n.removeprefix("candidate-") for n in os.listdir(output_dir) if n.startswith("candidate-"))
    for spec in specs:
        policy = candidate(spec, output_dir)
        path = initial_path(output_dir, "add", policy, EVAL_PROBLEMS, 1.0)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            initial = json.load(f)
        row = {"candidate": spec, "policy": policy, "initial_acc": initial["acc"],
               "initial_entropy": initial["entropy"], "initial_fork_entropy": initial["fork_entropy"],
               "initial_pass@4": initial["pass@4"], "arms": []}
        for eps, steps in ((eps, steps) for steps in (STEPS // 2, STEPS) for eps in (0.2, 0.28)):
            folder = run_folder(output_dir, grid_arm(policy, eps, steps), GRID_SEED)
            result_path = os.path.join(folder, "result.json")
            if not os.path.exists(result_path):
                continue
            with open(result_path, encoding="utf-8") as f:
                result = json.load(f)
            held, held_wall = result["eval"], result["wall_s"]
            train = train_measures(folder)
            positive = train["pos_adv_tokens"]
            row["arms"].append({"epsilon_high": eps, "steps": steps, "acc": held["acc"], "gain": held["acc"] - initial["acc"],
                                "entropy": held["entropy"], "train_rise": held["train_rise"],
                                "update_norm": held["update_norm"], "band": train["ratio_band_tokens"] / positive,
                                "clip_high_frac": train.get("clip_high_frac"), "wall_s": held_wall})
        out["candidates"].append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=("sharpen", "scale", "run", "summarize"))
    parser.add_argument("args", nargs="*")
    parser.add_argument("--output-dir", default="lab/results/t4grid-work")
    parser.add_argument("--json")
    parser.add_argument("--made", help="when and how the runs were made, recorded with the summary")
    a = parser.parse_args()
    if a.command == "sharpen":
        sharpen(int(a.args[0]), a.output_dir)
    elif a.command == "scale":
        scale(float(a.args[0]), a.output_dir)
    elif a.command == "run":
        run(a.args[0], float(a.args[1]), a.output_dir, *map(int, a.args[2:3]))
    else:
        summary = summarize(a.args[0] if a.args else a.output_dir, a.made)
        text = json.dumps(summary, indent=1)
        print(text)
        if a.json:
            with open(a.json, "w", encoding="utf-8") as f:
                f.write(text + "\n")


if __name__ == "__main__":
    main()
