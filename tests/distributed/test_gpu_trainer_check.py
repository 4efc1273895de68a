"""`scripts/gpu_check.py --no-vllm` (scripts/gpu_trainer_check.py): its verdict rules with passing and failing
results made by hand, its failure paths, the model it builds, and the whole check rehearsed on CPU end to end
(`--device cpu`), so that a GPU run is never the script's first run."""

import json
import os
import subprocess
import sys
import time

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import gpu_trainer_check as check  # noqa: E402

TOL = check.PARITY_TOLERANCE


def _training(**measured):
    """A training run's result that passes every generic rule, with `measured` on top."""
    return {"steps": 4, "expected_steps": 4, "losses": [0.1, -0.2, 0.0, 0.3], "weights_moved": True, **measured}


TRAIN_OK = dict(missing_logs=[], bf16=True, clipped_tokens_written=True)


@pytest.mark.parametrize(("name", "result", "device", "passed", "reason"), [
    ("train", _training(**TRAIN_OK), "cuda", True, "4 steps, weights moved, advantages and diagnostics logged"),
    ("train", _training(**{**TRAIN_OK, "steps": 3}), "cuda", False, "stopped at step 3 of 4"),
    ("train", _training(**{**TRAIN_OK, "losses": [0.1, float("nan"), 0.0, 0.0]}), "cuda", False, "non-finite"),
    ("train", _training(**{**TRAIN_OK, "losses": []}), "cuda", False, "non-finite or missing loss"),
    ("train", _training(**{**TRAIN_OK, "weights_moved": False}), "cuda", False, "the weights did not move"),
    ("train", _training(**{**TRAIN_OK, "missing_logs": ["advantages/std"]}), "cuda", False,
     "not logged: ['advantages/std']"),
    ("train", _training(**{**TRAIN_OK, "bf16": False}), "cuda", False, "bf16 did not resolve on"),
    ("train", _training(**{**TRAIN_OK, "bf16": False}), "cpu", True, "4 steps"),  # CPU: float32 is the default
    ("train", _training(**{**TRAIN_OK, "clipped_tokens_written": False}), "cuda", False, "no clipped-token table"),
    ("train", {"error": "Traceback\ntorch.OutOfMemoryError: CUDA out of memory\n"}, "cuda", False,
     "the run failed: torch.OutOfMemoryError: CUDA out of memory"),
    ("generation", {"tokens_per_s": 1234.4}, "cuda", True, "1234 completion tokens/s"),
    ("generation", {"tokens_per_s": 0.0}, "cuda", False, "no tokens"),
    ("generation", {"tokens_per_s": None}, "cuda", False, "no tokens"),
    ("lora", _training(adapter_moved=True, base_max_change=0.0, adapter_parameters=112), "cuda", True,
     "adapter moved, base unchanged (112 adapter tensors)"),
    ("lora", _training(adapter_moved=False, base_max_change=0.0), "cuda", False, "the LoRA adapter did not move"),
    ("lora", _training(adapter_moved=True, base_max_change=3e-8), "cuda", False, "the base weights moved"),
    ("parity", {"comparisons": {"lite_ppo_vs_trl_batch_dapo": 3e-7}, "noise_floor": 1e-7, "control": 0.3}, "cuda",
     True, "worst lite_ppo_vs_trl_batch_dapo 3.00e-07 <= 1e-04; TRL vs itself 1.00e-07; control 0.30"),
    # a factor of 2 in the gradient: ||2g - g|| / ||g|| = 1
    ("parity", {"comparisons": {"lite_ppo_vs_trl_batch_dapo": 1.0}, "noise_floor": 1e-7, "control": 0.3}, "cuda",
     False, "relative gradient difference 1.00e+00 > 1e-04"),
    ("parity", {"comparisons": {"lite_ppo_vs_trl_batch_dapo": float("nan")}, "control": 0.3}, "cuda", False,
     "no gradient compared"),
    ("parity", {"comparisons": {}}, "cuda", False, "nothing was compared"),
    # the control (the group std) as close as the right setting: the comparison sees nothing, whatever it says
    ("parity", {"comparisons": {"lite_ppo_vs_trl_batch_dapo": 0.0}, "control": 0.0}, "cuda", False,
     "the comparison cannot see a wrong update"),
    ("parity", {"comparisons": {"lite_ppo_vs_trl_batch_dapo": 0.0}, "control": 0.5 * check.CONTROL_MINIMUM}, "cuda",
     False, "under 1e-02"),
    ("parity", {"comparisons": {"lite_ppo_vs_trl_batch_dapo": 0.0}}, "cuda", False, "the control"),
    ("exactness", {"comparisons": {"token-mean": 1e-7, "seq-mean-token-mean": 2e-7}}, "cuda", True,
     "worst seq-mean-token-mean 2.00e-07"),
    ("exactness", {"comparisons": {"token-mean": 1e-7, "seq-mean-token-sum": 2 * TOL}}, "cuda", False,
     "seq-mean-token-sum: relative gradient difference 2.00e-04 > 1e-04"),
    ("overhead", {"time_ratio": 1.01, "memory_ratio": 1.0}, "cuda", True, "time x1.010 (goal <= 1.02)"),
    ("overhead", {"time_ratio": 1.03, "memory_ratio": 1.0}, "cuda", False, "time x1.030"),
    ("overhead", {"time_ratio": 0.99, "memory_ratio": 1.02}, "cuda", False, "memory x1.0200 (goal <= 1.01)"),
    ("overhead", {"time_ratio": 0.99, "memory_ratio": None}, "cuda", False, "no peak-memory ratio"),
    ("overhead", {"time_ratio": 1.5, "memory_ratio": None}, "cpu", True, "recorded; judged on a GPU only"),
    ("overhead", {"time_ratio": None}, "cpu", False, "no step-time ratio"),
    ("zero3", _training(zero_stage=3), "cuda", True, "4 steps under ZeRO-3, weights moved"),
    # trained and moved, but without DeepSpeed (a launcher that lost its config): not the check
    ("zero3", _training(zero_stage=None), "cuda", False, "ZeRO stage None in force, not 3"),
    ("zero3", {"error": "Traceback\nRuntimeError: Error building extension 'fused_adam'\n"}, "cuda", False,
     "Error building extension 'fused_adam'"),
])
def test_verdicts(name, result, device, passed, reason):
    got_passed, got_reason = check.verdict(name, result, device)
    assert got_passed is passed and reason in got_reason, got_reason


def test_the_tolerance_and_goals_are_the_documented_ones():
    # docs/gpu.md states them; a change here must change the page
    assert (check.PARITY_TOLERANCE, check.TIME_GOAL, check.MEMORY_GOAL) == (1e-4, 1.02, 1.01)
    assert check.CONTROL_MINIMUM == 1e-2
    assert set(check.CHECKS) == {"train", "generation", "lora", "parity", "exactness", "overhead", "zero3"}
    assert sorted(c for group in check.GROUPS for c in group) == sorted(check.CHECKS)  # each in one group


def test_an_unknown_check_has_no_verdict():
    with pytest.raises(ValueError, match=r"verdict: unknown check 'colocate'; expected one of \['train'"):
        check.verdict("colocate", _training(weights_moved=True), "cuda")


def test_table_and_json():
    rows = [{"check": "train", "passed": True, "reason": "4 steps", "step_time_s": 1.234, "wall_s": 30.0},
            {"check": "parity", "passed": False, "reason": "too far", "comparisons": {"a": 2e-3, "b": 1e-7},
             "wall_s": 12.0},
            {"check": "generation", "passed": True, "reason": "ok", "tokens_per_s": 4321.0, "wall_s": 5.0},
            {"check": "zero3", "passed": False, "reason": "the run failed", "error": "x", "wall_s": 1.0}]
    table = check.render_table(rows).splitlines()
    assert len(table) == 5 and table[0].split()[:3] == ["check", "result", "figure"]
    assert table[1].split()[:4] == ["train", "PASS", "1.23", "s/step"]
    assert table[2].split()[:3] == ["parity", "FAIL", "2.0e-03"]  # the worst comparison
    assert table[3].split()[:4] == ["generation", "PASS", "4321", "tok/s"]
    assert table[4].split()[:3] == ["zero3", "FAIL", "-"]
    report = json.loads(json.dumps(check.report(rows, {"device": "cuda", "gpu": "NVIDIA H100 80GB HBM3"})))
    assert report["passed"] is False and report["failed"] == ["parity", "zero3"] and report["gpu"].startswith("NVIDIA")


def test_unknown_checks_are_refused_naming_the_value_and_the_accepted_ones(capsys):
    assert check.parse_checks("train, lora") == ["train", "lora"]
    with pytest.raises(ValueError, match=r"--checks='train,nope': unknown \['nope'\]; expected a comma-separated"):
        check.parse_checks("train,nope")
    with pytest.raises(SystemExit) as exit_:
        check.main(["--no-vllm", "--checks", "nope"])
    assert exit_.value.code == 2 and "'exactness'" in capsys.readouterr().err  # before anything is built


def test_stops_at_once_without_a_gpu_and_names_the_rehearsal():
    assert not torch.cuda.is_available()  # CI has none
    started = time.perf_counter()
    done = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gpu_check.py"), "--no-vllm"],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 2 and "gpu_check --no-vllm: no CUDA GPU is visible" in done.stderr
    assert "--device cpu" in done.stderr
    assert time.perf_counter() - started < 60  # nothing was built or trained


def test_the_help_names_the_no_vllm_mode():
    done = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gpu_check.py"), "--help"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "--no-vllm" in done.stdout and "--device" in done.stdout


def test_a_crashed_or_overdue_group_fails_its_checks_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(check, "_command", lambda *a: [sys.executable, "-c", "raise SystemExit('boom: no driver')"])
    rows = check.run_group(["train", "lora"], "model", str(tmp_path), "cuda", timeout=60)
    assert [r["check"] for r in rows] == ["train", "lora"] and not any(r["passed"] for r in rows)
    assert all(r["reason"] == "the run failed: boom: no driver" for r in rows)
    # overdue: the whole process tree goes, as `accelerate launch` -> torch.distributed.run -> worker would
    pid_file = tmp_path / "grandchild.pid"
    grandchild = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    parent = f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {grandchild!r}]); time.sleep(60)"
    monkeypatch.setattr(check, "_command", lambda *a: [sys.executable, "-c", parent])
    started = time.perf_counter()
    (row,) = check.run_group(["zero3"], "model", str(tmp_path), "cuda", timeout=8)  # 8 s: time to start both
    assert not row["passed"] and "ran past 8 s" in row["reason"] and time.perf_counter() - started < 40
    pid = int(pid_file.read_text())
    for _ in range(50):  # the kill is asynchronous: give the kernel a moment to reap it
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"the worker's child {pid} outlived the group's timeout")


def test_the_gpu_model_is_a_qwen3_of_150_to_500m_parameters():
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from tests.tiny import build_qwen3_tokenizer

    tokenizer = build_qwen3_tokenizer()
    counts = {}
    for device, size in check.MODEL_SIZES.items():
        config = Qwen3Config(vocab_size=len(tokenizer), tie_word_embeddings=True, **size)
        with torch.device("meta"):  # no memory: only the parameter count is read
            model = Qwen3ForCausalLM(config)
        counts[device] = sum(p.numel() for p in model.parameters())
        assert check._parameter_count(config) == counts[device]
    assert 150e6 <= counts["cuda"] <= 500e6, counts


def test_the_fixed_rollout_depends_only_on_the_prompt_and_its_occurrence(tmp_path):
    from tests.tiny import build_qwen3_tokenizer

    class Trainer:  # what fixed_rollout reads of a trainer
        processing_class = build_qwen3_tokenizer()
        max_completion_length = 16

    prompts = [[{"role": "user", "content": f"Let x = {i}."}] for i in range(8) for _ in range(4)]
    whole = check.fixed_rollout(prompts, Trainer)
    halves = [check.fixed_rollout(prompts[:16], Trainer), check.fixed_rollout(prompts[16:], Trainer)]
    assert whole["completion_ids"] == halves[0]["completion_ids"] + halves[1]["completion_ids"]
    eos = Trainer.processing_class.eos_token_id
    truncated = [ids for ids in whole["completion_ids"] if ids[-1] != eos]
    assert all(len(ids) == 16 for ids in truncated) and 0 < len(truncated) < len(prompts)
    assert all(ids.count(eos) == 1 for ids in whole["completion_ids"] if ids[-1] == eos)


@pytest.mark.slow
def test_the_rehearsal_runs_every_check_on_cpu(tmp_path):
    # the whole command as a user types it, on CPU with the tiny model: about a minute on 2 cores, most of it
    # DeepSpeed's start-up in the zero3 check
    out = tmp_path / "gpu_check.json"
    done = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gpu_check.py"), "--no-vllm", "--device",
                           "cpu", "--out", str(out), "--work-dir", str(tmp_path / "work")], capture_output=True,
                          text=True, timeout=900, env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"})
    assert out.exists(), done.stderr[-3000:]
    report = json.loads(out.read_text())
    rows = {row["check"]: row for row in report["results"]}
    assert report["passed"] and done.returncode == 0, {c: r["reason"] for c, r in rows.items()}
    assert list(rows) == [c for group in check.GROUPS for c in group]
    table = done.stdout.split("check       result")[-1]  # the final table: one line per check
    assert all(f"\n{name:<12}PASS" in table for name in check.CHECKS)
    assert report["device"] == "cpu" and report["parameters"] == check._parameter_count(
        __import__("transformers").AutoConfig.from_pretrained(tmp_path / "work" / "model"))
    # numbers, not only verdicts: the checks compared what they say they compared
    from trl_lite.aggregation import AGGREGATIONS

    assert set(rows["exactness"]["comparisons"]) == set(AGGREGATIONS.names()) | {"token-mean+overlong_filter"}
    assert max(rows["exactness"]["comparisons"].values()) <= TOL
    assert rows["parity"]["comparisons"]["lite_ppo_vs_trl_batch_dapo"] <= TOL
    assert rows["parity"]["optimizer_steps"] == 2 and min(rows["parity"]["gradient_norms"]) > 0
    assert min(rows["parity"]["lite_gradient_norms"]) > 0 and rows["parity"]["control"] >= check.CONTROL_MINIMUM
    assert rows["train"]["missing_logs"] == [] and rows["train"]["bf16"] is False  # CPU: float32
    assert 0 < rows["train"]["logged"]["overlong/frac_truncated"][0] <= 1
    assert rows["lora"]["base_max_change"] == 0.0 and rows["lora"]["adapter_parameters"] > 0
    assert rows["zero3"]["zero_stage"] == 3 and rows["zero3"]["deepspeed"]
    assert isinstance(rows["zero3"]["ops_compiled"], list) and rows["zero3"]["step_time_s"] > 0
    assert len(rows["overhead"]["runs"]) == 2 * check.OVERHEAD_RUNS
    # interleaved, who goes first alternating
    assert [r["kind"] for r in rows["overhead"]["runs"]] == ["lite", "trl", "trl", "lite", "lite", "trl"]
    assert len(rows["overhead"]["pair_time_ratios"]) == check.OVERHEAD_RUNS
    assert "commit" in report and report["date"].startswith("20")  # the commit is None outside a git checkout
    assert rows["generation"]["tokens"] > 0 and rows["generation"]["tokens_per_s"] > 0


@pytest.mark.slow
def test_the_gradient_comparison_tells_a_wrong_update_from_rounding(tmp_path):
    # what the tolerance must catch, on the rehearsal's model: the same completions aggregated another way (a
    # sequence-level mean for the token-level one), and the batch std for the group std, each move the gradient by
    # far more than PARITY_TOLERANCE; the same run twice does not move it at all
    from trl_lite import LitePPOConfig, LitePPOTrainer

    model = check.build_model(str(tmp_path / "model"), "cpu")

    def gradients(name, **fields):
        return check._gradients(LitePPOTrainer, LitePPOConfig, model, str(tmp_path / name), "cpu", max_steps=1,
                                **fields)

    token_mean = gradients("a", loss_aggregation="token-mean")
    assert check._relative_difference(token_mean, gradients("b", loss_aggregation="token-mean")) == 0.0
    sequence_mean = gradients("c", loss_aggregation="seq-mean-token-mean")
    group_std = gradients("d", loss_aggregation="token-mean", advantage_std="group")
    for name, wrong in (("seq-mean-token-mean", sequence_mean), ("group std", group_std)):
        difference = check._relative_difference(token_mean, wrong)
        print(f"{name} vs token-mean, batch std: {difference:.3f}")  # docs/gpu.md quotes these (0.21 and 0.30)
        assert difference > 100 * TOL
