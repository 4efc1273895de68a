"""Several machines, on one host: the main job launched as 2 "machines" of 1 process each through accelerate's
multi-node flags (`trl-lite train --num_machines 2 --machine_rank R --main_process_ip 127.0.0.1`, gloo), as a cluster
user launches it on every node (examples/slurm/), against the same run on 1 machine with 2 processes.

- DDP and DeepSpeed ZeRO-3: train with a checkpoint every step, SIGKILL both machines after a checkpoint is complete,
  relaunch both with `--resume_from_checkpoint true`: the final weights equal the 1-machine run's.
- `save_on_each_node=True` with an output folder per machine (nodes without a shared filesystem): transformers writes
  the weights on the global main process only, so the other machine's checkpoint cannot be resumed from; the resume
  stops at once on both machines, naming the missing file and the node.
- The math reward's worker pool sizes itself from the node's CPUs and its local process count.

Float32 on CPU: the same reductions in the same order on both layouts, so the weights match exactly (asserted to 1e-6).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import transformers
from packaging import version
from safetensors.torch import load_file

from tests.distributed.test_multiprocess import _free_port
from trl_lite.checkpoints import checkpoint_files, resume_problems

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The built-in arithmetic task, small: 8 completions per process per step, 4 steps, a checkpoint every step
ARGS = ["--task", "arithmetic", "--eval_problems", "20", "--max_steps", "4", "--save_strategy", "steps", "--save_steps",
        "1", "--save_total_limit", "100", "--per_device_train_batch_size", "8", "--num_generations", "8",
        "--max_completion_length", "14", "--learning_rate", "1e-3", "--lr_scheduler_type", "constant", "--report_to",
        "none", "--logging_steps", "1", "--seed", "0", "--bf16", "false"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}


def _command(config, out, *extra, machines=1, rank=0, port=None):
    launch = ["--accelerate_config", config, "--num_processes", "2", "--main_process_port", str(port or _free_port())]
    if machines > 1:
        launch += ["--num_machines", str(machines), "--machine_rank", str(rank), "--main_process_ip", "127.0.0.1"]
    return [sys.executable, "-m", "trl_lite.cli", "train", *launch, *ARGS, "--output_dir", str(out), *extra]


def _start_machines(config, outs, *extra):
    """One `trl-lite train` per machine."""
    port = _free_port()
    return [subprocess.Popen(_command(config, out, *extra, machines=2, rank=rank, port=port), cwd=ROOT, env=ENV,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for rank, out in enumerate(outs)]


def _finish(processes, timeout=600):
    results = []
    for process in processes:
        out, err = process.communicate(timeout=timeout)
        results.append((process.returncode, out, err))
    return results


def _kill_tree(process) -> None:
    """SIGKILL `process` and every process it started (torchrun starts its workers in sessions of their own)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    tree, todo = [], [process.pid]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo += children.get(pid, [])
    for pid in tree:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.communicate()


def _weights(folder):
    return load_file(os.path.join(folder, "model.safetensors"))


def _difference(a, b):
    return max((a[k].double() - b[k].double()).abs().max().item() for k in a)


def _logged_steps(folder):
    with open(os.path.join(folder, "trainer_state.json")) as f:
        return [row["step"] for row in json.load(f)["log_history"] if "loss" in row]


# Measured 2026-11-24 on the oldest stack (transformers 5.17.0, accelerate 1.10.1): on a CPU run launched through
# accelerate, transformers 5.17 loads the optimizer state with map_location=args.device, "cpu:0", which torch.load
# cannot restore to ("don't know how to restore data location of torch.storage.UntypedStorage (tagged with cpu:0)").
# transformers 5.23 resumes; on GPUs the device is cuda:N either way.
OLD_CPU_RESUME = version.parse(transformers.__version__) < version.parse("5.23")


@pytest.mark.slow
@pytest.mark.skipif(OLD_CPU_RESUME, reason="transformers < 5.23 cannot resume an accelerate-launched CPU run: it loads "
                    "the optimizer to 'cpu:0' (see OLD_CPU_RESUME)")
@pytest.mark.parametrize("config", ["multi_gpu", "deepspeed_zero3"])
def test_two_machines_killed_and_resumed_end_with_the_one_machine_weights(tmp_path, config):
    reference = tmp_path / "one-machine"
    one = subprocess.run(_command(config, reference), cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)
    assert one.returncode == 0, one.stderr[-3000:]

    shared = tmp_path / "two-machines"  # one output_dir, as on a shared filesystem
    machines = _start_machines(config, [shared, shared])
    deadline = time.monotonic() + 600
    while not os.path.isfile(shared / "checkpoint-2" / "trainer_state.json"):  # checkpoint-2 is complete
        assert all(m.poll() is None for m in machines), [m.communicate()[1][-3000:] for m in machines]
        assert time.monotonic() < deadline
        time.sleep(0.02)
    for machine in machines:
        _kill_tree(machine)
    assert not os.path.isfile(shared / "model.safetensors")  # killed before the end

    resumed = _finish(_start_machines(config, [shared, shared], "--resume_from_checkpoint", "true"))
    for rank, (code, _, err) in enumerate(resumed):
        assert code == 0, f"machine {rank}: {err[-3000:]}"
    assert "[resume] continuing from" in resumed[0][2]
    assert _logged_steps(shared / "checkpoint-4") == [1, 2, 3, 4]
    trained = _difference(_weights(reference), _weights(reference / "checkpoint-1"))
    assert trained > 1e-5  # steps 2-4 moved the weights
    assert _difference(_weights(reference), _weights(shared)) <= 1e-6


@pytest.mark.slow
def test_save_on_each_node_without_a_shared_folder_stops_the_resume_naming_the_missing_file_and_node(tmp_path):
    nodes = [tmp_path / "node0", tmp_path / "node1"]
    first = _finish(_start_machines("multi_gpu", nodes, "--save_on_each_node", "true", "--max_steps", "1"))
    assert all(code == 0 for code, _, _ in first), [err[-2000:] for _, _, err in first]
    # each machine's local main process wrote its own checkpoint-1, but transformers saved the weights on node 0 only
    assert os.path.isfile(nodes[0] / "checkpoint-1" / "model.safetensors")
    assert os.path.isfile(nodes[1] / "checkpoint-1" / "trainer_state.json")
    assert os.path.isfile(nodes[1] / "checkpoint-1" / "rng_state_1.pth")
    assert not os.path.isfile(nodes[1] / "checkpoint-1" / "model.safetensors")

    started = time.monotonic()
    resumed = _finish(_start_machines("multi_gpu", nodes, "--save_on_each_node", "true", "--max_steps", "2",
                                      "--resume_from_checkpoint", "true"), timeout=300)
    assert time.monotonic() - started < 240  # both stopped at once, no machine waits in a collective
    for code, _, err in resumed:
        assert code != 0
        # the same message on both machines: the process, its node and the file
        assert f"process 1 (node 1, host {os.uname().nodename}): {nodes[1] / 'checkpoint-1'} has no model.safetensors" \
            in err, err[-3000:]
        assert "save_on_each_node" in err


def _folder(path, *names):
    path.mkdir(parents=True)
    for name in names:
        (path / name).write_text("x")
    return str(path)


def test_what_each_process_needs_from_its_checkpoint_folder(tmp_path):
    # node 0's folder as transformers writes it with save_on_each_node, and node 1's: no weights
    node0 = _folder(tmp_path / "n0" / "checkpoint-1", "trainer_state.json", "model.safetensors", "rng_state_0.pth",
                    "trl_lite_state-0.pt")
    node1 = _folder(tmp_path / "n1" / "checkpoint-1", "trainer_state.json", "optimizer.pt", "rng_state_1.pth",
                    "trl_lite_state-1.pt")
    first, second = checkpoint_files(node0, 0, 2), checkpoint_files(node1, 1, 2)
    assert first == {"required": [], "own": {"rng": ["rng_state_0.pth", True],
                                             "trl_lite": ["trl_lite_state-0.pt", True]}}
    assert second["required"] == ["model.safetensors (the weights; or any of ['model.safetensors.index.json', "
                                  "'pytorch_model.bin', 'pytorch_model.bin.index.json', 'adapter_model.safetensors', "
                                  "'adapter_model.bin'])"]
    assert checkpoint_files(node1, 1, 2, weights="fsdp")["required"] == []  # FSDP's own layout is not checked
    assert checkpoint_files(node1, 1, 2, weights="deepspeed")["required"] == ["latest (DeepSpeed's checkpoint tag)"]
    assert checkpoint_files(None, 0, 1)["required"] == ["a checkpoint folder"]
    assert checkpoint_files(node0, 0, 1)["own"]["rng"] == ["rng_state.pth", False]  # one process: no index

    reports = [{**first, "process": 0, "node": "0", "host": "a", "checkpoint": node0},
               {**second, "process": 1, "node": "1", "host": "b", "checkpoint": node1}]
    assert resume_problems(reports) == [f"process 1 (node 1, host b): {node1} has no {second['required'][0]}"]
    # a file of its own missing on one process while the other has its own: a folder another node wrote
    reports[1] = {**checkpoint_files(node0, 1, 2), "process": 1, "node": "1", "host": "b", "checkpoint": node0}
    assert resume_problems(reports) == [f"process 1 (node 1, host b): {node0} has no rng_state_1.pth",
                                        f"process 1 (node 1, host b): {node0} has no trl_lite_state-1.pt"]
    # missing on every process: a checkpoint of another trainer, resumed with transformers' and trl-lite's warnings
    bare = _folder(tmp_path / "bare" / "checkpoint-1", "trainer_state.json", "model.safetensors")
    assert resume_problems([{**checkpoint_files(bare, i, 2), "process": i, "node": "0", "host": "a",
                             "checkpoint": bare} for i in (0, 1)]) == []
    # two processes resuming from different steps
    later = _folder(tmp_path / "n0" / "checkpoint-2", "trainer_state.json", "model.safetensors")
    problems = resume_problems([{**checkpoint_files(bare, 0, 1), "process": 0, "node": "0", "host": "a",
                                 "checkpoint": bare},
                                {**checkpoint_files(later, 0, 1), "process": 1, "node": "1", "host": "b",
                                 "checkpoint": later}])
    assert problems == ["the processes resume from different checkpoints: ['checkpoint-1', 'checkpoint-2']"]


POOL_SCRIPT = """
import json, os, sys
from trl_lite.rewards import MathChecker, default_workers
checker = MathChecker()
outcomes = checker.check_many([("\\\\boxed{2}", "2"), ("\\\\boxed{3}", "2"), ("\\\\boxed{4}", "4")])
with open(os.path.join(sys.argv[1], f"rank{os.environ['RANK']}.json"), "w") as f:
    json.dump({"workers": checker.workers, "default": default_workers(), "alive": len(checker._pool),
               "local_world_size": int(os.environ["LOCAL_WORLD_SIZE"]), "cpus": len(os.sched_getaffinity(0)),
               "outcomes": outcomes}, f)
checker.close()
"""


@pytest.mark.slow
def test_the_math_reward_pool_is_sized_per_node(tmp_path):
    script = tmp_path / "pool.py"
    script.write_text(POOL_SCRIPT)
    config = os.path.join(ROOT, "trl_lite", "accelerate_configs", "multi_gpu.yaml")

    def launch(out, machines):
        out.mkdir()
        port = _free_port()
        commands = [[sys.executable, "-m", "accelerate.commands.launch", "--config_file", config, "--num_processes",
                     "2", "--num_machines", str(machines), "--machine_rank", str(rank), "--main_process_ip",
                     "127.0.0.1", "--main_process_port", str(port), str(script), str(out)] for rank in range(machines)]
        runs = [subprocess.Popen(c, env={**ENV, "PYTHONPATH": ROOT}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True) for c in commands]
        for run in runs:
            _, err = run.communicate(timeout=300)
            assert run.returncode == 0, err[-3000:]
        return [json.loads((out / f"rank{rank}.json").read_text()) for rank in (0, 1)]

    for machines, local in ((2, 1), (1, 2)):
        for seen in launch(tmp_path / f"machines{machines}", machines):
            assert seen["local_world_size"] == local
            # the node's CPUs shared by its processes, between 1 and 4: 2 CPUs here give 2 workers per process on 2
            # machines of 1 process, 1 worker per process on 1 machine of 2
            expected = max(1, min(4, seen["cpus"] // local))
            assert seen["workers"] == seen["default"] == expected
            assert seen["alive"] == min(expected, 3)  # 3 checks: at most that many workers started
            assert seen["outcomes"] == ["correct", "wrong", "correct"]
