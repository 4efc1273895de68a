"""Run by tests/test_multiprocess.py under `torchrun --nproc_per_node N`: one Lite PPO step over a global batch of 8
deterministic rollouts, then rank 0 saves the weights and the gathered advantages.

    torchrun --nproc_per_node 2 tests/dist_run.py MODEL_DIR OUT.pt LOSS_AGGREGATION
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from tests.tiny import RecordingTrainer, deterministic_rollout, prompt_dataset, reward_digit_count, snapshot, train_args  # noqa: E402
from trl_lite import LitePPOConfig  # noqa: E402


def main(model_dir: str, out: str, mode: str):
    world = int(os.environ.get("WORLD_SIZE", "1"))
    args = LitePPOConfig(
        **train_args(
            os.path.dirname(out) + f"/run-{world}",
            per_device_train_batch_size=8 // world,  # the global batch is 8 whatever the process count
            loss_aggregation=mode,
            overlong_filter=True,
            advantage_mean="batch",  # statistics that span processes
            advantage_std="batch",
            model_init_kwargs={"dtype": torch.float64},  # see tests/test_exactness.py
        )
    )
    trainer = RecordingTrainer(
        model=model_dir, reward_funcs=reward_digit_count, args=args, train_dataset=prompt_dataset(),
        rollout_func=deterministic_rollout,
    )
    trainer.train()
    advantages = [trainer.accelerator.gather(r["advantages"]).cpu() for r in trainer.rounds]
    if trainer.accelerator.is_main_process:
        torch.save(
            {
                "params": snapshot(trainer.accelerator.unwrap_model(trainer.model)),
                "advantages": advantages,
                "world": trainer.accelerator.num_processes,
            },
            out,
        )


if __name__ == "__main__":
    main(*sys.argv[1:])
