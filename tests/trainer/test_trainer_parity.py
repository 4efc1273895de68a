"""Parity with TRL's GRPOTrainer on the settings both support: same seed, SGD, per-step losses and final weights."""

import pytest
from trl import GRPOConfig, GRPOTrainer

from tests.tiny import assert_same_weights, snapshot, train_run
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


def _losses(trainer):
    return [log["loss"] for log in trainer.state.log_history if "loss" in log]


@pytest.mark.parametrize("ours, theirs", SETTINGS, ids=["lite_ppo-vs-dapo", "grpo", "dr_grpo", "luspo"])
def test_matches_trl(tiny_model_dir, tmp_path, ours, theirs):
    common = dict(max_steps=3, gradient_accumulation_steps=2)
    lite = train_run(LitePPOTrainer, LitePPOConfig, tiny_model_dir, tmp_path / "lite", **ours, **common)
    ref = train_run(GRPOTrainer, GRPOConfig, tiny_model_dir, tmp_path / "trl", **theirs, **common)
    assert len(_losses(lite)) == 3
    assert _losses(lite) == pytest.approx(_losses(ref), abs=1e-6)
    initial = snapshot(type(lite.model).from_pretrained(tiny_model_dir))
    trained = snapshot(lite.model)
    assert max((trained[k] - initial[k]).abs().max().item() for k in initial) > 1e-3  # it did train
    assert_same_weights(lite, ref)
