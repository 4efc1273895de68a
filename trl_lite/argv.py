"""Reading a command line before it is parsed: a flag's value in either spelling, and `--recipe NAME` applied as the
parser's defaults (so that explicit flags and `--config` values still override it). For `trl-lite train`."""

from __future__ import annotations

from .recipes import recipe_settings


def flag_value(argv: list[str], flag: str) -> str | None:
    """The value of `--flag V` / `--flag=V` in a command line, in either spelling (`--model_name_or_path`,
    `--model-name-or-path`, as TRL's parser accepts both), if any; the last one wins, as in argparse."""
    found, wanted = None, flag.replace("-", "_")
    for i, arg in enumerate(argv):
        name, eq, value = arg.partition("=")
        if not name.startswith("--") or name.replace("-", "_") != wanted:
            continue
        if eq:
            found = value
        elif i + 1 < len(argv):
            found = argv[i + 1]
    return found


def recipe_from_argv(argv: list[str]) -> str | None:
    """The value of `--recipe NAME` / `--recipe=NAME` in a command line, if any (the last one wins, as in argparse)."""
    return flag_value(argv, "--recipe")


def apply_recipe_defaults(parser, argv: list[str]) -> str | None:
    """Sets the recipe named by `--recipe` in `argv` as the parser's defaults, so explicit flags and `--config` YAML
    values still override it; returns the recipe name (None when there is none)."""
    name = recipe_from_argv(argv)
    if name is not None:
        parser.set_defaults(**recipe_settings(name))
    return name
