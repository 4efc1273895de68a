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
