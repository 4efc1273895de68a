"""What a lab result was made under: SHA-256 hashes of the code that runs and judges it, per experiment.

The *engine* is every module of the package that the lab's runs, measures, gates, tests and verdicts reach through
their imports (found by reading the import statements, lazy ones included, so nothing is left out by hand): the
runner and the trainer it drives, the measures, the audit, the pilot, the statistics, the verdicts, the tasks. Not
the report's formatting (`report.py`), the command line (`cli.py`), the loader (`experiments.py`) or the design
modules. An experiment's hash is the engine's with its own design module (`trl_lite/lab/designs/<family>.py`) and the
design modules that one imports, so
redesigning one family of experiments leaves the others' runs valid, while a change to anything that decides a
verdict invalidates every run.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOTS = ("lab.design", "lab.stats", "lab.measure", "lab.runner", "lab.results", "lab.audit", "lab.pilot",
         "lab.verdicts", "lab.provenance")
NOT_ENGINE = ("lab.experiments", "lab.designs", "lab.report", "lab.cli", "lab")  # and "lab.designs.*"


@functools.lru_cache(maxsize=1)
def modules() -> dict[str, str]:
    """{dotted name relative to the package ('' for its `__init__`): file} of every module of the package."""
    out = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, PACKAGE)[:-3].replace(os.sep, ".")
                out[dotted[: -len("__init__")].rstrip(".") if dotted.endswith("__init__") else dotted] = path
    return out


def imports(name: str) -> set[str]:
    """The package's modules that module `name` imports anywhere in its body (relative or `trl_lite.` imports)."""
    mods = modules()
    path = mods[name]
    package = name.split(".") if path.endswith("__init__.py") else name.split(".")[:-1]
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
            target = ".".join(base + (node.module.split(".") if node.module else []))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "trl_lite":
            target = node.module[len("trl_lite."):] if node.module != "trl_lite" else ""
        else:
            continue
        if target in mods:
            found.add(target)
        found.update(f"{target}.{a.name}".lstrip(".") for a in node.names if f"{target}.{a.name}".lstrip(".") in mods)
    return found


def _excluded(name: str) -> bool:
    return name in NOT_ENGINE or name.startswith("lab.designs.")


def engine_modules() -> list[str]:
    """The engine's modules, sorted: everything reachable from `ROOTS` through imports, minus `NOT_ENGINE`."""
    seen, todo = set(), list(ROOTS)
    while todo:
        name = todo.pop()
        if name in seen or _excluded(name):
            continue
        seen.add(name)
        todo.extend(imports(name))
    return sorted(seen)


def _digest(names: list[str]) -> str:
    digest = hashlib.sha256()
    for name in names:
        with open(modules()[name], "rb") as f:
            digest.update(name.encode() + b"\0" + f.read() + b"\0")
    return digest.hexdigest()


def engine_sha256() -> str:
    """SHA-256 of the engine's files: recorded by the audit and the initial evaluations."""
    return _digest(engine_modules())


def design_modules(design: str) -> list[str]:
    """`design` (a dotted `lab.designs.<family>`) and every design module it imports, directly or not, sorted."""
    seen, todo = set(), [design]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(n for n in imports(name) if n.startswith("lab.designs."))
    return sorted(seen)


def experiment_sha256(experiment) -> str:
    """SHA-256 of the engine's files and `experiment`'s design modules (its own and those it imports): recorded by
    its runs and its pilot."""
    design = experiment.design[:-3].replace("/", ".")
    digest = hashlib.sha256((engine_sha256() + "\0" + _digest(design_modules(design)) + "\0" + experiment.id).encode())
    return digest.hexdigest()
