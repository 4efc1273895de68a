"""A TEST-ONLY stand-in for vLLM 0.31, for TRL 1.16's colocate path (`trl/generation/vllm_generation.py`) on CPU.

Never installed and never importable from a normal environment: tests put `tests/vllm_standin` on `PYTHONPATH` of
the subprocess they launch (with `vllm-0.31.0.dist-info`, so that TRL's `is_vllm_available`, which reads package
metadata, sees a supported version). It implements what the colocate path calls, with vLLM's semantics, and checks
that it is called as vLLM needs (see `_standin.py` for each behaviour and the vLLM source it follows).
"""

from ._standin import LLM
from .outputs import CompletionOutput, RequestOutput
from .sampling_params import SamplingParams, StructuredOutputsParams

__version__ = "0.31.0"
STANDIN = True  # tests assert they run on the stand-in, never on a real vLLM

__all__ = ["LLM", "CompletionOutput", "RequestOutput", "SamplingParams", "StructuredOutputsParams"]
