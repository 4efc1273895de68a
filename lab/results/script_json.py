"""The `--json OUT` option the result scripts in this folder share: write what a script computed, with the command
that made it, as the committed `<name>.json` beside it.

Imported only under a script's `if __name__ == "__main__":` (run as `python lab/results/<name>.py`, this folder is on
`sys.path`), so the tests that load a script by its path to call its functions never need it.
"""

from __future__ import annotations

import json
import sys


def write_json(result: dict, made_by: str, argv: list[str] | None = None, **extra) -> None:
    """Writes `{"made_by": made_by, **extra, **result}` to the path after `--json` in `argv` (`sys.argv` by default),
    indented by 1 and ending in a newline; nothing without `--json`."""
    argv = sys.argv if argv is None else argv
    if "--json" not in argv:
        return
    with open(argv[argv.index("--json") + 1], "w", encoding="utf-8") as f:
        json.dump({"made_by": made_by, **extra, **result}, f, indent=1)
        f.write("\n")
