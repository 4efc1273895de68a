"""`vllm/logprobs.py` (vLLM 0.31): one position's logprob entry."""

from dataclasses import dataclass


@dataclass
class Logprob:
    """The logprob of a token, its rank in the vocabulary (>= 1) and its text."""

    logprob: float
    rank: int | None = None
    decoded_token: str | None = None
