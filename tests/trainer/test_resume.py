"""`--resume_from_checkpoint PATH|true`: the main job and `trl-lite ablate` continue a stopped run at the next step and
end with the uninterrupted run's weights; incomplete checkpoints are never resumed from."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from safetensors.torch import load_file

from trl_lite.ablate import ablate
from trl_lite.runs import read_metrics, run_dir
from trl_lite.checkpoints import last_complete_checkpoint, resolve_resume

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _checkpoint(folder, step, complete=True):
    path = os.path.join(folder, f"checkpoint-{step}")
    os.makedirs(path)
    if complete:
        with open(os.path.join(path, "trainer_state.json"), "w") as f:
            json.dump({"global_step": step}, f)
    return path


# ------------------------------------------------------------------ which checkpoint
def test_last_complete_checkpoint_is_by_step_and_skips_partial_ones(tmp_path):
    _checkpoint(tmp_path, 3)
    ten = _checkpoint(tmp_path, 10)  # 10 > 3 numerically although "10" < "3" as text
    _checkpoint(tmp_path, 20, complete=False)  # killed while writing it
    os.makedirs(tmp_path / "checkpoint-x")
    assert last_complete_checkpoint(str(tmp_path)) == ten
    assert resolve_resume("true", str(tmp_path)) == ten
    assert resolve_resume(True, str(tmp_path)) == ten
    assert last_complete_checkpoint(str(tmp_path / "missing")) is None


@pytest.mark.parametrize("value", [None, False, "", "false", "False", "none"])
def test_no_resume(tmp_path, value):
    assert resolve_resume(value, str(tmp_path)) is None


def test_resume_errors_name_the_field(tmp_path):
    with pytest.raises(ValueError, match=re.escape("resume_from_checkpoint='true': no complete checkpoint")):
        resolve_resume("true", str(tmp_path))
    partial = _checkpoint(tmp_path, 5, complete=False)
    with pytest.raises(ValueError, match="is an incomplete checkpoint"):
        resolve_resume(partial, str(tmp_path))
    with pytest.raises(ValueError, match="is not a folder"):
        resolve_resume(str(tmp_path / "nope"), str(tmp_path))


# ------------------------------------------------------------------ the main job, end to end in subprocesses
# The built-in arithmetic task at a small size: 2 prompts x 8 completions per step, 4 steps, a checkpoint every 2, all
# kept (the demo keeps only the last; these tests resume from earlier ones).
MAIN_ARGS = ["--task", "arithmetic", "--eval_problems", "50", "--max_steps", "4", "--save_strategy", "steps",
             "--save_steps", "2", "--save_total_limit", "100", "--per_device_train_batch_size",
             "16", "--num_generations", "8", "--max_completion_length", "14", "--learning_rate", "1e-3",
             "--lr_scheduler_type", "constant", "--report_to", "none", "--use_cpu", "--logging_steps", "1",
             "--seed", "0", "--bf16", "false"]


def _main_job(output_dir, *extra, args=MAIN_ARGS):
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "train_lite.py"), *args, "--output_dir", str(output_dir),
         *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _weights(folder):
    return load_file(os.path.join(folder, "model.safetensors"))


def _logged_steps(folder):
    with open(os.path.join(folder, "trainer_state.json")) as f:
        return [row["step"] for row in json.load(f)["log_history"] if "loss" in row]


@pytest.mark.slow
def test_main_job_resumes_from_last_checkpoint_with_the_uninterrupted_weights(tmp_path):
    full = tmp_path / "full"
    _main_job(full)
    # A preempted run: its output_dir holds only checkpoint-2 (and a checkpoint-4 cut off while being written)
    stopped = tmp_path / "stopped"
    shutil.copytree(full / "checkpoint-2", stopped / "checkpoint-2")
    os.makedirs(stopped / "checkpoint-4")
    resumed = _main_job(stopped, "--resume_from_checkpoint", "true")
    assert f"[resume] continuing from {stopped / 'checkpoint-2'}" in resumed.stderr
    assert _logged_steps(stopped / "checkpoint-4") == [1, 2, 3, 4]  # steps 1-2 from the checkpoint, not trained again
    expected, got = _weights(full), _weights(stopped)
    assert max((expected[k] - got[k]).abs().max().item() for k in expected) < 1e-6
    initial = _weights(full / "checkpoint-2")
    assert max((expected[k] - initial[k]).abs().max().item() for k in expected) > 1e-5  # steps 3-4 trained


@pytest.mark.slow
def test_main_job_refuses_true_without_checkpoint(tmp_path):
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "train_lite.py"), *MAIN_ARGS, "--output_dir",
         str(tmp_path), "--resume_from_checkpoint", "true"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode != 0
    assert "resume_from_checkpoint='true': no complete checkpoint" in result.stderr
    assert not os.path.exists(tmp_path / "checkpoint-2")  # nothing was trained or overwritten


# ------------------------------------------------------------------ the ablation runner
def _losses(rows):
    return {row["step"]: row["loss"] for row in rows if "loss" in row}


@pytest.mark.slow
def test_ablation_continues_an_unfinished_run_from_its_checkpoint(tmp_path):
    # The built-in setting trains 4 optimizer steps per generation batch: the checkpoint at step 2 is in the middle
    # of one (trl-lite checkpoints the half-used batch; TRL 1.16 alone would generate a fresh one).
    common = dict(eval_problems=0, progress=False)
    ablate(["lite_ppo"], 1, 8, str(tmp_path / "full"), save_steps=2, **common)
    # The same run preempted during step 3, after its checkpoint at step 2: no result.json yet, step 3 logged
    stopped = str(tmp_path / "stopped")
    ablate(["lite_ppo"], 1, 3, stopped, save_steps=2, **common)
    folder = run_dir(stopped, "lite_ppo", 0)
    os.remove(os.path.join(folder, "result.json"))
    summary = ablate(["lite_ppo"], 1, 8, stopped, save_steps=4, resume_from_checkpoint="true", **common)
    assert summary["rows"][0]["recipe"] == "lite_ppo"
    with open(os.path.join(folder, "result.json")) as f:
        assert json.load(f)["steps"] == 8
    full = _losses(read_metrics(os.path.join(run_dir(str(tmp_path / "full"), "lite_ppo", 0), "metrics.jsonl")))
    again = _losses(read_metrics(os.path.join(folder, "metrics.jsonl")))
    assert sorted(again) == list(range(1, 9))  # each step logged once
    assert [again[s] for s in range(1, 9)] == pytest.approx([full[s] for s in range(1, 9)], abs=1e-6)
    full_weights = load_file(os.path.join(run_dir(str(tmp_path / "full"), "lite_ppo", 0), "checkpoint-8",
                                          "model.safetensors"))
    resumed_weights = load_file(os.path.join(folder, "checkpoint-8", "model.safetensors"))
    assert max((full_weights[k] - resumed_weights[k]).abs().max().item() for k in full_weights) < 1e-6


def test_ablation_checkpoint_path_must_belong_to_a_run(tmp_path):
    other = _checkpoint(tmp_path / "elsewhere", 2)
    with pytest.raises(ValueError, match="is not a checkpoint of this ablation's runs"):
        ablate(["lite_ppo"], 1, 2, str(tmp_path / "out"), resume_from_checkpoint=other, progress=False)


def test_every_entry_point_has_help():
    commands = [[sys.executable, os.path.join(ROOT, "examples", "train_lite.py"), "--help"],
                [sys.executable, "-m", "trl_lite.cli", "--help"]]
    commands += [[sys.executable, "-m", "trl_lite.cli", name, "--help"] for name in ("eval", "recommend", "ablate")]
    for command in commands:
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120,
                                env={**os.environ, "HF_HUB_OFFLINE": "1"})
        assert result.returncode == 0, (command, result.stderr[-2000:])
        assert result.stdout.startswith("usage:"), command
    assert "--resume_from_checkpoint" in subprocess.run(commands[0], cwd=ROOT, capture_output=True, text=True).stdout
    assert "ablate" in subprocess.run(commands[1], cwd=ROOT, capture_output=True, text=True).stdout


# ------------------------------------------------------------------ a real architecture, the way a user arrives
@pytest.mark.slow
def test_qwen3_bpe_on_deepmath_jsonl_with_math_accuracy_lora_dapo_interrupted_and_resumed(qwen3_model_dir, tmp_path):
    # DeepMath-103K's columns. The gold answers are small integers: a random tiny model's text often ends in a
    # number, which math-verify's expression fallback extracts, so rewards vary and the update is not zero.
    data = tmp_path / "deepmath.jsonl"
    with open(data, "w") as f:
        for i in range(16):
            f.write(json.dumps({"question": f"Compute {i} - {i} + {i % 3}.", "final_answer": str(i % 3),
                                "difficulty": 3.0, "topic": "Mathematics -> Algebra",
                                "r1_solution_1": "...", "r1_solution_2": "...", "r1_solution_3": "..."}) + "\n")
    args = ["--model_name_or_path", qwen3_model_dir, "--dataset_name", str(data), "--prompt_column", "question",
            "--answer_column", "final_answer", "--reward_funcs", "math_accuracy", "--recipe", "dapo",
            # a random model never ends a completion, so the overlong filter would leave nothing to train on
            "--overlong_filter", "false",
            "--use_peft", "--lora_r", "8", "--lora_alpha", "16", "--lora_target_modules", "all-linear",
            "--max_completion_length", "16", "--per_device_train_batch_size", "8", "--num_generations", "4",
            "--max_steps", "4", "--save_strategy", "steps", "--save_steps", "2", "--learning_rate", "1e-2",
            "--report_to", "none", "--use_cpu", "--logging_steps", "1", "--seed", "0", "--bf16", "false"]

    full = tmp_path / "full"
    _main_job(full, args=args)
    with open(full / "checkpoint-4" / "trainer_state.json") as f:
        history = json.load(f)["log_history"]
    rewards = [row["rewards/math_accuracy/mean"] for row in history if "rewards/math_accuracy/mean" in row]
    assert any(0 < r < 1 for r in rewards)  # there was something to learn
    assert any(row.get("generation/rounds", 1) >= 1 for row in history)  # dynamic sampling ran
    # The job was preempted after checkpoint-2: resume by path
    stopped = tmp_path / "stopped"
    shutil.copytree(full / "checkpoint-2", stopped / "checkpoint-2")
    resumed = _main_job(stopped, "--resume_from_checkpoint", str(stopped / "checkpoint-2"), args=args)
    assert "[resume] continuing from" in resumed.stderr
    assert _logged_steps(stopped / "checkpoint-4") == [1, 2, 3, 4]
    # Exact, dynamic sampling's refills included: the resumed adapter is the uninterrupted run's
    got = load_file(os.path.join(stopped, "adapter_model.safetensors"))
    expected = load_file(os.path.join(full, "adapter_model.safetensors"))
    initial = load_file(os.path.join(full, "checkpoint-2", "adapter_model.safetensors"))
    assert sorted(got) == sorted(expected)
    assert max((got[k] - expected[k]).abs().max().item() for k in got) < 1e-6
    assert max((got[k] - initial[k]).abs().max().item() for k in got) > 0  # steps 3-4 moved the adapter
    assert (stopped / "README.md").read_text().count("dapo") >= 1  # the model card names the recipe
