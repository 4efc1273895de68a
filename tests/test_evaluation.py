"""Benchmark scoring, the eval CLI end to end on the embedded policy, the `evaluate` metric and the training callback."""

import json
import os
import subprocess
import sys

import pytest

from trl_lite.evaluation import MathEvalCallback, pass_at_k, score_benchmark, to_markdown
from trl_lite.tasks.arithmetic import embedded_policy_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_pass_at_k():
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)  # 1 - C(3,2)/C(4,2) = 1 - 3/6
    assert pass_at_k(4, 0, 2) == 0.0 and pass_at_k(4, 3, 2) == 1.0  # n - c < k: every pair has a correct one
    assert pass_at_k(8, 2, 1) == pytest.approx(0.25)  # pass@1 = c / n
    with pytest.raises(ValueError, match="pass@5 needs at least 5 samples per problem, got n=4"):
        pass_at_k(4, 1, 5)


def _check(completion, gold):
    return "gold_unparsable" if gold == "?" else ("correct" if completion == gold else "wrong")


def test_score_benchmark():
    completions = [["1", "0"], ["2", "2"], ["3", "3"]]
    result = score_benchmark(completions, ["1", "2", "?"], _check, pass_k=2)
    # problem 1: 1 of 2 correct, problem 2: 2 of 2, problem 3 skipped (unparsable gold): accuracy 3/4
    assert result == {"accuracy": 0.75, "problems": 2, "samples_per_problem": 2, "skipped_unparsable_gold": 1,
                      "pass@2": 1.0}


def test_card_results():
    from trl_lite.evaluation import card_results

    results = {"benchmarks": {"math500": {"accuracy": 0.5, "problems": 10, "pass@2": 0.75}}, "average": 0.5}
    assert card_results(results) == {"math500/accuracy": 0.5, "math500/pass@2": 0.75, "average/accuracy": 0.5}


def test_markdown_table():
    results = {"benchmarks": {"math500": {"accuracy": 0.5, "problems": 10, "pass@2": 0.75},
                              "aime24": {"accuracy": 0.25, "problems": 4, "pass@2": 0.5}},
               "average": 0.375}
    assert to_markdown(results).splitlines() == [
        "| benchmark | accuracy | pass@2 | problems |",
        "|---|---|---|---|",
        "| math500 | 0.5000 | 0.7500 | 10 |",
        "| aime24 | 0.2500 | 0.5000 | 4 |",
        "| **average** | **0.3750** | | |",
    ]


def _arith_benchmarks(folder):
    # arithmetic problems in MATH-500's and AIME 2024's columns, so the embedded policy can answer them
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "math500.jsonl"), "w") as f:
        for a, b in [(123, 45), (456, 78), (789, 12), (234, 56)]:
            f.write(json.dumps({"problem": f"{a}+{b}", "solution": "", "answer": str(a + b), "subject": "x",
                                "level": 1, "unique_id": "u"}) + "\n")
    with open(os.path.join(folder, "aime24.jsonl"), "w") as f:
        for a, b in [(11, 22), (35, 47)]:
            f.write(json.dumps({"id": 1, "problem": f"{a}+{b}", "solution": "", "answer": str(a + b), "url": "",
                                "year": "2024"}) + "\n")


def test_eval_cli_end_to_end(tmp_path):
    _arith_benchmarks(tmp_path / "data")
    cmd = [sys.executable, "-m", "trl_lite.cli", "eval", "--model", embedded_policy_path(), "--benchmarks",
           "math500,aime24", "--data-dir", str(tmp_path / "data"), "--n", "4", "--pass-k", "2",
           "--temperature", "0.5", "--max-new-tokens", "14", "--output-dir", str(tmp_path / "out")]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": ROOT, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "math500: accuracy" in result.stderr and "generating with transformers" in result.stderr  # progress
    results = json.load(open(tmp_path / "out" / "results.json"))
    m, a = results["benchmarks"]["math500"], results["benchmarks"]["aime24"]
    assert (m["problems"], m["samples_per_problem"], a["problems"]) == (4, 4, 2)
    assert 0.0 < m["accuracy"] <= 1.0 and m["pass@2"] >= m["accuracy"]  # the policy adds these well
    assert results["average"] == pytest.approx((m["accuracy"] + a["accuracy"]) / 2)
    table = open(tmp_path / "out" / "results.md").read()
    assert "| math500 |" in table and "| **average** |" in table
    assert result.stdout.strip() == table.strip()  # the table, and nothing else, on stdout


def test_eval_cli_rejects_unknown_benchmarks(tmp_path):
    result = subprocess.run([sys.executable, "-m", "trl_lite.cli", "eval", "--model", "x", "--benchmarks", "gsm8k"],
                            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})
    assert result.returncode == 2 and "--benchmarks 'gsm8k' names ['gsm8k']; accepted: ['math500'" in result.stderr


def test_evaluate_metric_module():
    import evaluate

    import trl_lite.metrics

    metric = evaluate.load(trl_lite.metrics.path("math_accuracy"))
    out = metric.compute(predictions=["so \\boxed{\\frac{1}{2}}", "\\boxed{3}", "\\boxed{1}"],
                         references=["0.5", "4", "\\boxed{}"])
    # 1/2 = 0.5 correct, 3 != 4 wrong, the third reference cannot be parsed: accuracy 1/2 over 2 scored
    assert out == {"accuracy": 0.5, "scored": 2, "unparsable_references": 1, "timeouts": 0}


def test_callback_logs_benchmarks_during_training(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trl_lite import LitePPOConfig, LitePPOTrainer
    from trl_lite.data import load_source
    from trl_lite.tasks.arithmetic import arithmetic_dataset, exact_answer_reward

    _arith_benchmarks(tmp_path / "data")
    path = embedded_policy_path()
    trainer = LitePPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(path), processing_class=AutoTokenizer.from_pretrained(path),
        reward_funcs=exact_answer_reward, train_dataset=arithmetic_dataset("hard", num_per_level=32),
        args=LitePPOConfig(output_dir=str(tmp_path / "run"), per_device_train_batch_size=16, num_generations=8,
                           max_completion_length=14, max_steps=2, report_to="none", use_cpu=True, bf16=False,
                           save_strategy="no", logging_steps=1),
    )
    benchmarks = {"math500": load_source("math500", path=str(tmp_path / "data" / "math500.jsonl"))}
    trainer.add_callback(MathEvalCallback(trainer, benchmarks, eval_steps=1, n=2, max_new_tokens=14,
                                          check=_check_boxed))
    trainer.train()
    logged = [log for log in trainer.state.log_history if "math_eval/math500" in log]
    assert [log["step"] for log in logged] == [1, 2]
    assert all(0.0 <= log["math_eval/math500"] <= 1.0 for log in logged)
    trainer.save_model()
    assert "| math_eval/math500 |" in open(tmp_path / "run" / "README.md").read()


def _check_boxed(completion, gold):
    from trl_lite.rewards import last_boxed

    return "correct" if last_boxed(completion) == gold else "wrong"


def test_make_sampler_falls_back_to_transformers_on_cpu(capsys):
    from trl_lite.evaluation import make_sampler
    from trl_lite.tasks.arithmetic import arithmetic_dataset

    sample = make_sampler(embedded_policy_path(), max_new_tokens=14, temperature=1.0)
    assert "generating with transformers" in capsys.readouterr().err
    prompts = list(arithmetic_dataset("hard", split="test", num_per_level=2)["prompt"])
    out = sample(prompts, 3)
    assert [len(group) for group in out] == [3, 3] and all("\\boxed{" in c for group in out for c in group)


@pytest.mark.parametrize("flag, value, accepted", [
    ("--temperature", "nan", "expected a float >= 0"),
    ("--top-p", "inf", "expected a float in (0, 1]"),
    ("--timeout", "nan", "expected seconds > 0"),
    ("--n", "0", "expected an int >= 1"),
])
def test_eval_cli_refuses_bad_numbers_by_flag(flag, value, accepted, capsys):
    from trl_lite import evaluation

    with pytest.raises(SystemExit):
        evaluation.main(["--model", "unused", flag, value])
    err = capsys.readouterr().err
    assert f"{flag} " in err and "is not supported" in err and accepted in err
