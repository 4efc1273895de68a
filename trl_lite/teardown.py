"""The end of a multi-process run: leave the process group and end the process without interpreter teardown.

A finished multi-process run could die with SIGABRT ("terminate called without an active exception") after its last
step, which a job scheduler reports as a failed job. The cause: `DistributedDataParallel`'s reducer keeps its process
group alive after `destroy_process_group()` (torch 2.13, gloo: one DDP backward pass is enough; DeepSpeed's ZeRO-3
groups likewise), so gloo's worker threads (`pt_gloo_runloop`, `gloo_tcp_loop`) are still running when the interpreter
tears down and C++ static destructors run under them. `tests/distributed/test_teardown.py` shows the threads outliving
`destroy_process_group()`.

[`exit_cleanly`] ends such a process the way it would end anyway, minus that teardown: `atexit` handlers run (logging,
trackers, a colocated vLLM engine's shutdown, which needs the process group), the process group is destroyed, standard
streams are flushed, and the process exits with `os._exit` and the status it would have had (0; 1 after an exception,
whose traceback is printed; `sys.exit`'s code). On one process it does nothing: the interpreter ends as usual.

A colocated vLLM engine tears down the process subgroups it made when it shuts down, by default from a finalizer at
interpreter exit. Once the process group is gone (`Accelerator.end_training()`, which the main job calls, destroys
it) that shutdown fails with `ValueError: Invalid process group specified`, a traceback at the end of a successful
run. [`shutdown_vllm`] shuts the engine down first; call it before leaving the process group.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import traceback


def in_process_group() -> bool:
    """Whether this process is part of an initialized `torch.distributed` process group (never imports torch: without
    `torch.distributed` imported there is no group)."""
    dist = sys.modules.get("torch.distributed")
    return dist is not None and dist.is_available() and dist.is_initialized()


def multi_process() -> bool:
    """Whether this process belongs to a multi-process run: a process group is up, or a launcher (torchrun, accelerate,
    DeepSpeed) started several processes (`WORLD_SIZE` > 1; the group may already have been left, as
    `Accelerator.end_training` does)."""
    return in_process_group() or int(os.environ.get("WORLD_SIZE", "1") or 1) > 1


def shutdown_vllm(trainer) -> bool:
    """Shuts down `trainer`'s colocated vLLM engine (TRL's `trainer.vllm_generation.llm`) while the process group it
    was built in is still up, so that nothing is left for its exit-time finalizer; returns whether there was one. The
    trainer cannot generate with vLLM afterwards."""
    llm = getattr(getattr(trainer, "vllm_generation", None), "llm", None)
    core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)  # vLLM's engine-core client
    if core is None:
        return False
    core.shutdown()  # detaches its finalizer, then tears the engine down
    return True


def finish(status: int = 0) -> None:
    """Ends this process of a multi-process run with `status` (see the module docstring); returns at once on a single
    process."""
    if not multi_process():
        return
    # what the interpreter would run before its teardown, while the process group is still up: a colocated vLLM
    # engine's shutdown (a finalizer run at exit) destroys its own subgroups, which fails once the default group is gone
    atexit._run_exitfuncs()
    if in_process_group():
        sys.modules["torch.distributed"].destroy_process_group()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


@contextlib.contextmanager
def exit_cleanly():
    """Runs the block, then [`finish`]es the process with the block's exit status when it is part of a process group.

    An exception is printed as the interpreter would print it (status 1); `sys.exit(code)` keeps its code (a message is
    printed to stderr, status 1). On one process the block's outcome propagates unchanged.
    """
    status = 0
    try:
        yield
    except SystemExit as exit_:
        if not multi_process():
            raise
        code = exit_.code
        if code is None or isinstance(code, int):
            status = code or 0
        else:
            print(code, file=sys.stderr)
            status = 1
    except BaseException:
        if not multi_process():
            raise
        traceback.print_exc()
        status = 1
    finish(status)
