"""Samplers: `sample(prompts, k) -> k completions per prompt`, what evaluation and the difficulty split generate with.

`transformers_sampler` wraps a loaded model's `generate` (seeded, restoring the global RNG state); `vllm_sampler` an
offline vLLM engine; `make_sampler` picks between them for a policy path or Hub id. Scoring what they produce is
`trl_lite.scoring`'s job.
"""

from __future__ import annotations

import sys


def transformers_sampler(model, tokenizer, *, max_new_tokens: int = 1024, temperature: float | None = 1.0,
                         top_p: float | None = 1.0, top_k: int | None = 0, greedy: bool = False, batch_size: int = 8,
                         seed: int = 0, return_ids: bool = False):
    """A `sample(prompts, k)` with `transformers` generation, for `split_by_difficulty`, evaluation and `pass_rate`
    (`make_sampler` picks vLLM instead when it is installed and a GPU is present).

    Sampling is seeded with `seed` on every call and the global RNG state is restored afterwards, so sampling in the
    middle of a training run (e.g. from a callback) does not change the run's own sampling. `None` for `temperature`,
    `top_p` or `top_k` means the model's generation config; `greedy=True` decodes greedily. `return_ids=True` gives
    each completion as `(token ids without EOS or padding, whether it ended with EOS)` instead of its text.
    """
    import torch

    if greedy:
        sampling = {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
    else:
        sampling = {"do_sample": True, "temperature": temperature, "top_p": top_p, "top_k": top_k}

    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id

    def ids_and_ended(row: list[int]) -> tuple[list[int], bool]:
        ended = eos in row
        return (row[: row.index(eos)] if ended else [t for t in row if t != pad]), ended

    def sample(prompts: list[list[dict]], k: int) -> list[list]:
        texts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]
        out: list[list] = []
        rng_state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        try:
            for start in range(0, len(texts), batch_size):
                batch = tokenizer(texts[start : start + batch_size], return_tensors="pt", padding=True,
                                  add_special_tokens=False).to(model.device)
                with torch.no_grad():
                    ids = model.generate(**batch, **sampling, num_return_sequences=k, max_new_tokens=max_new_tokens,
                                         pad_token_id=pad)
                completions = ids[:, batch["input_ids"].shape[1]:]
                decoded = ([ids_and_ended(row) for row in completions.tolist()] if return_ids
                           else tokenizer.batch_decode(completions, skip_special_tokens=True))
                out.extend(decoded[i : i + k] for i in range(0, len(decoded), k))
        finally:
            torch.random.set_rng_state(rng_state)
        return out

    return sample


def _vllm_available() -> bool:
    try:
        import torch
        import vllm  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.is_available()


def vllm_sampler(model: str, *, max_new_tokens: int, temperature: float, top_p: float, seed: int = 0):
    from vllm import LLM, SamplingParams

    llm = LLM(model=model, seed=seed)

    def sample(prompts, k):
        params = SamplingParams(n=k, temperature=temperature, top_p=top_p, max_tokens=max_new_tokens, seed=seed)
        outputs = llm.chat(prompts, params, use_tqdm=True)
        return [[o.text for o in out.outputs] for out in outputs]

    return sample


def make_sampler(model: str, *, max_new_tokens: int, temperature: float, top_p: float = 1.0, seed: int = 0):
    """A `sample(prompts, k)` for a policy path or Hub id: vLLM when it is installed and a GPU is present,
    `transformers` generation otherwise (used by `trl-lite eval` and for `trl_lite.data.split_by_difficulty`)."""
    if _vllm_available():
        print("generating with vLLM", file=sys.stderr)
        return vllm_sampler(model, max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p, seed=seed)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    print("generating with transformers", file=sys.stderr)
    return transformers_sampler(AutoModelForCausalLM.from_pretrained(model), AutoTokenizer.from_pretrained(model),
                                max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p, seed=seed)
