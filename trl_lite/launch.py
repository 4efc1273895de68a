"""Launching `trl-lite train` through `accelerate launch`, as TRL's CLI does with `--accelerate_config`.

A command line is split flag by flag ([`split_argv`]): a flag the training parser knows stays with training, one that
only `accelerate launch` knows goes to accelerate, anything else is an error naming the closest flag ([`check_flags`]).
`--accelerate_config NAME|PATH` becomes `--config_file PATH` ([`launch_args`]), a name resolving to a config shipped in
`trl_lite/accelerate_configs/` ([`resolve_accelerate_config`], [`shipped_file`]).
"""

from __future__ import annotations

import difflib
import os
import sys
from importlib import resources

import torch


def has_accelerator() -> bool:
    """Whether torch sees a device other than the CPU (CUDA, XPU or Apple MPS)."""
    xpu = getattr(torch, "xpu", None)
    return torch.cuda.is_available() or bool(xpu and xpu.is_available()) or torch.backends.mps.is_available()


def shipped_file(field: str, value: str, package: str, kind: str) -> str:
    """`value` as a file path: a path, or the name (with or without `.yaml`) of a YAML file shipped in `package`; an
    error naming the field, the value and the shipped names otherwise."""
    if os.path.isfile(value):
        return value
    shipped = resources.files(package)
    candidate = shipped.joinpath(value if value.endswith(".yaml") else f"{value}.yaml")
    if candidate.is_file():
        return str(candidate)
    names = sorted(p.name[:-5] for p in shipped.iterdir() if p.name.endswith(".yaml"))
    raise ValueError(f"{field}={value!r} is neither a file nor a {kind} shipped with trl-lite; expected a YAML path or "
                     f"one of {names}.")


def resolve_flag(argv: list[str], flag: str, to: str, resolve) -> list[str]:
    """argv with each `flag V` / `flag=V` replaced by `to resolve(V)` (the spaced form, which TrlParser and accelerate
    both read); a flag without a value is an error naming it."""
    out, i = [], 0
    while i < len(argv):
        name, eq, value = argv[i].partition("=")
        if name != flag:
            out.append(argv[i])
            i += 1
            continue
        if not eq:
            if i + 1 >= len(argv):
                raise ValueError(f"{flag} needs a value: a YAML path or a shipped name.")
            value = argv[i + 1]
        out += [to, resolve(value)]
        i += 1 if eq else 2
    return out


LAUNCH_HELP = """launching (as `trl <method> --accelerate_config`):
  --accelerate_config NAME|PATH
                        Run through `accelerate launch` with this config: a file, or one shipped in
                        trl_lite/accelerate_configs (single_gpu, multi_gpu, deepspeed_zero2, deepspeed_zero3,
                        deepspeed_zero3_offload).
  --num_processes N, --num_machines M, --machine_rank R, --main_process_ip IP, --main_process_port P, ...
                        Any other flag of `accelerate launch` (see `accelerate launch --help`) that is not a training
                        flag goes to accelerate, and launches through it."""


def option_strings(parser) -> set[str]:
    return {opt for action in parser._actions for opt in action.option_strings if opt.startswith("--")}


def launch_flags() -> set[str]:
    from accelerate.commands.launch import launch_command_parser

    return option_strings(launch_command_parser()) - {"--help"}


def split_argv(argv: list[str], known: set[str], launch: set[str]) -> tuple[list[str], list[str], list[str]]:
    """(training args, launch args, unknown flags): each `--flag` with the values that follow it goes to the training
    side when the training parser knows it (TRL's rule for flags both know), else to accelerate when it knows it."""
    train, accel, unknown = [], [], []
    side = train
    for arg in argv:
        if arg.startswith("--"):
            name = arg.split("=", 1)[0]
            if name in known or name == "--config":
                side = train
            elif name in launch or name == "--accelerate_config":
                side = accel
            else:
                unknown.append(name)
                side = train
        side.append(arg)
    return train, accel, unknown


def check_flags(argv: list[str], parser, launch: set[str] | None = None, prog: str = "trl-lite train") -> None:
    """Exits with one line naming an unknown flag and its closest matches among the training and launch flags."""
    known = option_strings(parser)
    launch = set() if launch is None else launch
    _, _, unknown = split_argv(argv, known, launch)
    if unknown:
        name = unknown[0]
        flags = known | launch | {"--accelerate_config"}
        flags = {f for f in flags if "-" not in f[2:] or "--" + f[2:].replace("-", "_") not in flags}
        close = difflib.get_close_matches(name, sorted(flags), n=1, cutoff=0.6)  # `--x_y`, not its `--x-y` alias
        hint = f"; did you mean {close[0]}?" if close else "; see `trl-lite train --help`."
        sys.exit(f"{prog}: error: unrecognized flag {name}{hint}")


def resolve_accelerate_config(value: str) -> str:
    """An `--accelerate_config` value as a path: a file, or the name of a config shipped in trl_lite/accelerate_configs."""
    return shipped_file("accelerate_config", value, "trl_lite.accelerate_configs", "config")


def launch_args(accel: list[str]) -> list[str]:
    """`accelerate launch` arguments from the launch side of a command line: `--accelerate_config X` becomes
    `--config_file PATH`; without an accelerator, mixed precision is off unless asked for (the shipped configs say
    bf16, which a CPU cannot run)."""
    out = resolve_flag(accel, "--accelerate_config", "--config_file", resolve_accelerate_config)
    if not has_accelerator() and not any(a.split("=", 1)[0] in ("--mixed_precision", "--mixed-precision") for a in out):
        out += ["--mixed_precision", "no"]
    return out
