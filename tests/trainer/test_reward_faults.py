"""Reward faults: a reward function that raises, returns the wrong count or NaN/inf, or (async) runs past
`reward_timeout` stops the run by default, naming the function, the step and the first offending sample, before
anything is trained on the batch; with `on_reward_error="skip"` the touched samples are unscorable and counted."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import subprocess

import pytest
import torch

from tests.distributed.test_multiprocess import torchrun
from tests.tiny import RecordingTrainer, prompt_dataset, reward_digit_count, snapshot, train_args
from trl_lite import LitePPOConfig, LitePPOTrainer
from trl_lite.reward_faults import RewardFunctionError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def flaky(completions, trainer_state, **kwargs):
    """Fails while generating for the second step (global_step == 1), like a judge service that goes down."""
    if trainer_state.global_step == 1:
        raise ConnectionError("judge down")
    return [1.0] * len(completions)


def short_count(completions, **kwargs):
    return [1.0] * (len(completions) - 1)


def inf_third(completions, **kwargs):
    """Per group of 4: [1, inf, 0, 0]."""
    return [float("inf") if i % 4 == 1 else float(i % 4 == 0) for i in range(len(completions))]


def none_third(completions, **kwargs):
    """Per group of 4: [1, None, 0, 0] (None is the function's own "unscorable", not a fault)."""
    return [None if i % 4 == 1 else float(i % 4 == 0) for i in range(len(completions))]


async def slow(completions, **kwargs):
    await asyncio.sleep(30)
    return [1.0] * len(completions)


def _trainer(model_dir, tmp_path, funcs, cls=LitePPOTrainer, **fields):
    args = LitePPOConfig(**train_args(tmp_path, **{"max_steps": 3, **fields}))
    return cls(model=model_dir, reward_funcs=funcs, args=args, train_dataset=prompt_dataset())


def _logged(trainer, key):
    return [row[key] for row in trainer.state.log_history if key in row]


# ------------------------------------------------------------------ on_reward_error="raise" (the default)
def test_a_raising_function_stops_the_run_before_training_on_the_batch(tiny_model_dir, tmp_path):
    trainer = _trainer(tiny_model_dir, tmp_path / "a", [flaky, reward_digit_count])
    with pytest.raises(RewardFunctionError) as error:
        trainer.train()
    message = str(error.value)
    assert message.startswith("reward function 'flaky' raised ConnectionError: judge down at global_step=1;")
    assert "first offending sample (#0 of this process's batch): prompt='" in message
    assert "on_reward_error='skip'" in message
    assert isinstance(error.value.__cause__, ConnectionError)  # chained: the user's traceback is shown
    # Step 1 trained, step 2 did not: the weights are those of a 1-step run
    one_step = _trainer(tiny_model_dir, tmp_path / "b", [flaky, reward_digit_count], max_steps=1)
    one_step.train()
    assert trainer.state.global_step == 1
    after, reference = snapshot(trainer.model), snapshot(one_step.model)
    assert all(torch.equal(after[k], reference[k]) for k in after)


@pytest.mark.parametrize("func, expected", [
    (short_count, "reward function 'short_count' returned 3 values for 4 completions at global_step=0; first "
                  "offending sample (#0 "),
    (inf_third, "reward function 'inf_third' returned inf for 1 of 4 completions at global_step=0; first offending "
                "sample (#1 "),  # the second completion of the group
])
def test_wrong_count_and_non_finite_stop_the_run(tiny_model_dir, tmp_path, func, expected):
    trainer = _trainer(tiny_model_dir, tmp_path, [func])
    before = snapshot(trainer.model)
    with pytest.raises(RewardFunctionError, match=re.escape(expected)):
        trainer.train()
    after = snapshot(trainer.model)
    assert trainer.state.global_step == 0 and all(torch.equal(after[k], before[k]) for k in after)


def test_async_function_past_reward_timeout_stops_the_run(tiny_model_dir, tmp_path):
    trainer = _trainer(tiny_model_dir, tmp_path, [slow], reward_timeout=0.2)
    with pytest.raises(RewardFunctionError, match=re.escape("'slow' took longer than reward_timeout=0.2s")):
        trainer.train()


# ------------------------------------------------------------------ on_reward_error="skip"
def test_skip_makes_the_batch_unscorable_counts_it_and_warns_once(tiny_model_dir, tmp_path, caplog):
    def flaky_twice(completions, trainer_state, **kwargs):
        if trainer_state.global_step in (1, 2):
            raise ConnectionError("judge down")
        return [float(i % 2) for i in range(len(completions))]

    trainer = _trainer(tiny_model_dir, tmp_path, [flaky_twice, reward_digit_count], cls=RecordingTrainer,
                       max_steps=4, on_reward_error="skip")
    with caplog.at_level(logging.WARNING, logger="trl_lite"):
        trainer.train()
    assert _logged(trainer, "rewards/flaky_twice/errors") == [0, 4, 4, 0]  # the whole batch of 4, twice
    assert _logged(trainer, "rewards/reward_digit_count/errors") == [0, 0, 0, 0]
    for failed in trainer.rounds[1:3]:  # unscorable for every function: no advantage, nothing trained
        assert torch.equal(failed["advantages"], torch.zeros(4))
    assert _logged(trainer, "loss")[1:3] == [0.0, 0.0]
    warnings = [r for r in caplog.records if "flaky_twice" in r.getMessage()]
    assert len(warnings) == 1  # once, with the traceback
    assert "Traceback" in warnings[0].getMessage() and "ConnectionError: judge down" in warnings[0].getMessage()


@pytest.mark.parametrize("func, errors", [(inf_third, [1]), (none_third, [0])], ids=["inf", "none"])
def test_skip_drops_only_the_unscorable_samples_from_the_statistics(tiny_model_dir, tmp_path, func, errors):
    # inf is a fault, counted; TRL's None (unscorable by the function's choice) keeps its meaning and is not an error.
    # Either way the sample is out of the statistics, so both give the same advantages.
    trainer = _trainer(tiny_model_dir, tmp_path, [func], cls=RecordingTrainer, max_steps=1, on_reward_error="skip")
    trainer.train()
    assert _logged(trainer, f"rewards/{func.__name__}/errors") == errors
    # Counted rewards [1, -, 0, 0]: group mean 1/3; batch std (one group) of [1, 0, 0] = sqrt(((2/3)^2 + 2 (1/3)^2) / 2)
    # = sqrt(1/3) = 0.57735, + advantage_epsilon 1e-4. Advantages: (2/3) / 0.57745 = 1.15450, 0 (unscorable),
    # (-1/3) / 0.57745 = -0.57725 twice.
    torch.testing.assert_close(trainer.rounds[0]["advantages"],
                               torch.tensor([1.15450, 0.0, -0.57725, -0.57725]), atol=1e-4, rtol=0)


def test_skip_cancels_an_async_function_past_reward_timeout(tiny_model_dir, tmp_path):
    trainer = _trainer(tiny_model_dir, tmp_path, [slow, reward_digit_count], max_steps=1, reward_timeout=0.2,
                       on_reward_error="skip")
    trainer.train()  # 30 s per call without the timeout
    assert _logged(trainer, "rewards/slow/errors") == [4]


def test_a_reward_model_returning_nan_is_a_fault(tiny_model_dir, tmp_path):
    from transformers import AutoTokenizer, LlamaConfig, LlamaForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, num_labels=1,
                         pad_token_id=tokenizer.pad_token_id)
    judge = LlamaForSequenceClassification(config)
    with torch.no_grad():
        judge.score.weight.fill_(float("nan"))  # a broken reward model
    args = LitePPOConfig(**train_args(tmp_path, max_steps=1, on_reward_error="skip"))
    trainer = LitePPOTrainer(model=tiny_model_dir, reward_funcs=[judge, reward_digit_count], args=args,
                             train_dataset=prompt_dataset(), reward_processing_classes=[tokenizer, None])
    trainer.train()
    assert _logged(trainer, f"rewards/{trainer.reward_func_names[0]}/errors") == [4]


# ------------------------------------------------------------------ config
@pytest.mark.parametrize("field, value, expected", [
    ("on_reward_error", "ignore", "on_reward_error='ignore' is not supported; expected 'raise' or 'skip'."),
    ("reward_timeout", 0, "reward_timeout=0 is not supported; expected a number of seconds > 0, or None."),
    ("reward_timeout", "5", "reward_timeout='5' is not supported"),
])
def test_config_errors_name_the_field(tmp_path, field, value, expected):
    with pytest.raises(ValueError, match=re.escape(expected)):
        LitePPOConfig(**train_args(tmp_path, **{field: value}))


# ------------------------------------------------------------------ two processes: a fault on one stops both
_TWO_PROCESSES = """
import os, sys
sys.path.insert(0, {root!r})
from tests.tiny import prompt_dataset, train_args
from trl_lite import LitePPOConfig, LitePPOTrainer

def fails_on_rank_1(completions, **kwargs):
    if int(os.environ["RANK"]) == 1:
        raise ValueError("only here")
    return [1.0] * len(completions)

args = LitePPOConfig(**train_args({out!r}, max_steps=2))
LitePPOTrainer(model={model!r}, reward_funcs=fails_on_rank_1, args=args, train_dataset=prompt_dataset()).train()
"""


@pytest.mark.slow
def test_a_fault_on_one_process_stops_every_process(tiny_model_dir, tmp_path):
    script = tmp_path / "run.py"
    script.write_text(_TWO_PROCESSES.format(root=ROOT, out=str(tmp_path / "out"), model=tiny_model_dir))
    cmd = [*torchrun(2), str(script)]
    result = subprocess.run(cmd, env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True,
                            timeout=300)  # a hang (one process waiting in a collective) would time out here
    assert result.returncode != 0
    assert "reward function 'fails_on_rank_1' raised ValueError: only here at global_step=0" in result.stderr
    assert "reward function 'fails_on_rank_1' failed on another process at global_step=0" in result.stderr
