"""Exact resume: k steps, then a fresh trainer resumed from checkpoint-k, ends with the uninterrupted run's weights and
logs every later step's values, for every feature (TRL 1.16 alone is not exact in the middle of a generation cycle); a
run killed with SIGKILL, between checkpoints or while writing one, finishes with `--resume_from_checkpoint true`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from tests import resume_run
from tests.distributed.test_multiprocess import torchrun
from tests.trainer.test_resume import MAIN_ARGS, ROOT, _logged_steps, _main_job, _weights
from tests.tiny import prompt_dataset, reward_digit_count, train_args
from trl_lite import LitePPOConfig, LitePPOTrainer
from trl_lite.checkpoints import PROCESS_STATE, load_process_state


def _check(result: dict):
    assert result["trained"] > 1e-3  # the steps after the checkpoint moved the weights
    assert result["weights"] < 1e-6
    assert result["losses"] < 1e-6
    # every value logged after the resume step, counters and diagnostics included (not `loss` across a window the
    # resume cut, which transformers averages over the steps since the resume)
    assert result["logged"] and max(result["logged"].values()) < 1e-6, {
        k: v for k, v in result["logged"].items() if v >= 1e-6}
    assert result["clipped_tokens_resumed"] == result["clipped_tokens"]  # the table's lines after the resume


# window: below; vllm (through the vLLM stand-in, in a subprocess): tests/trainer/test_vllm_seeds.py
@pytest.mark.parametrize("setting", [name for name in resume_run.SETTINGS if name not in ("window", "vllm")])
def test_resume_is_exact(tiny_model_dir, tmp_path, setting):
    # before trl-lite saved its state (measured with tests/resume_run.py): weights differed by 1.5e-2
    # (steps_per_generation), 2.2e-2 (num_iterations), 1.6e-2 (dynamic_sampling), 2.2e-2 (dapo); defaults were exact
    # but generation/completions_total restarted
    resume_run.main(tiny_model_dir, str(tmp_path), setting)
    with open(tmp_path / "result.json") as f:
        result = json.load(f)
    _check(result)
    totals = [row["generation/completions_total"] for row in result["resumed_logs"].values()
              if "generation/completions_total" in row]
    # the first generation after the resume counts the completions generated before it too (8 per batch at least)
    assert totals[0] >= 2 * resume_run.GROUP * (result["resume_step"] + 1)


def test_the_diagnostics_window_continues_across_a_resume(tiny_model_dir, tmp_path):
    # The checkpoint after step 3 cuts the logging window of steps 3-4: the step-4 log and table line of the resumed
    # run hold step 3's clipped tokens and entropy sums too. Without restoring the window (measured by making
    # `_load_diagnostics_state` a no-op): 1 + 1 clipped tokens instead of 2 + 2, and entropy/(in)correct off by 4e-3
    # and 8e-3; on main before this issue, the run itself diverged (weights 2e-1).
    resume_run.main(tiny_model_dir, str(tmp_path), "window")
    with open(tmp_path / "result.json") as f:
        result = json.load(f)
    _check(result)
    first = result["clipped_tokens"][0]
    assert first["step"] == 4 and first["low_total"] > 0 and first["high_total"] > 0  # both bounds have work
    assert "entropy/correct" in result["full_logs"]["4"] and "entropy/incorrect" in result["full_logs"]["4"]


@pytest.mark.slow
def test_resume_is_exact_on_two_processes(tiny_model_dir, tmp_path):
    # the dapo recipe in the middle of a generation cycle, on 2 processes (torchrun, gloo): every process restores its
    # own buffer, refill sampler and diagnostics window (before: weights differed by 2.7e-2)
    cmd = [*torchrun(2), os.path.join(ROOT, "tests", "resume_run.py"), tiny_model_dir, str(tmp_path), "dapo"]
    result = subprocess.run(cmd, env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": ROOT},
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    with open(tmp_path / "result.json") as f:
        result = json.load(f)
    assert result["world"] == 2
    _check(result)
    for process in (0, 1):
        assert os.path.isfile(tmp_path / "full" / "checkpoint-1" / PROCESS_STATE.format(process=process))


def _trainer(model_dir, output_dir, **fields) -> LitePPOTrainer:
    return LitePPOTrainer(model=model_dir, reward_funcs=reward_digit_count,
                          args=LitePPOConfig(**train_args(output_dir, **fields)), train_dataset=prompt_dataset())


def _resume_logging_warnings(trainer, checkpoint, caplog) -> str:
    with caplog.at_level("WARNING", logger="trl_lite"):
        trainer.train(resume_from_checkpoint=str(checkpoint))
    return caplog.text


EVERY_STEP = dict(save_strategy="steps", save_steps=1)


def test_checkpoint_keeps_the_buffer_only_in_the_middle_of_a_cycle(tiny_model_dir, tmp_path):
    # steps_per_generation=2: the checkpoint after step 1 needs the batch step 2 trains on; after step 2 nothing
    trainer = _trainer(tiny_model_dir, tmp_path, steps_per_generation=2, max_steps=2, **EVERY_STEP)
    trainer.train()
    middle = load_process_state(str(tmp_path / "checkpoint-1"), 0)
    end = load_process_state(str(tmp_path / "checkpoint-2"), 0)
    assert middle["step"] == 1 and end["step"] == 2  # TRL's micro-step counter
    assert len(middle["buffered_inputs"]) == 2  # the generation batch's 2 micro-batches
    assert torch.equal(middle["buffered_inputs"][1]["completion_ids"], trainer._buffered_inputs[1]["completion_ids"])
    assert end["buffered_inputs"] is None
    assert middle["completions_generated"] == end["completions_generated"] == 8  # one generation batch: 2 x 4


def test_checkpoint_without_trl_lite_state_resumes_with_a_warning(tiny_model_dir, tmp_path, caplog):
    # a checkpoint written by TRL's GRPOTrainer (or an older trl-lite): the run resumes as TRL would, and says so
    _trainer(tiny_model_dir, tmp_path / "a", max_steps=1, **EVERY_STEP).train()
    os.remove(tmp_path / "a" / "checkpoint-1" / PROCESS_STATE.format(process=0))
    trainer = _trainer(tiny_model_dir, tmp_path / "b", max_steps=2)
    warnings = _resume_logging_warnings(trainer, tmp_path / "a" / "checkpoint-1", caplog)
    assert trainer.state.global_step == 2
    assert "has no trl-lite state for process 0" in warnings


# ------------------------------------------------------------------ hard kills, end to end through the main job
# The built-in task with the dapo recipe, steps_per_generation=2 (checkpoints at odd steps are mid-cycle) and a
# checkpoint every 3 steps; 12 steps, so a kill lands well before the end.
KILL_ARGS = [*MAIN_ARGS[MAIN_ARGS.index("--per_device_train_batch_size"):], "--max_steps", "12", "--save_strategy",
             "steps", "--save_steps", "3", "--recipe", "dapo", "--steps_per_generation", "2", "--task", "arithmetic",
             "--eval_problems", "50"]


def _finished_weights_match(full, resumed_dir):
    expected, got = _weights(full), _weights(resumed_dir)
    return max((expected[k] - got[k]).abs().max().item() for k in expected)


@pytest.mark.slow
def test_sigkill_between_checkpoints_then_resume_true(tmp_path):
    full = tmp_path / "full"
    _main_job(full, args=KILL_ARGS)
    killed = tmp_path / "killed"
    cmd = [sys.executable, os.path.join(ROOT, "examples", "train_lite.py"), *KILL_ARGS, "--output_dir", str(killed)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    process = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not os.path.isfile(killed / "checkpoint-3" / "trainer_state.json"):  # the first checkpoint is complete
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    assert process.wait() == -signal.SIGKILL
    assert not os.path.isfile(killed / "model.safetensors")  # it did not finish
    resumed = _main_job(killed, "--resume_from_checkpoint", "true", args=KILL_ARGS)
    assert "[resume] continuing from" in resumed.stderr
    assert _logged_steps(killed / "checkpoint-12")[-1] == 12
    assert _finished_weights_match(full, killed) < 1e-6


# Runs the main job with `_save_rng_state` (called by transformers' `_save_checkpoint` after the weights and the
# optimizer, before trainer_state.json) killing the process at step KILL_AT: a checkpoint cut off while being written.
_KILL_WHILE_SAVING = """
import os, runpy, signal, sys
from trl_lite import LitePPOTrainer
save_rng_state = LitePPOTrainer._save_rng_state
def dying(self, output_dir):
    if self.state.global_step == int(os.environ["KILL_AT"]):
        os.kill(os.getpid(), signal.SIGKILL)
    save_rng_state(self, output_dir)
LitePPOTrainer._save_rng_state = dying
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.slow
def test_killed_while_writing_a_checkpoint_resumes_from_the_one_before(tmp_path):
    full = tmp_path / "full"
    _main_job(full, args=KILL_ARGS)
    killed = tmp_path / "killed"
    cmd = [sys.executable, "-c", _KILL_WHILE_SAVING, os.path.join(ROOT, "examples", "train_lite.py"), *KILL_ARGS,
           "--output_dir", str(killed)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1", "KILL_AT": "6"}
    died = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert died.returncode == -signal.SIGKILL, died.stderr[-3000:]
    partial = killed / "checkpoint-6"
    assert os.path.isfile(partial / "model.safetensors") and not os.path.isfile(partial / "trainer_state.json")
    resumed = _main_job(killed, "--resume_from_checkpoint", "true", args=KILL_ARGS)
    assert f"[resume] continuing from {killed / 'checkpoint-3'}" in resumed.stderr
    assert _finished_weights_match(full, killed) < 1e-6


def test_a_buffer_for_another_steps_per_generation_is_dropped_with_a_warning(tiny_model_dir, tmp_path, caplog):
    _trainer(tiny_model_dir, tmp_path / "a", steps_per_generation=2, max_steps=1, **EVERY_STEP).train()
    trainer = _trainer(tiny_model_dir, tmp_path / "b", max_steps=3)  # steps_per_generation 1 now
    warnings = _resume_logging_warnings(trainer, tmp_path / "a" / "checkpoint-1", caplog)
    assert trainer.state.global_step == 3
    assert "holds a generation batch of 2 micro-batches, this run has steps_per_generation=1" in warnings
