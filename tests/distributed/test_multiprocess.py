"""Two processes (torchrun, gloo, CPU; plain DDP and DeepSpeed ZeRO-3) give the same advantages and update as one
process over the same global batch.

`accelerate launch --cpu --num_processes 2` silently runs ONE process, hence torchrun."""

import os
import socket
import subprocess
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the multi-process equality runs on every stack CI tests, the upstream stage's included
pytestmark = pytest.mark.every_stack


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(processes: int) -> list[str]:
    """The command prefix that runs a script on `processes` CPU processes with torchrun (gloo), with an explicit free
    port (torchrun's `--master_port 0` hangs at rendezvous here)."""
    return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(processes), "--master_addr",
            "127.0.0.1", "--master_port", str(_free_port())]


def _launch(nproc, model_dir, out, mode, backend="ddp"):
    cmd = [*torchrun(nproc), os.path.join(ROOT, "tests", "dist_run.py"), model_dir, str(out), mode, backend]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": ROOT}
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    return torch.load(out)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean"])
def test_two_processes_match_one(tiny_model_dir, tmp_path, mode):
    one = _launch(1, tiny_model_dir, tmp_path / "one.pt", mode)
    two = _launch(2, tiny_model_dir, tmp_path / "two.pt", mode)
    assert (one["world"], two["world"]) == (1, 2)  # really two processes
    assert len(one["advantages"]) == len(two["advantages"]) == 2
    for a, b in zip(one["advantages"], two["advantages"]):
        assert (a == 0).any() and (a != 0).any()  # the overlong filter removed some, not all
        torch.testing.assert_close(b, a, rtol=0, atol=1e-6)
    for name in one["params"]:
        torch.testing.assert_close(two["params"][name], one["params"][name], rtol=0, atol=1e-6, msg=name)


@pytest.mark.slow
def test_deepspeed_zero3_two_processes_match_one(tiny_model_dir, tmp_path):
    # ZeRO-3 on DeepSpeed's CPU accelerator (the first run on a machine compiles a small op, about a minute).
    # Compared with ZeRO-3 on one process: DeepSpeed keeps float32 weights, so a float64 DDP run is not the reference.
    mode = "seq-mean-token-mean"
    one = _launch(1, tiny_model_dir, tmp_path / "one.pt", mode, "zero3")
    two = _launch(2, tiny_model_dir, tmp_path / "two.pt", mode, "zero3")
    assert (one["world"], two["world"]) == (1, 2)
    for a, b in zip(one["advantages"], two["advantages"]):
        torch.testing.assert_close(b, a, rtol=0, atol=1e-6)
    for name in one["params"]:
        torch.testing.assert_close(two["params"][name], one["params"][name], rtol=0, atol=1e-6, msg=name)
