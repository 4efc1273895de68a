"""The advantage grid as a pure function, in float64 against hand-worked values."""

import math

import pytest
import torch

from trl_lite.advantages import ADVANTAGE_MEANS, ADVANTAGE_STDS, normalize_advantages, zero_std_group_fraction

# Two groups of K=4 {0,1} rewards.
REWARDS = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0], dtype=torch.float64)
# group means: (1+0+0+1)/4 = 0.5 ; (1+1+1+0)/4 = 0.75 ; batch mean: 5/8 = 0.625
MEANS = {"group": [0.5] * 4 + [0.75] * 4, "batch": [0.625] * 8, "none": [0.0] * 8}
# group 1: squared deviations 4 * 0.25 = 1, Bessel var 1/3 ; group 2: 3 * 0.0625 + 0.5625 = 0.75, var 0.75/3 = 0.25
# batch: 5 * 0.375^2 + 3 * 0.625^2 = 0.703125 + 1.171875 = 1.875, Bessel var 1.875 / 7
STDS = {
    "group": [math.sqrt(1 / 3)] * 4 + [0.5] * 4,
    "batch": [math.sqrt(1.875 / 7)] * 8,
    "none": None,
}


@pytest.mark.parametrize("std", ["group", "batch", "none"])
@pytest.mark.parametrize("mean", ["group", "batch", "none"])
def test_grid_matches_hand_worked_values(mean, std):
    eps = 1e-4
    out = normalize_advantages(REWARDS, 4, mean=mean, std=std, eps=eps)
    centred = [r - m for r, m in zip(REWARDS.tolist(), MEANS[mean])]
    expected = centred if STDS[std] is None else [c / (s + eps) for c, s in zip(centred, STDS[std])]
    torch.testing.assert_close(out, torch.tensor(expected, dtype=torch.float64), rtol=0, atol=1e-12)
    assert out.dtype == torch.float64


def test_lite_ppo_spot_values():
    # group mean, batch std, eps=0: sample 0 -> (1 - 0.5) / sqrt(1.875/7) = 0.5 / 0.5175491695 = 0.9660917831
    # sample 7 -> (0 - 0.75) / 0.5175491695 = -1.4491376746
    out = normalize_advantages(REWARDS, 4, mean="group", std="batch", eps=0.0)
    assert out[0].item() == pytest.approx(0.9660917831, abs=1e-9)
    assert out[7].item() == pytest.approx(-1.4491376746, abs=1e-9)


def test_nan_rewards_get_zero_and_stay_out_of_statistics():
    rewards = torch.tensor([1.0, float("nan"), 0.0, 1.0], dtype=torch.float64)
    out = normalize_advantages(rewards, 4, mean="group", std="group", eps=0.0)
    # valid [1, 0, 1]: mean 2/3; deviations 1/3, -2/3, 1/3 -> squares 1/9 + 4/9 + 1/9 = 2/3, Bessel var 1/3
    s = math.sqrt(1 / 3)
    expected = torch.tensor([(1 / 3) / s, 0.0, (-2 / 3) / s, (1 / 3) / s], dtype=torch.float64)
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-12)


def test_zero_variance_group_gives_zero_advantage():
    rewards = torch.tensor([1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0], dtype=torch.float64)
    out = normalize_advantages(rewards, 4, mean="group", std="group")
    # group 1: (1 - 1) / (0 + 1e-4) = 0 ; group 2: +-0.5 / (sqrt(1/3) + 1e-4)
    assert out[:4].tolist() == [0.0] * 4
    assert out[4].item() == pytest.approx(-0.5 / (math.sqrt(1 / 3) + 1e-4), abs=1e-12)


def test_excluded_samples_get_zero_and_leave_others_unchanged():
    valid = torch.tensor([False, True, True, True, True, True, True, False])
    out = normalize_advantages(REWARDS, 4, mean="group", std="batch", eps=0.0, valid=valid)
    # counted rewards: group 1 [0, 0, 1] mean 1/3 ; group 2 [1, 1, 1] mean 1
    # batch [0, 0, 1, 1, 1, 1]: mean 2/3, squares 2 * 4/9 + 4 * 1/9 = 12/9, Bessel var (12/9) / 5 = 4/15
    s = math.sqrt(4 / 15)
    expected = [0.0, -1 / 3 / s, -1 / 3 / s, 2 / 3 / s, 0.0, 0.0, 0.0, 0.0]
    torch.testing.assert_close(out, torch.tensor(expected, dtype=torch.float64), rtol=0, atol=1e-12)
    # whatever the excluded samples' rewards are, nobody else moves
    changed = REWARDS.clone()
    changed[0], changed[7] = 100.0, -50.0
    torch.testing.assert_close(normalize_advantages(changed, 4, mean="group", std="batch", eps=0.0, valid=valid), out)


def test_fully_excluded_group_is_zero_not_nan():
    valid = torch.tensor([False] * 4 + [True] * 4)
    out = normalize_advantages(REWARDS, 4, mean="group", std="group", valid=valid)
    assert not torch.isnan(out).any()
    assert out[:4].tolist() == [0.0] * 4


def test_single_counted_sample_has_zero_advantage():
    valid = torch.tensor([True, False, False, False])
    out = normalize_advantages(REWARDS[:4], 4, mean="group", std="group", valid=valid)
    assert out.tolist() == [0.0] * 4  # (1 - 1) / (0 + eps)


def test_matches_trl_reference_formula():
    # TRL 1.16 (group mean, group/batch std): (r - mean_g) / (nanstd + 1e-4)
    from trl.trainer.utils import nanstd

    torch.manual_seed(0)
    r = torch.randint(0, 3, (16,)).double()
    mean = r.view(-1, 4).mean(1).repeat_interleave(4)
    group = (r - mean) / (nanstd(r.view(-1, 4), dim=1).repeat_interleave(4) + 1e-4)
    batch = (r - mean) / (nanstd(r) + 1e-4)
    torch.testing.assert_close(normalize_advantages(r, 4, mean="group", std="group"), group)
    torch.testing.assert_close(normalize_advantages(r, 4, mean="group", std="batch"), batch)


def test_zero_std_group_fraction():
    rewards = torch.tensor([1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    assert zero_std_group_fraction(rewards, 4) == pytest.approx(2 / 3)  # all-correct and all-wrong of 3 groups
    valid = torch.tensor([True] * 8 + [True, False, False, False])
    assert zero_std_group_fraction(rewards, 4, valid) == 1.0  # group 3 keeps only the 1
    valid = torch.tensor([False] * 4 + [True] * 8)
    assert zero_std_group_fraction(rewards, 4, valid) == 0.5  # group 1 no longer counts


def test_registry_accepts_new_entries_and_refuses_duplicates():
    @ADVANTAGE_MEANS.register("median-test")
    def group_median(rewards, group_size):
        return rewards.view(-1, group_size).nanmedian(dim=1).values.repeat_interleave(group_size)

    try:
        out = normalize_advantages(REWARDS, 4, mean="median-test", std="none")
        # group medians (lower median): [0,0,1,1] -> 0 ; [0,1,1,1] -> 1
        assert out.tolist() == [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, -1.0]
        with pytest.raises(ValueError, match="already registered"):
            ADVANTAGE_MEANS.register("median-test")(group_median)
    finally:
        ADVANTAGE_MEANS._entries.pop("median-test")
    with pytest.raises(ValueError, match=r"Unknown advantage_std 'mad'; registered: \['group', 'batch', 'none'\]"):
        normalize_advantages(REWARDS, 4, std="mad")
    assert ADVANTAGE_STDS.names() == ["group", "batch", "none"]


def test_bad_shape_is_refused():
    with pytest.raises(ValueError, match="divisible by group_size=3"):
        normalize_advantages(REWARDS, 3)


@pytest.mark.parametrize("std", ["group", "batch", "none"])
@pytest.mark.parametrize("mean", ["group", "batch"])
def test_reward_scale_0_1_vs_minus1_1(mean, std):
    # Takeaway 1's reward-scale half ({0,1} vs {-1,1}) cannot show with binary rewards under a centring mean: with
    # r' = 2r - 1, mu' = 2mu - 1 and sigma' = 2sigma, so A' = (r' - mu') / (sigma' + eps) = (r - mu) / (sigma + eps/2).
    # Dividing by a std, A' equals A up to the epsilon: |A' - A| = |r - mu| * (eps/2) / ((sigma + eps)(sigma + eps/2)).
    # Without a std, A' = 2A exactly (the scale is the learning rate's business).
    eps = 1e-4
    plain = normalize_advantages(REWARDS, 4, mean=mean, std=std, eps=eps)
    signed = normalize_advantages(2 * REWARDS - 1, 4, mean=mean, std=std, eps=eps)
    if std == "none":
        torch.testing.assert_close(signed, 2 * plain, rtol=0, atol=1e-12)
    else:
        expected = normalize_advantages(REWARDS, 4, mean=mean, std=std, eps=eps / 2)
        torch.testing.assert_close(signed, expected, rtol=0, atol=1e-12)
        # largest gap: |r - mu| = 0.75, sigma = 0.5 (group 2): 0.75 * 5e-5 / (0.50005 * 0.5001) = 1.4996e-4
        assert 1e-6 < (signed - plain).abs().max() < 2e-4


def test_reward_scale_matters_without_a_mean():
    # With advantage_mean="none" nothing removes the offset: {-1,1} turns every failure into a negative advantage
    # where {0,1} gave 0. Sample 1 (reward 0): A = 0 with {0,1}, A = -1 with {-1,1} (std none).
    plain = normalize_advantages(REWARDS, 4, mean="none", std="none")
    signed = normalize_advantages(2 * REWARDS - 1, 4, mean="none", std="none")
    assert plain[1].item() == 0.0 and signed[1].item() == -1.0
