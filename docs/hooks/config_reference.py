"""MkDocs hook: the configuration reference, generated from `LitePPOConfig` itself.

The page `configuration.md` holds the marker `<!-- config-reference -->`; this hook replaces it with one entry per
field documented in the `Parameters:` block of `trl_lite.config.LitePPOConfig`'s docstring: its type and default
(from `dataclasses.fields`), the docstring's description, and the command-line help (the field's `metadata["help"]`,
which `TrlParser` shows for `--help`). The marker `<!-- config-inherited -->` becomes the list of the fields inherited
unchanged from TRL's `GRPOConfig`.

A field documented in the docstring that is not a field of the dataclass is an error, and a field that
`LitePPOConfig` adds to `GRPOConfig` without documenting it is a warning (an error under `mkdocs build --strict`), so
the reference cannot drift from the code. `tests/docs/test_docs.py` imports this file to check the same.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import logging
import re
from typing import Any

log = logging.getLogger("mkdocs.hooks.config_reference")

MARKER = "<!-- config-reference -->"
INHERITED_MARKER = "<!-- config-inherited -->"
PACKAGE = "trl_lite"

# ``name (`type`, *optional*, defaults to `value`):`` at the first indentation level of the Parameters block
_ENTRY = re.compile(r"^(?P<indent>\s*)(?P<name>[A-Za-z_]\w*) \((?P<spec>.*)\):\s*$")
_DEFAULT = re.compile(r"defaults to (`[^`]*`)")
_HF_REF = re.compile(r"\[`(~?)([A-Za-z_][\w.]*)`\](?![\[(])")


def config_class():
    from trl_lite.config import LitePPOConfig

    return LitePPOConfig


def parse_parameters(doc: str) -> dict[str, dict[str, str]]:
    """The entries of a TRL-style `Parameters:` block: name -> {"spec", "default", "description"}."""
    lines = inspect.cleandoc(doc).splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "Parameters:")
    except StopIteration:
        return {}
    entries: dict[str, dict[str, str]] = {}
    entry_indent = None
    current = None
    for line in lines[start + 1 :]:
        if not line.strip():
            if current is not None:
                entries[current]["description"] += "\n"
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0:  # the next section, or the end of the block
            break
        match = _ENTRY.match(line)
        if match and (entry_indent is None or indent == entry_indent):
            entry_indent = indent
            current = match["name"]
            default = _DEFAULT.search(match["spec"])
            entries[current] = {"spec": match["spec"], "default": default[1] if default else "", "description": ""}
        elif current is not None:
            entries[current]["description"] += line.strip() + " "
    for entry in entries.values():
        entry["description"] = " ".join(entry["description"].split())
    return entries


def documented_fields() -> dict[str, dict[str, str]]:
    return parse_parameters(config_class().__doc__ or "")


def new_fields() -> list[str]:
    """The fields `LitePPOConfig` adds to TRL's `GRPOConfig`."""
    from trl import GRPOConfig

    trl_names = {f.name for f in dataclasses.fields(GRPOConfig)}
    return [f.name for f in dataclasses.fields(config_class()) if f.name not in trl_names]


def _type_name(cls, field: dataclasses.Field) -> str:
    """The annotation as written in the source (`field.type` can be rewritten in place by `HfArgumentParser`)."""
    for klass in cls.__mro__:
        annotation = klass.__dict__.get("__annotations__", {}).get(field.name)
        if annotation is not None:
            break
    else:
        annotation = field.type
    return annotation if isinstance(annotation, str) else getattr(annotation, "__name__", repr(annotation))


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return field.default_factory()  # type: ignore[misc]
    return dataclasses.MISSING


def _code(text: str) -> str:
    """Inline code (Python-Markdown's tables keep a `|` inside backticks in its cell)."""
    return "`" + text + "`"


def _canonical(name: str) -> str | None:
    """The rendered path of a trl_lite object named as in the docstrings, or None outside the package."""
    if name == PACKAGE or name.startswith(PACKAGE + "."):
        candidates = [name]
    elif "." in name and not name.split(".")[0][:1].isupper():
        return None  # trl.GRPOConfig, transformers.Trainer, ...
    else:
        candidates = [f"{PACKAGE}.config.{name}", f"{PACKAGE}.{name}"]
    for dotted in candidates:
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):  # the longest importable module, then attributes
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                for attr in parts[cut:]:
                    obj = getattr(obj, attr)
            except AttributeError:
                break
            if inspect.ismodule(obj):
                return obj.__name__
            if inspect.isclass(obj) or inspect.isroutine(obj):
                module, qualname = obj.__module__, obj.__qualname__
                return f"{module}.{qualname}" if module.split(".")[0] == PACKAGE else None
            return dotted  # a module-level instance such as RECIPES: named where it is defined
    return None


def hf_refs_to_autorefs(text: str) -> str:
    """[`~trl_lite.x.y`] -> [`y`][trl_lite.x.y]; names outside trl_lite become plain code (no offline inventory)."""

    def replace(match: re.Match) -> str:
        tilde, name = match.groups()
        shown = name.rsplit(".", 1)[-1] if tilde else name
        path = _canonical(name)
        return f"[`{shown}`][{path}]" if path else f"`{shown}`"

    return _HF_REF.sub(replace, text)


def _anchor(name: str) -> str:
    return "field-" + name.replace("_", "-")


def render_reference() -> str:
    cls = config_class()
    fields = {f.name: f for f in dataclasses.fields(cls)}
    documented = documented_fields()
    unknown = [name for name in documented if name not in fields]
    if unknown:
        raise ValueError(f"LitePPOConfig's docstring documents {unknown}, which are not fields of LitePPOConfig.")
    undocumented = [name for name in new_fields() if name not in documented]
    if undocumented:
        log.warning("LitePPOConfig fields missing from its docstring's Parameters block: %s", undocumented)

    out = ["| field | type | default |", "|---|---|---|"]
    for name in documented:
        out.append(f"| [`{name}`](#{_anchor(name)}) | {_code(_type_name(cls, fields[name]))} | {_default_cell(name, fields[name], documented[name])} |")
    out.append("")
    for name, entry in documented.items():
        field = fields[name]
        flag = "--" + name
        help_text = field.metadata.get("help", "")
        choices = field.metadata.get("choices")
        origin = "new in trl-lite" if name in new_fields() else "TRL `GRPOConfig` field, documented here for what trl-lite changes"
        out += [
            f"### `{name}` {{ #{_anchor(name)} }}",
            "",
            f"- **type**: {_code(_type_name(cls, field))}",
            f"- **default**: {_default_cell(name, field, entry)}",
            f"- **command line**: `{flag}` ({origin})",
        ]
        if choices:
            out.append("- **choices**: " + ", ".join(_code(str(c)) for c in choices))
        out += ["", hf_refs_to_autorefs(entry["description"]), ""]
        if help_text:
            out += [f"**`--help`**: {hf_refs_to_autorefs(help_text)}", ""]
    return "\n".join(out)


def _default_cell(name: str, field: dataclasses.Field, entry: dict[str, str]) -> str:
    default = _default(field)
    shown = "required" if default is dataclasses.MISSING else _code(repr(default))
    documented = entry["default"]
    if documented and not _same(documented.strip("`"), default):
        # e.g. advantage_std: the field default is None so that TRL's scale_rewards can be translated first
        return f"{_code(documented.strip('`'))} (field default {shown}, resolved in `__post_init__`)"
    return shown


def _same(documented: str, default: Any) -> bool:
    """Whether the docstring's "defaults to" value is the field's default (`"group"` vs 'group', `1e-4` vs 0.0001)."""
    try:
        return ast.literal_eval(documented) == default
    except (ValueError, SyntaxError):
        return documented == str(default)


def render_inherited() -> str:
    from transformers import TrainingArguments
    from trl import GRPOConfig

    documented = documented_fields()
    hf_names = {f.name for f in dataclasses.fields(TrainingArguments)}
    grpo_only = [f.name for f in dataclasses.fields(GRPOConfig) if f.name not in hf_names and f.name not in documented]
    names = ", ".join(f"`{n}`" for n in sorted(grpo_only))
    return (
        f"**TRL `GRPOConfig` fields kept as they are** ({len(grpo_only)}): {names}.\n\n"
        f"**transformers `TrainingArguments` fields** ({len(hf_names)}, inherited through `GRPOConfig`): "
        "`output_dir`, `learning_rate`, `per_device_train_batch_size`, `gradient_accumulation_steps`, "
        "`num_train_epochs`, `max_steps`, `logging_steps`, `save_steps`, `report_to`, `push_to_hub`, ... "
        "See TRL's `GRPOConfig` reference (https://huggingface.co/docs/trl/grpo_trainer) and transformers' "
        "`TrainingArguments` reference (https://huggingface.co/docs/transformers/main_classes/trainer) for their meaning."
    )


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, render_reference())
    if INHERITED_MARKER in markdown:
        markdown = markdown.replace(INHERITED_MARKER, render_inherited())
    return markdown
