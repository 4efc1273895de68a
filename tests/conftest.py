"""Shared fixtures: a tiny Llama policy and a character-level tokenizer built locally (no Hub access)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from tests.tiny import build_tiny_model  # noqa: E402


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def qwen3_model_dir(tmp_path_factory):
    """A real architecture: Qwen3 with a byte-level BPE tokenizer and Qwen3's chat template, built locally."""
    from tests.tiny import build_qwen3_model

    return build_qwen3_model(tmp_path_factory.mktemp("tiny-qwen3"))
