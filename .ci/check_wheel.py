"""CI: the installed wheel, as users get it. Run from a folder outside the checkout, in a venv holding only the wheel
(and CPU torch): the package must come from site-packages, every module must import, and every file the package reads
at run time (recipe and accelerate configs, the model card template, the math worker script, the shipped policies)
must be in it and work. Exits non-zero naming what is missing."""

import importlib
import importlib.metadata
import importlib.util
import os
import pkgutil
import sys

import trl_lite

here = os.path.dirname(trl_lite.__file__)
if "site-packages" not in here:
    sys.exit(f"trl_lite was imported from {here}, not from the installed wheel")
if trl_lite.__version__ != importlib.metadata.version("trl-lite"):
    sys.exit(f"trl_lite.__version__={trl_lite.__version__!r} but the wheel is {importlib.metadata.version('trl-lite')}")

# the lab is its own package (lab/ in a clone): no code of it in the wheel, and none of its dependencies (scipy)
if os.path.exists(os.path.join(here, "lab")) or importlib.util.find_spec("trl_lite_lab") is not None:
    sys.exit("the wheel holds the lab, or installed it: the lab is its own package (lab/)")
requires = importlib.metadata.requires("trl-lite") or []
if any(r.split(";")[0].strip().lower().startswith("scipy") for r in requires):
    sys.exit(f"trl-lite requires scipy, which only the lab uses: {requires}")
if importlib.util.find_spec("scipy") is not None:
    print("note: scipy is installed here, pulled by another package than trl-lite")

modules = [m.name for m in pkgutil.walk_packages(trl_lite.__path__, "trl_lite.")]
for name in modules:
    importlib.import_module(name)
print(f"imported {len(modules)} modules: {', '.join(modules)}")

from trl_lite import metrics  # noqa: E402
from trl_lite.hub import template_path  # noqa: E402
from trl_lite.rewards import REWARDS  # noqa: E402
from trl_lite.tasks.arithmetic import embedded_policy_path  # noqa: E402
from trl_lite.launch import resolve_accelerate_config  # noqa: E402
from trl_lite.train import resolve_config  # noqa: E402

recipes = ["lite_ppo_qwen3_4b_base", "lite_ppo_qwen3_8b_base", "grpo_qwen3_4b_base", "grpo_qwen3_8b_base",
           "dapo_qwen3_4b_base", "dapo_qwen3_8b_base", "instruct_qwen3_4b", "instruct_qwen3_8b"]
configs = ["single_gpu", "multi_gpu", "deepspeed_zero2", "deepspeed_zero3", "deepspeed_zero3_offload"]
files = [resolve_config(n) for n in recipes] + [resolve_accelerate_config(n) for n in configs] + [template_path()]
files += [os.path.join(metrics.path("math_accuracy"), "math_accuracy.py"), os.path.join(here, "math_check.py")]
files += [os.path.join(embedded_policy_path(), "model.safetensors")]  # the demo's one policy
missing = [f for f in files if not os.path.isfile(f)]
if missing:
    sys.exit(f"missing from the wheel: {missing}")
# the math reward runs its checks in a worker process started from the installed trl_lite/math_check.py
scores = REWARDS["math_accuracy"](completions=["so \\boxed{\\frac{1}{2}}", "\\boxed{3}"], answer=["0.5", "4"])
if scores != [1.0, 0.0]:
    sys.exit(f"math_accuracy from the wheel scored {scores}, expected [1.0, 0.0]")
print(f"{len(files)} package files present; math_accuracy from the wheel scores {scores}")
