"""The package's import graph, read from the source (every `import` statement, lazy ones inside functions included):
trl_lite imports nothing from the lab (`lab/`, the `trl_lite_lab` package beside it), and no module of trl_lite
reaches itself through its imports."""

import ast
import functools
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "trl_lite")


@functools.lru_cache(maxsize=1)
def modules() -> dict[str, str]:
    """{dotted name relative to trl_lite ('' for its `__init__`): file}."""
    out = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, PACKAGE)[:-3].replace(os.sep, ".")
                out[dotted[: -len("__init__")].rstrip(".") if dotted.endswith("__init__") else dotted] = path
    return out


def _tree(name: str) -> ast.AST:
    with open(modules()[name], encoding="utf-8") as f:
        return ast.parse(f.read())


def imports(name: str) -> set[str]:
    """The trl_lite modules that module `name` imports anywhere in its body (relative or `trl_lite.` imports)."""
    mods = modules()
    package = name.split(".") if mods[name].endswith("__init__.py") else name.split(".")[:-1]
    found = set()
    for node in ast.walk(_tree(name)):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
            target = ".".join(base + (node.module.split(".") if node.module else []))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "trl_lite":
            target = node.module[len("trl_lite."):] if node.module != "trl_lite" else ""
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("trl_lite.") and alias.name[len("trl_lite."):] in mods:
                    found.add(alias.name[len("trl_lite."):])
            continue
        else:
            continue
        if target in mods:
            found.add(target)
        found.update(f"{target}.{a.name}".lstrip(".") for a in node.names if f"{target}.{a.name}".lstrip(".") in mods)
    return found


def _reaches(name: str) -> set[str]:
    seen, todo = set(), list(imports(name))
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(imports(module))
    return seen


def test_the_reader_sees_relative_absolute_and_lazy_imports():
    # trainer.py imports .advantages at the top; evaluation.py imports .scoring; train.py imports .trainer lazily
    assert {"advantages", "aggregation", "config"} <= imports("trainer")
    assert "scoring" in imports("evaluation") and "scoring" in imports("eval_callback")
    assert "trainer" in _reaches("train")


def test_trl_lite_imports_nothing_from_the_lab():
    for name in modules():
        for node in ast.walk(_tree(name)):
            if isinstance(node, ast.Import):
                assert not any(a.name.split(".")[0] == "trl_lite_lab" for a in node.names), name
            elif isinstance(node, ast.ImportFrom):
                assert (node.module or "").split(".")[0] != "trl_lite_lab", name
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):  # importlib.import_module("...")
                assert not node.value.startswith("trl_lite_lab"), (name, node.value)
    assert not any(name == "lab" or name.startswith("lab.") for name in modules())  # no lab inside the package


def test_no_module_of_the_package_imports_itself():
    # evaluation.py and eval_callback.py used to import each other; both now take the scoring from scoring.py
    assert "evaluation" not in _reaches("eval_callback")
    cyclic = sorted(name for name in modules() if name in _reaches(name))
    assert cyclic == []
