"""scripts/gpu_check.py on a machine without a GPU: it stops at once with a clear message, and the model it builds
(Qwen3 architecture, byte-level BPE, chat template, locally) loads and generates."""

import os
import subprocess
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))


def test_stops_at_once_without_a_gpu():
    assert not torch.cuda.is_available()  # CI has none
    started = time.perf_counter()
    done = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gpu_check.py")], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 2
    assert "gpu_check: no CUDA GPU is visible" in done.stderr
    assert "tests/test_vllm_colocate.py" in done.stderr  # where the CPU coverage is
    assert time.perf_counter() - started < 60  # nothing was built or trained


def test_builds_a_qwen3_model_that_loads_and_generates(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import gpu_check

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


def test_a_check_runs_end_to_end_on_the_stand_in(tmp_path, monkeypatch):
    # The checks' own code (training run, generation timing, pass rule), with the test-only vLLM stand-in on CPU in
    # place of vLLM: what only a GPU can show is left to the script itself
    import gpu_check
    from tests.tiny import QWEN3_TINY

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([ROOT, os.path.join(ROOT, "tests", "vllm_standin")]))
    path = gpu_check.build_model(str(tmp_path / "model"), **QWEN3_TINY)
    for check in ("colocate", "dynamic_sampling"):
        result = gpu_check._launch(check, path, str(tmp_path), steps=2, max_length=8)
        assert result["passed"], result.get("error")
        assert result["steps"] == 2 and result["losses_finite"] and result["tokens_per_s"] > 0
        assert result["generate_calls"] >= 2
