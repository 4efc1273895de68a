"""What a lab result was made under: the lab's own code, hashed; trl-lite's commit and the versions of the libraries
beneath it, recorded; and what trl-lite computes for each arm, fingerprinted (`trl_lite_lab.fingerprint`).

- **The lab's engine** is every module of this package that the lab's runs, measures, gates, tests, carried verdicts
  and verdicts reach through their imports (found by reading the import statements, lazy ones included, so nothing is
  left out by hand): the runner, the measures, the audit, the pilot, the statistics, the carry rules, the verdicts,
  the fingerprint, SUM-k's measures. Not the report's formatting (`report.py`), the command line (`cli.py`), the
  loader (`experiments.py`) or the design modules. Its SHA-256 (`engine_sha256`) is recorded by every result; an
  experiment's (`experiment_sha256`) adds its own design module and those it imports, so redesigning one family of
  experiments leaves the others' runs valid.
- **trl-lite** is not hashed: its source may change freely (a docstring, a refactor, a new feature) as long as what
  the lab's runs compute does not. Every result records `product_stamp()` (trl-lite's commit, whether the tree was
  dirty, the versions of torch, TRL, transformers and accelerate) to say what it was made with, and the fingerprints
  of what it used; a result whose fingerprint differs from today's is refused, naming the arm and what changed.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import subprocess

PACKAGE = os.path.dirname(os.path.abspath(__file__))
ROOTS = ("design", "stats", "measure", "runner", "results", "audit", "pilot", "verdicts", "carry", "provenance",
         "fingerprint")
NOT_ENGINE = ("experiments", "designs", "report", "cli", "")  # and "designs.*"
VERSIONED = ("trl-lite", "torch", "trl", "transformers", "accelerate")


@functools.lru_cache(maxsize=1)
def modules() -> dict[str, str]:
    """{dotted name relative to this package ('' for its `__init__`): file} of every module of the lab."""
    out = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, PACKAGE)[:-3].replace(os.sep, ".")
                out[dotted[: -len("__init__")].rstrip(".") if dotted.endswith("__init__") else dotted] = path
    return out


def imports(name: str) -> set[str]:
    """The lab's modules that module `name` imports anywhere in its body (relative or `trl_lite_lab.` imports)."""
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
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "trl_lite_lab":
            target = node.module[len("trl_lite_lab."):] if node.module != "trl_lite_lab" else ""
        else:
            continue
        if target in mods:
            found.add(target)
        found.update(f"{target}.{a.name}".lstrip(".") for a in node.names if f"{target}.{a.name}".lstrip(".") in mods)
    return found


def _excluded(name: str) -> bool:
    return name in NOT_ENGINE or name.startswith("designs.")


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
    """SHA-256 of the lab engine's files: recorded by the audit, the initial evaluations and the summary."""
    return _digest(engine_modules())


def design_modules(design: str) -> list[str]:
    """`design` (a dotted `designs.<family>`) and every design module it imports, directly or not, sorted."""
    seen, todo = set(), [design]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(n for n in imports(name) if n.startswith("designs."))
    return sorted(seen)


def experiment_sha256(experiment) -> str:
    """SHA-256 of the lab engine's files and `experiment`'s design modules (its own and those it imports): recorded by
    its runs and its pilot."""
    design = experiment.design[:-3].replace("/", ".")
    digest = hashlib.sha256((engine_sha256() + "\0" + _digest(design_modules(design)) + "\0" + experiment.id).encode())
    return digest.hexdigest()


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=PACKAGE, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


@functools.lru_cache(maxsize=1)
def product_stamp() -> dict:
    """What a result was made with: `commit` (the clone's HEAD, None outside a git checkout), `dirty` (uncommitted
    changes to tracked files under `trl_lite/` or `lab/`), and `versions` of trl-lite, torch, TRL, transformers and
    accelerate. Recorded, never compared: the fingerprints decide whether a result still holds."""
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for name in VERSIONED:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    commit, top = _git("rev-parse", "HEAD"), _git("rev-parse", "--show-toplevel")
    status = None
    if top:  # pathspecs relative to the clone's root
        status = _git("-C", top, "status", "--porcelain", "--untracked-files=no", "--", "trl_lite", "lab")
    return {"commit": commit, "dirty": bool(status) if commit else None, "versions": versions}
