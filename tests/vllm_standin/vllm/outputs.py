"""`vllm/outputs.py` (vLLM 0.31): what `LLM.generate` returns, one `RequestOutput` per prompt."""

from __future__ import annotations

from dataclasses import dataclass, field

from .logprobs import Logprob


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]  # a finished sequence ends with its stop token (EOS); a length-truncated one has max_tokens
    cumulative_logprob: float | None
    logprobs: list[dict[int, Logprob]] | None  # one {token_id: Logprob} per generated token, or None
    finish_reason: str | None = None  # "stop" or "length"
    stop_reason: int | str | None = None

    def finished(self) -> bool:
        return self.finish_reason is not None


@dataclass
class RequestOutput:
    request_id: str
    prompt: str | None
    prompt_token_ids: list[int]
    prompt_logprobs: list | None
    outputs: list[CompletionOutput]
    finished: bool
    metrics: dict = field(default_factory=dict)
