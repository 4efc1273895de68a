"""The math reward: math-verify equivalences through the killable worker, scales, unscorable gold, timeouts, threads."""

import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from trl_lite.rewards import (
    REWARDS,
    MathAccuracyReward,
    MathChecker,
    boxed_format_reward,
    check_answer,
    default_workers,
    last_boxed,
    soft_overlong_punishment,
)


@pytest.fixture(scope="module")
def reward():
    r = MathAccuracyReward(timeout=10.0)  # one worker for the module: starting one costs a few seconds
    yield r
    r.checker.close()


CASES = [
    # (completion, gold, correct?)
    ("so \\boxed{\\frac{1}{2}}", "0.5", True),  # 1/2 = 0.5
    ("\\boxed{0.5}", "\\frac{1}{2}", True),
    ("\\boxed{\\frac{1}{3}}", "0.33", False),  # 1/3 = 0.333... != 0.33 at math-verify's 6-digit rounding
    ("\\boxed{10\\%}", "10\\%", True),
    ("\\boxed{(1, 2]}", "(1,2]", True),  # the same half-open interval
    ("\\boxed{[1, 2]}", "(1,2]", False),  # a closed interval is another set
    ("\\boxed{x = 3}", "3", True),  # the equation's right-hand side is the answer
    ("\\boxed{5\\text{ cm}}", "5", True),  # units are stripped
    ("\\boxed{\\frac{\\sqrt{2}}{2}}", "\\frac{1}{\\sqrt{2}}", True),  # nested braces; sqrt(2)/2 = 1/sqrt(2)
    ("first \\boxed{4}, finally \\boxed{5}", "5", True),  # the last box counts
    ("the answer is $7$", "7", True),  # no box: math-verify's LaTeX fallback
    ("I am not sure", "7", False),
]


@pytest.mark.parametrize("completion, gold, correct", CASES, ids=[c[0] for c in CASES])
def test_equivalences(reward, completion, gold, correct):
    assert reward([completion], [gold]) == [1.0 if correct else 0.0]


def test_reward_scales(reward):
    pm = MathAccuracyReward(reward_scale="-1,1")
    pm.checker = reward.checker  # share the running worker
    assert pm(["\\boxed{2}", "\\boxed{3}"], ["2", "2"]) == [1.0, -1.0]
    with pytest.raises(ValueError, match=r"reward_scale='0,2' is not supported; expected one of \['0,1', '-1,1'\]"):
        MathAccuracyReward(reward_scale="0,2")


def test_unparsable_gold_is_unscorable_and_counted(reward):
    logged = {}
    out = reward(["\\boxed{2}", "\\boxed{2}"], ["\\boxed{}", "2"], log_metric=lambda k, v: logged.__setitem__(k, v))
    assert out == [None, 1.0]  # None: TRL leaves it out of the rewards and the advantage statistics
    assert logged == {"math_accuracy/gold_unparsable": 0.5, "math_accuracy/timeouts": 0.0}


def test_no_fallback_means_boxed_only():
    checker = MathChecker(fallbacks=())
    try:
        assert checker.check("the answer is $7$", "7") == "wrong"
        assert checker.check("\\boxed{7}", "7") == "correct"
    finally:
        checker.close()
    with pytest.raises(ValueError, match=r"fallbacks=\('regex',\) has unknown entries \['regex'\]"):
        MathChecker(fallbacks=("regex",))


def test_pathological_input_times_out_and_is_scored_wrong():
    # (10^7)! vs (10^7 + 1)! makes sympy compute huge factorials: it ran > 15 s here with math-verify's own timeout off
    r = MathAccuracyReward(timeout=2.0)
    try:
        r(["\\boxed{1}"], ["1"])  # start the worker outside the timing
        logged = {}
        start = time.monotonic()
        out = r(["\\boxed{(10^{7}+1)!}"], ["(10^{7})!"], log_metric=lambda k, v: logged.__setitem__(k, v))
        elapsed = time.monotonic() - start
        assert out == [0.0] and logged["math_accuracy/timeouts"] == 1.0
        # Without the timeout this input runs > 15 s (above). With it the call returns at the 2 s limit plus the time to
        # kill the worker, which took 3.1 s on a loaded CI machine: bound it well under 15 s, not at a tight speed.
        assert elapsed < 2.0 + 8.0
        assert r(["\\boxed{3}"], ["3"]) == [1.0]  # a fresh worker takes over
    finally:
        r.checker.close()


def test_reward_from_a_non_main_thread(reward):
    # math-verify's own signal-based timeout would fail here; the worker process does not care
    results = {}
    thread = threading.Thread(target=lambda: results.update(out=reward(["\\boxed{12}"], ["12"])))
    thread.start()
    thread.join(timeout=60)
    assert results["out"] == [1.0]


def test_last_boxed_and_format_reward():
    assert last_boxed("a \\boxed{\\frac{1}{2}} b \\boxed{x^{2}}") == "x^{2}"
    assert last_boxed("\\fbox{3}") == "3"
    assert last_boxed("\\boxed{\\frac{1}{2}") is None  # cut off
    assert boxed_format_reward(["\\boxed{1}", "1", [{"role": "assistant", "content": "\\boxed{}"}]]) == [1.0, 0.0, 1.0]


def test_soft_overlong_punishment_defaults():
    # L_max = 8192, L_cache = 20% = 1638: no penalty up to 6554 tokens, -1 beyond 8192, linear between
    punish = soft_overlong_punishment()
    out = punish(completion_ids=[[0] * 6554, [0] * 7373, [0] * 9000])
    assert out[0] == 0.0 and out[2] == -1.0
    assert out[1] == pytest.approx((6554 - 7373) / 1638)


def test_registry_names():
    assert {"math_accuracy", "math_accuracy_pm1", "boxed_format", "exact_answer"} <= set(REWARDS.names())
    assert (REWARDS["math_accuracy_pm1"].wrong_value, REWARDS["math_accuracy_pm1"].correct_value) == (-1.0, 1.0)


def _default_reward_names() -> set[str]:
    """Every reward name the package selects by default: `reward_funcs or [...]` fallbacks and `reward_funcs` field
    defaults in its modules, and `reward_funcs:` in its shipped YAML configs."""
    names: set[str] = set()
    package = os.path.join(ROOT, "trl_lite")
    for folder, _, files in os.walk(package):
        for file in files:
            text = open(os.path.join(folder, file), encoding="utf-8").read() if file.endswith((".py", ".yaml")) else ""
            for fallback in re.findall(r"reward_funcs\s+or\s+\[([^\]]*)\]", text):
                names.update(re.findall(r"[\"']([^\"']+)[\"']", fallback))
            for default in re.findall(r"reward_funcs\s*:[^=\n]*=\s*field\(\s*default\s*=\s*[\"']([^\"']+)", text):
                names.update(default.split(","))
            for listed in re.findall(r"^reward_funcs\s*:\s*([\w,\- ]+)$", text, flags=re.M):
                names.update(listed.split(","))
    return {name.strip() for name in names if name.strip()}


def test_default_reward_names_are_registered_by_the_rewards_module_alone():
    # The registry's entries must not depend on what else was imported first: a fresh interpreter that imports only
    # trl_lite.rewards knows every name the package's defaults use (exact_answer used to be registered by
    # trl_lite.tasks.arithmetic, so REWARDS["exact_answer"] failed unless that module happened to be imported).
    names = _default_reward_names()
    assert {"exact_answer", "math_accuracy"} <= names, names  # the scan finds the defaults it is meant to check
    code = ("import sys, json; from trl_lite.rewards import REWARDS; names = json.loads(sys.argv[1]); "
            "[REWARDS[name] for name in names]; print(REWARDS['exact_answer'].__name__, "
            "'trl_lite.tasks.arithmetic' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code, json.dumps(sorted(names))], capture_output=True, text=True,
                            timeout=300, env={**os.environ, "PYTHONPATH": ROOT, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["exact_answer_reward", "False"]  # the logged name (rewards/<name>/mean) is kept


def test_exact_answer_reward_is_the_registered_one():
    from trl_lite.tasks.arithmetic import exact_answer_reward

    assert REWARDS["exact_answer"] is exact_answer_reward
    completions = ["so \\boxed{12}", "\\boxed{13}", "12", [{"role": "assistant", "content": "\\boxed{12}"}]]
    assert exact_answer_reward(completions, ["12", "12", "12", " 12 "]) == [1.0, 0.0, 0.0, 1.0]


def test_reward_inside_training(tmp_path, reward):
    # TRL calls it like any reward function, passes log_metric, and logs its name
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trl_lite import LitePPOConfig, LitePPOTrainer
    from trl_lite.tasks.arithmetic import arithmetic_dataset, embedded_policy_path

    path = embedded_policy_path()
    trainer = LitePPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(path), processing_class=AutoTokenizer.from_pretrained(path),
        reward_funcs=reward, train_dataset=arithmetic_dataset("hard", num_per_level=16),
        args=LitePPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=16, num_generations=8,
                           max_completion_length=14, max_steps=1, report_to="none", use_cpu=True, bf16=False,
                           save_strategy="no", logging_steps=1),
    )
    trainer.train()
    log = trainer.state.log_history[0]
    assert 0.0 < log["rewards/math_accuracy/mean"] <= 1.0  # the policy gets some of these sums right
    assert log["math_accuracy/timeouts"] == 0.0 and log["math_accuracy/gold_unparsable"] == 0.0


# ------------------------------------------------------------------ the worker pool, wherever Python runs
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# A user's script in TRL's quick-start style: no `if __name__ == "__main__":` guard. The marker shows how often the
# top-level code ran: once, or the worker imported the user's __main__ again.
UNGUARDED = """
import os
print("TOP-LEVEL RAN in", os.getpid(), flush=True)
from trl_lite.rewards import math_accuracy_reward
print("REWARDS", math_accuracy_reward(["so \\\\boxed{2}", "\\\\boxed{3}", "then $\\\\frac{1}{2}$"], ["2", "2", "0.5"]))
"""


def _python(args, stdin=None, **kwargs):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": ROOT}
    return subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=300, env=env, **kwargs)


@pytest.mark.parametrize("how", ["script", "stdin"])
def test_unguarded_script_and_stdin(tmp_path, how):
    script = tmp_path / "train.py"
    script.write_text(UNGUARDED)
    if how == "script":
        result = _python([sys.executable, str(script)], cwd=tmp_path)
    else:  # code piped to `python -`
        result = _python([sys.executable, "-"], stdin=UNGUARDED, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("TOP-LEVEL RAN") == 1
    assert "REWARDS [1.0, 0.0, 1.0]" in result.stdout


def test_user_modules_do_not_shadow_the_worker_imports(tmp_path):
    # a module in the user's folder named like one math-verify's stack imports must not be picked up by the worker
    (tmp_path / "sympy.py").write_text("raise SystemExit('the user sympy was imported')\n")
    script = tmp_path / "run.py"
    script.write_text("import sys; sys.path.remove(sys.path[0])\n" + UNGUARDED)  # the user's own process avoids it
    result = _python([sys.executable, str(script)], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "REWARDS [1.0, 0.0, 1.0]" in result.stdout


@pytest.mark.slow
def test_each_torchrun_process_checks_with_its_own_workers(tmp_path):
    script = tmp_path / "dist.py"
    script.write_text(UNGUARDED + "from trl_lite.rewards import default_workers\nprint('WORKERS', default_workers())\n")
    result = _python([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", str(script)],
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("TOP-LEVEL RAN") == 2  # once per process
    assert result.stdout.count("REWARDS [1.0, 0.0, 1.0]") == 2
    cpus = len(os.sched_getaffinity(0))
    assert result.stdout.count(f"WORKERS {max(1, min(4, cpus // 2))}") == 2  # the node's CPUs shared by 2 processes


def test_default_workers(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)))
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    assert default_workers() == 4  # capped
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "8")
    assert default_workers() == 2  # 16 CPUs / 8 processes
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert default_workers() == 1


def test_batch_in_parallel_is_exact_and_a_timeout_costs_one_limit():
    # Outcomes equal the in-process check, in order; one pathological check times out while the other worker goes on
    pairs = [(completion, gold) for completion, gold, _ in CASES]
    pairs.insert(3, ("\\boxed{(10^{7}+1)!}", "(10^{7})!"))
    checker = MathChecker(timeout=2.0, workers=2)
    try:
        checker.check_many(pairs[:2])  # start both workers outside the timing
        start = time.monotonic()
        outcomes = checker.check_many(pairs)
        elapsed = time.monotonic() - start
        expected = [check_answer(c, g) for c, g in pairs[:3] + pairs[4:]]
        assert outcomes == expected[:3] + ["timeout"] + expected[3:]
        assert elapsed < 2.0 + 3.0  # the limit, a fresh worker's start, and the rest on the other worker
        assert len(checker._pool) == 2 and all(w.process.poll() is None for w in checker._pool)
    finally:
        checker.close()
    assert checker._pool == []


def test_bad_checker_settings_are_refused():
    with pytest.raises(ValueError, match="workers=0 is not supported"):
        MathChecker(workers=0)
    with pytest.raises(ValueError, match="timeout=nan is not supported"):
        MathChecker(timeout=float("nan"))
