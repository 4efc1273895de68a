"""How a process of a multi-process run ends (`trl_lite/teardown.py`).

The cause of the SIGABRT at exit: once DDP has run a backward pass, gloo's threads outlive `destroy_process_group()`
and are still running at interpreter teardown. `exit_cleanly` ends such a process without that teardown and with the
exit status it would have had, after its `atexit` handlers and with its output flushed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.distributed.test_multiprocess import torchrun
from trl_lite.teardown import exit_cleanly, finish, multi_process, shutdown_vllm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(tmp_path, how):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": ROOT}
    return subprocess.run([*torchrun(2), os.path.join(ROOT, "tests", "teardown_run.py"), str(tmp_path), how],
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_gloo_threads_outlive_destroy_process_group_and_the_process_still_ends_cleanly(tmp_path):
    done = _run(tmp_path, "return")
    assert done.returncode == 0, done.stderr[-3000:]
    for rank in (0, 1):
        with open(tmp_path / f"rank{rank}.json") as f:
            record = json.load(f)
        # the cause: DDP's reducer keeps the group alive, so its gloo threads survive destroy_process_group()
        assert record["after_backward"].get("pt_gloo_runloop", 0) >= 1
        assert record["after_destroy"].get("pt_gloo_runloop", 0) == record["after_backward"]["pt_gloo_runloop"]
        assert (tmp_path / f"atexit{rank}").exists()  # exit handlers ran
        assert f"rank {rank} done" in done.stdout  # and the unterminated line was flushed
    assert "terminate called" not in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("how", "status", "stderr"), [
    ("raise", 1, "ValueError: rank 0 failed"),  # the traceback, as the interpreter prints it
    ("exit3", 3, ""),
    ("exit_message", 1, "rank 0: stopped"),
])
def test_the_exit_status_is_the_one_the_process_would_have_had(tmp_path, how, status, stderr):
    done = _run(tmp_path, how)
    assert done.returncode != 0
    # torchrun reports the first failing process's status
    assert f"exitcode  : {status}" in done.stderr or f"exit code: {status}" in done.stderr, done.stderr[-3000:]
    assert stderr in done.stderr
    assert all((tmp_path / f"atexit{rank}").exists() for rank in (0, 1))


def test_one_process_ends_as_usual(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert not multi_process()
    finish(0)  # returns: nothing to leave, no os._exit
    with pytest.raises(ValueError, match="boom"), exit_cleanly():
        raise ValueError("boom")
    with pytest.raises(SystemExit) as exit_, exit_cleanly():
        sys.exit(4)
    assert exit_.value.code == 4
    monkeypatch.setenv("WORLD_SIZE", "2")  # a launcher started several processes, group already left
    assert multi_process()


def test_shutdown_vllm_shuts_the_engine_once_and_only_where_there_is_one():
    # the path vLLM 0.31 keeps its engine-core client at, from TRL's VLLMGeneration (the real engine:
    # tests/distributed/test_vllm_cpu.py reads the main job's stderr for the traceback this prevents)
    from types import SimpleNamespace

    calls = []
    core = SimpleNamespace(shutdown=lambda: calls.append("shutdown"))
    trainer = SimpleNamespace(vllm_generation=SimpleNamespace(llm=SimpleNamespace(llm_engine=SimpleNamespace(
        engine_core=core))))
    assert shutdown_vllm(trainer) is True and calls == ["shutdown"]
    # no vLLM (transformers generates), or server mode (a client, no engine here): nothing to shut down
    assert shutdown_vllm(SimpleNamespace()) is False
    assert shutdown_vllm(SimpleNamespace(vllm_generation=SimpleNamespace(vllm_client=object()))) is False
    assert calls == ["shutdown"]
