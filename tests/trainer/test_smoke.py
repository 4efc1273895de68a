"""Short real training runs: every registry entry, LoRA, and the GRPOTrainer features users rely on."""

import math

import pytest
import torch
from peft import LoraConfig

from tests.tiny import prompt_dataset, reward_digit_count, reward_has_seven, snapshot, train_args
from trl_lite import ADVANTAGE_MEANS, ADVANTAGE_STDS, AGGREGATIONS, LitePPOConfig, LitePPOTrainer

ENTRIES = (
    [{"advantage_mean": name} for name in ADVANTAGE_MEANS.names()]
    + [{"advantage_std": name} for name in ADVANTAGE_STDS.names()]
    + [{"loss_aggregation": name} for name in AGGREGATIONS.names()]
)


def _train(model_dir, output_dir, reward_funcs=reward_digit_count, dataset=None, **fields):
    args = LitePPOConfig(**train_args(output_dir, **fields))
    trainer = LitePPOTrainer(
        model=model_dir, reward_funcs=reward_funcs, args=args, train_dataset=dataset or prompt_dataset()
    )
    before = snapshot(trainer.model)
    trainer.train()
    after = snapshot(trainer.model)
    changed = max((after[k] - before[k]).abs().max().item() for k in before)
    return trainer, changed


def _logs(trainer, key):
    return [log[key] for log in trainer.state.log_history if key in log]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: "=".join(next(iter(e.items()))))
def test_every_registry_entry_trains(tiny_model_dir, tmp_path, entry):
    trainer, changed = _train(tiny_model_dir, tmp_path, **entry)
    assert changed > 1e-4
    assert len(_logs(trainer, "loss")) == 2 and all(math.isfinite(x) for x in _logs(trainer, "loss"))


def test_lora(tiny_model_dir, tmp_path):
    args = LitePPOConfig(**train_args(tmp_path))
    trainer = LitePPOTrainer(
        model=tiny_model_dir, reward_funcs=reward_digit_count, args=args, train_dataset=prompt_dataset(),
        peft_config=LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False),
    )
    trainable = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
    frozen = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if not p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    trainer.train()
    params = dict(trainer.model.named_parameters())
    assert max((params[n] - v).abs().max().item() for n, v in trainable.items()) > 1e-4
    assert all(torch.equal(params[n], v) for n, v in frozen.items())
    trainer.save_model(str(tmp_path / "adapter"))
    assert (tmp_path / "adapter" / "adapter_config.json").exists()


def test_conversational_prompts_and_weighted_rewards(tiny_model_dir, tmp_path):
    trainer, changed = _train(
        tiny_model_dir, tmp_path, reward_funcs=[reward_digit_count, reward_has_seven],
        dataset=prompt_dataset(conversational=True), reward_weights=[0.5, 2.0],
    )
    assert changed > 1e-4
    log = trainer.state.log_history[0]
    # the logged reward is the weighted sum of the per-function means
    expected = 0.5 * log["rewards/reward_digit_count/mean"] + 2.0 * log["rewards/reward_has_seven/mean"]
    assert log["reward"] == pytest.approx(expected, abs=1e-5)


def test_reference_model_iterations_and_generation_reuse(tiny_model_dir, tmp_path):
    # beta > 0 loads a reference model; num_iterations=2 and steps_per_generation=2 reuse each generation batch
    trainer, changed = _train(
        tiny_model_dir, tmp_path, beta=0.1, num_iterations=2, steps_per_generation=2, max_steps=4
    )
    assert changed > 1e-4
    assert trainer.ref_model is not None
    assert any(k > 0 for k in _logs(trainer, "kl"))


def test_evaluation(tiny_model_dir, tmp_path):
    args = LitePPOConfig(**train_args(tmp_path, eval_strategy="steps", eval_steps=1, per_device_eval_batch_size=4))
    trainer = LitePPOTrainer(
        model=tiny_model_dir, reward_funcs=reward_digit_count, args=args,
        train_dataset=prompt_dataset(), eval_dataset=prompt_dataset(4),
    )
    trainer.train()
    evals = [log for log in trainer.state.log_history if "eval_loss" in log]
    assert len(evals) == 2 and all(math.isfinite(log["eval_loss"]) for log in evals)
    assert all("eval_advantages/frac_zero_std_groups" in log for log in evals)


def test_lite_metrics(tiny_model_dir, tmp_path):
    trainer, _ = _train(tiny_model_dir, tmp_path, reward_funcs=reward_has_seven, overlong_filter=True)
    for log in [log for log in trainer.state.log_history if "loss" in log]:
        for key in ["advantages/mean", "advantages/std", "advantages/frac_zero_std_groups", "overlong/frac_truncated",
                    "overlong/frac_filtered", "clip_ratio/low_mean", "clip_ratio/high_mean"]:
            assert key in log
        assert 0.0 <= log["advantages/frac_zero_std_groups"] <= 1.0
        assert log["overlong/frac_filtered"] == log["overlong/frac_truncated"]


def test_refuses_a_grpo_config(tiny_model_dir, tmp_path):
    from trl import GRPOConfig

    with pytest.raises(ValueError, match="args must be a LitePPOConfig, got a GRPOConfig"):
        LitePPOTrainer(model=tiny_model_dir, reward_funcs=reward_digit_count,
                       args=GRPOConfig(**train_args(tmp_path)), train_dataset=prompt_dataset())


def test_model_card_metadata(tiny_model_dir, tmp_path):
    trainer, _ = _train(tiny_model_dir, tmp_path, max_steps=1)
    trainer.create_model_card(model_name="tiny-lite")
    card = (tmp_path / "README.md").read_text()
    assert "lite-ppo" in card and "trl-lite" in card  # tags
    assert "2508.08221" in card and "Tricks or Traps" in card  # the paper and its citation


def test_checkpoints_carry_the_card_and_stay_loadable(tiny_model_dir, tmp_path):
    from transformers import AutoModelForCausalLM

    trainer, _ = _train(tiny_model_dir, tmp_path, save_strategy="steps", save_steps=1, max_steps=2)
    for step in (1, 2):
        checkpoint = tmp_path / f"checkpoint-{step}"
        assert f"| optimizer steps | {step} of 2 |" in (checkpoint / "README.md").read_text()
        AutoModelForCausalLM.from_pretrained(str(checkpoint))
