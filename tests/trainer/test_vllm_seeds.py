"""`seed` under vLLM colocate, through the test stand-in (tests/vllm_standin), which seeds as vLLM 0.31 does: the
engine's worker reseeds the process-wide Python, NumPy and torch generators when it starts (with TRL's engine seed,
the process index), and each request's sampling seed is drawn from NumPy's global generator.

Left at that, two runs that differ only in `seed` would sample the same completions. LitePPOTrainer restores TRL's
`set_seed(seed, device_specific=True)` once the engine has started, so the sampling seeds follow `seed` and the
process index, and the checkpoint's RNG states carry them across a resume."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests import resume_run
from tests.distributed.test_multiprocess import torchrun

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STANDIN = os.path.join(ROOT, "tests", "vllm_standin")


def _env(**extra) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, STANDIN]), "OMP_NUM_THREADS": "1",
           "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1", **extra}
    for name in ("VLLM_STANDIN_REPLAY", "VLLM_STANDIN_FAULT", "VLLM_STANDIN_DTYPE"):
        env.pop(name, None)
    return env


def test_the_standin_seeds_as_vllm_does(tiny_model_dir):
    # Whatever the caller seeded before, starting an engine with seed=0 leaves NumPy's global generator seeded with 0;
    # each request then takes its sampling seed from it, in order.
    script = textwrap.dedent(f"""
        import json, numpy as np, torch
        from vllm import LLM, SamplingParams
        result = {{}}
        for before in (1, 2):
            np.random.seed(before)
            torch.manual_seed(before)
            llm = LLM(model={tiny_model_dir!r}, distributed_executor_backend="external_launcher", seed=0)
            result[before] = [int(np.random.randint(0, 2**31)), int(torch.randint(0, 2**31, ()))]
        np.random.seed(5)
        llm.generate([{{"prompt_token_ids": [1, 2]}}] * 3, SamplingParams(max_tokens=2), use_tqdm=False)
        expected = np.random.RandomState(5).randint(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=3,
                                                    dtype=np.int64)
        result["request_seeds"] = [llm.request_seeds, expected.tolist()]
        print(json.dumps(result))
    """)
    done = subprocess.run([sys.executable, "-c", script], env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["1"] == result["2"]  # the caller's seed is gone
    assert result["1"][0] == np.random.RandomState(0).randint(0, 2**31)  # NumPy's generator is the engine seed's
    seeds, expected = result["request_seeds"]
    assert seeds == expected  # per request, from the global generator: 3 requests, 3 draws


def _sample(model_dir, out, seeds, processes=1) -> list[dict]:
    launcher = [sys.executable] if processes == 1 else torchrun(processes)
    done = subprocess.run([*launcher, os.path.join(ROOT, "tests", "vllm_run.py"), model_dir, str(out), "seed"],
                          env=_env(SEED=",".join(map(str, seeds))), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    with open(out / "result.json") as f:
        result = json.load(f)
    assert result["world"] == processes
    return result["runs"]


def _first_draws(seed: int, count: int) -> list[int]:
    """The first `count` request seeds of an engine whose NumPy generator was seeded with `seed`."""
    return np.random.RandomState(seed).randint(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=count,
                                               dtype=np.int64).tolist()


@pytest.mark.slow
def test_seed_decides_what_vllm_samples(tiny_model_dir, tmp_path):
    # one generation batch per run (8 prompts, one completion each, temperature 1, 8 tokens at most), three trainers
    # one after the other in one process: seed 42, 43, then 42 again
    a, b, again = _sample(tiny_model_dir, tmp_path, (42, 43, 42))
    assert a["request_seeds"] == [_first_draws(42, 8)] and b["request_seeds"] == [_first_draws(43, 8)]
    assert a["completions"] != b["completions"]
    assert again["completions"] == a["completions"] and again["request_seeds"] == a["request_seeds"]


@pytest.mark.slow
def test_no_two_processes_sample_the_same_noise(tiny_model_dir, tmp_path):
    (run,) = _sample(tiny_model_dir, tmp_path, (42,), processes=2)
    first, second = run["request_seeds"]
    # 4 prompts per process; process r draws from NumPy seeded with seed + r (accelerate's device-specific seed)
    assert first == _first_draws(42, 4) and second == _first_draws(43, 4)
    assert set(first).isdisjoint(second) and run["completions"][0] != run["completions"][1]


@pytest.mark.slow
def test_resume_with_vllm_is_exact(tiny_model_dir, tmp_path):
    # tests/resume_run.py "vllm": 5 steps, steps_per_generation 2, resumed from checkpoint-1 (mid-cycle; the next
    # generation, at step 2, samples after the resume). Measured before the seed was restored after the engine start
    # (stand-in with a generator of its own, seeded at start): weights 2.0e-2 apart, trained 2.4e-2.
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "resume_run.py"), tiny_model_dir,
                           str(tmp_path), "vllm"], env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    with open(tmp_path / "result.json") as f:
        result = json.load(f)
    assert result["resume_step"] == resume_run.SETTINGS["vllm"][3] == 1
    assert result["trained"] > 1e-2
    assert result["weights"] == 0.0 and result["losses"] == 0.0
    assert all(diff == 0.0 for diff in result["logged"].values()), result["logged"]
