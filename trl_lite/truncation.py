"""Which completions the length limit cut: the overlong filter's and `overlong/frac_truncated`'s definition.

A completion is truncated when generation stopped because it reached `max_completion_length`: vLLM's
`finish_reason == "length"`, and the same for transformers' `generate`. TRL's own rule (`mask_truncated_completions`:
"the last token is neither EOS nor padding") also flags completions that a stop string ended early, and misses one
whose last sampled token is the padding token.

From the token ids alone that is: `max_completion_length` tokens, no final EOS, and no stop string in the text. The
last clause matters when a stop string ends a completion on its last allowed token: vLLM checks stop strings after the
length limit and then reports `finish_reason == "stop"` (`vllm/v1/engine/output_processor.py`), so the completion was
not cut, though it has the full length and no EOS. A stop string anywhere in the text means generation ended there:
it stops at the first one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def stop_strings(generation_kwargs: dict | None) -> list[str]:
    """The stop strings a generation config sets: vLLM's `stop`, transformers' `stop_strings` (a string or a list)."""
    strings = []
    for key in ("stop", "stop_strings"):
        value = (generation_kwargs or {}).get(key)
        strings += [value] if isinstance(value, str) else list(value or [])
    return [s for s in strings if s]


def truncated_flags(
    completion_ids: Sequence[Sequence[int]],
    eos_token_ids: set[int],
    max_length: int,
    stops: Sequence[str] = (),
    decode: Callable[[Sequence[int]], str] | None = None,
) -> list[bool]:
    """Per completion, whether the length limit cut it.

    Args:
        completion_ids (`Sequence[Sequence[int]]`): the completions' token ids, as generated (no padding).
        eos_token_ids (`set[int]`): the ids that end a completion.
        max_length (`int`): `max_completion_length`.
        stops (`Sequence[str]`, *optional*): the stop strings generation was given ([`stop_strings`]).
        decode (`Callable`, *optional*): token ids to text, needed when `stops` is not empty.

    Returns:
        `list[bool]`, one flag per completion.
    """
    flags = []
    for ids in completion_ids:
        cut = bool(ids) and len(ids) >= max_length and ids[-1] not in eos_token_ids
        if cut and stops:
            text = decode(ids)
            cut = not any(s in text for s in stops)
        flags.append(cut)
    return flags
