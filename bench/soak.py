"""Soak: a long run of the built-in task with everything on at once, watching memory and values.

    python bench/soak.py --steps 2000 [--save-steps 250] [--output-dir /tmp/soak] [--out bench/results/soak.json]

Settings: the `dapo` recipe (dynamic sampling, overlong filter and soft punishment, clip-higher 0.28), plus
`advantage_std="auto"`, the diagnostics (on by default) with a log every step, and `steps_per_generation` = 4 x the
accumulation steps (2), so that checkpoints (every `--save-steps`, the last 2 kept) at odd multiples of 250
fall in the middle of generation cycles and carry the buffered batch. The policy is the embedded character model; the reward is the task's exact answer.

Every 50 steps it samples the process's resident memory (VmRSS). Every generation round it checks the advantages, and
every log the loss and the grad norm, for non-finite values. At each checkpoint it records the size of
`clipped_tokens.jsonl` and of the checkpoint's files. The last line printed is exactly

    soak: N steps, rss growth X%, nonfinite K

with X the RSS growth from step 100 to the end (the first 100 steps include allocator and cache warm-up).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback, TrainerCallback  # noqa: E402

from trl_lite import LitePPOConfig, LitePPOTrainer  # noqa: E402
from trl_lite.checkpoints import last_complete_checkpoint  # noqa: E402
from trl_lite.diagnostics_window import CLIPPED_TOKENS_FILE  # noqa: E402
from trl_lite.tasks.arithmetic import arithmetic_dataset, exact_answer_reward  # noqa: E402

# the ablation benchmark's label-noise policy (scripts/build_embedded_policy.py), beside the package
LABEL_NOISE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "policies", "arith_label_noise")

RSS_EVERY = 50
BASELINE_STEP = 100


def rss_mib() -> float:
    """Resident memory of this process now (not the peak), from /proc (Linux)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def folder_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(path) for name in names)


class SoakTrainer(LitePPOTrainer):
    """Counts non-finite advantages of every generation round."""

    nonfinite_advantages = 0

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        self.nonfinite_advantages += int((~torch.isfinite(output["advantages"])).sum())
        return output


class Watch(TrainerCallback):
    def __init__(self, output_dir: str):
        self.output_dir = output_dir
        self.rss: dict[int, float] = {}
        self.nonfinite_logs = 0
        self.sizes: dict[int, dict] = {}
        self.started = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        step = state.global_step
        if step % RSS_EVERY == 0:
            self.rss[step] = rss_mib()
            print(f"step {step}: rss {self.rss[step]:.1f} MiB, {time.perf_counter() - self.started:.0f} s",
                  file=sys.stderr, flush=True)

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            table = os.path.join(self.output_dir, CLIPPED_TOKENS_FILE)
            checkpoint = last_complete_checkpoint(self.output_dir)
            self.sizes[state.global_step] = {
                "clipped_tokens_jsonl_bytes": os.path.getsize(table) if os.path.exists(table) else 0,
                "checkpoint": os.path.basename(checkpoint) if checkpoint else None,
                "checkpoint_bytes": folder_bytes(checkpoint) if checkpoint else 0,
                "checkpoint_files": {name: os.path.getsize(os.path.join(checkpoint, name))
                                     for name in sorted(os.listdir(checkpoint))} if checkpoint else {},
            }

    def on_log(self, args, state, control, logs=None, **kwargs):
        for key in ("loss", "grad_norm"):
            value = (logs or {}).get(key)
            if value is not None and not math.isfinite(value):
                self.nonfinite_logs += 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--save-steps", type=int, default=250)
    parser.add_argument("--output-dir", default=None, help="default: a temporary folder, removed at the end")
    parser.add_argument("--out", default=None, help="write the figures as JSON here")
    parser.add_argument("--seed", type=int, default=0)
    cli = parser.parse_args()
    if cli.steps < BASELINE_STEP + RSS_EVERY:
        parser.error(f"--steps={cli.steps} is too short; expected at least {BASELINE_STEP + RSS_EVERY}.")
    output_dir = cli.output_dir or tempfile.mkdtemp(prefix="soak-")
    torch.set_num_threads(1)

    args = LitePPOConfig.from_recipe(
        "dapo", output_dir=output_dir, advantage_std="auto", diagnostics=True, per_device_train_batch_size=8,
        gradient_accumulation_steps=2, steps_per_generation=8, num_generations=8, max_completion_length=14,
        learning_rate=1e-4, lr_scheduler_type="constant", temperature=1.0, max_steps=cli.steps, logging_steps=1,
        save_strategy="steps", save_steps=cli.save_steps, save_total_limit=2, report_to="none", use_cpu=True,
        bf16=False, disable_tqdm=True, seed=cli.seed,
    )
    model_id = LABEL_NOISE  # the policy the committed soak figures were measured with
    watch = Watch(output_dir)
    trainer = SoakTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_id), reward_funcs=exact_answer_reward, args=args,
        train_dataset=arithmetic_dataset("medium,hard", split="train", seed=cli.seed),
        processing_class=AutoTokenizer.from_pretrained(model_id), callbacks=[watch],
    )
    trainer.remove_callback(PrinterCallback)
    started = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - started

    final = rss_mib()
    baseline = watch.rss[BASELINE_STEP]
    growth = 100 * (final - baseline) / baseline
    nonfinite = trainer.nonfinite_advantages + watch.nonfinite_logs
    rounds = [row["generation/rounds"] for row in trainer.state.log_history if "generation/rounds" in row]
    result = {
        "steps": trainer.state.global_step, "wall_s": round(wall, 1), "rss_mib": watch.rss, "rss_final_mib": final,
        "rss_growth_pct": growth, "nonfinite": nonfinite, "sizes_at_saves": watch.sizes,
        "completions_generated": trainer._lite_completions_generated,
        "mean_generation_rounds": sum(rounds) / len(rounds) if rounds else None,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}",
    }
    if cli.out:
        os.makedirs(os.path.dirname(os.path.abspath(cli.out)), exist_ok=True)
        with open(cli.out, "w") as f:
            json.dump(result, f, indent=1)
    print(json.dumps({k: v for k, v in result.items() if k != "rss_mib"}, indent=1), file=sys.stderr)
    if cli.output_dir is None:
        shutil.rmtree(output_dir, ignore_errors=True)
    print(f"soak: {trainer.state.global_step} steps, rss growth {growth:.1f}%, nonfinite {nonfinite}")


if __name__ == "__main__":
    main()
