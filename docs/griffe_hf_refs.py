"""Griffe extension: Hugging Face doc-builder cross-references in docstrings -> mkdocs-autorefs links.

trl-lite's docstrings follow TRL's conventions, where [`~trl_lite.advantages.normalize_advantages`] links to an object
and shows only its last name, [`trl_lite.recipes.RECIPES`] shows the full path, and a bare [`LitePPOTrainer`] or
[`nan_std`] names an object in scope. mkdocstrings does not know that syntax, so this extension rewrites each
reference before the docstrings are parsed:

- an object of the documented package (``trl_lite``) becomes an autorefs link to its canonical path,
  e.g. ``[`normalize_advantages`][trl_lite.advantages.normalize_advantages]``;
- anything else (``trl.GRPOConfig``, ``transformers.Trainer``, ...) becomes plain code (`` `GRPOConfig` ``): the build
  is offline, so there is no inventory to link into.

It also rewrites TRL-style parameter entries (``name (`str`, *optional*, defaults to `"group"`):``) into Google style
(``name (str):`` with "Defaults to `"group"`." closing the description), which mkdocstrings renders as a table.

Names are resolved in the docstring's own scope first (the class, then its module, imports included), then in the
package's top level, then as the unique object of that name anywhere in the package.

Loaded by mkdocstrings' python handler (``options: extensions: [docs/griffe_hf_refs.py]``, a path relative to the
directory ``mkdocs build`` runs from).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

PACKAGE = "trl_lite"

# [`name`] or [`~name`], not already followed by a link target ("[...]" or "(...)").
HF_REF = re.compile(r"\[`(~?)([A-Za-z_][\w.]*)`\](?![\[(])")


def _canonical(obj: griffe.Object | griffe.Alias) -> str | None:
    """The path an object is rendered under (an import alias points to its target)."""
    if isinstance(obj, griffe.Alias):
        path = obj.target_path
        return path if path.split(".")[0] == PACKAGE else None
    return obj.path


def _walk(obj: griffe.Object):
    yield obj
    for member in obj.members.values():
        if not isinstance(member, griffe.Alias):
            yield from _walk(member)


def _lookup(scope: griffe.Object | griffe.Alias, dotted: str) -> str | None:
    """Resolves `dotted` member by member from `scope`; returns the canonical path or None."""
    obj: Any = scope
    for part in dotted.split("."):
        try:
            obj = obj.members[part] if not isinstance(obj, griffe.Alias) else obj.target.members[part]
        except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError, AttributeError):
            return None
    return _canonical(obj)


# ``name (`str`, *optional*, defaults to `"group"`):`` -- an entry of a TRL-style Parameters/Args block
HF_PARAM = re.compile(r"^(?P<indent>[ \t]+)(?P<name>\*{0,2}[A-Za-z_]\w*) \((?P<spec>[^()]*`[^()]*)\):[ \t]*$")
SECTION = re.compile(r"^[ \t]*(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Attributes):[ \t]*$")


def _plain_type(spec: str) -> tuple[str, str | None]:
    """`` `str` or `bool`, *optional*, defaults to `"x"` `` -> ("str | bool", '`"x"`')."""
    default = re.search(r"defaults to (`[^`]*`)", spec)
    kinds = spec.split(",")[0]
    kinds = " | ".join(part.strip().strip("`") for part in re.split(r"\bor\b", kinds) if part.strip())
    return kinds, default[1] if default else None


def hf_params_to_google(doc: str) -> str:
    """Rewrites TRL-style parameter headers into Google style, which mkdocstrings renders: the type in parentheses,
    and "Defaults to ..." appended to the description (the signature's default can differ, e.g. `None` resolved
    later)."""
    lines = doc.splitlines()
    out: list[str] = []
    in_section = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if SECTION.match(line):
            in_section = True
        elif line.strip() and not line[:1].isspace():
            in_section = False
        match = HF_PARAM.match(line) if in_section else None
        if not match:
            out.append(line)
            i += 1
            continue
        kind, default = _plain_type(match["spec"])
        out.append(f"{match['indent']}{match['name']} ({kind}):" if kind else f"{match['indent']}{match['name']}:")
        i += 1
        block_indent = None
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > len(match["indent"])):
            if lines[i].strip() and block_indent is None:
                block_indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            out.append(lines[i])
            i += 1
        if default:
            while out and not out[-1].strip():  # keep blank lines after the appended sentence
                i -= 1
                out.pop()
            out.append(f"{block_indent or match['indent'] + '    '}Defaults to {default}.")
    return "\n".join(out)


class HFCrossRefs(griffe.Extension):
    """Rewrites HF-style cross-references in every docstring of the package once it is loaded."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.name != PACKAGE:
            return
        objects = list(_walk(pkg))
        by_name: dict[str, set[str]] = {}
        for obj in objects:
            by_name.setdefault(obj.name, set()).add(obj.path)
        for obj in objects:
            if obj.docstring is not None:
                value = hf_params_to_google(obj.docstring.value)
                obj.docstring.value = HF_REF.sub(lambda m: self._replace(m, obj, pkg, by_name), value)

    @staticmethod
    def _resolve(name: str, obj: griffe.Object, pkg: griffe.Module, by_name: dict[str, set[str]]) -> str | None:
        if name == PACKAGE:
            return PACKAGE
        if name.startswith(PACKAGE + "."):
            return _lookup(pkg, name[len(PACKAGE) + 1 :])
        if "." in name and name.split(".")[0] not in by_name:
            return None  # trl.GRPOConfig, transformers.Trainer, ...: outside the package
        scope: griffe.Object | None = obj
        while scope is not None:
            path = _lookup(scope, name)
            if path is not None:
                return path
            scope = scope.parent
        head, _, rest = name.partition(".")
        candidates = by_name.get(head, set())
        if len(candidates) == 1:
            (path,) = candidates
            return path + ("." + rest if rest else "")
        return None

    def _replace(self, match: re.Match, obj: griffe.Object, pkg: griffe.Module, by_name: dict[str, set[str]]) -> str:
        tilde, name = match.groups()
        shown = name.rsplit(".", 1)[-1] if tilde else name
        path = self._resolve(name, obj, pkg, by_name)
        if path is None:
            return f"`{shown}`"
        return f"[`{shown}`][{path}]"
