"""The paper's datasets mapped to one schema, and its difficulty split.

Every loader returns rows with `prompt` (the paper's chat format: the system prompt "Please reason step by step, and
put your final answer within \\boxed{}." and the question as the user turn), `answer` (the gold final answer as a
string), `source` and `difficulty`. Each source reads the Hub dataset, or a local JSON/JSONL/parquet/CSV file or folder with the
same columns (`path=`), so everything works offline.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .registry import Registry

if TYPE_CHECKING:
    from datasets import Dataset, Features

SYSTEM_PROMPT = "Please reason step by step, and put your final answer within \\boxed{}."


# `datasets` (which brings pyarrow, pandas, ...) is imported when data is loaded, not when this module is: the
# registry, `BENCHMARKS` and `chat_prompt` serve command-line parsers and `--help`.
@functools.cache
def _schema() -> Features:
    from datasets import Features, List, Value

    return Features({
        "prompt": List({"role": Value("string"), "content": Value("string")}),
        "answer": Value("string"),
        "source": Value("string"),
        "difficulty": Value("string"),
    })


def __getattr__(name: str):
    if name == "SCHEMA":  # the rows' `datasets.Features`, built on first use
        return _schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Source:
    """Where a dataset lives and which of its columns hold the question, the gold answer and a difficulty."""

    hub_id: str
    split: str
    prompt_columns: tuple[str, ...]
    answer_columns: tuple[str, ...]
    difficulty_column: str | None = None
    data_dir: str | None = None  # a sub-folder of the Hub repo (SimpleRL-Zoo-Data keeps one per level)


SOURCES: Registry[Source] = Registry("source")
for _name, _source in {
    # SimpleRL-Zoo-Data: parquet folders by level (e.g. simplelr_qwen_level3to5); `question` / `gt_answer`
    "simplerl_zoo": Source("hkust-nlp/SimpleRL-Zoo-Data", "train", ("question", "problem"), ("gt_answer", "answer"),
                           None, "simplelr_qwen_level3to5"),
    # DeepMath-103K: `question`, raw-text `final_answer`, a 1-10 `difficulty`
    "deepmath": Source("zwhe99/DeepMath-103K", "train", ("question",), ("final_answer",), "difficulty"),
    "math500": Source("HuggingFaceH4/MATH-500", "test", ("problem",), ("answer",), "level"),
    "aime24": Source("HuggingFaceH4/aime_2024", "train", ("problem",), ("answer",)),
    "aime25": Source("math-ai/aime25", "test", ("problem", "question"), ("answer",)),
    "amc23": Source("math-ai/amc23", "test", ("question", "problem"), ("answer",)),
    # OlympiadBench's `final_answer` is a list of strings
    "olympiadbench": Source("math-ai/olympiadbench", "test", ("question",), ("final_answer",)),
    "minerva": Source("math-ai/minervamath", "test", ("question",), ("answer",)),
}.items():
    SOURCES.register(_name)(_source)

BENCHMARKS = ("math500", "olympiadbench", "minerva", "aime24", "aime25", "amc23")


def chat_prompt(question: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}]


def _answer_text(value) -> str:
    if isinstance(value, (list, tuple)):  # OlympiadBench: one answer per part
        return str(value[0]) if len(value) == 1 else ", ".join(str(v) for v in value)
    return str(value)


LOCAL_FILE_TYPES = {".json": "json", ".jsonl": "json", ".parquet": "parquet", ".csv": "csv"}


def read_local(path: str, split: str = "train") -> Dataset:
    """A local dataset, the one loader of `trl-lite train`, `trl-lite eval` and `trl-lite ablate`: a JSON, JSONL,
    parquet or CSV file, or a folder whose files of one such type are read together (`split` of a file is "train",
    as `datasets` names it)."""
    ext = os.path.splitext(path)[1].lower()
    if os.path.isdir(path):
        files = sorted(os.path.join(root, f) for root, _, names in os.walk(path) for f in names
                       if os.path.splitext(f)[1].lower() in LOCAL_FILE_TYPES)
        if not files:
            raise ValueError(f"path={path!r} holds no .json, .jsonl, .parquet or .csv file.")
    elif os.path.isfile(path) and ext in LOCAL_FILE_TYPES:
        files = [path]
    else:
        raise ValueError(f"path={path!r}: no such file or folder; expected a .json, .jsonl, .parquet or .csv file, "
                         "or a folder of them.")
    kinds = {LOCAL_FILE_TYPES[os.path.splitext(f)[1].lower()] for f in files}
    if len(kinds) > 1:
        raise ValueError(f"path={path!r} mixes file types ({sorted(kinds)}); expected files of one type.")
    from datasets import load_dataset

    return load_dataset(kinds.pop(), data_files=files, split=split)


def load_source(name: str, *, path: str | None = None, split: str | None = None, data_dir: str | None = None) -> Dataset:
    """Loads a source (see `SOURCES`) into the schema `prompt, answer, source, difficulty`.

    Args:
        name: a registered source (`simplerl_zoo`, `deepmath`, `math500`, `aime24`, `aime25`, `amc23`,
            `olympiadbench`, `minerva`).
        path: a local JSON/JSONL/parquet/CSV file or folder with the Hub dataset's columns (offline); the Hub
            otherwise (`read_local`).
        split: the split to read from the Hub (defaults to the source's); a local file is read whole.
        data_dir: Hub sub-folder (SimpleRL-Zoo-Data's level folders; defaults to the source's).
    """
    source = SOURCES.get(name)
    if path is not None:
        raw = read_local(path)
    else:
        from datasets import load_dataset

        raw = load_dataset(source.hub_id, data_dir=data_dir or source.data_dir, split=split or source.split)
    columns = raw.column_names
    prompt_col = next((c for c in source.prompt_columns if c in columns), None)
    answer_col = next((c for c in source.answer_columns if c in columns), None)
    if prompt_col is None or answer_col is None:
        raise ValueError(
            f"dataset {name!r} ({path or source.hub_id}) needs a question column among {list(source.prompt_columns)} "
            f"and an answer column among {list(source.answer_columns)}; found columns {columns}."
        )
    difficulty_col = source.difficulty_column if source.difficulty_column in columns else None

    def to_schema(row):
        return {
            "prompt": chat_prompt(str(row[prompt_col])),
            "answer": _answer_text(row[answer_col]),
            "source": name,
            "difficulty": str(row[difficulty_col]) if difficulty_col else "",
        }

    return raw.map(to_schema, remove_columns=columns, features=_schema())


################
# Difficulty split (Section 3 of the paper: correct answers out of k = 8 rollouts)
################
DEFAULT_THRESHOLDS = {"hard": (0, 1), "medium": (2, 5), "easy": (6, 8)}


def bucket(num_correct: int, thresholds: dict[str, tuple[int, int]] = DEFAULT_THRESHOLDS) -> str:
    for level, (low, high) in thresholds.items():
        if low <= num_correct <= high:
            return level
    raise ValueError(f"num_correct={num_correct} falls in no bucket of thresholds={thresholds!r}.")


def count_correct(
    dataset: Dataset,
    sample: Callable[[list[list[dict]], int], list[list[str]]],
    check: Callable[[str, str], str],
    k: int = 8,
) -> list[int | None]:
    """For each row, how many of `k` sampled completions `check` judges correct (None when the gold is unparsable).

    `sample(prompts, k)` returns k completions per prompt; `check(completion, gold)` returns "correct", "wrong",
    "timeout" or "gold_unparsable" (as [`~trl_lite.rewards.MathChecker.check`]).
    """
    completions = sample(list(dataset["prompt"]), k)
    counts: list[int | None] = []
    for outs, gold in zip(completions, dataset["answer"]):
        outcomes = [check(c, gold) for c in outs]
        counts.append(None if "gold_unparsable" in outcomes else sum(o == "correct" for o in outcomes))
    return counts


def split_by_difficulty(
    dataset: Dataset,
    sample: Callable[[list[list[dict]], int], list[list[str]]],
    check: Callable[[str, str], str] | None = None,
    *,
    k: int = 8,
    thresholds: dict[str, tuple[int, int]] = DEFAULT_THRESHOLDS,
    save_to: str | None = None,
) -> Dataset:
    """The paper's Easy/Medium/Hard split: sample `k` responses per prompt, count correct answers, bucket.

    Rows whose gold answer cannot be parsed are dropped. The result keeps the counts (`num_correct`) and the bucket
    (`difficulty`), and is saved with `save_to_disk(save_to)` when asked, so the split is reproducible.
    """
    covered = sorted(n for low, high in thresholds.values() for n in range(low, high + 1))
    if covered != list(range(k + 1)):
        raise ValueError(f"thresholds={thresholds!r} must cover each count 0..{k} exactly once.")
    if check is None:
        from .rewards import MathChecker

        check = MathChecker().check
    counts = count_correct(dataset, sample, check, k)
    keep = [i for i, c in enumerate(counts) if c is not None]
    out = dataset.select(keep)
    kept_counts = [counts[i] for i in keep]
    out = out.remove_columns([c for c in ("difficulty", "num_correct") if c in out.column_names])
    out = out.add_column("num_correct", kept_counts)
    out = out.add_column("difficulty", [bucket(c, thresholds) for c in kept_counts])
    if save_to is not None:
        out.save_to_disk(save_to)
    return out
