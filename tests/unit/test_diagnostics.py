"""The diagnostics' pure functions on hand-made batches with known answers (float64, arithmetic in comments)."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch

from trl_lite.advantages import resolve_auto_std, uniform_groups, zero_std_group_fraction
from trl_lite.diagnostics import (
    clipped_token_masks,
    clipped_token_table,
    count_tokens,
    masked_mean_by,
    repeats_itself,
    repetition_shares,
    reward_concentration,
)


def test_clipped_token_masks_follow_trl_rule():
    # eps_low 0.2, eps_high 0.28: low clip needs ratio < 0.8 and A < 0, high clip needs ratio > 1.28 and A > 0
    coef = torch.tensor([[0.70, 1.30, 1.00, 0.79], [0.70, 1.30, 1.27, 1.29]], dtype=torch.float64)
    advantages = torch.tensor([-1.0, 2.0], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])
    low, high = clipped_token_masks(coef, advantages, mask, 0.2, 0.28)
    # row 0 (A<0): 0.70 < 0.8 -> low; 1.30 is high but A<0 -> not clipped; 0.79 masked out
    assert low.tolist() == [[True, False, False, False], [False, False, False, False]]
    # row 1 (A>0): 1.30 and 1.29 > 1.28 -> high; 0.70 is below 0.8 but A>0 -> not clipped
    assert high.tolist() == [[False, False, False, False], [False, True, False, True]]
    # sequence-level ratios (B, 1) broadcast over the tokens
    low, high = clipped_token_masks(torch.tensor([[0.5], [2.0]]), advantages, mask, 0.2, 0.28)
    assert low.sum().item() == 3 and high.sum().item() == 4


def test_count_tokens_and_table():
    ids = torch.tensor([[5, 6, 5, 7], [5, 7, 8, 9]])
    selected = torch.tensor([[1, 1, 1, 0], [1, 0, 1, 0]]).bool()
    assert count_tokens(ids, selected) == Counter({5: 3, 6: 1, 8: 1})
    low = Counter({5: 3, 6: 1, 8: 1})  # 5 clipped tokens at the low bound
    high = Counter({9: 2, 4: 2, 3: 1})  # 5 at the high bound, tie between 4 and 9 broken by id
    rows = clipped_token_table(low, high, decode=lambda i: f"<{i}>", top_k=2)
    assert rows == [
        {"bound": "low", "token": "<5>", "token_id": 5, "count": 3, "share": 3 / 5},
        {"bound": "low", "token": "<6>", "token_id": 6, "count": 1, "share": 1 / 5},
        {"bound": "high", "token": "<4>", "token_id": 4, "count": 2, "share": 2 / 5},
        {"bound": "high", "token": "<9>", "token_id": 9, "count": 2, "share": 2 / 5},
    ]
    assert clipped_token_table(Counter(), Counter(), decode=str) == []


@pytest.mark.parametrize(
    "text, kwargs, expected",
    [
        ("so the answer is " + "abc" * 10, {}, True),  # period 3, 30-token loop
        ("so the answer is " + "abc" * 9 + "ab", {}, True),  # cut in the middle of a copy: still period 3
        ("xyz" + "a" * 24, {}, True),  # period 1 over 24 tokens
        ("xyz" + "a" * 23, {}, False),  # 23 < min_span 24
        ("the sum of 12 and 30 is 42, so the answer is 42", {}, False),
        ("q" + "abcd" * 2, {"min_span": 4}, False),  # 2 copies < min_repeats 3
        ("q" + "abcd" * 3, {"min_span": 4}, True),
        ("ab" * 40, {"max_period": 1}, False),  # period 2 is beyond max_period 1
        ("", {}, False),
    ],
)
def test_repeats_itself(text, kwargs, expected):
    assert repeats_itself([ord(c) for c in text], **kwargs) is expected


def test_repetition_shares():
    repetitive = torch.tensor([1, 1, 0, 0, 1, 0]).bool()
    truncated = torch.tensor([1, 1, 1, 0, 0, 0]).bool()
    correct = torch.tensor([0, 0, 1, 1, 1, 1]).bool()
    shares = repetition_shares(repetitive, truncated, correct)
    assert shares["frac"] == pytest.approx(3 / 6)
    assert shares["frac_truncated"] == pytest.approx(2 / 3)  # samples 0,1 of 0,1,2
    assert shares["frac_finished"] == pytest.approx(1 / 3)  # sample 4 of 3,4,5
    assert shares["frac_correct"] == pytest.approx(1 / 4)  # sample 4 of 2..5
    assert shares["frac_incorrect"] == pytest.approx(2 / 2)
    none_truncated = repetition_shares(repetitive, torch.zeros(6, dtype=torch.bool), correct)
    assert math.isnan(none_truncated["frac_truncated"])  # share of an empty set


def test_reward_concentration():
    # 3 groups of 4: all correct, all wrong, 2 of 4 correct
    correct = torch.tensor([1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 1, 0]).bool()
    rewards = correct.double()
    stats = reward_concentration(correct, rewards, group_size=4)
    assert stats["frac_groups_all_correct"] == pytest.approx(1 / 3)
    assert stats["frac_groups_all_wrong"] == pytest.approx(1 / 3)
    assert stats["frac_groups_mixed"] == pytest.approx(1 / 3)
    # group stds: 0, 0, sqrt(4 * 0.25 / 3) = 0.57735 -> mean 0.19245
    assert stats["group_std_mean"] == pytest.approx(math.sqrt(1 / 3) / 3)
    # batch: 6 ones of 12, mean 0.5, var = 12 * 0.25 / 11 -> std 0.52223
    assert stats["batch_std"] == pytest.approx(math.sqrt(3 / 11))


def test_masked_mean_by():
    values = torch.tensor([2.0, 4.0, 9.0], dtype=torch.float64)  # per-sequence entropy sums
    counts = torch.tensor([1.0, 3.0, 3.0], dtype=torch.float64)  # tokens
    correct = torch.tensor([True, True, False])
    assert masked_mean_by(values, counts, correct) == pytest.approx((6 / 4, 9 / 3))  # (2+4)/(1+3), 9/3
    first, second = masked_mean_by(values, counts, torch.ones(3, dtype=torch.bool))
    assert first == pytest.approx(15 / 7) and math.isnan(second)


def test_uniform_groups_and_auto_std():
    nan = float("nan")
    # groups of 2: [1,1] uniform, [0,1] mixed, [0,0] uniform, [nan,1] one counted sample -> uniform, [nan,nan] none
    rewards = torch.tensor([1, 1, 0, 1, 0, 0, nan, 1, nan, nan], dtype=torch.float64)
    assert uniform_groups(rewards, 2).tolist() == [True, False, True, True, True]
    # the share leaves out the group with nothing counted: 3 uniform of 4
    assert zero_std_group_fraction(rewards, 2) == pytest.approx(3 / 4)
    # the overlong filter can make a mixed group uniform: drop the 0 of group 1
    valid = torch.tensor([1, 1, 0, 1, 1, 1, 1, 1, 1, 1]).bool()
    assert uniform_groups(rewards, 2, valid).tolist()[1] is True
    # auto: share 0.75 -> dropped at threshold 0.75, kept at 0.8
    assert resolve_auto_std(rewards, 2, threshold=0.75) == "none"
    assert resolve_auto_std(rewards, 2, threshold=0.8) == "batch"
    assert resolve_auto_std(torch.full((4,), nan, dtype=torch.float64), 2, threshold=0.0) == "batch"  # no group


# ---------------------------------------------------------------------------------------------- inside the trainer
import json  # noqa: E402
import os  # noqa: E402

from tests.tiny import CHARS, RecordingTrainer, prompt_dataset, reward_digit_count, reward_has_seven, train_args  # noqa: E402
from trl_lite import LitePPOConfig, LitePPOTrainer, normalize_advantages  # noqa: E402


class ProbeTrainer(LitePPOTrainer):
    """Records each loss call's loss-token counts (all, and of correct completions)."""

    def _compute_loss(self, model, inputs):
        loss = super()._compute_loss(model, inputs)
        mask = self._loss_mask(inputs)
        self.probe = getattr(self, "probe", [])
        self.probe.append({"tokens": mask.sum().item(),
                           "correct": (mask.sum(-1) * inputs["lite_correct"]).sum().item()})
        return loss


def test_clipped_tokens_and_entropy_agree_with_trl_metrics(tiny_model_dir, tmp_path):
    # One generation batch of 4 prompts x 4 trained over 4 optimizer steps (GA 1, one micro-batch per step and per
    # log): steps 2-4 are off-policy, and lr 0.5 SGD moves the ratios far enough to clip. "Correct" = any digit.
    args = LitePPOConfig(**train_args(tmp_path, steps_per_generation=4, max_steps=4, epsilon_high=0.28))
    trainer = ProbeTrainer(model=tiny_model_dir, reward_funcs=reward_digit_count, args=args,
                           train_dataset=prompt_dataset())
    trainer.train()
    with open(os.path.join(tmp_path, "clipped_tokens.jsonl")) as f:
        windows = [json.loads(line) for line in f]
    logs = [row for row in trainer.state.log_history if "clip_ratio/low_mean" in row]
    assert [w["step"] for w in windows] == [row["step"] for row in logs] == [1, 2, 3, 4]
    clipped_low = clipped_high = 0
    for window, log, probe in zip(windows, logs, trainer.probe):
        # TRL's clip fractions are the clipped tokens over the micro-batch's loss tokens
        assert window["low_total"] / probe["tokens"] == pytest.approx(log["clip_ratio/low_mean"], abs=1e-6)
        assert window["high_total"] / probe["tokens"] == pytest.approx(log["clip_ratio/high_mean"], abs=1e-6)
        for bound in ("low", "high"):
            rows = [r for r in window["tokens"] if r["bound"] == bound]
            assert sum(r["count"] for r in rows) == window[f"{bound}_total"]  # < top_k distinct tokens: all listed
            special = set(trainer.processing_class.all_special_ids)  # EOS is trained (and clipped) too
            assert all(r["token"] in CHARS or r["token_id"] in special for r in rows)
            if rows:
                assert sum(r["share"] for r in rows) == pytest.approx(1.0)
        clipped_low += window["low_total"]
        clipped_high += window["high_total"]
        # TRL's entropy is the token mean of the micro-batch: the token-weighted mix of correct and incorrect
        n_correct, n_incorrect = probe["correct"], probe["tokens"] - probe["correct"]
        mixed = (log.get("entropy/correct", 0.0) * n_correct + log.get("entropy/incorrect", 0.0) * n_incorrect)
        assert mixed / probe["tokens"] == pytest.approx(log["entropy"], rel=1e-4)
    assert clipped_low > 0 and clipped_high > 0  # the test exercises both bounds
    assert windows[0]["low_total"] == windows[0]["high_total"] == 0  # step 1 is on-policy: ratio 1


def _alternating_rollout(prompts, trainer):
    """Even positions: '7' x max_len without EOS (truncated, repeating, correct under has_seven); odd: '12' + EOS."""
    tokenizer = trainer.processing_class
    seven, one, two = tokenizer.convert_tokens_to_ids(["7", "1", "2"])
    out = {"prompt_ids": [], "completion_ids": [], "logprobs": []}
    for i, prompt in enumerate(prompts):
        ids = [seven] * trainer.max_completion_length if i % 2 == 0 else [one, two, tokenizer.eos_token_id]
        out["prompt_ids"].append(tokenizer(prompt, add_special_tokens=False)["input_ids"])
        out["completion_ids"].append(ids)
        out["logprobs"].append([0.0] * len(ids))
    return out


def test_generation_diagnostics_on_a_known_batch(tiny_model_dir, tmp_path):
    args = LitePPOConfig(**train_args(tmp_path, max_completion_length=30, per_device_train_batch_size=16, max_steps=1))
    trainer = LitePPOTrainer(model=tiny_model_dir, reward_funcs=reward_has_seven, args=args,
                             train_dataset=prompt_dataset(), rollout_func=_alternating_rollout)
    trainer.train()
    log = trainer.state.log_history[0]
    # 16 completions, 4 groups of [7s, 12, 7s, 12]: the 8 runs of '7' are truncated, repeating and correct
    expected = {
        "repetition/frac": 0.5, "repetition/frac_truncated": 1.0, "repetition/frac_finished": 0.0,
        "repetition/frac_correct": 1.0, "repetition/frac_incorrect": 0.0,
        "rewards/frac_groups_all_correct": 0.0, "rewards/frac_groups_all_wrong": 0.0, "rewards/frac_groups_mixed": 1.0,
        "rewards/group_std_mean": math.sqrt(1 / 3),  # [1,0,1,0]: var = 4 * 0.25 / 3
        "rewards/batch_std": math.sqrt(16 * 0.25 / 15),
        "completions/mean_length_correct": 30.0, "completions/mean_length_incorrect": 3.0,  # '1', '2', EOS
        "overlong/frac_truncated": 0.5,
    }
    for key, value in expected.items():
        assert log[key] == pytest.approx(value, abs=1e-6), key


@pytest.mark.parametrize("threshold, kept", [(0.0, 0.0), (1.0, 1.0)])
def test_auto_std_takes_and_logs_its_branch(tiny_model_dir, tmp_path, threshold, kept):
    # threshold 0: any batch counts as concentrated -> std dropped; 1: only an all-uniform batch would be
    args = LitePPOConfig(**train_args(tmp_path, advantage_std="auto", auto_std_threshold=threshold,
                                      per_device_train_batch_size=8))
    trainer = RecordingTrainer(model=tiny_model_dir, reward_funcs=reward_digit_count, args=args,
                               train_dataset=prompt_dataset())
    trainer.train()
    assert [row["advantages/std_kept"] for row in trainer.state.log_history if "advantages/std_kept" in row] == [
        kept, kept]
    for batch in trainer.rounds:
        rewards = batch["rewards"].double()
        if zero_std_group_fraction(rewards, 4) == 1.0:
            continue  # a fully uniform batch drops the std at any threshold
        expected = normalize_advantages(rewards, 4, std="batch" if kept else "none")
        torch.testing.assert_close(batch["advantages"].double(), expected, rtol=0, atol=1e-5)


def test_soft_overlong_punishment_adds_a_reward(tiny_model_dir, tmp_path):
    args = LitePPOConfig(**train_args(tmp_path, soft_overlong_punishment=True, reward_weights=[2.0]))
    trainer = LitePPOTrainer(model=tiny_model_dir, reward_funcs=reward_digit_count, args=args,
                             train_dataset=prompt_dataset())
    assert trainer.reward_func_names == ["reward_digit_count", "soft_overlong_punishment_reward"]
    assert trainer.reward_weights.tolist() == [2.0, 1.0]
    assert args.reward_weights == [2.0]  # the caller's config is left as it was
    trainer.train()
    # max_completion_length 8, buffer 20% -> 1 token: a completion of 8 tokens (truncated) gets -1, else 0
    values = [row["rewards/soft_overlong_punishment_reward/mean"] for row in trainer.state.log_history
              if "rewards/soft_overlong_punishment_reward/mean" in row]
    assert len(values) == 2 and all(-1.0 <= v <= 0.0 for v in values)


def test_clipped_token_table_goes_to_wandb_when_it_reports(tiny_model_dir, tmp_path, monkeypatch):
    import sys
    import types

    import trl_lite.diagnostics_window as trainer_module

    logged = []
    fake = types.SimpleNamespace(run=object(), Table=lambda dataframe: ("table", dataframe.to_dict("records")),
                                 log=lambda data: logged.append(data))
    monkeypatch.setitem(sys.modules, "wandb", fake)
    monkeypatch.setattr(trainer_module, "is_wandb_available", lambda: True)
    trainer = LitePPOTrainer(model=tiny_model_dir, reward_funcs=reward_digit_count,
                             args=LitePPOConfig(**train_args(tmp_path)), train_dataset=prompt_dataset())
    trainer.args.report_to = ["wandb"]  # set after construction: no real wandb callback is built
    rows = [{"bound": "high", "token": "7", "token_id": 9, "count": 2, "share": 1.0}]
    trainer._log_table("clipped_tokens", rows)
    assert logged == [{"clipped_tokens": ("table", rows)}]


def test_correct_reward_names_the_function_that_says_correct(tmp_path, tiny_model_dir):
    # two reward functions: `never` (always 0) first, then the digit count. By default the first decides "correct"
    # (no completion is); `correct_reward="reward_digit_count"` makes a completion correct exactly when it holds a digit
    from tests.tiny import prompt_dataset, reward_digit_count, train_args
    from trl_lite import LitePPOConfig, LitePPOTrainer

    def never(completions, **kwargs):
        return [0.0] * len(completions)

    seen = []

    class Capture(LitePPOTrainer):
        def on_generation_batch(self, output, advantages, counted):
            texts = self.processing_class.batch_decode(output["completion_ids"], skip_special_tokens=True)
            seen.append((output["lite_correct"].tolist(), [r > 0 for r in reward_digit_count(texts)]))

    for name, expect_digits in ((None, False), ("reward_digit_count", True)):
        seen.clear()
        args = LitePPOConfig(**train_args(tmp_path / str(name), max_steps=1, correct_reward=name))
        Capture(model=tiny_model_dir, reward_funcs=[never, reward_digit_count], args=args,
                train_dataset=prompt_dataset()).train()
        (correct, has_digit), = seen
        assert correct == (has_digit if expect_digits else [False] * len(has_digit))
        assert any(has_digit) and not all(has_digit)  # the check tells the two apart
    with pytest.raises(ValueError, match=r"correct_reward='accuracy' is not supported; expected one of the reward "
                                         r"functions' names \['never', 'reward_digit_count'\]"):
        LitePPOTrainer(model=tiny_model_dir, reward_funcs=[never, reward_digit_count], train_dataset=prompt_dataset(),
                       args=LitePPOConfig(**train_args(tmp_path / "bad", correct_reward="accuracy")))

