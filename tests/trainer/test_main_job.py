"""The main job, `trl-lite train` (`trl_lite/train.py`; `examples/train_lite.py` is a thin launcher for it): the
offline CPU demo, defaults merged field by field, recipes and shipped configs, launching through accelerate, LoRA, DDP
and ZeRO-3 with two processes, the model card, the offline push, and the embedded policy's signal."""

import glob
import json
import os
import re
import socket
import subprocess
import sys

import pytest
import yaml
from trl import ModelConfig, TrlParser

from tests import stack
from trl_lite import LitePPOConfig
from trl_lite import launch as trl_launch
from trl_lite import train as train_lite

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "train_lite.py")
PACKAGE = os.path.join(ROOT, "trl_lite")
DEMO_CURVES = os.path.join(ROOT, "docs", "img", "demo_curves.png")  # the demo's `training_curves.png`, on the home page


def _args(output_dir, *extra):
    # The demo, shortened: 2 optimizer steps and 50 held-out problems exercise the whole pipeline.
    return train_lite.parse_cli(["--max_steps", "2", "--logging_steps", "1", "--eval_problems", "50",
                                 "--output_dir", str(output_dir), *extra])


# What the demo prints with no arguments (seed 0, 200 steps, 500 held-out problems) on the reference stack
# (.ci/reference.txt), as README.md shows it
DEMO_TABLE = """
held-out accuracy on 500 arithmetic/hard problems (sampled: 1 completion at temperature 1 each)
           greedy  sampled
before      0.454    0.502
after       0.802    0.688
change     +0.348   +0.186
"""


DEMO_TOLERANCE = 0.01  # the after row's spread across CPUs, seen 0.004 (docs/versions.md), with room


def _demo_rows(text: str) -> dict[str, list[float]]:
    """{"before" | "after" | "change": [greedy, sampled]} of the demo's printed table."""
    rows = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] in ("before", "after", "change"):
            rows[parts[0]] = [float(parts[1]), float(parts[2])]
    assert set(rows) == {"before", "after", "change"}, text[-1000:]
    return rows


def _card(output_dir) -> str:
    return open(os.path.join(output_dir, "README.md")).read()


def _assert_rows(card: str, rows: dict):
    for setting, value in rows.items():
        assert f"| {setting} | {value} |" in card, (setting, value)


def test_default_run(tmp_path, capsys):
    train_lite.main(*_args(tmp_path))
    out = capsys.readouterr().out
    # the before/after table, and no metric dictionaries
    assert "held-out accuracy on 50 arithmetic/hard problems" in out
    lines = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.split()[:1] in
             (["before"], ["after"], ["change"])}
    assert set(lines) == {"before", "after", "change"}
    for kind in (0, 1):  # greedy, sampled: the change is after - before
        assert float(lines["change"][kind]) == pytest.approx(float(lines["after"][kind]) - float(lines["before"][kind]),
                                                             abs=2e-3)
    assert "'loss'" not in out and "{'" not in out
    assert os.path.exists(tmp_path / "model.safetensors")
    card = _card(tmp_path)
    _assert_rows(card, {  # the settings actually used, and what happened
        "advantage mean / std": "group / batch",
        "loss aggregation": "token-mean",
        "clip bounds (epsilon low / high)": "0.2 / 0.2",
        "overlong filter": False,
        "optimizer steps": "2 of 2",
    })
    assert "trl-lite built-in arithmetic task" in card
    assert "arithmetic/hard greedy accuracy" in card  # the before -> after figures
    assert "2508.08221" in card and "lite-ppo" in card


def test_sumk_task_run(tmp_path, capsys):
    # `--task sumk` needs a model: the wheel ships only the demo's policy, SUM-k's are the lab's
    with pytest.raises(SystemExit, match=r"task='sumk' needs model_name_or_path: .* lab/trl_lite_lab/policies/sumk_base"):
        train_lite.main(*_args(tmp_path, "--task", "sumk"))
    # a lab policy from the clone on SUM-k (2 steps; 40 tokens are enough for k = 2, 3), with the demo's small settings
    policy = os.path.join(ROOT, "lab", "trl_lite_lab", "policies", "sumk_base")
    args = _args(tmp_path, "--task", "sumk", "--max_completion_length", "40", "--model_name_or_path", policy)
    assert (args[1].per_device_train_batch_size, args[1].steps_per_generation) == (32, 2)  # SUMK_DEMO_DEFAULTS
    train_lite.main(*args)
    out = capsys.readouterr().out
    assert "held-out accuracy on 50 SUM-k problems" in out
    assert "SUM-k greedy accuracy" in _card(tmp_path) and "trl-lite built-in SUM-k task" in _card(tmp_path)


def test_card_records_the_settings_used(tmp_path):
    train_lite.main(*_args(
        tmp_path, "--max_steps", "1", "--advantage_std", "none", "--loss_aggregation", "seq-mean-token-mean",
        "--epsilon_high", "0.28", "--overlong_filter", "--recipe", "instruct", "--learning_rate", "3e-5",
    ))
    _assert_rows(_card(tmp_path), {
        "recipe": "instruct (modified)",  # advantage_std none is not the instruct recipe's batch std
        "advantage mean / std": "group / none",
        "loss aggregation": "seq-mean-token-mean",
        "clip bounds (epsilon low / high)": "0.2 / 0.28",
        "overlong filter": True,
        "learning rate": "3e-05",
        "global batch (completions per optimizer step)": 64,
    })


def test_lora_run(tmp_path):
    train_lite.main(*_args(tmp_path, "--use_peft", "--lora_r", "4", "--lora_alpha", "8",
                           "--lora_target_modules", "q_proj", "v_proj"))
    assert os.path.exists(tmp_path / "adapter_config.json")
    assert not os.path.exists(tmp_path / "model.safetensors")  # only the adapter
    card = _card(tmp_path)
    assert "as a LoRA adapter" in card and "library_name: peft" in card


def test_push_offline_fails_once_and_keeps_local_files(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SystemExit) as exit_info:
        train_lite.main(*_args(tmp_path, "--push_to_hub", "--hub_model_id", "someone/tiny-lite"))
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert "push_to_hub to 'someone/tiny-lite' failed (OfflineModeIsEnabled" in err
    assert str(tmp_path) in err and "hf upload someone/tiny-lite" in err
    assert os.path.exists(tmp_path / "model.safetensors")
    assert "| optimizer steps | 2 of 2 |" in _card(tmp_path)
    from transformers import AutoModelForCausalLM

    AutoModelForCausalLM.from_pretrained(str(tmp_path))  # still loadable


def test_unknown_reward_and_missing_columns_are_refused(tmp_path):
    with pytest.raises(ValueError, match=r"reward_funcs='nope' names \['nope'\]; accepted: \["):
        train_lite.main(*_args(tmp_path, "--reward_funcs", "nope"))
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"problem": "1+1", "solution": "2"}) + "\n")
    with pytest.raises(ValueError, match=r"has no column \['prompt', 'answer'\]; its columns are \['problem', 'solution'\]"):
        train_lite.main(*_args(tmp_path / "out", "--dataset_name", str(data)))


def test_local_dataset_with_configured_columns(tmp_path):
    data = tmp_path / "data.jsonl"
    rows = [{"problem": f"{a}+{b}", "solution": str(a + b)} for a in range(4) for b in range(4)]
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    train_lite.main(*_args(tmp_path / "out", "--dataset_name", str(data), "--prompt_column", "problem",
                           "--answer_column", "solution", "--per_device_train_batch_size", "16"))
    assert str(data) in _card(tmp_path / "out")


def test_carry_habit_policy_drops_the_carry_greedily():
    # The main job's default start (scripts/build_embedded_policy.py --carry-habit 0.7): on held-out hard problems whose
    # sum carries into the hundreds, the greedy answer is a+b-100 (as built: 170 of 171, 0.994), elsewhere it is right
    # (129 of 129). So its greedy accuracy is the share without that carry, 129/300 = 0.43, and RL has a greedy error
    # to fix, not only samples to sharpen.
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trl_lite.sampling import transformers_sampler
    from trl_lite.rewards import completion_text, last_boxed
    from trl_lite.tasks.arithmetic import arithmetic_dataset, carries_into_hundreds, embedded_policy_path

    path = embedded_policy_path()
    assert sum(os.path.getsize(f) for f in glob.glob(os.path.join(path, "*"))) < 20 * 2**20  # under 20 MB
    model, tokenizer = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    hard = arithmetic_dataset("hard", split="test", num_per_level=300)
    sample = transformers_sampler(model, tokenizer, max_new_tokens=14, greedy=True, temperature=1.0, top_p=None,
                                  top_k=None, batch_size=256, seed=0)
    answers = [last_boxed(completion_text(group[0])) for group in sample(list(hard["prompt"]), 1)]
    carry = [carries_into_hundreds(prompt[-1]["content"]) for prompt in hard["prompt"]]
    dropped = [got == str(int(gold) - 100) for got, gold, c in zip(answers, hard["answer"], carry) if c]
    right = [got == gold for got, gold, c in zip(answers, hard["answer"], carry) if not c]
    assert len(dropped) > 100 and len(right) > 100
    assert sum(dropped) / len(dropped) > 0.9 and sum(right) / len(right) > 0.9
    assert carries_into_hundreds("150+50") and not carries_into_hundreds("149+50")  # 50+50 = 100; 49+50 = 99


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torchrun(tmp_path, *extra):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
           "--master_port", str(_free_port()), SCRIPT, "--max_steps", "2",
           "--per_device_train_batch_size", "32", "--output_dir", str(tmp_path / "out"), *extra]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": ROOT, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    return result


@pytest.mark.slow
def test_ddp_two_processes(tmp_path):
    result = _torchrun(tmp_path)
    assert result.stdout.count("held-out accuracy on") == 1  # printed by the main process only
    assert "| global batch (completions per optimizer step) | 64 |" in _card(tmp_path / "out")


@pytest.mark.slow
def test_deepspeed_zero3_two_processes(tmp_path):
    config = tmp_path / "zero3.json"
    config.write_text(json.dumps({
        "zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": True},
        "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto", "gradient_clipping": "auto",
    }))
    _torchrun(tmp_path, "--deepspeed", str(config))
    from transformers import AutoModelForCausalLM

    AutoModelForCausalLM.from_pretrained(str(tmp_path / "out"))  # the gathered weights load
    assert "| optimizer steps | 2 of 2 |" in _card(tmp_path / "out")


@pytest.mark.parametrize("recipe", sorted(glob.glob(os.path.join(PACKAGE, "recipe_configs", "*.yaml"))),
                         ids=os.path.basename)
def test_recipes_parse_to_the_paper_settings(recipe):
    overrides = ["--config", recipe, "--bf16", "false", "--use_cpu", "--use_vllm", "false"]  # CPU-only parse
    script_args, args, model_args = TrlParser(
        (train_lite.ScriptArguments, LitePPOConfig, ModelConfig)
    ).parse_args_and_config(args=overrides)
    assert model_args.model_name_or_path.startswith("Qwen/Qwen3-")
    assert (args.num_generations, args.temperature, args.top_p, args.learning_rate) == (8, 0.99, 0.99, 1e-6)
    assert args.max_completion_length == 8192
    assert args.per_device_train_batch_size * args.gradient_accumulation_steps * 8 == 128 * 8  # on 8 GPUs
    name = os.path.basename(recipe)
    expected = {
        "lite_ppo": ("group", "batch", "token-mean", 0.2, False, False),
        "grpo": ("group", "group", "seq-mean-token-mean", 0.2, False, False),
        "dapo": ("group", "group", "token-mean", 0.28, True, True),
        "instruct": ("group", "batch", "seq-mean-token-mean", 0.32 if "4b" in name else 0.28, False, False),
    }[args.recipe]
    got = (args.advantage_mean, args.advantage_std, args.loss_aggregation, args.epsilon_high, args.overlong_filter,
           args.dynamic_sampling)
    assert got == expected
    assert script_args.reward_funcs == "math_accuracy"


def test_accelerate_configs():
    configs = {os.path.basename(p): yaml.safe_load(open(p))
               for p in glob.glob(os.path.join(PACKAGE, "accelerate_configs", "*.yaml"))}
    assert configs["single_gpu.yaml"]["num_processes"] == 1
    assert configs["multi_gpu.yaml"]["distributed_type"] == "MULTI_GPU"
    assert configs["deepspeed_zero2.yaml"]["deepspeed_config"]["zero_stage"] == 2
    assert configs["deepspeed_zero3.yaml"]["deepspeed_config"]["zero_stage"] == 3
    offload = configs["deepspeed_zero3_offload.yaml"]["deepspeed_config"]
    assert (offload["zero_stage"], offload["offload_optimizer_device"], offload["offload_param_device"]) == (3, "cpu", "cpu")


def test_recipe_flag_runs_the_cpu_job_with_dapo(tmp_path):
    script_args, training_args, model_args = train_lite.parse_cli(["--recipe", "dapo"])
    assert (training_args.recipe, training_args.dynamic_sampling, training_args.soft_overlong_punishment) == (
        "dapo", True, True)
    assert (training_args.max_steps, training_args.max_completion_length) == (200, 14)  # the CPU defaults
    assert script_args.task == "arithmetic"
    # `--task sumk` alone: the SUM-k run, with its own lengths
    sumk_script, sumk, _ = train_lite.parse_cli(["--task", "sumk", "--recipe", "dapo"])
    assert (sumk.max_steps, sumk.max_completion_length, sumk.recipe, sumk_script.task) == (60, 96, "dapo", "sumk")
    # choosing the seed keeps the CPU run
    seeded = train_lite.parse_cli(["--seed=3"])[1]
    assert (seeded.max_steps, seeded.learning_rate, seeded.seed) == (200, 1e-4, 3)
    training_args.max_steps, training_args.output_dir = 2, str(tmp_path)  # 2 steps are enough to go end to end
    train_lite.main(script_args, training_args, model_args)
    card = (tmp_path / "README.md").read_text()
    assert "| recipe | dapo |" in card and "| dynamic sampling | up to 3 extra rounds |" in card
    assert train_lite.parse_cli(["--recipe=grpo"])[1].loss_aggregation == "seq-mean-token-mean"  # the CPU run too
    # explicit flags win over the recipe
    _, explicit, _ = train_lite.parse_cli(["--recipe", "dapo", "--output_dir", str(tmp_path), "--use_cpu",
                                           "--epsilon_high", "0.3", "--dynamic_sampling", "false"])
    assert (explicit.epsilon_high, explicit.dynamic_sampling, explicit.overlong_filter) == (0.3, False, True)


# ------------------------------------------------------------------ defaults merge field by field
def test_one_flag_overrides_only_its_own_field(tmp_path):
    # `--max_steps 2` is the demo for 2 steps: every other field keeps the demo's value, and bf16 stays off on a CPU
    script_args, args, model_args = train_lite.parse_cli(["--max_steps", "2"])
    assert args.max_steps == 2 and model_args.model_name_or_path is None
    demo = {k: v for k, v in train_lite.DEMO_DEFAULTS.items() if k not in ("max_steps", "report_to")}
    assert {k: getattr(args, k) for k in demo} == demo
    assert args.report_to == [] or args.report_to == ["none"] or args.report_to == "none"
    assert args.bf16 is False
    # the same for a flag outside the old short list of "CPU run" flags, e.g. the learning rate
    _, args, _ = train_lite.parse_cli(["--learning_rate", "3e-5"])
    assert (args.learning_rate, args.per_device_train_batch_size, args.max_completion_length) == (3e-5, 64, 14)


@pytest.mark.parametrize("flag", ["--model_name_or_path", "--model-name-or-path"])  # TRL's parser takes both
def test_a_named_model_gets_trl_defaults_not_the_demo(tmp_path, qwen3_model_dir, flag):
    _, args, model_args = train_lite.parse_cli([flag, str(qwen3_model_dir), "--output_dir", str(tmp_path)])
    assert model_args.model_name_or_path == str(qwen3_model_dir)
    fresh = LitePPOConfig(output_dir=str(tmp_path))
    assert (args.max_steps, args.per_device_train_batch_size, args.learning_rate, args.max_completion_length) == (
        fresh.max_steps, fresh.per_device_train_batch_size, fresh.learning_rate, fresh.max_completion_length)
    assert args.bf16 is False  # no accelerator here: the config resolves it off (TRL's default would fail)


def test_config_by_shipped_name_and_precedence(tmp_path):
    # A recipe file shipped in the package, by name: it names a model, so TRL's defaults fill what it leaves unset;
    # explicit flags win over its values.
    _, args, model_args = train_lite.parse_cli(["--config", "lite_ppo_qwen3_4b_base", "--use_vllm", "false",
                                                "--learning_rate", "2e-6"])
    assert model_args.model_name_or_path == "Qwen/Qwen3-4B-Base"
    assert (args.per_device_train_batch_size, args.max_completion_length, args.learning_rate) == (16, 8192, 2e-6)
    assert args.output_dir == "runs/lite_ppo_qwen3_4b_base"
    assert train_lite.resolve_config("dapo_qwen3_8b_base").endswith(os.path.join("recipe_configs",
                                                                                  "dapo_qwen3_8b_base.yaml"))
    with pytest.raises(ValueError, match=r"config='lite_ppo_qwen3_4b' is neither a file nor a recipe shipped with "
                                         r"trl-lite; expected a YAML path or one of \['dapo_qwen3_4b_base'"):
        train_lite.parse_cli(["--config", "lite_ppo_qwen3_4b"])
    # A config without a model (what `trl-lite recommend` writes) keeps the demo for the fields it leaves unset; a
    # --recipe under it sets defaults the file overrides.
    rec = tmp_path / "rec.yaml"
    rec.write_text("loss_aggregation: seq-mean-token-mean\nepsilon_high: 0.32\nmax_steps: 7\n")
    _, args, _ = train_lite.parse_cli([f"--config={rec}", "--recipe", "dapo"])
    assert (args.loss_aggregation, args.epsilon_high, args.max_steps) == ("seq-mean-token-mean", 0.32, 7)
    assert (args.dynamic_sampling, args.per_device_train_batch_size, args.max_completion_length) == (True, 64, 14)


def test_unknown_flag_names_its_closest_match(capsys):
    with pytest.raises(SystemExit) as exit_info:
        train_lite.cli(["--max_step", "2"])
    assert str(exit_info.value) == "trl-lite train: error: unrecognized flag --max_step; did you mean --max_steps?"
    with pytest.raises(SystemExit) as exit_info:
        train_lite.cli(["--num_proceses", "2"])  # a launch flag is suggested too
    assert "did you mean --num_processes" in str(exit_info.value)


def test_missing_dataset_file_and_unreachable_model_are_one_line(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match=r"dataset_name='missing.jsonl': no such file or folder; expected a Hub id"):
        train_lite.main(*_args(tmp_path, "--dataset_name", "missing.jsonl"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SystemExit) as exit_info:
        train_lite.main(*_args(tmp_path, "--model_name_or_path", "someone/not-cached-here"))
    message = str(exit_info.value)
    assert "'someone/not-cached-here'" in message and "--model_name_or_path" in message and "\n" not in message
    with pytest.raises(SystemExit) as exit_info:
        train_lite.main(*_args(tmp_path, "--dataset_name", "someone/no-such-dataset"))
    message = str(exit_info.value)
    assert message.startswith("trl-lite: cannot reach the Hugging Face Hub for dataset 'someone/no-such-dataset'")
    assert "local JSONL/parquet/CSV file or folder to --dataset_name" in message and "\n" not in message
    # a mistyped shipped name is one line too, listing the names
    with pytest.raises(SystemExit) as exit_info:
        train_lite.cli(["--config", "lite_ppo_qwen3_4b"])
    assert str(exit_info.value).startswith("trl-lite train: error: config='lite_ppo_qwen3_4b' is neither a file nor")


def test_launch_flags_go_to_accelerate():
    parser = train_lite.make_parser()
    launch = trl_launch.launch_flags()
    argv = ["--accelerate_config", "multi_gpu", "--num_processes", "2", "--max_steps", "3",
            "--gradient_accumulation_steps", "2", "--main_process_port=29511", "--lora_target_modules", "q_proj", "v_proj"]
    train, accel, unknown = trl_launch.split_argv(argv, trl_launch.option_strings(parser), launch)
    # a flag both parsers know (gradient_accumulation_steps) is the training run's, as in TRL's CLI
    assert train == ["--max_steps", "3", "--gradient_accumulation_steps", "2", "--lora_target_modules", "q_proj",
                     "v_proj"]
    assert accel == ["--accelerate_config", "multi_gpu", "--num_processes", "2", "--main_process_port=29511"]
    assert unknown == []
    args = trl_launch.launch_args(accel)
    shipped = os.path.join(PACKAGE, "accelerate_configs", "multi_gpu.yaml")
    assert args[:2] == ["--config_file", shipped] and args[2:5] == ["--num_processes", "2", "--main_process_port=29511"]
    assert args[5:] == ["--mixed_precision", "no"]  # no accelerator here: the shipped configs' bf16 is turned off
    with pytest.raises(ValueError, match=r"accelerate_config='zero9' is neither a file nor a config shipped with "
                                         r"trl-lite; expected a YAML path or one of \['deepspeed_zero2'"):
        trl_launch.launch_args(["--accelerate_config", "zero9"])


# ------------------------------------------------------------------ the demo checkpoints, and the card says where
def test_demo_checkpoints_keeps_the_last_and_resumes(tmp_path):
    # save_steps 1 over 3 steps: checkpoints 1, 2, 3 are written and only the last is kept (save_total_limit 1)
    train_lite.main(*_args(tmp_path, "--max_steps", "3", "--save_steps", "1"))
    assert sorted(os.listdir(tmp_path / "checkpoint-3")) and not os.path.exists(tmp_path / "checkpoint-2")
    assert glob.glob(str(tmp_path / "checkpoint-*")) == [str(tmp_path / "checkpoint-3")]
    state = json.loads((tmp_path / "trainer_state.json").read_text())  # the run's metrics, next to the model
    assert state["global_step"] == 3 and [log["step"] for log in state["log_history"] if "loss" in log] == [1, 2, 3]
    card = _card(tmp_path)
    # the quick start loads the model from where it was saved, and a run with every default is Lite PPO
    assert f'model="{tmp_path}"' in card
    assert "| recipe | lite_ppo (matching settings) |" in card
    # the same command plus --resume_from_checkpoint true continues from checkpoint-3
    train_lite.main(*_args(tmp_path, "--max_steps", "4", "--save_steps", "1", "--resume_from_checkpoint", "true"))
    assert json.loads((tmp_path / "trainer_state.json").read_text())["global_step"] == 4


NOISE = re.compile(r"Warning|warnings\.warn|Traceback|\[WARNING\]|\[rank\d+\]:|Error")


def _noise(stderr: str) -> list[str]:
    """The lines of a run's stderr that a user would have to learn to ignore: warnings, tracebacks, errors (progress
    bars are not)."""
    return [line for line in stderr.splitlines() if NOISE.search(line)]


@pytest.mark.slow
@pytest.mark.every_stack  # a new release's warning is what the upstream stage is there to see
def test_the_main_job_prints_no_warning(tmp_path):
    # `trl-lite train` as a newcomer runs it first (2 steps here): stdout holds the table, stderr only progress bars.
    # TRL's calls into transformers' deprecated gradient_checkpointing names (transformers 5.24: four FutureWarnings)
    # are quieted by the trainer (trl_lite/trl_contract.py: UPSTREAM_DEPRECATIONS); nothing else is
    result = subprocess.run([sys.executable, "-m", "trl_lite.cli", "train", "--max_steps", "2", "--eval_problems", "20",
                             "--output_dir", str(tmp_path / "out")], cwd=tmp_path, capture_output=True, text=True,
                            timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "held-out accuracy on 20" in result.stdout
    assert _noise(result.stderr) == [], result.stderr[-3000:]


def test_only_the_upstream_deprecations_are_quieted():
    import warnings

    from trl_lite.trl_contract import quiet_upstream_deprecations

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with quiet_upstream_deprecations():
            warnings.warn("`gradient_checkpointing_enable` is deprecated and will be removed in v6. Use "
                          "`activation_checkpointing_enable` instead.", FutureWarning)
            warnings.warn("`is_gradient_checkpointing` is deprecated and will be removed in v6.", FutureWarning)
            warnings.warn("`gradient_checkpointing_enable` is deprecated and will be removed in v6.", UserWarning)
            warnings.warn("something else is deprecated", FutureWarning)
        warnings.warn("`gradient_checkpointing_enable` is deprecated and will be removed in v6.", FutureWarning)
    # the two FutureWarnings it names are quieted inside, and only those; outside, nothing is
    assert [(w.category, str(w.message)[:40]) for w in seen] == [
        (UserWarning, "`gradient_checkpointing_enable` is depre"), (FutureWarning, "something else is deprecated"),
        (FutureWarning, "`gradient_checkpointing_enable` is depre")]


@pytest.mark.slow
@pytest.mark.every_stack
def test_trl_lite_train_launches_two_processes_through_accelerate(tmp_path):
    # `trl-lite train --accelerate_config multi_gpu --num_processes 2`: a shipped config, 2 CPU processes (gloo)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "trl_lite.cli", "train", "--accelerate_config", "multi_gpu", "--num_processes", "2",
           "--main_process_port", str(_free_port()), "--max_steps", "2", "--per_device_train_batch_size", "32",
           "--eval_problems", "20", "--output_dir", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.count("held-out accuracy on 20") == 1  # printed by the main process only
    assert _noise(result.stderr) == [], result.stderr[-3000:]
    # 2 processes x 32 completions: the card's global batch says both processes trained
    assert "| global batch (completions per optimizer step) | 64 |" in _card(out)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("TRL_LITE_DEMO_FIGURES"), reason="about 90 s: the figures are the reference "
                    "stack's (.ci/reference.txt); CI sets TRL_LITE_DEMO_FIGURES=1 there (set it to check them here)")
def test_demo_figures(tmp_path):
    # `trl-lite train` with no arguments, as a new user runs it (only the folder differs): the before/after table that
    # README.md and docs/quickstart.md quote. CPU float32 with a fixed seed repeats exactly on one machine and stack;
    # another release of a package below may move a digit (.ci/upstream.py reports it), and so may another CPU.
    changed = stack.differences(stack.FIGURE_PACKAGES)
    assert not changed, ("the demo's figures are the reference stack's (.ci/reference.txt), and this stack differs: "
                         f"{'; '.join(changed)}. Install it with PIP_CONSTRAINT=.ci/reference.txt, or unset "
                         "TRL_LITE_DEMO_FIGURES.")
    result = subprocess.run([sys.executable, "-m", "trl_lite.cli", "train"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=900, env=stack.figure_env(HF_HUB_OFFLINE="1"))
    assert result.returncode == 0, result.stderr[-3000:]
    # The same packages print other digits on other CPUs (float32 kernels differ by processor): on 2026-11-25 the
    # reference stack printed the README's after row (0.802, 0.688) on one CI machine and 0.806, 0.690 on an AMD EPYC
    # one (docs/versions.md). So: the header and the before row (the initial policy, identical on both) to the digit;
    # the after row within DEMO_TOLERANCE of the README's; the change row is after - before.
    got, want = _demo_rows(result.stdout), _demo_rows(DEMO_TABLE)
    assert DEMO_TABLE.strip().splitlines()[:2] == result.stdout[result.stdout.index("held-out accuracy"):].splitlines()[:2]
    assert got["before"] == want["before"], result.stdout[-1000:]
    assert all(abs(g - w) <= DEMO_TOLERANCE for g, w in zip(got["after"], want["after"])), result.stdout[-1000:]
    assert all(abs(c - (a - b)) <= 0.0015 for c, a, b in zip(got["change"], got["after"], got["before"]))
    run = tmp_path / "runs" / "train_lite"
    assert (run / "checkpoint-200" / "trainer_state.json").exists() and (run / "trainer_state.json").exists()
    # The curves the docs' home page shows (docs/img/demo_curves.png, `trl_lite.curves`) are this run's: the same
    # lines at the same steps, the initial policy's accuracy to the digit, the trained one as the after row allows
    from PIL import Image

    with Image.open(run / "training_curves.png") as fresh, Image.open(DEMO_CURVES) as shown:
        fresh, shown = json.loads(fresh.text["Description"]), json.loads(shown.text["Description"])
    shape = [(r["panel"], r["label"], r["points"], r["first_step"], r["last_step"]) for r in fresh]
    assert shape == [(r["panel"], r["label"], r["points"], r["first_step"], r["last_step"]) for r in shown]
    assert ("held-out accuracy", "arithmetic/hard greedy", 2, 0, 200) in shape
    for new, old in zip(fresh, shown):
        if new["panel"] == "held-out accuracy":
            assert new["first"] == old["first"] and abs(new["last"] - old["last"]) <= DEMO_TOLERANCE, (new, old)
