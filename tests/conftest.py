"""Shared fixtures: a tiny Llama policy and a character-level tokenizer built locally (no Hub access)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
# Under pytest-xdist (README's test command: `-n auto`) one test process runs per core: one thread each, or each would
# start a thread per core (on 2 cores, the trainer tests took 375 s with the default threads and 239 s with one,
# 2026-11-26). Set before torch is imported, and only where the user set none; the runs whose printed figures are
# compared to the digit (the demo's, the notebook's) are measured with torch's default threads and get the
# environment without it (`tests.stack.figure_env`).
if os.environ.get("PYTEST_XDIST_WORKER") and "OMP_NUM_THREADS" not in os.environ:
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["TRL_LITE_TESTS_ONE_THREAD"] = "1"

from tests.tiny import build_tiny_model  # noqa: E402


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def qwen3_model_dir(tmp_path_factory):
    """A real architecture: Qwen3 with a byte-level BPE tokenizer and Qwen3's chat template, built locally."""
    from tests.tiny import build_qwen3_model

    return build_qwen3_model(tmp_path_factory.mktemp("tiny-qwen3"))


# Under `-n auto --dist loadfile` every test file goes to one worker. The longest files go first, so that none of them
# starts last while the other worker waits. pytest-xdist hands files out in its own order unless told otherwise: by
# default (`--loadscope-reorder`) the files with the most tests first, which started the notebook (one test, about 200
# s) about 9 minutes into CI's reference suite (2026-11-26). `pytest_configure` turns that off, so the files go out in
# collection order, which `pytest_collection_modifyitems` sets. Seconds on 2 cores, from `--durations` (2026-11-26):
# the notebook about 200 with the demo's figures checked, multinode 164, exact resume 119, the main job 55 (150 with
# the demo's figures), the GPU check's CPU rehearsal 77, resume 60, two processes 41; the rest 30 or less. Only the
# order of the files changes: within a file the tests keep theirs. Measured in a clean `.ci/run` (2026-11-27) it did
# not shorten the reference suite (1071 s, 1045 s before): on 2 cores the suite is bound by its total work.
LONGEST_FIRST = ("tests/docs/test_notebooks.py", "tests/distributed/test_multinode.py",
                 "tests/trainer/test_main_job.py", "tests/trainer/test_resume_exact.py",
                 "tests/distributed/test_gpu_trainer_check.py", "tests/trainer/test_resume.py",
                 "tests/distributed/test_multiprocess.py", "tests/trainer/test_sync_alarm.py",
                 "tests/trainer/test_vllm_seeds.py", "tests/distributed/test_gpu_check.py", "tests/docs/test_docs.py")


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist is installed
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable: the rest keep their order
