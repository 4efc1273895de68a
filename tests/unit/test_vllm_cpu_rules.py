"""trl_lite/vllm_cpu.py's pure rules, on every stack (the engine itself: tests/distributed/test_vllm_cpu.py, CI's vLLM stack)."""

from types import SimpleNamespace

import pytest
import torch

from trl_lite.vllm_cpu import engine_dtype


def _args(bf16=False, fp16=False, dtype=None):
    return SimpleNamespace(bf16=bf16, fp16=fp16, model_init_kwargs=None if dtype is None else {"dtype": dtype})


@pytest.mark.parametrize(("args", "model", "expected"), [
    (_args(), "Qwen/Qwen3-4B-Base", "float32"),  # trl-lite's CPU default: float32 training, so a float32 engine
    (_args(bf16=True), "name", "bfloat16"),  # CPU autocast in bf16
    (_args(fp16=True), "name", "float16"),
    (_args(dtype="bfloat16"), "name", "bfloat16"),  # a model loaded in bf16 by name
    (_args(dtype=torch.float16), "name", "float16"),
    (_args(dtype="auto"), "name", "float32"),  # the checkpoint's dtype, unknown here: the flags decide
    (_args(dtype=torch.float64), "name", "float32"),  # vLLM has no float64
    (_args(), SimpleNamespace(dtype=torch.bfloat16), "bfloat16"),  # a model instance's own dtype
    (_args(bf16=True), SimpleNamespace(dtype=torch.float32), "bfloat16"),
])
def test_the_engine_dtype_is_the_trainer_s(args, model, expected):
    assert engine_dtype(args, model) == expected
