"""TRL's real vLLM colocate path (`trl/generation/vllm_generation.py`) through LitePPOTrainer, on CPU, with the
test-only vLLM stand-in of tests/vllm_standin (never importable outside these subprocesses).

Each test launches tests/vllm_run.py with the stand-in on PYTHONPATH and reads back what its probe saw: the weights
vLLM generated with against the policy's own, vLLM's finish reasons against our truncation flags, the syncs, sleeps
and generations per optimizer step, TRL's importance-sampling ratio, and (replayed completions) the update against
the same training without vLLM."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import tomllib

import pytest

from tests.test_multiprocess import torchrun

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STANDIN = os.path.join(ROOT, "tests", "vllm_standin")


def _run(model_dir, out, scenario, processes=1, backend="ddp"):
    script = os.path.join(ROOT, "tests", "vllm_run.py")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, STANDIN]), "OMP_NUM_THREADS": "1",
           "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    env.pop("VLLM_STANDIN_REPLAY", None)
    done = subprocess.run([*([sys.executable] if processes == 1 else torchrun(processes)), script, model_dir, str(out), scenario, backend], env=env, capture_output=True,
                          text=True, timeout=600)
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


@pytest.mark.parametrize("model", ["tiny_model_dir", "qwen3_model_dir"])
def test_colocate_syncs_the_trained_weights_every_step(request, tmp_path, model):
    result = _run(request.getfixturevalue(model), tmp_path, "colocate")
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


def test_overlong_filter_flags_exactly_what_vllm_truncated(tiny_model_dir, tmp_path):
    # max_completion_length=3: most completions reach the limit (finish_reason "length"); some sample EOS, and some
    # sample the padding token last, which TRL's rule would count as finished
    result = _run(tiny_model_dir, tmp_path, "overlong")
    flags = [(vllm_flags, ours) for probe in result["probes"] for vllm_flags, ours in probe["truncation"]]
    assert all(vllm_flags == ours for vllm_flags, ours in flags)
    everything = [flag for vllm_flags, _ in flags for flag in vllm_flags]
    assert any(everything) and not all(everything)  # both kinds
    for (vllm_flags, _), row in zip(flags, result["logs"]):  # one generation per step here
        assert row["overlong/frac_filtered"] == pytest.approx(sum(vllm_flags) / len(vllm_flags))


def test_dynamic_sampling_syncs_once_per_step_not_per_round(tiny_model_dir, tmp_path):
    result = _run(tiny_model_dir, tmp_path, "dynamic")
    _check_weight_sync(result)
    rounds = [row["generation/rounds"] for row in result["logs"]]
    assert max(rounds) > 1  # some step needed refills
    for step, count in zip(result["events_per_step"], rounds):
        assert step.count("sync") == 1 and step[0] == "sync"
        assert step.count("generate") == count  # every round generated with the same, synced weights


def test_update_with_vllm_equals_the_update_without_it(tiny_model_dir, tmp_path):
    # The stand-in replays fixed completions (with their processed logprobs); the run without vLLM replays the same
    # completions through a rollout_func. float64 policy, steps_per_generation=2 (old log-probs), overlong filter on.
    result = _run(tiny_model_dir, tmp_path, "exact")
    for mode in ("token-mean", "seq-mean-token-mean"):
        assert result[mode]["trained"] > 1e-2
        assert result[mode]["difference"] < 1e-6  # TRL's IS ratio is 1 up to the stand-in's float32 logprobs
        for low, high in (pair for pair in result[mode]["is_ratio"] if pair[0] is not None):
            assert abs(low - 1) < 1e-5 and abs(high - 1) < 1e-5


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["ddp", "zero3"])
def test_two_processes(tiny_model_dir, tmp_path, backend):
    # torchrun, gloo: each process has its own engine (seed = process index) and generates its share; under ZeRO-3 TRL
    # gathers the sharded parameters for the sync
    result = _run(tiny_model_dir, tmp_path, "colocate", processes=2, backend=backend)
    assert result["world"] == 2 and len(result["probes"]) == 2
    _check_weight_sync(result)
    assert result["events_per_step"] == [["sync", "generate"]] * 3
