"""The reference stack (.ci/reference.txt): the pinned packages on which the exact figures the README and the docs quote
are measured. `differences` says how the installed stack departs from it; tests/trainer/test_main_job.py checks the demo's
figures only where it does not, and .ci/upstream.py names what a newer release changed."""

from __future__ import annotations

import importlib.metadata
import os
import re

REFERENCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".ci", "reference.txt")
# The packages whose release can move a printed digit of the CPU demo (its arithmetic, sampling, data order, weights)
FIGURE_PACKAGES = ("torch", "trl", "transformers", "accelerate", "datasets", "tokenizers", "safetensors", "numpy",
                   "huggingface-hub", "peft")


def figure_env(**extra: str) -> dict[str, str]:
    """The environment for a run whose figures are compared to the committed ones: this process's, without the one
    thread per test process that tests/conftest.py sets under pytest-xdist (the figures are measured with torch's
    default threads, which then wait passively), plus `extra`."""
    env = dict(os.environ)
    if env.pop("TRL_LITE_TESTS_ONE_THREAD", None):
        env.pop("OMP_NUM_THREADS", None)
        # beside the other test processes, OpenMP's threads sleep while they wait instead of spinning (the default):
        # the same arithmetic, but in CI the demo's 200 steps took over 11 minutes spinning next to another worker
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    return {**env, **extra}


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def reference_versions(path: str = REFERENCE) -> dict[str, str]:
    """{package: version} pinned in the reference stack file."""
    versions = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if "==" in line:
                name, version = line.split("==", 1)
                versions[_key(name)] = version.strip()
    return versions


def installed_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def differences(packages=None, path: str = REFERENCE) -> list[str]:
    """`name installed (reference R)` for each package (all of the file's by default) whose installed version differs
    from the reference stack's; empty on the reference stack."""
    reference = reference_versions(path)
    names = [_key(p) for p in packages] if packages is not None else sorted(reference)
    out = []
    for name in names:
        have, want = installed_version(name), reference.get(name)
        if have != want:
            out.append(f"{name} {have or 'not installed'} (reference {want or 'not pinned'})")
    return out
