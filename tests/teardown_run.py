"""Run by tests/distributed/test_teardown.py under `torchrun --nproc_per_node 2`: one DDP backward pass on gloo, then how the
process ends. Each process writes OUT_DIR/rank<R>.json with the native threads it has at each point.

    torchrun --nproc_per_node 2 tests/teardown_run.py OUT_DIR {return,raise,exit3,exit_message}

The block under `exit_cleanly` returns, raises, or calls `sys.exit(3)` / `sys.exit("message")`; an `atexit` handler
and an unterminated `print` check that the process still runs its exit handlers and flushes its output.
"""

import atexit
import json
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from trl_lite.teardown import exit_cleanly  # noqa: E402


def native_threads() -> dict[str, int]:
    names: dict[str, int] = {}
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/comm") as f:
            name = f.read().strip()
        names[name] = names.get(name, 0) + 1
    return names


def main(out: str, how: str) -> None:
    rank = int(os.environ["RANK"])
    record = {}
    atexit.register(lambda: open(os.path.join(out, f"atexit{rank}"), "w").close())
    with exit_cleanly():
        dist.init_process_group("gloo")
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 4))
        model(torch.ones(2, 4)).sum().backward()
        record["after_backward"] = native_threads()
        del model
        dist.destroy_process_group()  # as Accelerator.end_training does
        record["after_destroy"] = native_threads()
        with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
            json.dump(record, f)
        print(f"rank {rank} done", end="")  # no newline: only a flush shows it
        if how == "raise":
            raise ValueError(f"rank {rank} failed")
        if how == "exit3":
            sys.exit(3)
        if how == "exit_message":
            sys.exit(f"rank {rank}: stopped")


if __name__ == "__main__":
    main(*sys.argv[1:])
