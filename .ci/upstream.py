"""CI's upstream stage: what the newest releases change against the reference stack (.ci/reference.txt).

    python .ci/upstream.py changes        # the installed packages that differ from the reference; exit 0
    python .ci/upstream.py docs-changed   # exit 0 when a tool of the docs site (babel, mkdocs, ...) changed
    python .ci/upstream.py docs-only      # exit 0 when something changed and all of it is the docs site's tools
    python .ci/upstream.py demo           # the demo's table on this stack against the README's (reference) figures
    python .ci/upstream.py broke LOG      # after a failed suite: what broke (the failed tests) and what changed

`changes` prints one line per package whose installed version differs (`name new (reference old)`) and a last line
`upstream: N packages differ from the reference stack`; `demo` runs `trl-lite train` with no arguments and prints
whether its table still equals the README's; a drift is reported, not fatal (the README names the stack it quotes).
`broke` always exits 1: a newer release inside our ranges breaks the suite, which is what users installing today get.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tests import stack  # noqa: E402


def changes() -> list[str]:
    # a package of the reference stack that the test command no longer installs here is not a release that changed
    # (scipy: the reference stage installs it for the lab, `lab/`, which trl-lite does not require)
    changed, absent = [], []
    for line in stack.differences():
        (absent if " not installed " in line else changed).append(line)
    for line in absent:
        print(f"  (not installed here, so not compared: {line})")
    for line in changed:
        print(f"  {line}")
    print(f"upstream: {len(changed)} packages differ from the reference stack (.ci/reference.txt)")
    return changed


def _table(text: str) -> str:
    start = text.find("held-out accuracy on")
    return "\n".join(text[start:].strip().splitlines()[:5]) if start >= 0 else ""


def demo() -> int:
    readme = open(os.path.join(REPO, "README.md")).read()
    expected = _table(readme)
    with tempfile.TemporaryDirectory() as work:
        done = subprocess.run([sys.executable, "-m", "trl_lite.cli", "train"], cwd=work, capture_output=True,
                              text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if done.returncode != 0:
        print(done.stderr[-3000:])
        print("upstream BROKE the demo: `trl-lite train` failed on the newest releases; changed since the reference:")
        changes()
        return 1
    got = _table(done.stdout)
    if not got:
        print(done.stdout[-2000:])
        print("upstream BROKE the demo: `trl-lite train` printed no before/after table; changed since the reference:")
        changes()
        return 1
    if got == expected:
        print("upstream: the demo prints the README's figures on the newest releases too")
        return 0
    print("upstream drift (reported, not a failure): on the newest releases the demo prints\n" + got)
    print("where the README quotes, from the reference stack,\n" + expected)
    figures = [float(x) for x in re.findall(r"[+-]?\d\.\d{3}", got)]
    if len(figures) >= 6 and figures[4] < 0.25:  # 'change' greedy: the demo no longer learns what it teaches
        print("upstream BROKE the demo: greedy accuracy rose by less than 0.25 (the reference: +0.348)")
        return 1
    return 0


def broke(log: str) -> int:
    failed = [line for line in open(log).read().splitlines() if line.startswith(("FAILED", "ERROR"))]
    print(f"upstream BROKE {len(failed)} tests on the newest releases (what users installing today get):")
    for line in failed:
        print(f"  {line}")
    print("changed since the reference stack:")
    changes()
    return 1


# The docs site's tooling: a new release of these can break the docs build (tests/docs/test_docs.py, which the upstream
# stage then runs besides the rest)
DOCS_TOOLING = ("babel", "mkdocs", "mkdocs-material", "mkdocs-material-extensions", "mkdocstrings",
                "mkdocstrings-python", "mkdocs-jupyter", "mkdocs-get-deps", "mkdocs-autorefs", "pymdown-extensions",
                "markdown", "paginate", "ghp-import", "griffelib", "mergedeep")


def _changed_names() -> set[str]:
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        changed = changes()
    return {line.split()[0].lower() for line in changed}


def docs_changed() -> int:
    """0 when a package of the docs site's tooling (`DOCS_TOOLING`) changed since the reference, 1 otherwise."""
    return 0 if _changed_names() & set(DOCS_TOOLING) else 1


def docs_only() -> int:
    """0 when some package changed and every one that did is the docs site's tooling (`DOCS_TOOLING`): then the docs
    site's test is all the upstream stage runs (the product's suite imports none of them), 1 otherwise."""
    names = _changed_names()
    return 0 if names and names <= set(DOCS_TOOLING) else 1


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "changes"
    if command == "changes":
        changes()
    elif command == "docs-changed":
        sys.exit(docs_changed())
    elif command == "docs-only":
        sys.exit(docs_only())
    elif command == "demo":
        sys.exit(demo())
    elif command == "broke":
        sys.exit(broke(sys.argv[2]))
    else:
        sys.exit(f"usage: {__doc__.splitlines()[2].strip()} | demo | broke LOG")
