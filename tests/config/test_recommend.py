"""The recommender follows the paper's decision guide, and its YAML loads as a LitePPOConfig."""

import os
import subprocess
import sys

import pytest
from trl import TrlParser

from trl_lite import LitePPOConfig
from trl_lite.recommend import recommend, to_yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ROWS = [
    # (model_type, size, max_len, difficulty) -> (recipe, std, aggregation, epsilon_high, overlong_filter)
    (("base", "4B", 8192, "medium"), ("lite_ppo", "batch", "token-mean", 0.2, True)),  # Lite PPO, 8k: filter
    (("base", "8B", 20480, "hard"), ("lite_ppo", "batch", "token-mean", 0.2, False)),  # 20k: no filter
    (("base", "4B", 8192, "easy"), ("lite_ppo", "none", "token-mean", 0.2, True)),  # concentrated rewards: no std
    (("instruct", "4B", 8192, "medium"), ("instruct", "batch", "seq-mean-token-mean", 0.32, True)),  # small: 0.32
    (("instruct", "8B", 8192, "medium"), ("instruct", "batch", "seq-mean-token-mean", 0.28, True)),  # 8B: 0.28
    (("instruct", "0.6B", 20480, "easy"), ("instruct", "none", "seq-mean-token-mean", 0.32, False)),
]


@pytest.mark.parametrize("inputs, expected", ROWS, ids=["-".join(map(str, r[0])) for r in ROWS])
def test_paper_rows(inputs, expected):
    model_type, size, max_len, difficulty = inputs
    choices = {c.field: c.value for c in recommend(model_type, size, max_len, "0,1", difficulty)}
    got = (choices["recipe"], choices["advantage_std"], choices["loss_aggregation"], choices["epsilon_high"],
           choices["overlong_filter"])
    assert got == expected
    assert choices["advantage_mean"] == "group" and choices["epsilon"] == 0.2


def test_every_choice_says_why():
    for choice in recommend("instruct", "8B", 8192, "-1,1", "hard"):
        assert choice.why
    text = to_yaml(recommend("base", "4B", 8192))
    assert ("# the paper reports group mean + batch std as the most robust normalization (Takeaway 3)\n"
            "advantage_std: batch") in text


def test_yaml_loads_as_a_config(tmp_path):
    path = tmp_path / "rec.yaml"
    path.write_text(to_yaml(recommend("instruct", "4B", 4096, difficulty="easy")))
    (args,) = TrlParser((LitePPOConfig,)).parse_args_and_config(
        args=["--config", str(path), "--output_dir", str(tmp_path), "--use_cpu", "--bf16", "false",
              "--per_device_train_batch_size", "8", "--num_generations", "8"]
    )
    assert (args.recipe, args.advantage_std, args.loss_aggregation, args.epsilon_high, args.overlong_filter,
            args.max_completion_length) == ("instruct", "none", "seq-mean-token-mean", 0.32, True, 4096)


@pytest.mark.parametrize("kwargs, message", [
    ({"model_type": "chat"}, "model_type='chat' is not supported; expected one of ['base', 'instruct']"),
    ({"model_size": "big"}, "model_size='big' is not supported; expected a size like '4B' or '0.6B'"),
    ({"difficulty": "insane"}, "difficulty='insane' is not supported; expected one of ['easy', 'medium', 'hard']"),
    ({"reward_scale": "0,2"}, "reward_scale='0,2' is not supported; expected one of ['0,1', '-1,1']"),
    ({"max_completion_length": 0}, "max_completion_length=0 is not supported; expected tokens > 0"),
])
def test_bad_inputs(kwargs, message):
    args = {"model_type": "base", "model_size": "4B", "max_completion_length": 8192, **kwargs}
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        recommend(**args)


def test_cli():
    result = subprocess.run(
        [sys.executable, "-m", "trl_lite.cli", "recommend", "--model-type", "base", "--model-size", "4B",
         "--max-completion-length", "8192", "--reward-scale", "0,1", "--difficulty", "hard"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT},
    )
    assert result.returncode == 0, result.stderr
    assert "recipe: lite_ppo" in result.stdout and "loss_aggregation: token-mean" in result.stdout


def test_help_shows_two_reward_scales():
    # argparse's own display of the choices was `{0,1,-1,1}`, which reads as four values
    result = subprocess.run([sys.executable, "-m", "trl_lite.cli", "recommend", "--help"], capture_output=True,
                            text=True, env={**os.environ, "PYTHONPATH": ROOT})
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "{0,1,-1,1}" not in text
    assert "[--reward-scale SCALE]" in text and "--reward-scale SCALE rewards of a wrong and a right answer: '0,1' " \
        "(default) or '-1,1'" in text


@pytest.mark.parametrize("argv, scale", [
    (["--reward-scale", "0,1"], "0,1"),
    (["--reward-scale", "-1,1"], "-1,1"),  # a value starting with "-": argparse alone stops, "expected one argument"
    (["--reward-scale=-1,1"], "-1,1"),
    ([], "0,1"),
])
def test_cli_reward_scales(argv, scale, capsys):
    from trl_lite.recommend import main

    text = main(["--model-type", "base", "--model-size", "4B", "--max-completion-length", "8192", *argv])
    assert f"fragile with {{{scale}}} rewards" in text and text == capsys.readouterr().out


def test_cli_refuses_other_reward_scales(capsys):
    from trl_lite.recommend import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--model-type", "base", "--model-size", "4B", "--max-completion-length", "8192", "--reward-scale", "1"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --reward-scale: invalid choice: '1'" in err and "0,1" in err and "-1,1" in err
