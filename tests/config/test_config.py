"""LitePPOConfig: defaults are Lite PPO, TRL fields translate, every bad value is refused by name."""

import dataclasses
import re
import typing

import pytest

from trl_lite import LitePPOConfig

BASE = dict(output_dir="unused", report_to="none", use_cpu=True, per_device_train_batch_size=4, num_generations=4)


def make(**kwargs):
    return LitePPOConfig(**{**BASE, **kwargs})


def test_defaults_are_lite_ppo():
    args = make()
    assert (args.advantage_mean, args.advantage_std, args.loss_aggregation) == ("group", "batch", "token-mean")
    assert args.epsilon == 0.2 and args.epsilon_high is None  # symmetric clip
    assert args.overlong_filter is False and args.mask_truncated_completions is False
    assert args.advantage_epsilon == 1e-4 and args.beta == 0.0
    assert (args.scale_rewards, args.loss_type) == ("batch", "dapo")  # mirrored TRL names


@pytest.mark.parametrize(
    "scale_rewards, std", [("group", "group"), ("batch", "batch"), ("none", "none"), (True, "group"), (False, "none")]
)
def test_scale_rewards_translates(scale_rewards, std):
    assert make(scale_rewards=scale_rewards).advantage_std == std


@pytest.mark.parametrize(
    "loss_type, mode",
    [
        ("dapo", "token-mean"),
        ("bnpo", "token-mean"),
        ("grpo", "seq-mean-token-mean"),
        ("luspo", "seq-mean-token-sum"),
        ("dr_grpo", "seq-mean-token-sum-norm"),
    ],
)
def test_loss_type_translates(loss_type, mode):
    assert make(loss_type=loss_type).loss_aggregation == mode


def test_loss_aggregation_mirrors_loss_type():
    assert make(loss_aggregation="seq-mean-token-mean").loss_type == "grpo"
    assert make(loss_aggregation="seq-mean-token-sum-norm").loss_type == "dr_grpo"


def test_overlong_filter_masks_the_loss_itself():
    # the filter masks truncated completions out of the loss by its own rule (see tests/trainer/test_exactness.py); TRL's
    # `mask_truncated_completions` stays what the user set
    assert make(overlong_filter=True).mask_truncated_completions is False
    assert make(overlong_filter=True, mask_truncated_completions=True).mask_truncated_completions is True


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"advantage_mean": "prompt"}, "advantage_mean='prompt' is not supported; expected one of ['group', 'batch', 'none']"),
        ({"advantage_std": "global"}, "advantage_std='global' is not supported; expected one of ['group', 'batch', 'none', 'auto']"),
        ({"advantage_epsilon": -1.0}, "advantage_epsilon=-1.0 is not supported; expected a float >= 0"),
        ({"loss_aggregation": "seq-mean"}, "loss_aggregation='seq-mean' is not supported; expected one of ['token-mean'"),
        ({"overlong_filter": "yes"}, "overlong_filter='yes' is not supported; expected True or False"),
        ({"epsilon": 1.5}, "epsilon=1.5 is not supported; expected a float in (0, 1)"),
        ({"epsilon_high": -0.1}, "epsilon_high=-0.1 is not supported; expected a float > 0 or None"),
        ({"scale_rewards": "prompt"}, "scale_rewards='prompt' is not supported; expected one of ['group', 'batch', 'none'"),
        ({"loss_type": "gspo"}, "loss_type='gspo' is not supported; expected one of ['dapo', 'bnpo', 'grpo', 'luspo', 'dr_grpo', 'cispo', 'sapo', 'vespo']"),
        ({"scale_rewards": "group", "advantage_std": "batch"}, "scale_rewards='group' (advantage_std='group') conflicts with advantage_std='batch'"),
        ({"loss_type": "grpo", "loss_aggregation": "token-mean"}, "loss_type='grpo' (loss_aggregation='seq-mean-token-mean') conflicts"),
        ({"multi_objective_aggregation": "sum"}, "multi_objective_aggregation='sum' is not supported; expected 'sum_then_normalize' or 'normalize_then_sum'"),
        # bools are ints to Python: True must not pass as 1
        ({"overlong_buffer_length": True}, "overlong_buffer_length=True is not supported; expected an int"),
        ({"clipped_tokens_top_k": True}, "clipped_tokens_top_k=True is not supported; expected an int >= 1"),
        ({"dynamic_sampling_max_rounds": False}, "dynamic_sampling_max_rounds=False is not supported; expected an int >= 0"),
        ({"advantage_epsilon": True}, "advantage_epsilon=True is not supported; expected a float >= 0"),
        ({"gradient_accumulation_steps": 2, "steps_per_generation": 3}, "steps_per_generation=3 is not supported with gradient_accumulation_steps=2"),
        ({"auto_std_threshold": 1.5}, "auto_std_threshold=1.5 is not supported; expected a float in [0, 1]"),
        ({"dynamic_sampling": "yes"}, "dynamic_sampling='yes' is not supported; expected True or False"),
        ({"overlong_buffer_length": 0}, "overlong_buffer_length=0 is not supported; expected an int in [1, max_completion_length="),
        ({"clipped_tokens_top_k": 0}, "clipped_tokens_top_k=0 is not supported; expected an int >= 1"),
        ({"dynamic_sampling_max_rounds": 1.5}, "dynamic_sampling_max_rounds=1.5 is not supported; expected an int >= 0"),
    ],
)
def test_bad_values_name_field_value_and_choices(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make(**kwargs)


@pytest.mark.parametrize(
    "loss_type, aggregation", [("cispo", "token-mean"), ("sapo", "seq-mean-token-mean"), ("vespo", "token-mean")]
)
def test_objective_loss_types_are_kept_with_trl_aggregation_by_default(loss_type, aggregation):
    # the objective stays TRL's, the aggregation defaults to the one TRL 1.16 gives that loss type
    args = make(loss_type=loss_type)
    assert (args.loss_type, args.loss_aggregation) == (loss_type, aggregation)
    # and any aggregation composes with it
    args = make(loss_type=loss_type, loss_aggregation="seq-mean-token-sum-norm")
    assert (args.loss_type, args.loss_aggregation) == (loss_type, "seq-mean-token-sum-norm")


def test_normalize_then_sum_is_accepted():
    args = make(multi_objective_aggregation="normalize_then_sum", advantage_mean="batch")
    assert (args.multi_objective_aggregation, args.advantage_mean) == ("normalize_then_sum", "batch")


def _float_fields():
    hints = typing.get_type_hints(LitePPOConfig)
    return [f.name for f in dataclasses.fields(LitePPOConfig)
            if hints[f.name] is float or float in typing.get_args(hints[f.name])]


def test_every_float_field_is_found():
    # TRL's float fields as well as ours: a rename on either side must not silently shrink the check below
    assert {"advantage_epsilon", "auto_std_threshold", "epsilon", "epsilon_high", "learning_rate", "beta",
            "temperature", "top_p", "max_grad_norm"} <= set(_float_fields())


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("name", _float_fields())
def test_non_finite_floats_are_refused_by_name(name, bad):
    with pytest.raises(ValueError, match=re.escape(f"{name}={bad!r} is not supported; expected finite numbers")):
        make(**{name: bad})


def test_non_finite_reward_weight_is_refused():
    with pytest.raises(ValueError, match=re.escape("reward_weights=[1.0, nan] is not supported; expected finite")):
        make(reward_weights=[1.0, float("nan")])


def test_non_finite_float_from_the_command_line_is_refused():
    from trl import TrlParser

    with pytest.raises(ValueError, match="advantage_epsilon=nan is not supported"):
        TrlParser((LitePPOConfig,)).parse_args_into_dataclasses(
            ["--output_dir", "x", "--report_to", "none", "--use_cpu", "--advantage_epsilon", "nan"]
        )


def test_agreeing_values_are_accepted():
    args = make(scale_rewards="batch", advantage_std="batch", loss_type="grpo", loss_aggregation="seq-mean-token-mean")
    assert (args.advantage_std, args.loss_aggregation) == ("batch", "seq-mean-token-mean")


def test_steps_per_generation_multiple_of_accumulation_is_accepted():
    args = make(gradient_accumulation_steps=2, steps_per_generation=4)
    assert args.generation_batch_size == 16


def test_every_new_field_is_documented_and_help_agrees():
    doc = LitePPOConfig.__doc__
    own = {"advantage_mean", "advantage_std", "advantage_epsilon", "loss_aggregation", "overlong_filter"}
    for f in dataclasses.fields(LitePPOConfig):
        if f.name in own | {"epsilon", "epsilon_high", "scale_rewards", "loss_type"}:
            assert re.search(rf"^\s+{f.name} \(`", doc, re.M), f"{f.name} missing from the Parameters block"
            assert f.metadata.get("help"), f"{f.name} has no help"


def test_cli_parses_new_fields():
    from trl import TrlParser

    (args,) = TrlParser((LitePPOConfig,)).parse_args_into_dataclasses(
        ["--output_dir", "x", "--report_to", "none", "--use_cpu", "--per_device_train_batch_size", "4",
         "--num_generations", "4", "--advantage_std", "none", "--loss_aggregation", "seq-mean-token-sum-norm",
         "--overlong_filter", "--epsilon_high", "0.28"]
    )
    assert (args.advantage_std, args.loss_aggregation, args.overlong_filter, args.epsilon_high) == (
        "none", "seq-mean-token-sum-norm", True, 0.28
    )


def test_bf16_resolves_off_without_an_accelerator(tmp_path):
    # The README's notebook config, in a fresh process on this CPU-only machine: TRL's unset bf16 would become True and
    # transformers would refuse it ("Your setup doesn't support bf16/gpu"); ours resolves to False with one line.
    import subprocess
    import sys

    code = ("from trl_lite import LitePPOConfig; import torch; assert not torch.cuda.is_available(); "
            f"a = LitePPOConfig(output_dir={str(tmp_path)!r}, num_generations=8, per_device_train_batch_size=8); "
            f"b = LitePPOConfig(output_dir={str(tmp_path)!r}); print(a.bf16, b.bf16)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["False", "False"]
    assert result.stderr.count("bf16 is unset and no accelerator with bf16 support was found") == 1  # once a process
    # what the user sets is kept: bf16 on a CPU when asked for (transformers allows it with use_cpu), fp16 untouched
    assert LitePPOConfig(output_dir=str(tmp_path), bf16=True, use_cpu=True).bf16 is True
    assert LitePPOConfig(output_dir=str(tmp_path), bf16=False).bf16 is False


def test_validation_table_names_every_field_and_what_it_accepts():
    # one row per field trl-lite adds or constrains; each rejects a bad value naming the field, the value and what
    # it accepts (the row's text), and the closed choice sets are Literal types, so `--help` lists them
    import typing

    from trl_lite.config import VALIDATION
    from trl_lite.sync_check import ON_SYNC_MISMATCH

    names = [row[0] for row in VALIDATION]
    assert len(names) == len(set(names)) and all(hasattr(LitePPOConfig, n) for n in names)
    for name, bad, expected in (("on_reward_error", "retry", "'raise' or 'skip'"),
                                ("clipped_tokens_top_k", 0, "an int >= 1"),
                                ("overlong_buffer_length", 99, "an int in [1, max_completion_length=8] or None"),
                                ("diagnostics", 1, "True or False")):
        with pytest.raises(ValueError) as err:
            LitePPOConfig(output_dir="/tmp/unused", use_cpu=True, bf16=False, max_completion_length=8, **{name: bad})
        assert str(err.value) == f"{name}={bad!r} is not supported; expected {expected}."
    hints = typing.get_type_hints(LitePPOConfig)
    assert typing.get_args(hints["on_sync_mismatch"]) == ON_SYNC_MISMATCH
    assert typing.get_args(hints["on_reward_error"]) == ("raise", "skip")
    assert typing.get_args(hints["multi_objective_aggregation"]) == ("sum_then_normalize", "normalize_then_sum")
    # --help lists each closed choice set (argparse's {a,b} form), TRL's own field included
    from trl_lite.train import make_parser

    shown = " ".join(make_parser().format_help().split())
    for choices in ("{raise,skip}", "{warn,raise,ignore}", "{sum_then_normalize,normalize_then_sum}"):
        assert choices in shown, choices
