"""The `trl-lite` command: `trl-lite eval ...` (`trl_lite.evaluation`), `trl-lite recommend ...` (`trl_lite.recommend`),
`trl-lite ablate ...` (`trl_lite.ablate`)."""

from __future__ import annotations

import sys

COMMANDS = {"eval": "trl_lite.evaluation", "recommend": "trl_lite.recommend", "ablate": "trl_lite.ablate"}


def main(argv: list[str] | None = None) -> int:
    """Runs a subcommand; returns the exit status (0), as console scripts pass it to `sys.exit`."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        given = repr(argv[0]) if argv else "nothing"
        sys.exit(f"usage: trl-lite {{{','.join(COMMANDS)}}} ...; got {given}")
    import importlib

    importlib.import_module(COMMANDS[argv[0]]).main(argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())  # as the installed `trl-lite` script does
