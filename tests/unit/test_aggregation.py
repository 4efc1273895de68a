"""Loss aggregation as a pure function, in float64 against hand-worked values."""

import pytest
import torch

from trl_lite.aggregation import AGGREGATIONS, aggregate_loss, sequence_weights

LOSS = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=torch.float64)
MASK = torch.tensor([[1, 1, 0], [1, 1, 1]])

# token-mean: (1 + 2 + 4 + 5 + 6) / 5 = 18 / 5
# seq-mean-token-mean: ((1 + 2) / 2 + (4 + 5 + 6) / 3) / 2 = (1.5 + 5) / 2
# seq-mean-token-sum: (3 + 15) / 2
# seq-mean-token-sum-norm (C = width 3): 18 / (2 * 3)
EXPECTED = {
    "token-mean": 3.6,
    "seq-mean-token-mean": 3.25,
    "seq-mean-token-sum": 9.0,
    "seq-mean-token-sum-norm": 3.0,
}


@pytest.mark.parametrize("mode", list(EXPECTED))
def test_modes_match_hand_worked_values(mode):
    assert aggregate_loss(LOSS, MASK, mode).item() == pytest.approx(EXPECTED[mode], abs=1e-12)


@pytest.mark.parametrize("mode", list(EXPECTED))
def test_fully_masked_row_and_nan_padding_change_nothing(mode):
    loss = torch.cat([LOSS, torch.tensor([[7.0, float("nan"), 9.0]], dtype=torch.float64)])
    loss[0, 2] = float("nan")  # padding may hold anything
    mask = torch.cat([MASK, torch.zeros(1, 3, dtype=torch.long)])
    # the empty row does not count in N, so every mode keeps its value
    assert aggregate_loss(loss, mask, mode).item() == pytest.approx(EXPECTED[mode], abs=1e-12)


def test_dr_grpo_constant_is_max_length():
    # 18 / (2 * 4)
    assert aggregate_loss(LOSS, MASK, "seq-mean-token-sum-norm", max_length=4).item() == pytest.approx(2.25)


@pytest.mark.parametrize("mode", list(EXPECTED))
def test_all_masked_is_zero(mode):
    assert aggregate_loss(LOSS, torch.zeros_like(MASK), mode).item() == 0.0


@pytest.mark.parametrize("mode", list(EXPECTED))
def test_weights_of_the_whole_batch_make_split_sums_exact(mode):
    # The trainer's invariant: weights from the whole step, applied per micro-batch, sum to the whole-batch loss.
    torch.manual_seed(0)
    loss = torch.randn(8, 5, dtype=torch.float64)
    mask = (torch.rand(8, 5) > 0.3).long()
    mask[3] = 0
    w = sequence_weights(mask.sum(-1).double(), mode, max_length=5)
    per_seq = (loss * mask).sum(-1)
    split = sum((per_seq[i : i + 2] * w[i : i + 2]).sum() for i in range(0, 8, 2))
    assert split.item() == pytest.approx(aggregate_loss(loss, mask, mode).item(), abs=1e-12)


def test_matches_trl_formulas():
    # TRL 1.16 GRPOTrainer._compute_loss, on one batch without accumulation
    m = MASK.double()
    grpo = ((LOSS * m).sum(-1) / m.sum(-1).clamp(min=1.0)).mean()
    dr_grpo = (LOSS * m).sum() / (LOSS.size(0) * 3)
    dapo = (LOSS * m).sum() / m.sum()
    luspo = (LOSS * m).sum(-1).mean()
    assert aggregate_loss(LOSS, MASK, "seq-mean-token-mean").item() == pytest.approx(grpo.item())
    assert aggregate_loss(LOSS, MASK, "seq-mean-token-sum-norm").item() == pytest.approx(dr_grpo.item())
    assert aggregate_loss(LOSS, MASK, "token-mean").item() == pytest.approx(dapo.item())
    assert aggregate_loss(LOSS, MASK, "seq-mean-token-sum").item() == pytest.approx(luspo.item())


def test_custom_aggregator_and_errors():
    @AGGREGATIONS.register("first-seq-test")
    def first_only(lengths, max_length):
        w = torch.zeros_like(lengths)
        w[0] = 1.0
        return w

    try:
        assert aggregate_loss(LOSS, MASK, "first-seq-test").item() == 3.0  # 1 + 2
        with pytest.raises(ValueError, match="already registered"):
            AGGREGATIONS.register("first-seq-test")(first_only)
    finally:
        AGGREGATIONS._entries.pop("first-seq-test")
    with pytest.raises(ValueError, match="Unknown loss_aggregation 'seq-mean'; registered: "):
        aggregate_loss(LOSS, MASK, "seq-mean")
    with pytest.raises(ValueError, match=r"shape \(B, T\)"):
        aggregate_loss(LOSS, MASK[:, :2], "token-mean")
