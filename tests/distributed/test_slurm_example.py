"""examples/slurm/train_multinode.sbatch, run here with stand-ins for `srun` and `scontrol` and a launcher that records
its command line instead of training: the command each node would run, parsed the way `trl-lite train` parses it, and
followed through `trl-lite train` and `accelerate launch` down to the torchrun configuration each node would start.

Nothing here reaches a real cluster (this project has none); the multi-node launch itself, through the same flags,
is tested on one host by tests/distributed/test_multinode.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch.distributed.run as torchrun
import yaml
from accelerate.commands.launch import launch_command_parser

from trl_lite import launch as trl_launch
from trl_lite import train as train_lite

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "slurm", "train_multinode.sbatch")

# srun: records its own options, then runs one task per node (SLURM_NODEID = 0..SLURM_NNODES-1) with the command that
# follows them
SRUN = """#!/bin/bash
options=()
while [[ $1 == --* ]]; do options+=("$1"); shift; done
printf '%s\\n' "${options[@]}" > "$SRUN_OPTIONS"
for ((node = 0; node < SLURM_NNODES; node++)); do SLURM_NODEID=$node SLURM_PROCID=$node "$@" || exit $?; done
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
    # the batch step's own environment, as SLURM sets it: it runs on the first node, so SLURM_NODEID=0 there (a
    # `$SLURM_NODEID` expanded by the batch script instead of by each task would give every node rank 0)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "SLURM_NNODES": "2",
           "SLURM_JOB_NODELIST": "gpu-[07-08]", "SLURM_NODEID": "0", "SLURM_PROCID": "0", "SLURM_CPUS_PER_TASK": "64",
           "LAUNCHER": str(bin_dir / "record"), "RECORD": str(record), "SRUN_OPTIONS": str(tmp_path / "srun_options"),
           "OUTPUT_DIR": str(tmp_path / "run"), **env}
    done = subprocess.run(["bash", SCRIPT], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in record.read_text().splitlines()]


def _parse(argv: list[str]):
    """(LitePPOConfig, TRL's ModelConfig, accelerate's launch arguments) from a node's `trl-lite train` command line,
    as `trl-lite train` splits and parses it (trl_lite/train.py: `cli`), without launching."""
    parser = train_lite.make_parser()
    launch = trl_launch.launch_flags()
    train, accel, unknown = trl_launch.split_argv(argv, trl_launch.option_strings(parser), launch)
    assert unknown == []
    _, training_args, model_args = train_lite.parse_cli(train)
    accelerate_args = launch_command_parser().parse_args([*trl_launch.launch_args(accel), "--module", "trl_lite.train"])
    return training_args, model_args, accelerate_args


def _sbatch_options() -> dict[str, str]:
    with open(SCRIPT) as f:
        lines = [line.split(None, 1)[1].strip() for line in f if line.startswith("#SBATCH ")]
    return dict((line.split("=", 1) + [""])[:2] for line in lines)


def test_the_script_is_valid_bash():
    done = subprocess.run(["bash", "-n", SCRIPT], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_job_asks_for_whole_nodes_with_one_task_each_and_a_requeue():
    options = _sbatch_options()
    assert options["--ntasks-per-node"] == "1"  # one launcher per node; it starts a process per GPU
    assert options["--gres"] == "gpu:8"  # the script's GPUS_PER_NODE default
    assert {"--exclusive", "--requeue", "--cpus-per-task", "--nodes"} <= options.keys()
    assert options["--open-mode"] == "append"  # a requeued job's log follows the first attempt's


def test_each_node_runs_the_same_launch_with_its_own_rank(tmp_path):
    commands = _submit(tmp_path)
    assert [c["node"] for c in commands] == ["0", "1"]  # one task per node
    # srun gives its task the job's CPUs (srun does not inherit sbatch's --cpus-per-task since SLURM 22.05)
    srun_options = (tmp_path / "srun_options").read_text().split()
    assert {"--ntasks-per-node=1", "--cpus-per-task=64", "--kill-on-bad-exit=1"} <= set(srun_options)
    parsed = [_parse(c["argv"]) for c in commands]
    for rank, (args, model, launch) in enumerate(parsed):
        assert launch.num_machines == 2 and launch.machine_rank == rank
        assert launch.num_processes == 16  # 2 nodes x 8 GPUs
        assert launch.main_process_ip == "gpu-07" and launch.main_process_port == 29500  # the first node, both
        assert launch.rdzv_backend == "c10d"
        assert launch.config_file == trl_launch.resolve_accelerate_config("deepspeed_zero3")
        assert args.use_vllm and args.vllm_mode == "colocate"
        assert args.recipe == "lite_ppo" and model.model_name_or_path == "Qwen/Qwen3-8B-Base"  # the paper's 8B recipe
        assert args.output_dir == str(tmp_path / "run")  # OUTPUT_DIR kept
        # the recipe's 1024 completions per optimizer step kept on 16 GPUs: 16 x 16 completions x 4 micro-batches
        assert args.gradient_accumulation_steps == 4
        assert 16 * args.per_device_train_batch_size * args.gradient_accumulation_steps == 1024
        assert args.resume_from_checkpoint == "false"  # a first run: no checkpoint yet


def test_each_node_starts_its_own_torchrun_meeting_on_the_first_node(tmp_path, monkeypatch):
    """Each node's command through `trl-lite train` and `accelerate launch` (with the shipped ZeRO-3 config) to the
    torchrun that accelerate would start on that node; torchrun itself is replaced by a recorder."""
    with open(trl_launch.resolve_accelerate_config("deepspeed_zero3")) as f:
        config = yaml.safe_load(f)
    # accelerate runs torchrun on this node, not DeepSpeed's pdsh launcher over ssh: the pattern srun needs
    assert config["deepspeed_config"]["deepspeed_multinode_launcher"] == "standard"
    commands = _submit(tmp_path)
    started = []

    def record_torchrun(args):
        launch, entry, entry_args = torchrun.config_from_args(args)
        started.append((launch, [entry, *entry_args], dict(os.environ)))

    monkeypatch.setattr(torchrun, "run", record_torchrun)
    monkeypatch.setattr("accelerate.utils.launch.is_port_in_use", lambda port: False)  # nothing is bound here
    for command in commands:
        train_lite.cli(command["argv"])  # what `trl-lite train ARGV` does
    assert len(started) == 2
    for launch, entry, env in started:
        # 8 processes on each of 2 nodes; every node meets the others at the first node's address and port (with
        # c10d, torchrun numbers the nodes as they join: --machine_rank only tells accelerate which node is first)
        assert launch.min_nodes == launch.max_nodes == 2 and launch.nproc_per_node == 8
        assert launch.rdzv_backend == "c10d" and launch.rdzv_endpoint == "gpu-07:29500"
        assert env["ACCELERATE_USE_DEEPSPEED"] == "true" and env["ACCELERATE_DEEPSPEED_ZERO_STAGE"] == "3"
        # each process runs the main job with the training flags
        assert entry[:3] == [sys.executable, "-u", "-m"] and entry[3] == "trl_lite.train"
        assert "--accelerate_config" not in entry and entry[entry.index("--vllm_mode") + 1] == "colocate"


def test_a_requeued_job_resumes_from_its_checkpoints(tmp_path):
    checkpoint = tmp_path / "run" / "checkpoint-50"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text("{}")  # a complete checkpoint
    for command in _submit(tmp_path):
        assert command["argv"][command["argv"].index("--resume_from_checkpoint") + 1] == "true"


def test_an_incomplete_checkpoint_alone_starts_fresh(tmp_path):
    (tmp_path / "run" / "checkpoint-50").mkdir(parents=True)  # cut off before trainer_state.json was written
    for command in _submit(tmp_path):
        assert command["argv"][command["argv"].index("--resume_from_checkpoint") + 1] == "false"


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
