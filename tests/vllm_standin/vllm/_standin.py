"""`vllm.LLM` as TRL 1.16's colocate mode uses it, generating on CPU with a `transformers` copy of the model.

vLLM behaviours copied (vLLM 0.31 sources named per item):

- `LLM(...)` takes the keywords TRL passes (`vllm/entrypoints/llm.py`, `vllm/engine/arg_utils.py`); colocate needs
  `distributed_executor_backend="external_launcher"`.
- Seeding, as vLLM 0.31 does it with the external launcher (the worker lives in the trainer's process): when the
  engine starts, its worker reseeds the process-wide Python, NumPy and torch generators with `seed`
  (`vllm/v1/worker/gpu_worker.py` calls `set_random_seed` of `vllm/utils/torch_utils.py`;
  `docs/usage/reproducibility.md`, "Locality of random state"); a request without `SamplingParams.seed` gets its
  sampling seed from the global NumPy generator when it is added (`vllm/v1/worker/gpu/sample/states.py:
  add_request`), and its tokens are drawn with a generator seeded with it. (Later vLLM sources draw that seed from a private `np.random.default_rng()` instead.)
- dtype: `VLLM_STANDIN_DTYPE=bfloat16` keeps the engine's model copy in bf16, as vLLM runs a float32 checkpoint on a
  GPU (`vllm/config/model.py`: `dtype="auto"`); the logits are then processed in float32 as above. Default: the
  checkpoint's dtype.
- `generate(prompts, sampling_params=, use_tqdm=)` with `{"prompt_token_ids": ids}` prompts returns one
  `RequestOutput` per prompt with `n` `CompletionOutput`s (`vllm/outputs.py`). A sequence that samples EOS (the
  tokenizer's and the generation config's EOS ids, unless `ignore_eos`) is finished with `finish_reason="stop"` and
  keeps the EOS id as its last token; one that reaches `max_tokens` is `finish_reason="length"` with exactly
  `max_tokens` ids (or stops at `max_model_len`) and no EOS (`vllm/v1/core/sched/utils.py: check_stop`, which
  checks the last token after appending it, so EOS stays in `token_ids`).
- Sampling order (`vllm/v1/sample/sampler.py`): logits in float32, min-tokens (EOS masked), repetition penalty
  (prompt and output tokens: positive logits divided, negative multiplied), then greedy if temperature < 1e-5, else
  temperature, min_p, top-k / top-p (`vllm/v1/sample/ops/topk_topp_sampler.py`), and a draw.
- `logprobs_mode="processed_logprobs"`: the logprobs returned are the log-softmax of the logits after those steps
  (temperature included), so TRL's importance-sampling ratio compares like with like. Per position, a
  `{token_id: Logprob(logprob, rank, decoded_token)}` dict with the sampled token (`logprobs=0`) or the top N plus
  the sampled token (`logprobs=N`); rank = 1 + the number of tokens with a larger logprob (`vllm/logprobs.py`,
  `vllm/v1/engine/logprobs.py`).
- Sleep mode (`LLM.sleep`, `LLM.wake_up`, `vllm/device_allocator/cumem.py`): only with `enable_sleep_mode=True`;
  level 1 offloads the weights (kept) and discards the KV cache; level 2 discards both, so the weights must be
  loaded again after `wake_up(tags=["weights"])`. Here discarded weights become NaN and `load_weights` into
  sleeping weights, or `generate` with sleeping weights or KV cache, raises.
- Weight sync: `llm_engine.model_executor.driver_worker.model_runner.model.load_weights([(name, tensor)])` takes
  Hugging Face parameter names; an unknown name raises (vLLM's loaders raise `KeyError` too). `reset_prefix_cache`.

Faults, for the stale-weight alarm's tests (`VLLM_STANDIN_FAULT`):

- `stale_load`: `load_weights` reports the names as loaded and keeps the old weights (a sync that silently does
  nothing);
- `base_after_sleep`: waking the KV cache after a level-2 sleep puts the checkpoint's weights back, overwriting the
  synced ones (a wake-up that reloads the initial checkpoint, as vLLM's `reload_weights` would), so every generation
  after the first sleep samples from the base model.

What it records for the tests: `events` (`("sync", names loaded)` at the `reset_prefix_cache` that follows loads,
`("generate", num_prompts)`, `("sleep", level)`, `("wake_up", tags)`), `loaded` (parameter names loaded since the last
level-2 sleep), `generation_weights` (a copy of the weights the last `generate` used) and `last_outputs`.
"""

from __future__ import annotations

import os
import random

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from .logprobs import Logprob
from .outputs import CompletionOutput, RequestOutput
from .sampling_params import SamplingParams

_LOGPROBS_MODES = ("raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits")
_FAULTS = ("", "stale_load", "base_after_sleep")
_NP_INT64_MIN, _NP_INT64_MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max


def set_random_seed(seed: int) -> None:
    """vLLM's `set_random_seed` (`vllm/utils/torch_utils.py`): the process-wide generators."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class _Loader:
    """`model_runner.model`: vLLM's model, whose `load_weights` takes (HF name, tensor) pairs."""

    def __init__(self, llm: LLM):
        self._llm = llm

    def load_weights(self, weights):
        llm = self._llm
        if "weights" in llm.asleep:
            raise RuntimeError("load_weights() while the weights sleep: vLLM would write to unmapped memory "
                               "(wake_up(tags=['weights']) first)")
        params = dict(llm.model.named_parameters())
        loaded = []
        for name, tensor in weights:
            if name not in params:
                raise KeyError(f"vLLM stand-in: no parameter {name!r} in the model (expected Hugging Face names)")
            if llm.fault != "stale_load":
                with torch.no_grad():
                    params[name].copy_(tensor.detach().to(params[name].dtype))
            loaded.append(name)
        llm.loaded.update(loaded)
        llm.pending_sync = True
        return set(loaded)


class _Namespace:
    def __init__(self, **items):
        self.__dict__.update(items)


class LLM:
    def __init__(self, model: str, *, tensor_parallel_size: int = 1, gpu_memory_utilization: float = 0.9,
                 max_model_len: int | None = None, max_num_seqs: int | None = None, enable_sleep_mode: bool = False,
                 model_impl: str = "auto", distributed_executor_backend: str | None = None, seed: int = 0,
                 max_num_batched_tokens: int | None = None, logprobs_mode: str = "raw_logprobs",
                 quantization: str | None = None, trust_remote_code: bool = False, **unknown):
        if unknown:
            raise TypeError(f"LLM() got unexpected keyword arguments {sorted(unknown)}")
        if distributed_executor_backend != "external_launcher":
            raise ValueError("the stand-in implements colocate mode, which needs "
                             f"distributed_executor_backend='external_launcher', got {distributed_executor_backend!r}")
        if tensor_parallel_size != 1:
            raise NotImplementedError("the stand-in generates with tensor_parallel_size=1 only")
        if logprobs_mode not in _LOGPROBS_MODES:
            raise ValueError(f"logprobs_mode={logprobs_mode!r}; expected one of {_LOGPROBS_MODES}")
        if not 0 < gpu_memory_utilization <= 1:
            raise ValueError(f"gpu_memory_utilization={gpu_memory_utilization!r}; expected a fraction in (0, 1]")
        self.fault = os.environ.get("VLLM_STANDIN_FAULT", "")
        if self.fault not in _FAULTS:
            raise ValueError(f"VLLM_STANDIN_FAULT={self.fault!r}; expected one of {_FAULTS}")
        self.dtype = os.environ.get("VLLM_STANDIN_DTYPE") or None
        self.model = _load_unsharded(model, trust_remote_code, self.dtype)
        self.model.eval()
        self.checkpoint = model
        self.tokenizer = AutoTokenizer.from_pretrained(model, trust_remote_code=trust_remote_code)
        self.logprobs_mode = logprobs_mode
        self.enable_sleep_mode = enable_sleep_mode
        self.max_num_seqs = max_num_seqs
        self.seed = seed
        set_random_seed(seed)  # the worker, at start: process-wide
        self.request_seeds: list[int] = []  # each request's sampling seed, in order
        max_len = max_model_len or self.model.config.max_position_embeddings
        self.llm_engine = _Namespace(
            model_config=_Namespace(max_model_len=max_len),
            model_executor=_Namespace(driver_worker=_Namespace(model_runner=_Namespace(model=_Loader(self)))),
        )
        eos = self.model.generation_config.eos_token_id
        eos = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))
        self.eos_token_ids = set(eos) | ({self.tokenizer.eos_token_id} if self.tokenizer.eos_token_id is not None
                                         else set())
        self.asleep: set[str] = set()
        self.slept_level = 0
        self.loaded: set[str] = set()
        self.pending_sync = False
        self.events: list[tuple] = []
        self.generation_weights: dict[str, torch.Tensor] | None = None
        self.last_outputs: list[RequestOutput] = []
        self.replay = os.environ.get("VLLM_STANDIN_REPLAY") == "1"

    # ------------------------------------------------------------------ sleep mode
    def sleep(self, level: int = 1) -> None:
        if not self.enable_sleep_mode:
            raise RuntimeError("Sleep mode is not enabled (LLM(enable_sleep_mode=True))")
        if level not in (1, 2):
            raise ValueError(f"sleep level must be 1 or 2, got {level}")
        self.asleep = {"weights", "kv_cache"}
        self.slept_level = level
        if level == 2:  # the weights are discarded, not offloaded
            with torch.no_grad():
                for param in self.model.parameters():
                    param.fill_(float("nan"))
            self.loaded = set()
        self.events.append(("sleep", level))

    def wake_up(self, tags: list[str] | None = None) -> None:
        if not self.enable_sleep_mode:
            raise RuntimeError("Sleep mode is not enabled (LLM(enable_sleep_mode=True))")
        self.asleep -= set(tags or ["weights", "kv_cache"])
        self.events.append(("wake_up", tuple(tags or ())))
        if self.fault == "base_after_sleep" and self.slept_level == 2 and not self.asleep:
            base = _load_unsharded(self.checkpoint, False, self.dtype)
            with torch.no_grad():
                for param, value in zip(self.model.parameters(), base.parameters()):
                    param.copy_(value)

    def reset_prefix_cache(self) -> bool:
        if self.pending_sync:  # TRL resets the prefix cache after loading new weights: one sync
            self.events.append(("sync", len(self.loaded)))
            self.pending_sync = False
        return True

    # ------------------------------------------------------------------ generation
    def generate(self, prompts, sampling_params: SamplingParams | None = None, use_tqdm: bool = True,
                 **unknown) -> list[RequestOutput]:
        if unknown:
            raise TypeError(f"generate() got unexpected keyword arguments {sorted(unknown)}")
        if self.asleep:
            raise RuntimeError(f"generate() while {sorted(self.asleep)} sleep (wake_up first)")
        if any(torch.isnan(p).any() for p in self.model.parameters()):
            raise RuntimeError("generate() with discarded weights: sleep(level=2) discards them, load_weights() "
                               "must push every parameter again before generating")
        params = sampling_params or SamplingParams()
        if params.structured_outputs is not None:
            raise NotImplementedError("structured outputs are not part of the stand-in")
        self.generation_weights = {k: v.detach().clone() for k, v in self.model.named_parameters()}
        self.events.append(("generate", len(prompts)))
        outputs, seen = [], {}
        for request_id, prompt in enumerate(prompts):
            if not isinstance(prompt, dict) or "prompt_token_ids" not in prompt:
                raise TypeError("the stand-in takes TokensPrompt dicts {'prompt_token_ids': [...]}, as TRL passes")
            ids = list(prompt["prompt_token_ids"])
            seed = params.seed
            if seed is None:  # vLLM 0.31's SamplingStates.add_request: drawn from the global NumPy generator
                seed = int(np.random.randint(_NP_INT64_MIN, _NP_INT64_MAX, dtype=np.int64))
            self.request_seeds.append(seed)
            generator = torch.Generator().manual_seed(seed & 0xFFFF_FFFF_FFFF_FFFF)
            completions = []
            for index in range(params.n):
                occurrence = seen.get(tuple(ids), 0)
                seen[tuple(ids)] = occurrence + 1
                completions.append(self._complete(ids, params, index, occurrence, generator))
            outputs.append(RequestOutput(str(request_id), None, ids, None, completions, True))
        self.last_outputs = outputs
        return outputs

    @torch.no_grad()
    def _complete(self, prompt_ids: list[int], params: SamplingParams, index: int, occurrence: int,
                  generator: torch.Generator):
        max_tokens = params.max_tokens or 16
        forced = replay_tokens(prompt_ids, occurrence, self.tokenizer, max_tokens) if self.replay else None
        device = next(self.model.parameters()).device
        out = self.model(input_ids=torch.tensor([prompt_ids], device=device), use_cache=True)
        past, logits = out.past_key_values, out.logits[0, -1]
        tokens, logprobs, cumulative, finish = [], [], 0.0, "length"
        for position in range(max_tokens):
            processed = self._process(logits.float(), prompt_ids + tokens, len(tokens), params)  # (V,)
            token_logprobs = torch.log_softmax(processed, dim=-1)  # processed logprobs
            if forced is not None:
                token = forced[position]
            elif params.temperature < 1e-5:
                token = int(processed.argmax())
            else:
                token = int(torch.multinomial(torch.softmax(processed, dim=-1), 1, generator=generator))
            tokens.append(token)
            value = float(token_logprobs[token])
            cumulative += value
            if params.logprobs is not None:
                logprobs.append(self._position_logprobs(token_logprobs, token, params.logprobs))
            # vLLM's check_stop: EOS, then stop_token_ids (both "stop", the token kept), then the length limits
            stop = (token in self.eos_token_ids and not params.ignore_eos) or token in (params.stop_token_ids or [])
            capped = len(prompt_ids) + len(tokens) >= self.llm_engine.model_config.max_model_len
            if stop or capped or (forced is not None and position + 1 == len(forced)):
                finish = "stop" if stop else "length"
                break
            out = self.model(input_ids=torch.tensor([[token]], device=device), past_key_values=past, use_cache=True)
            past, logits = out.past_key_values, out.logits[0, -1]
        text = self.tokenizer.decode(tokens, skip_special_tokens=params.skip_special_tokens)
        return CompletionOutput(index, text, tokens, cumulative, logprobs if params.logprobs is not None else None,
                                finish)

    def _process(self, logits: torch.Tensor, history: list[int], generated: int, params: SamplingParams):
        logits = logits.clone()
        if generated < params.min_tokens:
            logits[list(self.eos_token_ids)] = -float("inf")
        if params.repetition_penalty != 1.0:
            seen = torch.tensor(sorted(set(history)), dtype=torch.long)
            values = logits[seen]
            logits[seen] = torch.where(values > 0, values / params.repetition_penalty,
                                       values * params.repetition_penalty)
        if params.temperature < 1e-5:
            return logits  # greedy: no temperature, no truncation
        logits = logits / params.temperature
        if params.min_p > 0:
            probs = torch.softmax(logits, dim=-1)
            logits[probs < params.min_p * probs.max()] = -float("inf")
        if params.top_k and params.top_k > 0:
            kth = torch.topk(logits, min(params.top_k, logits.numel())).values[-1]
            logits[logits < kth] = -float("inf")
        if params.top_p < 1.0:
            order = torch.argsort(logits, descending=True)
            cumulative = torch.cumsum(torch.softmax(logits[order], dim=-1), dim=-1)
            drop = cumulative - torch.softmax(logits[order], dim=-1) >= params.top_p  # keep the smallest prefix >= p
            logits[order[drop]] = -float("inf")
        return logits

    def _position_logprobs(self, token_logprobs: torch.Tensor, token: int, top: int) -> dict[int, Logprob]:
        def entry(token_id: int) -> Logprob:
            value = float(token_logprobs[token_id])
            rank = int((token_logprobs > value).sum()) + 1
            return Logprob(value, rank, self.tokenizer.decode([token_id]))

        result = {token: entry(token)}
        if top > 0:
            for token_id in torch.topk(token_logprobs, top).indices.tolist():
                result.setdefault(token_id, entry(token_id))
        return result


def _load_unsharded(path: str, trust_remote_code: bool, dtype: str | None = None):
    """The model, whole: vLLM loads its own copy, never through transformers' DeepSpeed ZeRO-3 hooks (which would
    partition it when the trainer runs under ZeRO-3)."""
    from transformers.integrations import deepspeed

    ref = deepspeed._hf_deepspeed_config_weak_ref
    deepspeed._hf_deepspeed_config_weak_ref = None
    try:
        return AutoModelForCausalLM.from_pretrained(path, dtype=dtype or "auto", trust_remote_code=trust_remote_code)
    finally:
        deepspeed._hf_deepspeed_config_weak_ref = ref


def replay_tokens(prompt_ids: list[int], occurrence: int, tokenizer, max_tokens: int) -> list[int]:
    """Fixed completions for exactness tests (`VLLM_STANDIN_REPLAY=1`): they depend only on (prompt ids, occurrence),
    as `tests.tiny.deterministic_rollout` does on text; a quarter run to `max_tokens` without EOS (truncated), the
    others end with EOS. The reference run without vLLM uses the same function as its `rollout_func`."""
    import hashlib

    digest = hashlib.sha256(f"{list(prompt_ids)}|{occurrence}".encode()).digest()
    vocab = [i for i in range(len(tokenizer)) if i not in set(tokenizer.all_special_ids)]
    if digest[-1] % 4 == 0:
        return [vocab[b % len(vocab)] for b in (digest * 4)[:max_tokens]]
    length = 1 + digest[0] % (max_tokens - 1)
    return [vocab[b % len(vocab)] for b in digest[1 : 1 + length]] + [tokenizer.eos_token_id]
