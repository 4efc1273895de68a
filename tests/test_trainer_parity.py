"""Parity with TRL's GRPOTrainer on the settings both support: same seed, SGD, per-step losses and final weights."""

import pytest
import torch
from trl import GRPOConfig, GRPOTrainer

from tests.tiny import prompt_dataset, reward_digit_count, snapshot, train_args
from trl_lite import LitePPOConfig, LitePPOTrainer

SETTINGS = [
    # (ours, TRL's)
    ({"advantage_mean": "group", "advantage_std": "batch", "loss_aggregation": "token-mean"},
     {"scale_rewards": "batch", "loss_type": "dapo"}),
    ({"advantage_mean": "group", "advantage_std": "group", "loss_aggregation": "seq-mean-token-mean"},
     {"scale_rewards": "group", "loss_type": "grpo"}),
    ({"advantage_mean": "group", "advantage_std": "none", "loss_aggregation": "seq-mean-token-sum-norm"},
     {"scale_rewards": "none", "loss_type": "dr_grpo"}),
    ({"advantage_mean": "group", "advantage_std": "group", "loss_aggregation": "seq-mean-token-sum"},
     {"scale_rewards": "group", "loss_type": "luspo"}),
]


def _run(trainer_cls, config_cls, model_dir, output_dir, **fields):
    args = config_cls(**train_args(output_dir, max_steps=3, gradient_accumulation_steps=2, **fields))
    trainer = trainer_cls(model=model_dir, reward_funcs=reward_digit_count, args=args, train_dataset=prompt_dataset())
    trainer.train()
    losses = [log["loss"] for log in trainer.state.log_history if "loss" in log]
    return losses, snapshot(trainer.model), trainer


@pytest.mark.parametrize("ours, theirs", SETTINGS, ids=["lite_ppo-vs-dapo", "grpo", "dr_grpo", "luspo"])
def test_matches_trl(tiny_model_dir, tmp_path, ours, theirs):
    lite_losses, lite_params, lite = _run(LitePPOTrainer, LitePPOConfig, tiny_model_dir, tmp_path / "lite", **ours)
    trl_losses, trl_params, _ = _run(GRPOTrainer, GRPOConfig, tiny_model_dir, tmp_path / "trl", **theirs)
    assert len(lite_losses) == 3
    assert lite_losses == pytest.approx(trl_losses, abs=1e-6)
    initial = snapshot(type(lite.model).from_pretrained(tiny_model_dir))
    assert max((lite_params[k] - initial[k]).abs().max().item() for k in initial) > 1e-3  # it did train
    for name in trl_params:
        torch.testing.assert_close(lite_params[name], trl_params[name], rtol=0, atol=1e-6, msg=name)
