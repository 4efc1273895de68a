"""DAPO dynamic sampling: exactly the uniform groups are dropped, the batch is refilled with fresh prompts to its
size, and at the round limit the run goes on with the missing groups masked out and a warning."""

from __future__ import annotations

import logging

import pytest
import torch

from tests.tiny import GROUP, snapshot, train_args, uniform_or_mixed
from tests.tiny import DynamicRecorder as Recorder
from tests.tiny import uniform_or_mixed_dataset as dataset
from trl_lite import LitePPOConfig, LitePPOTrainer
from trl_lite.dynamic_sampling import select_groups


def _settings(tmp_path, **overrides):
    # 2 groups of 4 per generation batch and per step (GA 1), so a batch often holds a uniform group
    settings = dict(per_device_train_batch_size=2 * GROUP, num_generations=GROUP, max_steps=3, dynamic_sampling=True)
    return train_args(tmp_path, **{**settings, **overrides})


def test_drops_exactly_the_uniform_groups_and_refills(tiny_model_dir, tmp_path):
    args = LitePPOConfig(**_settings(tmp_path, dynamic_sampling_max_rounds=20))
    trainer = Recorder(model=tiny_model_dir, reward_funcs=uniform_or_mixed, args=args, train_dataset=dataset(6, 6))
    trainer.train()
    rounds = [row["generation/rounds"] for row in trainer.state.log_history if "generation/rounds" in row]
    assert len(rounds) == 3 and sum(rounds) == len(trainer.generated)
    assert sum(rounds) > 3  # at least one batch needed a refill (6 of 12 prompts are uniform)
    # Replay the rule on what was generated: per step, the first 2 groups with reward spread, in generation order
    generated = iter(trainer.generated)
    for count, (prompts, trainable, _) in zip(rounds, trainer.trained):
        groups = [group for _ in range(int(count)) for group in next(generated)]
        expected = [prompt for prompt, rewards in groups if max(rewards) != min(rewards)][:2]
        assert all("b" in prompt for prompt in expected)
        assert sorted(prompts[::1]) == sorted(p for p in expected for _ in range(GROUP))  # order is shuffled by TRL
        assert trainable == [True] * 2 * GROUP  # full size, nothing masked
    total = [row["generation/completions_total"] for row in trainer.state.log_history
             if "generation/completions_total" in row]
    assert total[-1] == sum(rounds) * 2 * GROUP
    per_step = [row["generation/completions_per_optimizer_step"] for row in trainer.state.log_history
                if "generation/completions_per_optimizer_step" in row]
    assert per_step == [r * 2 * GROUP for r in rounds]  # one optimizer step per generation batch here


def test_stops_at_the_round_limit_with_a_warning(tiny_model_dir, tmp_path, caplog):
    args = LitePPOConfig(**_settings(tmp_path, dynamic_sampling_max_rounds=2, max_steps=1))
    trainer = Recorder(model=tiny_model_dir, reward_funcs=uniform_or_mixed, args=args, train_dataset=dataset(6, 0))
    before = snapshot(trainer.model)
    with caplog.at_level(logging.WARNING, logger="trl_lite"):
        trainer.train()
    log = trainer.state.log_history[0]
    assert log["generation/rounds"] == 3  # the first round + dynamic_sampling_max_rounds
    assert log["generation/frac_groups_masked"] == 1.0
    assert "2 of 2 groups still had no reward spread after 2 extra generation rounds" in caplog.text
    prompts, trainable, lengths = trainer.trained[0]
    assert len(prompts) == 2 * GROUP and trainable == [False] * 2 * GROUP and lengths == [0] * 2 * GROUP
    after = snapshot(trainer.model)
    for name in before:  # every group masked: SGD moves nothing
        torch.testing.assert_close(after[name], before[name], rtol=0, atol=0)


def test_select_groups_pads_prompts_left_and_completions_right():
    round_a = {"prompt_ids": torch.tensor([[1, 2], [3, 4]]), "completion_ids": torch.tensor([[5], [6]]),
               "completion_mask": torch.tensor([[1], [1]]), "advantages": torch.tensor([0.5, -0.5]),
               "num_items_in_batch": torch.tensor(2)}
    round_b = {"prompt_ids": torch.tensor([[7, 8, 9], [7, 8, 9]]), "completion_ids": torch.tensor([[1, 2], [3, 0]]),
               "completion_mask": torch.tensor([[1, 1], [1, 0]]), "advantages": torch.tensor([1.0, -1.0]),
               "num_items_in_batch": torch.tensor(3)}
    # groups of 1: round 1's group 0, then round 0's group 1
    out = select_groups([round_a, round_b], [(1, 0), (0, 1)], group_size=1, pad_token_id=0)
    assert out["prompt_ids"].tolist() == [[7, 8, 9], [0, 3, 4]]  # left-padded
    assert out["completion_ids"].tolist() == [[1, 2], [6, 0]]  # right-padded
    assert out["completion_mask"].tolist() == [[1, 1], [1, 0]]
    assert out["advantages"].tolist() == [1.0, -0.5]
    with pytest.raises(ValueError, match="dynamic_sampling does not support batches with 'num_images'"):
        select_groups([{**round_a, "num_images": [1, 1]}], [(0, 0)], group_size=1, pad_token_id=0)


def test_bad_settings_are_refused(tiny_model_dir, tmp_path):
    with pytest.raises(ValueError, match=r"dynamic_sampling_max_rounds=-1 is not supported; expected an int >= 0"):
        LitePPOConfig(**_settings(tmp_path, dynamic_sampling_max_rounds=-1))
    args = LitePPOConfig(**_settings(tmp_path))
    with pytest.raises(ValueError, match="dynamic_sampling=True is not supported with an IterableDataset"):
        LitePPOTrainer(model=tiny_model_dir, reward_funcs=uniform_or_mixed, args=args,
                       train_dataset=dataset(2, 2).to_iterable_dataset())


@pytest.mark.slow
def test_two_processes_fill_their_own_batches(tiny_model_dir, tmp_path):
    # Each process keeps whole groups of its own generation batch; both generate the same number of rounds.
    from tests.distributed.test_multiprocess import _launch

    result = _launch(2, tiny_model_dir, tmp_path / "two.pt", "token-mean", "dynamic")
    assert result["world"] == 2
    assert result["rounds_per_rank"][0] == result["rounds_per_rank"][1]  # same generation rounds on both
    assert sum(result["rounds"]) > 3  # refills happened
    for rank_steps in result["trained"]:
        assert len(rank_steps) == 3
        for prompts, trainable in rank_steps:
            assert len(prompts) == 2 * GROUP and all(trainable)
            assert all("b" in prompt for prompt in prompts)  # only groups with reward spread
