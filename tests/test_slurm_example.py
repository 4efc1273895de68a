"""examples/slurm/train_multinode.sbatch, run here with stand-ins for `srun` and `scontrol` and a launcher that records
its command line instead of training: the command each node would run, parsed the way `trl-lite train` parses it.

Nothing here reaches a real cluster (this project has none); the multi-node launch itself, through the same flags,
is tested on one host by tests/test_multinode.py."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from accelerate.commands.launch import launch_command_parser

from trl_lite import train as train_lite

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "examples", "slurm", "train_multinode.sbatch")

# srun: one task per node (SLURM_NODEID = 0..SLURM_NNODES-1), each running the command after srun's own options
SRUN = """#!/bin/bash
while [[ $1 == --* ]]; do shift; done
for ((node = 0; node < SLURM_NNODES; node++)); do SLURM_NODEID=$node "$@" || exit $?; done
"""
SCONTROL = """#!/bin/bash
[[ "$*" == "show hostnames gpu-[07-08]" ]] || { echo "unexpected: scontrol $*" >&2; exit 1; }
printf 'gpu-07\\ngpu-08\\n'
"""
RECORD = """#!/usr/bin/env python3
import json, os, sys
with open(os.environ["RECORD"], "a") as f:
    f.write(json.dumps({"node": os.environ["SLURM_NODEID"], "argv": sys.argv[1:]}) + "\\n")
"""


def _submit(tmp_path, **env) -> list[dict]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("srun", SRUN), ("scontrol", SCONTROL), ("record", RECORD)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    record = tmp_path / "commands.jsonl"
    record.unlink(missing_ok=True)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "SLURM_NNODES": "2",
           "SLURM_JOB_NODELIST": "gpu-[07-08]", "LAUNCHER": str(bin_dir / "record"), "RECORD": str(record),
           "OUTPUT_DIR": str(tmp_path / "run"), **env}
    done = subprocess.run(["bash", SCRIPT], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in record.read_text().splitlines()]


def _parse(argv: list[str]):
    """(LitePPOConfig, accelerate's launch arguments) from a node's `trl-lite train` command line, as `trl-lite train`
    splits and parses it (trl_lite/train.py: `cli`), without launching."""
    parser = train_lite.make_parser()
    launch = train_lite._launch_flags()
    train, accel, unknown = train_lite._split(argv, train_lite._option_strings(parser), launch)
    assert unknown == []
    _, training_args, _ = train_lite.parse_cli(train)
    accelerate_args = launch_command_parser().parse_args([*train_lite.launch_args(accel), "--module", "trl_lite.train"])
    return training_args, accelerate_args


def test_the_script_is_valid_bash():
    done = subprocess.run(["bash", "-n", SCRIPT], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_each_node_runs_the_same_launch_with_its_own_rank(tmp_path):
    commands = _submit(tmp_path)
    assert [c["node"] for c in commands] == ["0", "1"]  # one task per node
    parsed = [_parse(c["argv"]) for c in commands]
    for rank, (args, launch) in enumerate(parsed):
        assert launch.num_machines == 2 and launch.machine_rank == rank
        assert launch.num_processes == 16  # 2 nodes x 8 GPUs
        assert launch.main_process_ip == "gpu-07" and launch.main_process_port == 29500  # the first node, both
        assert launch.rdzv_backend == "c10d"
        assert launch.config_file == train_lite.resolve_accelerate_config("deepspeed_zero3")
        assert args.use_vllm and args.vllm_mode == "colocate"
        assert args.recipe == "lite_ppo" and args.output_dir == str(tmp_path / "run")  # the recipe, OUTPUT_DIR kept
        # the recipe's 1024 completions per optimizer step kept on 16 GPUs: 16 x 16 completions x 4 micro-batches
        assert args.gradient_accumulation_steps == 4
        assert 16 * args.per_device_train_batch_size * args.gradient_accumulation_steps == 1024
        assert args.resume_from_checkpoint == "false"  # a first run: no checkpoint yet
    assert parsed[0][1].main_process_port == parsed[1][1].main_process_port


def test_a_requeued_job_resumes_from_its_checkpoints(tmp_path):
    checkpoint = tmp_path / "run" / "checkpoint-50"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text("{}")  # a complete checkpoint
    for command in _submit(tmp_path):
        assert command["argv"][command["argv"].index("--resume_from_checkpoint") + 1] == "true"


@pytest.mark.parametrize(("nodes", "gpus", "accumulation"), [("4", "8", 2), ("1", "8", 8), ("8", "8", 1)])
def test_the_global_batch_stays_the_recipes(tmp_path, nodes, gpus, accumulation):
    commands = _submit(tmp_path, SLURM_NNODES=nodes, GPUS_PER_NODE=gpus)
    assert len(commands) == int(nodes)
    argv = commands[-1]["argv"]
    assert argv[argv.index("--gradient_accumulation_steps") + 1] == str(accumulation)
    assert argv[argv.index("--machine_rank") + 1] == str(int(nodes) - 1)


def test_a_gpu_count_that_cannot_keep_the_batch_stops_with_a_message(tmp_path):
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}", "SLURM_NNODES": "3",
           "SLURM_JOB_NODELIST": "gpu-[07-08]", "GPUS_PER_NODE": "8"}
    done = subprocess.run(["bash", SCRIPT], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "24 GPUs do not divide the recipe's 64 micro-batches" in done.stderr
