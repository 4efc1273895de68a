"""Benchmark scoring, the eval CLI end to end on the embedded policy, the `evaluate` metric and the training callback."""

import json
import os
import subprocess
import sys

import pytest

from trl_lite.evaluation import MathEvalCallback, to_markdown
from trl_lite.scoring import pass_at_k, score_benchmark
from trl_lite.tasks.arithmetic import embedded_policy_path

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
    from trl_lite.sampling import make_sampler
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


################
# An unreachable Hub: one line naming what could not be reached and the local alternative, no traceback
################
def _eval_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "trl_lite.cli", "eval", *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": ROOT, "HF_HUB_OFFLINE": "1", **(env or {})})


def test_eval_cli_offline_without_data_dir_says_which_dataset_and_data_dir(tmp_path):
    result = _eval_cli("--model", embedded_policy_path(), "--benchmarks", "math500,aime24",
                       "--output-dir", str(tmp_path / "out"))
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("trl-lite:")]
    assert len(lines) == 1, result.stderr[-3000:]
    assert lines[0].startswith("trl-lite: cannot reach the Hugging Face Hub for dataset 'HuggingFaceH4/MATH-500' "
                               "(offline: HF_HUB_OFFLINE is set); pass --data-dir DIR")
    assert "math500.jsonl, aime24.jsonl" in lines[0]  # the file names --data-dir expects
    assert not (tmp_path / "out").exists()


def test_eval_cli_offline_with_an_uncached_model_says_to_pass_a_local_path(tmp_path):
    _arith_benchmarks(tmp_path / "data")
    result = _eval_cli("--model", "trl-lite-tests/no-such-model", "--benchmarks", "math500", "--data-dir",
                       str(tmp_path / "data"), "--output-dir", str(tmp_path / "out"))
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("trl-lite: cannot reach the Hugging Face Hub for model 'trl-lite-tests/no-such-model' "
                           "(offline: HF_HUB_OFFLINE is set); pass --model a local folder"), result.stderr[-3000:]


def test_eval_cli_keeps_other_failures_as_they_are(tmp_path):
    # A local model folder that is no model is not a Hub problem: its error is not turned into the Hub line
    _arith_benchmarks(tmp_path / "data")
    (tmp_path / "empty").mkdir()
    result = _eval_cli("--model", str(tmp_path / "empty"), "--benchmarks", "math500", "--data-dir",
                       str(tmp_path / "data"), "--output-dir", str(tmp_path / "out"))
    assert result.returncode != 0 and "cannot reach the Hugging Face Hub" not in result.stderr
    assert "Traceback" in result.stderr


def _raised(make, *causes):
    """The exception `make()` raises, raised `from` each of `causes` in turn (innermost first)."""
    err = None
    for cause in causes:
        try:
            raise cause from err
        except BaseException as caught:  # noqa: BLE001
            err = caught
    try:
        raise make() from err
    except BaseException as caught:  # noqa: BLE001
        return caught


def test_hub_unreachable_on_what_the_libraries_raise_here(monkeypatch):
    from huggingface_hub.errors import LocalEntryNotFoundError, OfflineModeIsEnabled

    from trl_lite.offline import hub_unreachable

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # datasets.load_dataset("HuggingFaceH4/MATH-500"), with or without HF_HUB_OFFLINE (no network here)
    assert hub_unreachable(_raised(lambda: ConnectionError("Couldn't reach 'HuggingFaceH4/MATH-500' on the Hub "
                                                           "(OfflineModeIsEnabled)"),
                                   FileNotFoundError("Dataset HuggingFaceH4/MATH-500 is not cached in None")))
    # AutoTokenizer.from_pretrained("Qwen/Qwen3-4B"): an OSError raised from huggingface_hub's cache miss
    assert hub_unreachable(_raised(lambda: OSError("We couldn't connect to 'https://huggingface.co' to load the files"),
                                   LocalEntryNotFoundError("Cannot find the requested files in the disk cache")))
    assert hub_unreachable(OfflineModeIsEnabled("offline"))
    # online without a network: the transport error deep in the chain
    httpx = pytest.importorskip("httpx")
    assert hub_unreachable(_raised(lambda: RuntimeError("wrapped"), httpx.ConnectError("Name or service not known")))
    # not the Hub
    for err in (FileNotFoundError("no such file: data/math500.jsonl"), ValueError("bad --n"), OSError("disk full"),
                BrokenPipeError("math-verify worker"), _raised(lambda: RuntimeError("x"), KeyError("answer"))):
        assert not hub_unreachable(err), err


def test_hub_unreachable_counts_a_missing_dataset_only_offline(monkeypatch):
    from datasets.exceptions import DatasetNotFoundError

    from trl_lite.offline import hub_unreachable

    err = DatasetNotFoundError("Dataset 'HuggingFaceH4/MATH-500' doesn't exist on the Hub or cannot be accessed.")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub_unreachable(err)
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)
    assert not hub_unreachable(err)  # online, the Hub said it does not exist (or is gated): not a reachability issue


def test_hub_unreachable_survives_a_cyclic_chain():
    from trl_lite.offline import hub_unreachable

    a, b = RuntimeError("a"), ValueError("b")
    a.__context__, b.__context__ = b, a
    assert not hub_unreachable(a)
    b.__cause__ = ConnectionError("Couldn't reach 'x' on the Hub")
    assert hub_unreachable(a)
    b.__cause__ = ConnectionRefusedError("refused")  # a socket's own error, often a local one: not the Hub
    assert not hub_unreachable(a)


def test_unreachable_message_is_one_line(monkeypatch):
    from trl_lite.offline import unreachable_message

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    line = unreachable_message("dataset", "HuggingFaceH4/MATH-500", "pass --data-dir DIR\nwith math500.jsonl")
    assert line == ("trl-lite: cannot reach the Hugging Face Hub for dataset 'HuggingFaceH4/MATH-500' (offline: "
                    "HF_HUB_OFFLINE is set); pass --data-dir DIR with math500.jsonl")


def test_read_local_is_the_one_local_loader_and_reads_csv(tmp_path):
    # a CSV file, a folder of CSVs, a JSONL file: the same rows; a missing path, an empty folder and a folder that
    # mixes types are one clear error each
    from trl_lite.data import read_local

    (tmp_path / "a.csv").write_text("prompt,answer\n1+1,2\n2+2,4\n")
    folder = tmp_path / "parts"
    folder.mkdir()
    (folder / "x.csv").write_text("prompt,answer\n1+1,2\n")
    (folder / "y.csv").write_text("prompt,answer\n2+2,4\n")
    (tmp_path / "a.jsonl").write_text('{"prompt": "1+1", "answer": "2"}\n{"prompt": "2+2", "answer": "4"}\n')
    for path in (tmp_path / "a.csv", folder, tmp_path / "a.jsonl"):
        rows = read_local(str(path))
        assert sorted(zip(rows["prompt"], map(str, rows["answer"]))) == [("1+1", "2"), ("2+2", "4")], path
    with pytest.raises(ValueError, match=r"missing.csv': no such file or folder; expected a .json, .jsonl, .parquet"):
        read_local(str(tmp_path / "missing.csv"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"holds no .json, .jsonl, .parquet or .csv file"):
        read_local(str(tmp_path / "empty"))
    (folder / "z.jsonl").write_text('{"prompt": "3+3", "answer": "6"}\n')
    with pytest.raises(ValueError, match=r"mixes file types \(\['csv', 'json'\]\)"):
        read_local(str(folder))
