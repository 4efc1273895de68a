"""Every code block and command in README.md and docs/quickstart.md runs here, so a claim in them cannot drift.

Each block is split into commands, and each command must match one handler below; a command no handler knows fails
the test, so a new block cannot be added untested. What the handlers do:
- Python blocks run as they are, in a temporary folder, with the 4B model named in them replaced by a tiny Qwen3 built
  locally (CPU-sized: the same architecture, tokenizer and chat template).
- `trl-lite train` commands at demo scale run for real with a hundredth of their steps (at least 2) and 20 held-out
  problems, in sequence in one folder, so `--resume_from_checkpoint true` resumes the run before it.
- Commands that need a GPU or the Hub (a Qwen3 model, an accelerate launch) are parsed the way `trl-lite train` parses
  them (flags, shipped config names, values), without running.
- Installs and the test command are what `.ci/run` runs; the test checks that `.ci/run` holds them verbatim.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex

import pytest
import yaml

from trl_lite import LitePPOConfig
from trl_lite import launch as trl_launch
from trl_lite import train as train_lite

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = ["README.md", os.path.join("docs", "quickstart.md")]
# The demo's before/after table (seed 0, 200 steps), as README.md shows it and test_main_job.test_demo_figures checks
from tests.trainer.test_main_job import DEMO_TABLE  # noqa: E402


def blocks(path: str) -> list[tuple[str, str]]:
    """(language, text) of every fenced code block of a markdown file."""
    text = open(os.path.join(ROOT, path)).read()
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)]


def inline_commands(path: str) -> list[str]:
    """Inline code spans that are commands (`trl-lite ...`, `python ...`, `accelerate launch ...`, `mkdocs ...`)."""
    text = re.sub(r"^```.*?^```", "", open(os.path.join(ROOT, path)).read(), flags=re.S | re.M)
    spans = re.findall(r"`([^`\n]+)`", text)
    return [s for s in spans if re.match(r"(trl-lite|python|accelerate launch|mkdocs|pip) ", s)]


def commands(block: str) -> list[str]:
    """The commands of a bash block: continuations joined, comments dropped, `&&` chains split."""
    joined = re.sub(r"\\\n\s*", " ", block)
    out = []
    for line in joined.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        if line and not line.startswith("#"):
            out += [part.strip() for part in line.split("&&")]
    return out


# ------------------------------------------------------------------ handlers
def _ci_text() -> str:
    return open(os.path.join(ROOT, ".ci", "run")).read()


def _train_flags(argv: list[str]) -> list[str]:
    return trl_launch.split_argv(argv, trl_launch.option_strings(train_lite.make_parser()), trl_launch.launch_flags())[0]


def parse_only(argv: list[str]) -> None:
    """What `trl-lite train` does before it runs or launches: flags known, shipped names resolved, values valid. vLLM
    is parsed off, as it needs a GPU."""
    parser = train_lite.make_parser()
    launch = trl_launch.launch_flags()
    trl_launch.check_flags(argv, parser, launch)
    train, accel, _ = trl_launch.split_argv(argv, trl_launch.option_strings(parser), launch)
    if accel:
        trl_launch.launch_args(accel)
    train_lite.parse_cli([*train, "--use_vllm", "false"])


_RUNS: dict[tuple, str] = {}


def run_cli(argv: list[str], cwd) -> str:
    """`trl-lite ARGV` in this process (as the console script calls it), in folder cwd; returns what it printed."""
    from trl_lite import cli

    here, out = os.getcwd(), io.StringIO()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out):
            try:
                cli.main(argv)
            except SystemExit as exit_info:  # --help exits 0
                assert exit_info.code in (0, None), (argv, exit_info.code)
    finally:
        os.chdir(here)
    return out.getvalue()


def run_demo(argv: list[str], cwd) -> str:
    """Runs a demo-scale `trl-lite train` at a hundredth of its steps (at least 2) and 20 held-out problems."""
    argv = list(argv)
    if "--max_steps" in argv:
        i = argv.index("--max_steps")
        argv[i + 1] = str(max(int(argv[i + 1]) // 100, 2))
    else:
        argv += ["--max_steps", "2"]
    argv += ["--eval_problems", "20"]
    key = (str(cwd), *argv)
    if key not in _RUNS or "--resume_from_checkpoint" in argv:  # the same command twice on a page runs once
        _RUNS[key] = run_cli(["train", *argv], cwd)
    return _RUNS[key]


def handle(command: str, cwd, model_dir) -> str:
    """Runs or checks one command; returns the name of the handler that took it."""
    argv = shlex.split(command)
    redirect = None
    if ">" in argv:
        redirect, argv = argv[argv.index(">") + 1], argv[:argv.index(">")]
    if argv[:3] == ["python3", "-m", "venv"] or argv[:1] == ["."]:
        assert command in _ci_text(), command  # CI makes its venvs the same way
        return "ci"
    if argv[:2] == ["pip", "install"]:
        spec = argv[-1]
        # torch's CPU pin, the editable dev install and the plain install (the wheel stage) are all in .ci/run
        pyproject = open(os.path.join(ROOT, "pyproject.toml")).read()
        assert (spec == "torch==2.13.0" and "pip install torch==2.13.0" in _ci_text()) or (
            spec == ".[dev]" and 'pip install -e ".[dev]"' in _ci_text()) or (
            spec == ".[docs]" and '"trl-lite[docs]"' in pyproject and 'pip install -e ".[dev]"' in _ci_text()) or (
            spec == "." and "python -m build" in _ci_text()) or (
            spec == "lab" and "pip install -q -e lab" in _ci_text()), command  # dev holds docs; the wheel stage
        # installs .; the lab's stage installs lab
        return "ci"
    if argv[:3] == ["python", "-m", "pytest"]:
        assert "pip install -e \".[dev]\" && python -m pytest tests -q" in _ci_text()
        return "ci"
    if argv[:2] == ["trl-lite", "train"]:
        rest = argv[2:]
        if rest == ["--help"]:
            out = run_cli(argv[1:], cwd)
            assert out.startswith("usage: trl-lite train") and "--accelerate_config" in out and "--advantage_std" in out
            return "help"
        scale = any(flag.split("=")[0] in ("--accelerate_config", "--model_name_or_path", "--num_processes")
                    for flag in rest) or any(
            f"--config {name}" in command for name in ("lite_ppo_", "grpo_", "dapo_", "instruct_"))
        if scale:
            parse_only(rest)
            return "parse"
        out = run_demo(rest, cwd)
        assert "held-out accuracy on 20 arithmetic/hard problems" in out
        return "run"
    if len(argv) == 2 and argv[0] == "trl-lite":  # a command named in prose, e.g. `trl-lite recommend`: it exists
        assert run_cli([argv[1], "--help"], cwd).startswith("usage:")
        return "help"
    if argv[:2] == ["trl-lite", "recommend"]:
        out = run_cli(argv[1:], cwd)
        LitePPOConfig(output_dir=str(cwd / "rec"), **yaml.safe_load(out))  # the YAML is a valid config
        if redirect:
            (cwd / redirect).write_text(out)
        return "run"
    if argv[:2] == ["accelerate", "launch"]:
        script = next(i for i, a in enumerate(argv) if a.endswith(".py"))
        assert argv[script] == "examples/train_lite.py" and os.path.exists(os.path.join(ROOT, argv[script]))
        parse_only(argv[script + 1:])
        return "parse"
    if argv[:2] == ["mkdocs", "build"] or argv[:2] == ["mkdocs", "serve"]:
        assert "mkdocs" in open(os.path.join(ROOT, "tests", "test_docs.py")).read()  # test_docs builds the site
        return "docs"
    raise AssertionError(f"no handler runs this command; add one to tests/docs/test_readme.py: {command!r}")


def run_python(code: str, cwd, model_dir) -> None:
    # CPU-sized: the tiny Qwen3 for the 4B one, and 2 steps of 16-token completions (a random tiny model never stops
    # on its own, so TRL's default length would only measure generation speed)
    sized = code.replace('"Qwen/Qwen3-4B-Base"', repr(str(model_dir)))
    sized = sized.replace("per_device_train_batch_size=8)", "per_device_train_batch_size=8, max_completion_length=16, "
                          "max_steps=2)")
    # each substitution either found its text or the block names no model at all (a config-only block)
    assert ("Qwen/Qwen3-4B-Base" in code) == ("per_device_train_batch_size=8)" in code) == (sized != code), code
    code = sized
    here = os.getcwd()
    os.chdir(cwd)
    try:
        exec(compile(code, "<block>", "exec"), {"__name__": "__block__"})
    finally:
        os.chdir(here)


# ------------------------------------------------------------------ the tests
@pytest.mark.parametrize("path", DOCS)
def test_every_block_and_command_runs(path, tmp_path, qwen3_model_dir):
    handled = []
    for language, text in blocks(path):
        if language == "python":
            run_python(text, tmp_path, qwen3_model_dir)
            handled.append("python")
        elif language == "bash":
            handled += [handle(command, tmp_path, qwen3_model_dir) for command in commands(text)]
        elif language == "":  # printed output: the demo's table, which test_demo_figures checks
            assert text.strip() == DEMO_TABLE.strip(), text
        elif language == "bibtex":
            continue
        else:
            raise AssertionError(f"{path}: a {language!r} block has no handler")
    for command in [c for span in inline_commands(path) for c in commands(span)]:
        handled.append(handle(command, tmp_path, qwen3_model_dir))
    assert "run" in handled and "python" in handled


def test_the_readme_is_a_front_door():
    assert os.path.getsize(os.path.join(ROOT, "README.md")) <= 10_240
    readme = open(os.path.join(ROOT, "README.md")).read()
    for page in re.findall(r"\]\((docs/[^)#]+)\)", readme):  # every docs link points at a page that exists
        assert os.path.exists(os.path.join(ROOT, page)), page
    # the paper's results are the paper's: no unattributed "matches or beats"
    assert "matches or beats" not in readme
