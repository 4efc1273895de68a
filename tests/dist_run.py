"""Run by tests/distributed/test_multiprocess.py under `torchrun --nproc_per_node N`: one Lite PPO step over a global batch of 8
deterministic rollouts, then rank 0 saves the weights and the gathered advantages.

    torchrun --nproc_per_node 2 tests/dist_run.py MODEL_DIR OUT.pt LOSS_AGGREGATION [zero3|dynamic]

With `zero3`, the run goes through DeepSpeed ZeRO stage 3 (its CPU accelerator here). With `dynamic`, 3 steps of
DAPO dynamic sampling instead (see `run_dynamic`).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from tests.tiny import RecordingTrainer, deterministic_rollout, prompt_dataset, reward_digit_count, snapshot, train_args  # noqa: E402
from tests.tiny import GROUP, DynamicRecorder, leave_process_group, uniform_or_mixed, uniform_or_mixed_dataset  # noqa: E402
from trl_lite import LitePPOConfig  # noqa: E402


ZERO3 = {
    "zero_optimization": {"stage": 3},
    "train_micro_batch_size_per_gpu": "auto",
    "gradient_accumulation_steps": "auto",
    "gradient_clipping": "auto",
}


def run_dynamic(model_dir: str, out: str, mode: str):
    """3 steps of dynamic sampling, 2 groups per process; saves every rank's trained prompts and round counts."""
    from accelerate.utils import gather_object

    args = LitePPOConfig(**train_args(
        os.path.dirname(out) + "/run-dynamic", per_device_train_batch_size=2 * GROUP, num_generations=GROUP,
        max_steps=3, dynamic_sampling=True, dynamic_sampling_max_rounds=20, loss_aggregation=mode,
    ))
    trainer = DynamicRecorder(model=model_dir, reward_funcs=uniform_or_mixed, args=args,
                              train_dataset=uniform_or_mixed_dataset(6, 6))
    trainer.train()
    trained = gather_object([[(prompts, trainable) for prompts, trainable, _ in trainer.trained]])
    rounds_per_rank = gather_object([len(trainer.generated)])
    rounds = [row["generation/rounds"] for row in trainer.state.log_history if "generation/rounds" in row]
    if trainer.accelerator.is_main_process:
        torch.save({"trained": trained, "rounds_per_rank": rounds_per_rank, "rounds": rounds,
                    "world": trainer.accelerator.num_processes}, out)


def main(model_dir: str, out: str, mode: str, backend: str = "ddp"):
    if backend == "dynamic":
        return run_dynamic(model_dir, out, mode)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    extra = {"model_init_kwargs": {"dtype": torch.float64}}
    if backend == "zero3":
        extra["deepspeed"] = ZERO3
        extra["bf16"] = False  # TRL defaults to bf16, which DeepSpeed's "auto" would turn into bf16 weights
    args = LitePPOConfig(
        **train_args(
            os.path.dirname(out) + f"/run-{world}",
            per_device_train_batch_size=8 // world,  # the global batch is 8 whatever the process count
            loss_aggregation=mode,
            overlong_filter=True,
            advantage_mean="batch",  # statistics that span processes
            advantage_std="batch",
            **extra,  # float64: see tests/trainer/test_exactness.py (DeepSpeed casts the weights to float32)
        )
    )
    trainer = RecordingTrainer(
        model=model_dir, reward_funcs=reward_digit_count, args=args, train_dataset=prompt_dataset(),
        rollout_func=deterministic_rollout,
    )
    trainer.train()
    advantages = [trainer.accelerator.gather(r["advantages"]).cpu() for r in trainer.rounds]
    model = trainer.accelerator.unwrap_model(trainer.model)
    if backend == "zero3":  # parameters are sharded: gather them to save
        import deepspeed

        with deepspeed.zero.GatheredParameters(list(model.parameters())):
            params = snapshot(model)
    else:
        params = snapshot(model)
    if trainer.accelerator.is_main_process:
        torch.save(
            {
                "params": params,
                "advantages": advantages,
                "world": trainer.accelerator.num_processes,
            },
            out,
        )


if __name__ == "__main__":
    main(*sys.argv[1:])
    leave_process_group()
