"""The stale-weight alarm (`trl_lite/sync_check.py`): the gap's arithmetic, the config fields, and TRL's real colocate
path through the vLLM stand-in (tests/vllm_standin), with a correct engine and with two stale ones:

- `stale_load`: `load_weights` keeps the old weights (a sync that silently does nothing);
- `base_after_sleep`: after a level-2 sleep the engine generates from the checkpoint's (base) weights.

Each in float32 and with the stand-in's bf16 model copy (`VLLM_STANDIN_DTYPE=bfloat16`, as vLLM runs a float32
checkpoint on a GPU), on 1 process and on 2 (torchrun, gloo). The tiny Llama trains with SGD at learning rate 0.1
(tests/tiny.py), so an engine left behind falls one step further back at every sync."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
import torch

from tests.distributed.test_multiprocess import torchrun
from trl_lite import LitePPOConfig
from trl_lite.sync_check import (
    SYNC_MISMATCH_THRESHOLD,
    logp_gap,
    logp_gap_terms,
    mismatch_message,
    mismatch_threshold,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STANDIN = os.path.join(ROOT, "tests", "vllm_standin")
CAUSES = ("sleep mode", "LoRA", "ZeRO-3")


def test_gap_is_the_mean_absolute_difference_over_counted_tokens():
    sampling = torch.tensor([[-1.0, -2.0, float("nan")], [-0.5, -0.25, 0.0]])
    trainer = torch.tensor([[-1.5, -1.0, -3.0], [-0.5, -0.75, -9.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    # counted: |-1+1.5| = 0.5, |-2+1| = 1, (NaN: vLLM could not score it, out), 0, 0.5, (padding, out)
    terms = logp_gap_terms(sampling, trainer, mask)
    assert terms.tolist() == [2.0, 4.0]
    assert logp_gap(terms) == 0.5  # 2 / 4
    # over processes the tokens are pooled, not the per-process means: (2 + 3) / (4 + 1) = 1, not (0.5 + 3) / 2
    assert logp_gap(torch.stack([terms, torch.tensor([3.0, 1.0], dtype=torch.float64)])) == 1.0
    assert math.isnan(logp_gap(torch.zeros(2, 2)))  # no token counted: no gap, no alarm


def test_message_says_stale_and_names_the_causes_and_the_baseline():
    message = mismatch_message(0.25, 0.01, step=7, first=(0, 3e-4))
    assert "stale" in message and all(cause in message for cause in CAUSES)
    assert "0.25" in message and "threshold 0.01 " in message and "global step 7" in message
    assert "first sync (global step 0) gave 0.0003" in message
    assert "first sync" not in mismatch_message(0.25, 0.01, step=0, first=(0, 0.25))  # no baseline of itself


def test_top_p_raises_the_threshold_by_what_truncation_alone_can_add():
    # the kept tokens hold at least top_p of the probability, so renormalizing over them raises a sampled token's
    # log-prob by at most -log(top_p): 0.01 + -log(0.99) = 0.01 + 0.0100503 = 0.0200503
    assert mismatch_threshold(0.01, 0.99) == pytest.approx(0.0200503, abs=1e-7)
    assert mismatch_threshold(0.01, 0.9) == pytest.approx(0.01 + 0.1053605, abs=1e-7)
    assert mismatch_threshold(0.01, 1.0) == 0.01


@pytest.mark.parametrize(("field", "value", "accepted"), [
    ("on_sync_mismatch", "loud", "expected one of ['warn', 'raise', 'ignore']"),
    ("sync_mismatch_threshold", 0.0, "expected a number > 0"),
    ("sync_mismatch_threshold", float("nan"), "expected finite numbers"),  # the check of every float field
    ("sync_mismatch_threshold", True, "expected a number > 0"),
])
def test_bad_settings_name_the_field_the_value_and_what_is_accepted(tmp_path, field, value, accepted):
    with pytest.raises(ValueError) as error:
        LitePPOConfig(output_dir=str(tmp_path), **{field: value})
    assert f"{field}={value!r}" in str(error.value) and accepted in str(error.value)


def test_defaults():
    args = LitePPOConfig(output_dir="unused")
    assert (args.on_sync_mismatch, args.sync_mismatch_threshold) == ("warn", SYNC_MISMATCH_THRESHOLD) == ("warn", 0.01)


def _case(fault="", dtype="", steps=3, mode="warn", sleep=False) -> dict:
    return {"fault": fault, "dtype": dtype, "steps": steps, "mode": mode, "sleep": sleep}


# (dtype, the largest gap of the correct engine over 20 steps): float32 against float32 is rounding (measured 1.2e-7);
# the bf16 copy's logits against the trainer's float32 ones, 6.7e-4 measured (15x under the default threshold)
NOISE = {"": 1e-6, "bfloat16": SYNC_MISMATCH_THRESHOLD / 10}
# Each process count runs its cases one trainer after the other in one launch (tests/vllm_run.py, scenario "alarm")
CASES = {
    1: {"correct": _case(steps=20), "correct-bf16-sleep": _case(dtype="bfloat16", steps=20, sleep=True),
        "stale_load": _case("stale_load"), "stale_load-bf16": _case("stale_load", "bfloat16"),
        "base_after_sleep": _case("base_after_sleep", sleep=True),
        "base_after_sleep-bf16": _case("base_after_sleep", "bfloat16", sleep=True),
        "correct-top_p": {**_case(steps=5), "top_p": 0.9}},
    2: {"correct-bf16": _case(dtype="bfloat16", steps=20), "stale_load": _case("stale_load"),
        "base_after_sleep-bf16": _case("base_after_sleep", "bfloat16", sleep=True),
        "raise": _case("base_after_sleep", mode="raise", sleep=True)},
}
RUNS: dict[int, dict] = {}


def _alarm(request, processes: int, name: str) -> dict:
    """The result of one case, from one launch per process count (the first test that needs it launches it)."""
    if processes not in RUNS:
        out = request.getfixturevalue("tmp_path_factory").mktemp(f"alarm-{processes}")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, STANDIN]), "OMP_NUM_THREADS": "1",
               "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1",
               "ALARM_CASES": json.dumps(list(CASES[processes].values()))}
        env.pop("VLLM_STANDIN_REPLAY", None)
        launcher = [sys.executable] if processes == 1 else torchrun(processes)
        done = subprocess.run([*launcher, os.path.join(ROOT, "tests", "vllm_run.py"),
                               request.getfixturevalue("tiny_model_dir"), str(out), "alarm"],
                              env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-4000:]
        with open(out / "result.json") as f:
            result = json.load(f)
        assert result["world"] == processes
        RUNS[processes] = dict(zip(CASES[processes], result["cases"]))
    return RUNS[processes][name]


def _warnings(result) -> list[str]:
    return [message for messages in result["warnings"] for message in messages]


@pytest.mark.slow
@pytest.mark.parametrize(("processes", "name"), [(1, "correct"), (1, "correct-bf16-sleep"), (2, "correct-bf16")])
def test_a_correct_engine_never_trips_it_over_20_steps(request, processes, name):
    result = _alarm(request, processes, name)
    assert result["steps_done"] == 20 and len(result["gaps"]) == 20  # one gap per step (one sync per step)
    assert max(result["gaps"]) < NOISE[result["dtype"]]
    if result["dtype"]:
        assert min(result["gaps"]) > 1e-5  # the bf16 copy is really in use
    assert _warnings(result) == [] and result["error"] is None


@pytest.mark.slow
@pytest.mark.parametrize(("processes", "name"), [
    (1, "stale_load"), (1, "stale_load-bf16"), (1, "base_after_sleep"), (1, "base_after_sleep-bf16"),
    (2, "stale_load"), (2, "base_after_sleep-bf16"),
])
def test_a_stale_engine_trips_it_on_the_first_sync_after_the_policy_moved(request, processes, name):
    result = _alarm(request, processes, name)
    gaps = result["gaps"]
    # step 0: the engine holds the checkpoint and so does the trainer, stale or not; from step 1 on the trainer has
    # moved and the engine has not (measured 0.019 at step 1 on 1 process, then growing)
    assert len(gaps) == 3 and gaps[0] < NOISE[result["dtype"]]
    assert all(gap > SYNC_MISMATCH_THRESHOLD for gap in gaps[1:])
    warnings = _warnings(result)
    assert len(warnings) == 1  # once, on the main process, though steps 1 and 2 are both above
    assert "stale" in warnings[0] and "global step 1" in warnings[0] and all(c in warnings[0] for c in CAUSES)
    assert result["warnings"][0] == warnings  # rank 0's


@pytest.mark.slow
def test_raise_stops_the_run_at_the_first_stale_sync_on_every_process(request):
    result = _alarm(request, 2, "raise")
    assert result["error"] is not None and "stale" in result["error"] and "global step 1" in result["error"]
    assert result["steps_done"] == 1  # step 1's generation raised: nothing was trained on the stale completions
    assert result["gaps"][-1] > SYNC_MISMATCH_THRESHOLD


@pytest.mark.slow
def test_top_p_below_one_does_not_trip_a_correct_engine(request):
    # top_p=0.9: vLLM (and the stand-in) report log-probs renormalized over the nucleus, the trainer does not; the gap
    # of a correct engine is then that truncation, above the bare threshold but within -log(0.9) = 0.105 of it
    result = _alarm(request, 1, "correct-top_p")
    assert len(result["gaps"]) == 5
    assert max(result["gaps"]) > SYNC_MISMATCH_THRESHOLD  # the bare threshold alone would have tripped
    assert max(result["gaps"]) < mismatch_threshold(SYNC_MISMATCH_THRESHOLD, 0.9)
    assert _warnings(result) == []
