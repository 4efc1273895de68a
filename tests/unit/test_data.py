"""Loaders on hand-written fixtures that mirror each Hub dataset's columns, and the difficulty split."""

import os

import pytest
from datasets import Dataset, load_from_disk

from trl_lite.data import (
    BENCHMARKS,
    SOURCES,
    SYSTEM_PROMPT,
    bucket,
    load_source,
    split_by_difficulty,
)
from trl_lite.sampling import transformers_sampler

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")

EXPECTED_FIRST = {  # (question, answer, difficulty) of each fixture's first row
    "simplerl_zoo": ("What is $1+1$?", "2", ""),
    "deepmath": ("Evaluate $\\lim_{x\\to 0} \\frac{\\sin x}{x}$.", "1", "4.5"),
    "math500": ("Compute $\\dbinom{5}{2}$.", "10", "2"),
    "aime24": ("Find the remainder when $2^{10}$ is divided by 1000.", "24", ""),
    "aime25": ("Find $1+2+\\cdots+10$.", "55", ""),
    "amc23": ("What is $3 \\times 4$?", "12.0", ""),
    "olympiadbench": ("Find all real $x$ with $x^2 = 9$.", "$3$, $-3$", ""),  # a list of answers, joined
    "minerva": ("A star has parallax 0.1 arcsec. Its distance in parsecs?", "10", ""),
}


@pytest.mark.parametrize("name", sorted(EXPECTED_FIRST))
def test_loader_maps_to_the_schema(name):
    ds = load_source(name, path=os.path.join(FIXTURES, f"{name}.jsonl"))
    assert ds.column_names == ["prompt", "answer", "source", "difficulty"]
    row = ds[0]
    question, answer, difficulty = EXPECTED_FIRST[name]
    assert row["prompt"] == [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}]
    assert (row["answer"], row["source"], row["difficulty"]) == (answer, name, difficulty)


def test_every_source_and_benchmark_has_a_fixture():
    assert set(SOURCES.names()) == set(EXPECTED_FIRST)
    assert set(BENCHMARKS) <= set(EXPECTED_FIRST)


def test_single_answer_list_is_unwrapped():
    ds = load_source("olympiadbench", path=os.path.join(FIXTURES, "olympiadbench.jsonl"))
    assert ds[1]["answer"] == "$32$"


def test_missing_columns_name_the_dataset_and_what_was_found(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "1+1", "label": "2"}\n')
    with pytest.raises(ValueError, match=r"dataset 'math500' .* needs a question column among \['problem'\] and an "
                                         r"answer column among \['answer'\]; found columns \['text', 'label'\]"):
        load_source("math500", path=str(bad))
    with pytest.raises(ValueError, match=r"Unknown source 'gsm8k'; registered: \["):
        load_source("gsm8k", path=str(bad))


def test_folder_of_parquet(tmp_path):
    Dataset.from_dict({"problem": ["2+2?"], "answer": ["4"]}).to_parquet(str(tmp_path / "part-0.parquet"))
    assert load_source("aime24", path=str(tmp_path))[0]["answer"] == "4"


@pytest.mark.parametrize("count, level", [(0, "hard"), (1, "hard"), (2, "medium"), (5, "medium"), (6, "easy"), (8, "easy")])
def test_default_buckets(count, level):
    assert bucket(count) == level  # Hard 0-1, Medium 2-5, Easy 6-8 correct out of 8


def _fake_sample(prompts, k):
    # prompt i gets i correct answers out of k (capped), so the counts are known: 0, 1, 2, ...
    return [["right"] * min(i, k) + ["wrong"] * (k - min(i, k)) for i in range(len(prompts))]


def _fake_check(completion, gold):
    if gold == "unparsable":
        return "gold_unparsable"
    return "correct" if completion == "right" else "wrong"


def test_split_counts_buckets_drops_unparsable_and_saves(tmp_path):
    rows = [{"prompt": [{"role": "user", "content": f"q{i}"}], "answer": "x", "source": "s", "difficulty": ""}
            for i in range(9)]
    rows[3]["answer"] = "unparsable"
    ds = Dataset.from_list(rows)
    out = split_by_difficulty(ds, _fake_sample, _fake_check, k=8, save_to=str(tmp_path / "split"))
    assert out["num_correct"] == [0, 1, 2, 4, 5, 6, 7, 8]  # row 3 dropped
    assert out["difficulty"] == ["hard", "hard", "medium", "medium", "medium", "easy", "easy", "easy"]
    assert load_from_disk(str(tmp_path / "split"))["num_correct"] == out["num_correct"]  # reproducible from disk
    custom = split_by_difficulty(ds, _fake_sample, _fake_check, k=8,
                                 thresholds={"hard": (0, 3), "medium": (4, 6), "easy": (7, 8)})
    assert custom["difficulty"][:4] == ["hard", "hard", "hard", "medium"]
    with pytest.raises(ValueError, match="must cover each count 0..8 exactly once"):
        split_by_difficulty(ds, _fake_sample, _fake_check, thresholds={"hard": (0, 1), "easy": (6, 8)})


def test_split_with_a_tiny_local_policy(tiny_model_dir):
    # transformers generation on the tests' tiny model, a deterministic fake checker: "correct" when the sampled
    # completion contains a digit. Same seed, same counts.
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model, tokenizer = AutoModelForCausalLM.from_pretrained(tiny_model_dir), AutoTokenizer.from_pretrained(tiny_model_dir)
    ds = Dataset.from_list([{"prompt": [{"role": "user", "content": f"{i}+{i}?"}], "answer": str(2 * i)}
                            for i in range(4)])
    check = lambda c, g: "correct" if any(ch.isdigit() for ch in c) else "wrong"  # noqa: E731
    sample = transformers_sampler(model, tokenizer, max_new_tokens=4, seed=1)
    first = split_by_difficulty(ds, sample, check, k=8)
    again = split_by_difficulty(ds, sample, check, k=8)
    assert first["num_correct"] == again["num_correct"]
    assert all(0 <= c <= 8 for c in first["num_correct"])
    assert len(set(first["num_correct"])) > 1 or first["num_correct"][0] not in (0, 8)  # not a degenerate stub
    assert [bucket(c) for c in first["num_correct"]] == first["difficulty"]
