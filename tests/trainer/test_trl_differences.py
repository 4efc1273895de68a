"""Where trl-lite differs from TRL's own Lite PPO setting (`GRPOConfig(scale_rewards="batch", loss_type="dapo")`),
row by row as docs/trl-differences.md states it: trl-lite equals a float64 reference worked by hand (or by a few lines
of numpy), and TRL, run as a `GRPOTrainer` on the same completions, differs by the amount the page states.

The completions come from a fixed `rollout_func`, so both trainers see exactly the same token ids and rewards.
"""

import logging

import numpy as np
import pytest
import torch
from trl import GRPOConfig, GRPOTrainer

from tests.tiny import build_tokenizer, prompt_dataset, snapshot, train_args, train_run
from trl_lite import LitePPOConfig, LitePPOTrainer
from trl_lite.reward_faults import RewardFunctionError

TOKENIZER = build_tokenizer()
PAD, EOS = TOKENIZER.pad_token_id, TOKENIZER.eos_token_id
MAX_LEN = 6


def _ids(text: str) -> list[int]:
    return TOKENIZER.convert_tokens_to_ids(list(text))


def fixed_rollout(completions: list[list[int]]):
    """A `rollout_func` that answers the k-th prompt of each call with `completions[k]` (the whole local batch)."""

    def rollout(prompts, trainer):
        assert len(prompts) == len(completions)
        prompt_ids = [TOKENIZER(p, add_special_tokens=False)["input_ids"] for p in prompts]
        return {"prompt_ids": prompt_ids, "completion_ids": [list(c) for c in completions],
                "logprobs": [[0.0] * len(c) for c in completions]}

    return rollout


def table_reward(values: list):
    """A reward function that gives the k-th completion of each call `values[k]`."""

    def reward(completions, **kwargs):
        assert len(completions) == len(values)
        return list(values)

    return reward


class Recorder:
    """Mixed into either trainer: keeps each generation batch as `_generate_and_score_completions` returns it."""

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        self.batches = [*getattr(self, "batches", []), {k: v.clone() if isinstance(v, torch.Tensor) else v
                                                         for k, v in output.items()}]
        self.truncated = [*getattr(self, "truncated", []), getattr(self, "_lite_truncated", None)]
        return output


class LiteRecorder(Recorder, LitePPOTrainer):
    pass


class TRLRecorder(Recorder, GRPOTrainer):
    pass


def _one_batch(trainer_cls, config_cls, tiny_model_dir, tmp_path, completions, rewards, **fields):
    """Builds a trainer on the fixed completions and rewards, trains one step and returns it."""
    args = config_cls(**train_args(tmp_path, per_device_train_batch_size=len(completions), num_generations=4,
                                   max_completion_length=MAX_LEN, max_steps=1, **fields))
    trainer = trainer_cls(model=tiny_model_dir, reward_funcs=table_reward(rewards), args=args,
                          train_dataset=prompt_dataset(), rollout_func=fixed_rollout(completions))
    trainer.train()
    return trainer


LITE_PPO = dict(scale_rewards="batch", loss_type="dapo")  # TRL's Lite PPO setting, given to both configs


# ------------------------------------------------------------------ row: the truncation rule
# One group, max_completion_length 6:
#   0: five digits and then the padding token, 6 tokens: cut by the limit (no EOS), but its last token is padding
#   1: three digits, no EOS, shorter than the limit: ended early (a stop string), not cut
#   2: five digits and EOS: ended
#   3: six digits, no EOS: cut by the limit
TRUNCATION_BATCH = [_ids("12345") + [PAD], _ids("123"), _ids("12345") + [EOS], _ids("123456")]
TRUNCATED_BY_HAND = [True, False, False, True]  # "max_completion_length tokens without a final EOS"
TRL_TRUNCATED_BY_HAND = [False, True, False, True]  # TRL: "the last token is neither EOS nor padding"


def test_truncation_rule(tiny_model_dir, tmp_path):
    lite = _one_batch(LiteRecorder, LitePPOConfig, tiny_model_dir, tmp_path / "lite", TRUNCATION_BATCH,
                      [1.0, 0.0, 1.0, 0.0], overlong_filter=True, **LITE_PPO)
    assert lite.truncated[0].tolist() == TRUNCATED_BY_HAND
    assert (lite.batches[0]["completion_mask"].sum(-1) == 0).tolist() == TRUNCATED_BY_HAND  # out of the loss
    trl = _one_batch(TRLRecorder, GRPOConfig, tiny_model_dir, tmp_path / "trl", TRUNCATION_BATCH,
                     [1.0, 0.0, 1.0, 0.0], mask_truncated_completions=True, **LITE_PPO)
    masked = (trl.batches[0]["completion_mask"].sum(-1) == 0).tolist()
    assert masked == TRL_TRUNCATED_BY_HAND
    # the page's figure: 2 of these 4 completions are classified differently (0 and 1)
    assert sum(a != b for a, b in zip(masked, TRUNCATED_BY_HAND)) == 2


# ------------------------------------------------------------------ rows: overlong filter, batch std
# Two groups of 4, max_completion_length 6; T = truncated (6 tokens, no EOS), the others end with EOS.
FILTER_BATCH = [_ids("123456"), _ids("12") + [EOS], _ids("1") + [EOS], _ids("123") + [EOS],
                _ids("9") + [EOS], _ids("98") + [EOS], _ids("987") + [EOS], _ids("987654")]
FILTER_TRUNCATED = np.array([1, 0, 0, 0, 0, 0, 0, 1], dtype=bool)
FILTER_REWARDS = [1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0]


def _reference_advantages(rewards, truncated, group_size=4, eps=1e-4):
    """Group mean, batch std (Bessel), eps added to the std; samples with `truncated` out of both and advantage 0.

    By hand, trl-lite's overlong filter on FILTER_BATCH: counted rewards A = [_, 0, 1, 0] (mean 1/3) and
    B = [1, 1, 1, _] (mean 1); the 6 counted rewards [0, 1, 0, 1, 1, 1] have mean 2/3, squared deviations summing to
    4 * 1/9 + 2 * 4/9 = 4/3, so the std is sqrt((4/3) / 5) = 0.516398; advantages A = [0, -1/3, 2/3, -1/3] / 0.516498
    = [0, -0.645372, 1.290744, -0.645372], B = [0, 0, 0, 0].
    Without the filter (all 8 count): A mean 1/2, B mean 3/4, batch std of [1, 0, 1, 0, 1, 1, 1, 0] =
    sqrt((5 * 9/64 + 3 * 25/64) / 7) = sqrt(120/448) = 0.517549.
    """
    r = np.array(rewards, dtype=np.float64)
    counted = ~np.asarray(truncated)
    groups = np.arange(len(r)) // group_size
    adv = np.zeros_like(r)
    std = np.std(r[counted], ddof=1)
    for g in np.unique(groups):
        members = (groups == g) & counted
        adv[members] = (r[members] - r[members].mean()) / (std + eps)
    return adv


def test_reference_advantages_by_hand():
    filtered = _reference_advantages(FILTER_REWARDS, FILTER_TRUNCATED)
    np.testing.assert_allclose(filtered, [0, -0.645372, 1.290744, -0.645372, 0, 0, 0, 0], atol=1e-6)
    unfiltered = _reference_advantages(FILTER_REWARDS, np.zeros(8, dtype=bool))
    np.testing.assert_allclose(unfiltered[:2], [0.5 / 0.517649, -0.5 / 0.517649], atol=1e-6)


def test_overlong_filter_keeps_truncated_samples_out_of_the_statistics(tiny_model_dir, tmp_path):
    lite = _one_batch(LiteRecorder, LitePPOConfig, tiny_model_dir, tmp_path / "lite", FILTER_BATCH, FILTER_REWARDS,
                      overlong_filter=True, **LITE_PPO)
    assert lite.truncated[0].tolist() == FILTER_TRUNCATED.tolist()
    ours = lite.batches[0]["advantages"].double().numpy()
    reference = _reference_advantages(FILTER_REWARDS, FILTER_TRUNCATED)
    np.testing.assert_allclose(ours, reference, rtol=0, atol=1e-6)

    trl = _one_batch(TRLRecorder, GRPOConfig, tiny_model_dir, tmp_path / "trl", FILTER_BATCH, FILTER_REWARDS,
                     mask_truncated_completions=True, **LITE_PPO)
    theirs = trl.batches[0]["advantages"].double().numpy()
    # TRL masks the truncated completions out of the loss, as trl-lite does ...
    masked = (trl.batches[0]["completion_mask"].sum(-1) == 0).numpy()
    assert masked.tolist() == FILTER_TRUNCATED.tolist()
    # ... but keeps their rewards in the group means and the batch std: the advantages of the kept completions are
    # those of the unfiltered reference
    np.testing.assert_allclose(theirs[~masked], _reference_advantages(FILTER_REWARDS, np.zeros(8, bool))[~masked],
                               rtol=0, atol=1e-6)
    # the page's figure: the largest difference on a kept completion is 0.483 (samples 4-6: 0 vs 0.25 / 0.517649)
    difference = np.abs(ours - theirs)[~masked].max()
    assert difference == pytest.approx(0.483, abs=5e-4)


def test_batch_std_matches_trl_without_the_filter(tiny_model_dir, tmp_path):
    """Same statistic as TRL: over every scorable sample of the generation batch, Bessel-corrected, + 1e-4."""
    lite = _one_batch(LiteRecorder, LitePPOConfig, tiny_model_dir, tmp_path / "lite", FILTER_BATCH, FILTER_REWARDS,
                      **LITE_PPO)
    trl = _one_batch(TRLRecorder, GRPOConfig, tiny_model_dir, tmp_path / "trl", FILTER_BATCH, FILTER_REWARDS,
                     **LITE_PPO)
    reference = _reference_advantages(FILTER_REWARDS, np.zeros(8, dtype=bool))
    ours, theirs = (t.batches[0]["advantages"].double().numpy() for t in (lite, trl))
    np.testing.assert_allclose(ours, reference, rtol=0, atol=1e-6)
    np.testing.assert_allclose(theirs, reference, rtol=0, atol=1e-6)  # the page's figure: no difference (<= 1e-6)


# ------------------------------------------------------------------ row: unscorable and non-finite rewards
UNSCORABLE_BATCH = [_ids("1") + [EOS]] * 8


def test_none_rewards_are_treated_alike(tiny_model_dir, tmp_path):
    """None (unscorable): out of every statistic, advantage 0, in trl-lite and in TRL 1.16 alike.

    By hand: counted rewards A = [1, 0, _, 0] (mean 1/3), B = [1, 1, 0, 1] (mean 3/4); the 7 counted rewards
    [1, 0, 0, 1, 1, 0, 1] have mean 4/7 and std sqrt((4 * 9/49 + 3 * 16/49) / 6) = sqrt(84/294) = 0.534522.
    """
    rewards = [1.0, 0.0, None, 0.0, 1.0, 1.0, 0.0, 1.0]
    counted = np.array([1, 1, 0, 1, 1, 1, 1, 1], dtype=bool)
    r = np.array([np.nan if v is None else v for v in rewards])
    reference = _reference_advantages(np.nan_to_num(r), ~counted)
    assert np.std(r[counted], ddof=1) == pytest.approx(0.534522, abs=1e-6)
    for cls, config, name in ((LiteRecorder, LitePPOConfig, "lite"), (TRLRecorder, GRPOConfig, "trl")):
        trainer = _one_batch(cls, config, tiny_model_dir, tmp_path / name, UNSCORABLE_BATCH, rewards, **LITE_PPO)
        np.testing.assert_allclose(trainer.batches[0]["advantages"].double().numpy(), reference, atol=1e-6)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")], ids=["nan", "inf"])
def test_non_finite_rewards(tiny_model_dir, tmp_path, bad):
    """A reward function that returns NaN or inf: trl-lite stops the run naming the function and the sample (or, with
    `on_reward_error="skip"`, treats the sample as unscorable); TRL takes NaN as unscorable and lets inf in."""
    rewards = [1.0, 0.0, bad, 0.0, 1.0, 1.0, 0.0, 1.0]
    with pytest.raises(RewardFunctionError, match=rf"'reward' returned {bad} for 1 of 8 completions .*sample \(#2"):
        _one_batch(LiteRecorder, LitePPOConfig, tiny_model_dir, tmp_path / "lite", UNSCORABLE_BATCH, rewards,
                   **LITE_PPO)
    skipped = _one_batch(LiteRecorder, LitePPOConfig, tiny_model_dir, tmp_path / "skip", UNSCORABLE_BATCH, rewards,
                         on_reward_error="skip", **LITE_PPO)
    counted = np.array([1, 1, 0, 1, 1, 1, 1, 1], dtype=bool)
    reference = _reference_advantages(np.nan_to_num(np.array(rewards), posinf=0.0), ~counted)
    np.testing.assert_allclose(skipped.batches[0]["advantages"].double().numpy(), reference, atol=1e-6)

    trl = _one_batch(TRLRecorder, GRPOConfig, tiny_model_dir, tmp_path / "trl", UNSCORABLE_BATCH, rewards, **LITE_PPO)
    theirs = trl.batches[0]["advantages"].double().numpy()
    if bad != bad:  # NaN: TRL treats it as None, the same advantages as trl-lite's "skip"
        np.testing.assert_allclose(theirs, reference, atol=1e-6)
    else:  # inf: the batch std is inf (or NaN), and every advantage of the batch is 0: the step learns nothing
        assert np.all(theirs == 0.0)
        # the page's figure: up to 1.403 in trl-lite's "skip" reference (sample 6: (0 - 3/4) / (0.534522 + 1e-4))
        assert np.abs(reference).max() == pytest.approx(1.403, abs=1e-3)


# ------------------------------------------------------------------ row: the token normalizer
class StepRecorder:
    """Keeps the loss-token count of every optimizer step: the sum of `completion_mask` over its micro-batches."""

    def _prepare_inputs(self, generation_batch):
        before = self._buffered_inputs
        inputs = super()._prepare_inputs(generation_batch)
        if self.model.training and self._buffered_inputs is not before:
            steps = self.args.gradient_accumulation_steps
            buffer = self._buffered_inputs
            self.step_tokens = [*getattr(self, "step_tokens", []), *[
                sum(int(b["completion_mask"].sum()) for b in buffer[i : i + steps])
                for i in range(0, len(buffer), steps)]]
        return inputs


class LiteSteps(StepRecorder, LitePPOTrainer):
    pass


class TRLSteps(StepRecorder, GRPOTrainer):
    pass


def test_token_normalizer_when_steps_per_generation_exceeds_accumulation(tiny_model_dir, tmp_path):
    """steps_per_generation=4, gradient_accumulation_steps=2: one generation batch feeds 2 optimizer steps.

    trl-lite divides each step's summed token loss by that step's own token count T_k; TRL's `dapo` divides by the
    generation batch's tokens per optimizer step, (T_1 + T_2) / 2. On the first step both start from the same weights
    and the same completions, so trl-lite's loss is exactly TRL's times ((T_1 + T_2) / 2) / T_1.
    """
    common = dict(steps_per_generation=4, gradient_accumulation_steps=2, max_steps=2, **LITE_PPO)
    lite = train_run(LiteSteps, LitePPOConfig, tiny_model_dir, tmp_path / "lite", **common)
    trl = train_run(TRLSteps, GRPOConfig, tiny_model_dir, tmp_path / "trl", **common)
    assert lite.step_tokens == trl.step_tokens  # the same completions
    t1, t2 = lite.step_tokens[:2]
    assert t1 != t2  # otherwise the two normalizers agree and the test shows nothing
    losses = {name: [log["loss"] for log in t.state.log_history if "loss" in log] for name, t in
              (("lite", lite), ("trl", trl))}
    assert losses["lite"][0] == pytest.approx(losses["trl"][0] * ((t1 + t2) / 2) / t1, rel=1e-4)
    # the page's figures: T_1, T_2 = 61, 46 tokens, so TRL's first step is 61 / 53.5 = 1.140 times trl-lite's and its
    # second 46 / 53.5 = 0.860 times; after 2 steps (SGD, learning rate 0.5) the weights are 9.2e-3 apart (max abs)
    ours, theirs = snapshot(lite.model), snapshot(trl.model)
    weights = max((ours[k] - theirs[k]).abs().max().item() for k in ours)
    assert (t1, t2) == (61, 46)
    assert weights == pytest.approx(9.2e-3, abs=5e-5)
    # the truncation row's figure: on this first batch TRL's rule and trl-lite's disagree (2 of 16 end on a padding
    # token sampled at the limit)
    first = lite.state.log_history[0]
    assert (first["completions/clipped_ratio"], first["overlong/frac_truncated"]) == (0.625, 0.75)


def test_steps_per_generation_not_a_multiple_of_accumulation():
    """TRL accepts it (a step then spans two generation batches and its normalizer is an average); trl-lite refuses
    it, because that step's exact token count is not known when its first micro-batch trains."""
    fields = dict(output_dir="/tmp/unused", use_cpu=True, bf16=False, steps_per_generation=3,
                  gradient_accumulation_steps=2, per_device_train_batch_size=4, num_generations=4, **LITE_PPO)
    assert GRPOConfig(**fields).steps_per_generation == 3
    with pytest.raises(ValueError, match=r"steps_per_generation=3 is not supported with gradient_accumulation_steps=2"):
        LitePPOConfig(**fields)


# ------------------------------------------------------------------ rows: defaults
def test_defaults_that_differ():
    common = dict(output_dir="/tmp/unused", use_cpu=True)
    trl, lite = GRPOConfig(**common), LitePPOConfig(**common)
    # bf16 unset on a machine without a bf16 accelerator: TRL turns it on (CPU autocast), trl-lite off
    assert (trl.bf16, lite.bf16) == (True, False)
    # scale_rewards unset: TRL's GRPO default is group std; trl-lite's is Lite PPO's batch std
    assert (trl.scale_rewards, lite.scale_rewards, lite.advantage_std) == ("group", "batch", "batch")
    assert trl.loss_type == lite.loss_type == "dapo"


def test_trl_lite_ppo_setting_is_translated_and_said_once(caplog):
    """TRL's Lite PPO setting given to LitePPOConfig is trl-lite's Lite PPO, and one info line says so."""
    from trl_lite import config as config_module

    config_module.logger.info_once.cache_clear()  # once per process: forget earlier tests' configs
    with caplog.at_level(logging.INFO, logger="trl_lite.config"):
        first = LitePPOConfig(output_dir="/tmp/unused", use_cpu=True, bf16=False, **LITE_PPO)
        LitePPOConfig(output_dir="/tmp/unused", use_cpu=True, bf16=False, **LITE_PPO)
        LitePPOConfig(output_dir="/tmp/unused", use_cpu=True, bf16=False)  # not TRL's setting: nothing said
    assert (first.advantage_mean, first.advantage_std, first.loss_aggregation) == ("group", "batch", "token-mean")
    said = [r.getMessage() for r in caplog.records if "TRL's Lite PPO setting" in r.getMessage()]
    assert len(said) == 1
    assert "trl-differences.md" in said[0]


def test_bf16_unset_on_cpu(tiny_model_dir, tmp_path):
    """Unset bf16 on a machine without a bf16 accelerator: TRL trains under bf16 autocast on CPU, trl-lite in float32.

    trl-lite's run equals TRL's run with bf16=False (float32); TRL's default run differs from both.
    """
    common = dict(max_steps=2, bf16=None, **LITE_PPO)  # bf16=None: unset, as a user who does not name it
    lite = train_run(LitePPOTrainer, LitePPOConfig, tiny_model_dir, tmp_path / "lite", **common)
    trl32 = train_run(GRPOTrainer, GRPOConfig, tiny_model_dir, tmp_path / "trl32", **{**common, "bf16": False})
    trl = train_run(GRPOTrainer, GRPOConfig, tiny_model_dir, tmp_path / "trl", **common)
    assert (lite.args.bf16, trl32.args.bf16, trl.args.bf16) == (False, False, True)
    ours, fp32, theirs = snapshot(lite.model), snapshot(trl32.model), snapshot(trl.model)
    assert max((ours[k] - fp32[k]).abs().max().item() for k in ours) <= 1e-6
    apart = max((ours[k] - theirs[k]).abs().max().item() for k in ours)
    # TRL's bf16 run ends far outside float32's 1e-6: the page's figures, 2 steps of SGD at learning rate 0.5, depend
    # on the CPU's bf16 kernels, so the test holds the range they span, not one machine's value. Measured: TRL 1.16
    # 3.6e-4 on an Intel CPU with AVX-512 and AMX and on an AMD EPYC with AVX2 only; TRL 1.14 3.0e-4 on the first,
    # 3.5995e-4 on the second (2026-12-07, CI's oldest stack); the range held is theirs with a margin. Why TRL 1.14
    # differs on the first was not looked into.
    assert 2.5e-4 <= apart <= 4.5e-4, apart
