"""Run by tests/trainer/test_vllm_colocate.py in a subprocess whose PYTHONPATH holds tests/vllm_standin (the test-only vLLM):
LitePPOTrainer with `use_vllm=True, vllm_mode="colocate"` through TRL's real `VLLMGeneration`.

    python tests/vllm_run.py MODEL_DIR OUT_DIR SCENARIO
    torchrun --nproc_per_node 2 tests/vllm_run.py MODEL_DIR OUT_DIR SCENARIO

Scenarios: `colocate` (plain), `sleep` (sleep mode), `alarm` (the stale-weight alarm, per case of `ALARM_CASES`: the
stand-in's fault and dtype, sleep mode, steps, `on_sync_mismatch`), `seed` (one generation per seed of
`SEED=42,43,...`: the completions each process sampled). Rank 0 writes OUT_DIR/result.json with what the probe saw.
The real engine's counterpart, for what vLLM's CPU backend can do, is tests/vllm_cpu_run.py.
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
from transformers import TrainerCallback  # noqa: E402

from tests.tiny import (  # noqa: E402
    GROUP,
    LogRecords,
    leave_process_group,
    prompt_dataset,
    reward_digit_count,
    train_args,
)
from trl_lite import LitePPOConfig, LitePPOTrainer  # noqa: E402

assert getattr(vllm, "STANDIN", False), "tests/vllm_run.py must run on the test stand-in, not on a real vLLM"


def _policy_params(trainer) -> dict[str, torch.Tensor]:
    """The policy's current parameters on this process."""
    model = trainer.accelerator.unwrap_model(trainer.model)
    return {name: p.detach().clone() for name, p in model.named_parameters()}


class Probe(LitePPOTrainer):
    """Checks, at every generation, that vLLM generated with the policy's current weights and that the truncation
    flags match vLLM's finish reasons."""

    def _generate(self, prompts):
        policy = _policy_params(self)
        output = super()._generate(prompts)
        llm = self.vllm_generation.llm
        probe = self.__dict__.setdefault("probe", {"weight_diffs": [], "truncation": [], "generations": 0})
        probe["weight_diffs"].append(max((llm.generation_weights[k].double() - v.double()).abs().max().item()
                                         for k, v in policy.items()))
        finish = [o.finish_reason == "length" for request in llm.last_outputs for o in request.outputs]
        probe["truncation"].append((finish, self._lite_truncated.tolist()))
        probe["generations"] += 1
        return output


class StepEvents(TrainerCallback):
    """The stand-in's events per optimizer step (syncs, generations, sleeps)."""

    def __init__(self):
        self.per_step, self.seen = [], 0
        self.trainer = None

    def on_step_end(self, args, state, control, **kwargs):
        events = self.trainer.vllm_generation.llm.events
        self.per_step.append([event[0] for event in events[self.seen:]])
        self.seen = len(events)


def _settings(out, scenario, **extra):
    world = int(os.environ.get("WORLD_SIZE", "1"))
    settings = dict(use_vllm=True, vllm_mode="colocate", max_steps=3, per_device_train_batch_size=2 * GROUP // world,
                    num_generations=GROUP, max_completion_length=8, learning_rate=0.1, bf16=False)
    if scenario == "sleep":
        settings["vllm_enable_sleep_mode"] = True
    return LitePPOConfig(**train_args(out, **{**settings, **extra}))


def run(model_dir, out, scenario):
    events = StepEvents()
    trainer = Probe(model=model_dir, reward_funcs=reward_digit_count,
                    args=_settings(out, scenario),
                    train_dataset=prompt_dataset(),
                    callbacks=[events])
    events.trainer = trainer
    trainer.train()
    probes = gather_object([trainer.probe])
    logs = [row for row in trainer.state.log_history if "loss" in row]
    return trainer, {"probes": probes, "events_per_step": events.per_step, "logs": logs,
                     "world": trainer.accelerator.num_processes,
                     "llm_seed": trainer.vllm_generation.llm.seed}


def run_alarm(model_dir, out):
    """The stale-weight alarm, per case of `ALARM_CASES` (a JSON list of {"fault", "dtype", "sleep", "steps", "mode"}),
    one trainer after the other in this process: the gap logged per step, the warnings, the error if any."""
    records = LogRecords()
    logging.getLogger("trl_lite.sync_check").addHandler(records)
    results = []
    for index, case in enumerate(json.loads(os.environ["ALARM_CASES"])):
        os.environ["VLLM_STANDIN_FAULT"], os.environ["VLLM_STANDIN_DTYPE"] = case["fault"], case["dtype"]
        records.messages = []
        args = _settings(os.path.join(out, str(index)), "alarm", max_steps=case["steps"],
                         on_sync_mismatch=case["mode"], vllm_enable_sleep_mode=case["sleep"],
                         top_p=case.get("top_p", 1.0))
        trainer = LitePPOTrainer(model=model_dir, reward_funcs=reward_digit_count, args=args,
                                 train_dataset=prompt_dataset())
        error = None
        try:
            trainer.train()
        except RuntimeError as exc:
            if "stale" not in str(exc):
                raise
            error = str(exc)
        logs = [row for row in trainer.state.log_history if "sampling/sync_logp_gap" in row]
        pending = trainer._metrics["train"].get("sampling/sync_logp_gap", [])  # the raising step's: not logged yet
        gaps = [row["sampling/sync_logp_gap"] for row in logs] + (pending[-1:] if error else [])
        results.append({**case, "gaps": gaps,
                        "warnings": gather_object([records.messages]), "error": error,
                        "steps_done": trainer.state.global_step})
    return trainer, {"cases": results, "world": trainer.accelerator.num_processes}


def run_seed(model_dir, out):
    """One generation per seed of `SEED` (comma-separated; no training), one trainer after the other in this process:
    the completions and request seeds of each process, per seed."""
    runs = []
    for seed in os.environ["SEED"].split(","):
        args = _settings(os.path.join(out, seed), "colocate", max_steps=1, learning_rate=0.0, seed=int(seed))
        trainer = LitePPOTrainer(model=model_dir, reward_funcs=reward_digit_count, args=args,
                                 train_dataset=prompt_dataset())
        trainer.train()
        llm = trainer.vllm_generation.llm
        completions = [[list(o.token_ids) for o in request.outputs] for request in llm.last_outputs]
        runs.append({"seed": int(seed), "completions": gather_object([completions]),
                     "request_seeds": gather_object([llm.request_seeds])})
    return trainer, {"runs": runs, "world": trainer.accelerator.num_processes}


def main(model_dir, out, scenario):
    if scenario in ("alarm", "seed"):
        trainer, result = (run_seed if scenario == "seed" else run_alarm)(model_dir, out)
        is_main = trainer.accelerator.is_main_process
    else:
        trainer, result = run(model_dir, out, scenario)
        is_main = trainer.accelerator.is_main_process
    if is_main:
        with open(os.path.join(out, "result.json"), "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:])
    leave_process_group()
