"""The rest of GRPOTrainer 1.16's surface: its constructor keyword for keyword, optional `reward_funcs` with an
environment that owns the reward, the cispo / sapo / vespo objectives and `normalize_then_sum`, composed with Lite
PPO's advantages and aggregations. Parity with TRL where TRL runs the same setting; exactness under accumulation
everywhere."""

import inspect
import json

import pytest
import torch
from trl import GRPOConfig, GRPOTrainer

from tests.tiny import (
    assert_same_weights,
    deterministic_rollout,
    prompt_dataset,
    reward_digit_count,
    reward_has_seven,
    snapshot,
    train_args,
)
from trl_lite import LitePPOConfig, LitePPOTrainer
from trl_lite.advantages import normalize_then_sum
from trl_lite.aggregation import AGGREGATIONS

F64 = {"dtype": torch.float64}


def _run(trainer_cls, config_cls, model_dir, output_dir, reward_funcs=reward_digit_count, rollout=None, **fields):
    args = config_cls(**train_args(output_dir, **fields))
    trainer = trainer_cls(model=model_dir, reward_funcs=reward_funcs, args=args, train_dataset=prompt_dataset(),
                          rollout_func=rollout)
    trainer.train()
    return trainer


def _losses(trainer):
    return [log["loss"] for log in trainer.state.log_history if "loss" in log]


def _trained(trainer, model_dir):
    initial, trained = snapshot(type(trainer.model).from_pretrained(model_dir)), snapshot(trainer.model)
    return max((trained[k] - initial[k]).abs().max().item() for k in initial)


# ------------------------------------------------------------------ constructor
def test_constructor_signature_mirrors_grpo_trainer():
    ours = inspect.signature(LitePPOTrainer.__init__).parameters
    theirs = inspect.signature(GRPOTrainer.__init__).parameters
    assert list(ours) == list(theirs)
    for name, parameter in theirs.items():
        assert ours[name].default == parameter.default, name
        assert ours[name].kind == parameter.kind, name


def test_misspelled_keyword_is_a_type_error(tiny_model_dir, tmp_path):
    with pytest.raises(TypeError, match="train_datset"):
        LitePPOTrainer(model=tiny_model_dir, reward_funcs=reward_digit_count,
                       args=LitePPOConfig(**train_args(tmp_path)), train_datset=prompt_dataset())


class CountingEnv:
    """An environment that owns the reward: the number of times `count` was called with a digit."""

    def __init__(self):
        self.calls = 0

    def reset(self, **kwargs):
        self.calls = 0
        return None

    def count(self, digit: str) -> str:
        """Counts one digit.

        Args:
            digit: a digit.
        """
        self.calls += 1
        return "ok"

    def get_reward(self) -> float:
        return float(self.calls)


def test_reward_funcs_are_optional_when_the_environment_owns_the_reward(qwen3_model_dir, tmp_path):
    # tool calling needs a chat template that renders tool calls: the Qwen3 model's (the character model's cannot)
    args = LitePPOConfig(**train_args(tmp_path, max_steps=1))
    trainer = LitePPOTrainer(model=qwen3_model_dir, args=args, train_dataset=prompt_dataset(conversational=True),
                             environment_factory=CountingEnv)
    assert trainer.reward_func_names == ["CountingEnv"]
    trainer.train()
    assert any("rewards/CountingEnv/mean" in log for log in trainer.state.log_history)


def test_no_reward_source_is_trl_error(tiny_model_dir, tmp_path):
    with pytest.raises(ValueError, match="No reward source provided"):
        LitePPOTrainer(model=tiny_model_dir, args=LitePPOConfig(**train_args(tmp_path)), train_dataset=prompt_dataset())


def test_soft_overlong_punishment_alone_is_a_reward_source(tiny_model_dir, tmp_path):
    args = LitePPOConfig(**train_args(tmp_path, soft_overlong_punishment=True))
    trainer = LitePPOTrainer(model=tiny_model_dir, args=args, train_dataset=prompt_dataset())
    assert len(trainer.reward_funcs) == 1 and trainer.reward_weights.tolist() == [1.0]


# ------------------------------------------------------------------ objectives: parity with TRL
# num_iterations=2: the second pass over each batch has a ratio != 1, so the caps and gates of the objectives act.
# epsilon_high: cispo caps the ratio itself at epsilon_high (TRL recommends 5.0); 1.01 makes the cap bite here.
OBJECTIVE_PARITY = [
    ({"loss_type": "cispo", "loss_aggregation": "token-mean", "epsilon_high": 1.01},
     {"loss_type": "cispo", "epsilon_high": 1.01}),
    ({"loss_type": "vespo", "loss_aggregation": "token-mean"}, {"loss_type": "vespo"}),
    ({"loss_type": "sapo", "loss_aggregation": "seq-mean-token-mean"}, {"loss_type": "sapo"}),
]


@pytest.mark.parametrize("ours, theirs", OBJECTIVE_PARITY, ids=["cispo", "vespo", "sapo"])
def test_objective_matches_trl(tiny_model_dir, tmp_path, ours, theirs):
    common = dict(max_steps=3, gradient_accumulation_steps=2, num_iterations=2, model_init_kwargs=F64)
    lite = _run(LitePPOTrainer, LitePPOConfig, tiny_model_dir, tmp_path / "lite", advantage_std="group", **ours,
                **common)
    ref = _run(GRPOTrainer, GRPOConfig, tiny_model_dir, tmp_path / "trl", scale_rewards="group", **theirs, **common)
    assert lite.loss_type == theirs["loss_type"]
    assert len(_losses(lite)) == 3
    assert _losses(lite) == pytest.approx(_losses(ref), abs=1e-6)
    assert _trained(lite, tiny_model_dir) > 1e-3
    assert_same_weights(lite, ref)


def test_cispo_cap_is_active_in_the_parity_run(tiny_model_dir, tmp_path):
    # the parity above would hold trivially if no ratio ever exceeded the cap
    lite = _run(LitePPOTrainer, LitePPOConfig, tiny_model_dir, tmp_path, advantage_std="group", loss_type="cispo",
                epsilon_high=1.01, max_steps=3, gradient_accumulation_steps=2, num_iterations=2, model_init_kwargs=F64)
    assert any(log.get("cispo_clip_ratio", 0) > 0 for log in lite.state.log_history)
    # the clipped-token diagnostics follow cispo's rule: ratio above epsilon_high with a positive advantage, no low bound
    lines = [json.loads(line) for line in (tmp_path / "clipped_tokens.jsonl").read_text().splitlines()]
    assert sum(line["high_total"] for line in lines) > 0
    assert sum(line["low_total"] for line in lines) == 0


def test_normalize_then_sum_matches_trl(tiny_model_dir, tmp_path):
    # TRL normalizes each function within its group, sums with the weights, then takes batch mean and batch std
    common = dict(max_steps=3, gradient_accumulation_steps=2, model_init_kwargs=F64,
                  multi_objective_aggregation="normalize_then_sum", reward_weights=[1.0, 0.5])
    funcs = [reward_digit_count, reward_has_seven]
    lite = _run(LitePPOTrainer, LitePPOConfig, tiny_model_dir, tmp_path / "lite", reward_funcs=funcs,
                advantage_mean="batch", advantage_std="batch", **common)
    ref = _run(GRPOTrainer, GRPOConfig, tiny_model_dir, tmp_path / "trl", reward_funcs=funcs, loss_type="dapo",
               **common)
    assert _losses(lite) == pytest.approx(_losses(ref), abs=1e-6)
    assert _trained(lite, tiny_model_dir) > 1e-3
    assert_same_weights(lite, ref)


def test_normalize_then_sum_by_hand():
    # two groups of 2, two functions, weights (1, 0.5), eps 0
    # f1: group 1 = (1, 3): mean 2, Bessel std sqrt(2) -> (-1/sqrt2, 1/sqrt2); group 2 = (0, 0): std 0 -> 0 / eps
    # f2: group 1 = (0, 1): mean .5, std sqrt(.5) -> (-.5/sqrt.5, .5/sqrt.5) = (-1/sqrt2, 1/sqrt2);
    #     group 2 = (nan, 1): only 1 valid -> mean 1, std 0 -> (nan, 0)
    rewards = torch.tensor([[1.0, 0.0], [3.0, 1.0], [0.0, float("nan")], [0.0, 1.0]], dtype=torch.float64)
    out = normalize_then_sum(rewards, 2, torch.tensor([1.0, 0.5]), eps=1e-12)
    r = 2 ** -0.5
    torch.testing.assert_close(out, torch.tensor([-r - 0.5 * r, r + 0.5 * r, 0.0, 0.0], dtype=torch.float64))
    # a sample no function scored stays NaN; an invalid sample is NaN and out of its group's statistics
    rewards[2] = float("nan")
    assert torch.isnan(normalize_then_sum(rewards, 2, torch.tensor([1.0, 0.5]))[2])
    valid = torch.tensor([True, True, True, False])
    out = normalize_then_sum(rewards, 2, torch.tensor([1.0, 0.5]), eps=1e-12, valid=valid)
    assert torch.isnan(out[2:]).all() and out[0] == pytest.approx(-1.5 * r)


# ------------------------------------------------------------------ objectives: exact under accumulation
def _split(model_dir, output_dir, batch, accumulation, **fields):
    # float64 and a deterministic rollout: the differently split runs see the same samples (see test_exactness)
    return _run(LitePPOTrainer, LitePPOConfig, model_dir, output_dir, rollout=deterministic_rollout,
                per_device_train_batch_size=batch, gradient_accumulation_steps=accumulation, model_init_kwargs=F64,
                num_iterations=2, **fields)


@pytest.mark.parametrize("mode", AGGREGATIONS.names())
@pytest.mark.parametrize("loss_type", ["cispo", "sapo", "vespo"])
def test_objective_update_does_not_depend_on_micro_batching(tiny_model_dir, tmp_path, loss_type, mode):
    fields = dict(loss_type=loss_type, loss_aggregation=mode, overlong_filter=True, beta=0.1)
    if loss_type == "cispo":
        fields["epsilon_high"] = 1.01
    whole = _split(tiny_model_dir, tmp_path / "8x1", 8, 1, **fields)
    split = _split(tiny_model_dir, tmp_path / "2x4", 2, 4, **fields)
    assert _trained(whole, tiny_model_dir) > 1e-3
    assert _losses(split) == pytest.approx(_losses(whole), abs=1e-6)
    assert_same_weights(split, whole)


def test_sapo_scale_is_the_sequence_weight_over_trl_native_weight(tiny_model_dir, tmp_path):
    # sapo runs through TRL's per-micro-batch mean of per-sequence token means: sequence i weighs 1 / (B |o_i| G).
    # token-mean wants 1 / T. So each advantage is scaled by B |o_i| G / T; e.g. B=2, G=4, |o_i|=3, T=40 -> 0.6.
    args = LitePPOConfig(**train_args(tmp_path, loss_type="sapo", loss_aggregation="token-mean",
                                      per_device_train_batch_size=2, gradient_accumulation_steps=4))
    trainer = LitePPOTrainer(model=tiny_model_dir, reward_funcs=reward_digit_count, args=args,
                             train_dataset=prompt_dataset(), rollout_func=deterministic_rollout)
    captured = []
    original = trainer._set_loss_weights

    def capture(micro_batches, train):
        original(micro_batches, train)
        captured.append(micro_batches)

    trainer._set_loss_weights = capture
    trainer.train()
    for micro_batches in captured:
        lengths = [b["completion_mask"].sum(-1).double() for b in micro_batches]
        total = sum(length.sum() for length in lengths)
        for batch, length in zip(micro_batches, lengths):
            expected = 2 * length.clamp(min=1) * 4 / total
            torch.testing.assert_close(batch["lite_advantage_scale"].double(), expected.where(length > 0, 0.0),
                                       rtol=1e-6, atol=0)
