"""Every aggregation gives the same update however the optimizer step is split into micro-batches, and the overlong
filter keeps truncated completions out of the loss and the statistics. Completions come from a deterministic
`rollout_func`, so differently split runs see exactly the same samples."""

import pytest
import torch

from trl import GRPOConfig, GRPOTrainer

from tests.tiny import (
    RecordingTrainer,
    assert_same_weights,
    deterministic_rollout,
    prompt_dataset,
    reward_digit_count,
    snapshot,
    train_args,
    train_run,
)
from trl_lite import LitePPOConfig, LitePPOTrainer, normalize_advantages
from trl_lite.aggregation import AGGREGATIONS


def _train(model_dir, output_dir, **fields):
    # float64: differently split runs pad and sum in a different order, which in float32 alone moves weights by
    # ~1e-5; in float64 that noise is ~1e-9 (the logits stay float32), so a 1e-6 tolerance only hides rounding.
    args = LitePPOConfig(**train_args(output_dir, model_init_kwargs={"dtype": torch.float64}, **fields))
    trainer = RecordingTrainer(
        model=model_dir,
        reward_funcs=reward_digit_count,
        args=args,
        train_dataset=prompt_dataset(),
        rollout_func=deterministic_rollout,
    )
    trainer.train()
    return trainer


SPLITS = [  # (per_device_train_batch_size, gradient_accumulation_steps): one optimizer step of 8 samples
    (8, 1),
    (4, 2),
    (2, 4),
]


def _split_runs(model_dir, tmp_path, splits, **fields):
    """The same training, once per (per_device_train_batch_size, gradient_accumulation_steps) split."""
    return [
        _train(model_dir, tmp_path / f"{batch}x{accumulation}", per_device_train_batch_size=batch,
               gradient_accumulation_steps=accumulation, **fields)
        for batch, accumulation in splits
    ]


@pytest.mark.parametrize("overlong_filter", [False, True], ids=["all", "overlong_filter"])
@pytest.mark.parametrize("mode", AGGREGATIONS.names())
def test_update_does_not_depend_on_micro_batching(tiny_model_dir, tmp_path, mode, overlong_filter):
    runs = _split_runs(tiny_model_dir, tmp_path, SPLITS, loss_aggregation=mode, overlong_filter=overlong_filter)
    truncated = torch.cat([r["truncated"] for r in runs[0].rounds])
    assert 0 < truncated.float().mean() < 1  # the fixture has both kinds
    initial, trained = snapshot(type(runs[0].model).from_pretrained(tiny_model_dir)), snapshot(runs[0].model)
    assert max((trained[k] - initial[k]).abs().max().item() for k in initial) > 1e-3
    losses = [[log["loss"] for log in run.state.log_history if "loss" in log] for run in runs]
    for other, other_losses in zip(runs[1:], losses[1:]):
        assert other_losses == pytest.approx(losses[0], abs=1e-6)
        assert_same_weights(other, runs[0])


@pytest.mark.parametrize("mode", ["seq-mean-token-mean", "seq-mean-token-sum-norm"])
def test_kl_term_is_aggregated_like_the_policy_term(tiny_model_dir, tmp_path, mode):
    # beta > 0 with a reference model: the KL term follows the same aggregation, so splits still agree.
    # max_steps=3: the KL is 0 at step 1 (policy == reference); steps 2-3 test it
    runs = _split_runs(tiny_model_dir, tmp_path, SPLITS[:2], loss_aggregation=mode, beta=0.5, max_steps=3)
    assert all(any(log.get("kl", 0) > 0 for log in run.state.log_history) for run in runs)
    assert_same_weights(runs[1], runs[0])


def test_kl_reweighting_matches_trl_grpo(tiny_model_dir, tmp_path):
    # TRL's "grpo" adds the KL to every token before its sequence-level mean; ours must do the same
    common = dict(max_steps=3, beta=0.5, gradient_accumulation_steps=2, model_init_kwargs={"dtype": torch.float64})
    lite = train_run(LitePPOTrainer, LitePPOConfig, tiny_model_dir, tmp_path / "lite",
                     loss_aggregation="seq-mean-token-mean", advantage_std="group", **common)
    ref = train_run(GRPOTrainer, GRPOConfig, tiny_model_dir, tmp_path / "trl", loss_type="grpo", scale_rewards="group",
                    **common)
    assert any(log.get("kl", 0) > 0 for log in lite.state.log_history)
    assert_same_weights(lite, ref)


def test_overlong_filter_zeroes_truncated_and_keeps_others_statistics(tiny_model_dir, tmp_path):
    trainer = _train(tiny_model_dir, tmp_path / "run", overlong_filter=True, per_device_train_batch_size=8)
    for round_ in trainer.rounds:
        truncated, rewards, adv = round_["truncated"], round_["rewards"].double(), round_["advantages"].double()
        assert truncated.any() and (~truncated).any()
        assert (adv[truncated] == 0).all()
        assert (round_["completion_mask"][truncated] == 0).all()  # out of the loss too
        # the kept samples' advantages are those of the batch without the truncated ones, whatever they scored
        expected = normalize_advantages(rewards, 4, valid=~truncated)
        torch.testing.assert_close(adv, expected, rtol=0, atol=1e-5)
        scrambled = rewards.clone()
        scrambled[truncated] = 1000.0
        torch.testing.assert_close(normalize_advantages(scrambled, 4, valid=~truncated), expected)
    logs = [log for log in trainer.state.log_history if "overlong/frac_filtered" in log]
    assert logs and all(0 < log["overlong/frac_filtered"] == log["overlong/frac_truncated"] for log in logs)


def test_without_filter_truncated_samples_count(tiny_model_dir, tmp_path):
    trainer = _train(tiny_model_dir, tmp_path / "run", per_device_train_batch_size=8)
    round_ = trainer.rounds[0]
    expected = normalize_advantages(round_["rewards"].double(), 4)
    torch.testing.assert_close(round_["advantages"].double(), expected, rtol=0, atol=1e-5)
    assert all(log["overlong/frac_filtered"] == 0.0 for log in trainer.state.log_history if "overlong/frac_filtered" in log)


class BufferRecordingTrainer(RecordingTrainer):
    """Also keeps the micro-batches of each generation round, with the weights attached to them."""

    def _prepare_inputs(self, generation_batch):
        previous = self._buffered_inputs
        inputs = super()._prepare_inputs(generation_batch)
        if self.model.training and self._buffered_inputs is not previous:
            self.buffers = getattr(self, "buffers", []) + [list(self._buffered_inputs)]
        return inputs


def test_each_optimizer_step_normalizes_by_its_own_tokens(tiny_model_dir, tmp_path):
    # steps_per_generation=2, gradient_accumulation_steps=1: one generation round feeds two optimizer steps. Token-mean
    # must divide each step by that step's loss tokens, not by the round's average (TRL's dapo uses
    # num_items_in_batch * accumulation / steps_per_generation).
    args = LitePPOConfig(**train_args(tmp_path, steps_per_generation=2, max_steps=2))
    trainer = BufferRecordingTrainer(
        model=tiny_model_dir, reward_funcs=reward_digit_count, args=args, train_dataset=prompt_dataset(),
        rollout_func=deterministic_rollout,
    )
    trainer.train()
    (buffer,) = trainer.buffers  # 2 optimizer steps from one round
    tokens = [int(b["completion_mask"].sum()) for b in buffer]
    assert tokens[0] != tokens[1]  # otherwise the average would be right by luck
    for batch, own in zip(buffer, tokens):
        # TRL's normalizer: num_items_in_batch / processes * accumulation / steps_per_generation = own tokens
        assert batch["num_items_in_batch"].item() * 1 / 2 == own
        assert torch.equal(batch["lite_advantage_scale"], torch.ones(4))


def test_sequence_mean_over_steps_within_a_round_matches_trl(tiny_model_dir, tmp_path):
    # TRL's "grpo" is exact per micro-batch when every sequence has tokens; with steps_per_generation=2 the weights
    # must be computed per optimizer step, not per generation round, to agree with it.
    common = dict(steps_per_generation=2, max_steps=4, model_init_kwargs={"dtype": torch.float64})
    lite = train_run(LitePPOTrainer, LitePPOConfig, tiny_model_dir, tmp_path / "lite",
                     loss_aggregation="seq-mean-token-mean", advantage_std="group", **common)
    ref = train_run(GRPOTrainer, GRPOConfig, tiny_model_dir, tmp_path / "trl", loss_type="grpo", scale_rewards="group",
                    **common)
    assert_same_weights(lite, ref)


def test_truncated_means_cut_by_the_length_limit(tiny_model_dir, tmp_path):
    # vLLM's finish_reason="length": max_completion_length tokens without a final EOS. Per group of 4 completions
    # (max_completion_length=4): [4 digits, no EOS] truncated; [3 digits + EOS] finished; [2 digits, stopped early
    # without EOS, as a stop string ends a vLLM completion] finished; [3 digits + the padding token] truncated (TRL's
    # rule, "the last token is neither EOS nor padding", gets the last two wrong).
    def rollout(prompts, trainer):
        tokenizer = trainer.processing_class
        one, pad, eos = tokenizer.convert_tokens_to_ids("1"), tokenizer.pad_token_id, tokenizer.eos_token_id
        kinds = [[one] * 4, [one] * 3 + [eos], [one] * 2, [one] * 3 + [pad]]
        completions = [kinds[i % 4] for i in range(len(prompts))]
        return {"prompt_ids": [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts],
                "completion_ids": completions, "logprobs": [[0.0] * len(c) for c in completions]}

    args = LitePPOConfig(**train_args(tmp_path, max_steps=1, max_completion_length=4, overlong_filter=True))
    trainer = RecordingTrainer(model=tiny_model_dir, reward_funcs=reward_digit_count, args=args,
                               train_dataset=prompt_dataset(), rollout_func=rollout)
    trainer.train()
    assert trainer.rounds[0]["truncated"].tolist() == [True, False, False, True]
    assert trainer.rounds[0]["completion_mask"].sum(-1).tolist()[0] == 0  # the filter masks the truncated one
    assert trainer.rounds[0]["completion_mask"].sum(-1).tolist()[2] == 2
