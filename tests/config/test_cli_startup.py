"""`import trl_lite` and the `trl-lite` command's help import no heavy library (torch, TRL, transformers, PEFT,
datasets): the package's public names are imported on first use, and each command imports what it needs to run when it
runs. Timing is measured by `bench/cli_startup.py`, not asserted here."""

import os
import re
import subprocess
import sys

import pytest

import trl_lite

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEAVY = ("torch", "trl", "transformers", "peft", "datasets")
PUBLIC = ["ADVANTAGE_MEANS", "ADVANTAGE_STDS", "AGGREGATIONS", "LitePPOConfig", "LitePPOTrainer", "RECIPES",
          "aggregate_loss", "normalize_advantages"]
# Runs `trl-lite ARGS...` as the console script does (help exits through SystemExit), then prints the heavy modules
# that are loaded, on a last line of its own.
WRAPPER = """
import sys
from trl_lite.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exit_:
    code = exit_.code
else:
    code = 0
print()
print("HEAVY", code, sorted(m for m in {heavy!r} if m in sys.modules))
""".format(heavy=HEAVY)


def _python(*args):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": ROOT, "HF_HUB_OFFLINE": "1"})


def test_import_trl_lite_and_its_cli_loads_no_heavy_library():
    code = ("import trl_lite, trl_lite.cli; import sys; "
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    result = _python("-c", code)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("argv, shows", [
    (["--help"], "usage: trl-lite {"),
    (["recommend", "--help"], "usage: trl-lite recommend"),
    (["eval", "--help"], "usage: trl-lite eval"),
    (["ablate", "--help"], "usage: trl-lite ablate"),
    (["recommend", "--model-type", "base", "--model-size", "4B", "--max-completion-length", "8192"],
     "recipe: lite_ppo"),  # recommend runs without them too
])
def test_command_help_loads_no_heavy_library(argv, shows):
    result = _python("-c", WRAPPER, *argv)
    assert result.returncode == 0, result.stderr[-3000:]
    assert shows in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "HEAVY 0 []", result.stdout[-2000:]


def test_python_m_cli_help_loads_no_heavy_library():
    # `python -m trl_lite.cli` (what the other tests use), checked with the interpreter's own import log (which lists
    # what `import` statements load; the command's module itself comes through importlib.import_module, unlisted)
    result = _python("-X", "importtime", "-m", "trl_lite.cli", "eval", "--help")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "usage: trl-lite eval" in result.stdout
    imported = {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines()
                if line.startswith("import time:") and "|" in line}
    assert "trl_lite.data" in imported  # the log is read right: trl_lite.evaluation imports it
    assert not {name.split(".")[0] for name in imported} & set(HEAVY)


def test_the_lab_command_says_where_the_lab_went():
    # the lab is its own package (`lab/`, `trl-lite-lab`); `trl-lite lab ...` names it instead of "unknown command"
    result = _python("-m", "trl_lite.cli", "lab", "list")
    assert result.returncode == 1
    assert "`pip install -e lab` and run `trl-lite-lab list` (docs/lab.md)" in result.stderr, result.stderr[-2000:]


def test_public_names_are_the_same_objects_as_before():
    # Lazy (PEP 562): the names are in __all__ and dir() before use, and resolve to the defining modules' objects
    assert trl_lite.__all__ == PUBLIC
    assert set(PUBLIC) <= set(dir(trl_lite))
    from trl_lite.advantages import ADVANTAGE_MEANS, ADVANTAGE_STDS, normalize_advantages
    from trl_lite.aggregation import AGGREGATIONS, aggregate_loss
    from trl_lite.config import LitePPOConfig
    from trl_lite.recipes import RECIPES
    from trl_lite.trainer import LitePPOTrainer

    expected = [ADVANTAGE_MEANS, ADVANTAGE_STDS, AGGREGATIONS, LitePPOConfig, LitePPOTrainer, RECIPES, aggregate_loss,
                normalize_advantages]
    assert [getattr(trl_lite, name) for name in PUBLIC] == expected
    from trl_lite import LitePPOConfig as again

    assert again is LitePPOConfig
    with pytest.raises(AttributeError, match="module 'trl_lite' has no attribute 'no_such_name'"):
        trl_lite.no_such_name  # noqa: B018
    with pytest.raises(ImportError):
        from trl_lite import no_such_name  # noqa: F401


def test_star_import_and_submodules_still_work():
    result = _python("-c", "from trl_lite import *; import trl_lite.trainer, trl_lite.config; "
                           "print(LitePPOTrainer.__name__, LitePPOConfig.__name__, sorted(RECIPES.names())[:1])")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[:2] == ["LitePPOTrainer", "LitePPOConfig"]


def test_version_matches_pyproject():
    with open(os.path.join(ROOT, "pyproject.toml")) as f:  # no tomllib: Python 3.10 is supported
        declared = re.search(r'^version\s*=\s*"([^"]+)"', f.read(), flags=re.M).group(1)
    assert trl_lite.__version__ == declared == "0.1.0"


def test_math_eval_callback_is_still_importable_from_evaluation():
    from transformers import TrainerCallback

    from trl_lite.evaluation import MathEvalCallback

    assert issubclass(MathEvalCallback, TrainerCallback)
    import trl_lite.evaluation

    assert trl_lite.evaluation.MathEvalCallback is MathEvalCallback
