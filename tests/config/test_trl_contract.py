"""The TRL contract (trl_lite/trl_contract.py): it lists exactly the TRL internals the package uses, it holds on the
installed TRL, and breaking any one of its assumptions stops a run at once with an error that names the assumption,
the installed TRL and the supported range."""

import ast
import dataclasses
import inspect
import pathlib
import re
import textwrap

import pytest
import torch
import transformers
from trl import GRPOConfig, GRPOTrainer

import trl_lite
from tests.tiny import prompt_dataset, reward_digit_count, train_args
from trl_lite import LitePPOConfig, LitePPOTrainer, trl_contract
from trl_lite.trl_contract import CONFIG_FIELDS, CONTRACT, SUPPORTED_TRL, TRLContractError, check_trainer, check_trl

PACKAGE = pathlib.Path(trl_lite.__file__).parent

# Public API of transformers' Trainer and TRL's trainers (documented, stable), which the contract does not list.
PUBLIC = {
    "__init__", "accelerator", "args", "model", "state", "processing_class", "train_dataset", "is_world_process_zero",
    "add_callback", "remove_callback", "push_to_hub", "log", "train", "save_state",
}
# Names trl-lite defines and reads itself that happen to shadow a TRL class attribute of the same name.
SHADOWED = {"_tag_names", "_name", "_paper"}


def _trainer_classes():
    from trl_lite.trainer import LitePPOTrainer

    return [c for c in LitePPOTrainer.__mro__ if c.__module__.startswith("trl_lite")]


def _class_uses(cls) -> tuple[set, set, set]:
    """(names read or written as `self.X` or called as `super().X`, names the class body defines, `self.args.X` and
    `args.X` fields read) in the source of `cls`."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
    used, defined, fields = set(), set(), set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Assign):
            defined.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defined.add(node.target.id)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        value = node.value
        if isinstance(value, ast.Name) and value.id == "self":
            used.add(node.attr)
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
            used.add(node.attr)
        elif (isinstance(value, ast.Attribute) and value.attr == "args" and isinstance(value.value, ast.Name)
              and value.value.id == "self") or (isinstance(value, ast.Name) and value.id == "args"):
            fields.add(node.attr)
    return used, defined, fields


@pytest.fixture(scope="module")
def grpo_trainer(tiny_model_dir, tmp_path_factory):
    args = GRPOConfig(**train_args(tmp_path_factory.mktemp("grpo")))
    trainer = GRPOTrainer(model=tiny_model_dir, reward_funcs=reward_digit_count, args=args,
                          train_dataset=prompt_dataset())
    trl_contract.adapt(trainer)  # as trl-lite sees it: an older supported release's gaps filled in
    return trainer


@pytest.fixture(scope="module")
def lite_trainer(tiny_model_dir, tmp_path_factory):
    args = LitePPOConfig(**train_args(tmp_path_factory.mktemp("lite")))
    return LitePPOTrainer(model=tiny_model_dir, reward_funcs=reward_digit_count, args=args,
                          train_dataset=prompt_dataset())


# ------------------------------------------------------------------ the contract lists exactly what the code uses
def test_contract_lists_exactly_the_trainer_internals_used(grpo_trainer):
    """Every name the trainer classes read, write, override or call through `super()` that TRL's trainer (class or
    instance) also has, less its public API, is in the contract as a method, attribute or runtime assumption, and
    the contract lists nothing else."""
    used, defined = set(), set()
    for cls in _trainer_classes():
        u, d, _ = _class_uses(cls)
        used |= u
        defined |= d
    # what TRL's trainer has: its class, a built instance, and what transformers' Trainer sets later (in training)
    trl_names = set(dir(GRPOTrainer)) | set(vars(grpo_trainer)) | _class_uses(transformers.Trainer)[0]
    relied_on = {name for name in used | defined if name in trl_names} - PUBLIC - SHADOWED
    listed = {a.name for a in CONTRACT if a.kind in ("method", "attribute", "runtime") and "." not in a.name
              and a.owner != trl_contract._VLLM_GENERATION}
    assert relied_on == listed, (
        f"used but not in the contract: {sorted(relied_on - listed)}; in the contract but unused: "
        f"{sorted(listed - relied_on)}")


def _args_fields_read() -> set:
    """Every `args.X` and `self.args.X` read anywhere in the package, every `self.X` in LitePPOConfig, and every field
    its validation table checks (`trl_lite.config.VALIDATION`, read by name)."""
    from trl_lite.config import VALIDATION

    fields = {row[0] for row in VALIDATION}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and (
                (isinstance(node.value, ast.Name) and node.value.id == "args")
                or (isinstance(node.value, ast.Attribute) and node.value.attr == "args")
            ):
                fields.add(node.attr)
    return fields | _class_uses(LitePPOConfig)[0]


def test_contract_lists_exactly_the_config_fields_used():
    """The GRPOConfig fields the package reads, less transformers' TrainingArguments (unless GRPOConfig changes their
    default) and trl-lite's own fields, are the contract's config fields."""
    grpo = {f.name: f for f in dataclasses.fields(GRPOConfig)}
    base = {f.name: f for f in dataclasses.fields(transformers.TrainingArguments)}
    inherited = {name for name, f in base.items() if name in grpo and grpo[name].default == f.default}
    inherited |= set(dir(transformers.TrainingArguments)) - set(grpo)  # properties such as should_save
    own = {f.name for f in dataclasses.fields(LitePPOConfig)} - set(grpo)
    relied_on = (_args_fields_read() & set(grpo)) - inherited - own
    assert relied_on == {a.name for a in CONFIG_FIELDS}


def test_contract_lists_the_batch_keys_read():
    """The keys the trainer classes read from the batch TRL's generation returns (`output[...]`, `inputs[...]`,
    `batch[...]`, `inputs.get(...)`, `output.get(...)`), less trl-lite's own `lite_*` keys, are the contract's output
    keys. The prompt keys are relied on by name, not read: `select_groups` pads every `prompt*` tensor on the left."""
    read = set()
    for cls in _trainer_classes():
        for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(cls)))):
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and isinstance(
                    node.slice, ast.Constant) and isinstance(node.slice.value, str) and node.value.id in (
                    "output", "inputs", "batch", "first"):
                read.add(node.slice.value)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and (
                    isinstance(node.func.value, ast.Name) and node.func.value.id in ("inputs", "output")):
                read.add(node.args[0].value)
    read = {key for key in read if not key.startswith("lite_")}
    listed = {a.name for a in CONTRACT if a.kind in ("output", "optional output")}
    assert read | {"prompt_ids", "prompt_mask"} == listed


def test_trl_logs_the_metrics_trl_lite_reads(tiny_model_dir, tmp_path):
    """The metric names trl-lite reads back from the log history (model card, ablation, lab) are logged by TRL."""
    args = GRPOConfig(**train_args(tmp_path, max_steps=1, **{"scale_rewards": "batch", "loss_type": "dapo"}))
    trainer = GRPOTrainer(model=tiny_model_dir, reward_funcs=reward_digit_count, args=args,
                          train_dataset=prompt_dataset())
    trainer.train()
    logged = trainer.state.log_history[0]
    names = [a.name.format(name="reward_digit_count") for a in CONTRACT if a.kind == "metric"]
    assert len(names) == 6
    assert [name for name in names if name not in logged] == []


def test_broken_config_default():
    class Changed:
        __dataclass_fields__ = {**GRPOConfig.__dataclass_fields__,
                                "bf16": dataclasses.field(default=True)}

    with pytest.raises(TRLContractError) as error:
        check_trl(config_cls=Changed)
    _assert_names(error.value, "bf16")


def test_private_trl_imports_go_through_the_contract():
    """Only trl_contract.py imports from TRL's submodules (guarded); the rest of the package imports public names
    from `trl` itself, and the contract's import entries are exactly the helpers trl_contract.py imports."""
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("trl."):
                assert path.name == "trl_contract.py", f"{path}: from {node.module} import ..."
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("trl.") for a in node.names), path
    source = (PACKAGE / "trl_contract.py").read_text()
    assert not re.findall(r"^(?:import trl|from trl\b)", source, flags=re.MULTILINE)  # only through `_import`
    assert {a.name for a in CONTRACT if a.kind == "import"} == set(trl_contract._IMPORTED)


def test_the_supported_range_is_the_one_pyproject_declares():
    pyproject = (PACKAGE.parent / "pyproject.toml").read_text()
    (pin,) = re.findall(r'"trl([^"]*)"', pyproject.split("dependencies = [")[1].split("]")[0])
    assert pin == SUPPORTED_TRL
    oldest = (PACKAGE.parent / ".ci" / "oldest.txt").read_text()
    assert f"trl=={trl_contract.TESTED_TRL[0]}" in oldest  # CI's oldest stack runs the lowest supported TRL
    assert trl_contract.in_supported_range(trl_contract.TESTED_TRL[0])
    assert not trl_contract.in_supported_range("1.13.0") and not trl_contract.in_supported_range("1.17.0")


# ------------------------------------------------------------------ it holds here
def test_contract_holds_on_the_installed_trl(lite_trainer):
    check_trl()
    check_trainer(lite_trainer)
    names = [trl_contract._display(a) for a in CONTRACT + CONFIG_FIELDS]  # as the contract's errors name them
    assert len(set(names)) == len(names) == len(CONTRACT) + len(CONFIG_FIELDS)  # each name listed once


# ------------------------------------------------------------------ each assumption, broken in turn
def _assert_names(error: TRLContractError, name: str):
    message = str(error)
    assert name in message
    assert f"installed TRL {trl_contract.trl_version()}" in message
    assert f"trl{SUPPORTED_TRL}" in message


@pytest.mark.parametrize("name", [a.name for a in CONTRACT if a.kind == "import"])
@pytest.mark.parametrize("how", ["missing", "signature"])
def test_broken_import(monkeypatch, name, how):
    if how == "missing":
        monkeypatch.setitem(trl_contract._IMPORTED, name, None)
        monkeypatch.setitem(trl_contract._IMPORT_ERRORS, name, "cannot be imported (ImportError: renamed)")
    else:
        monkeypatch.setitem(trl_contract._IMPORTED, name, lambda renamed_argument: None)
    with pytest.raises(TRLContractError) as error:
        LitePPOConfig(output_dir="/tmp/unused", use_cpu=True, bf16=False)  # before the trainer: at the config
    _assert_names(error.value, name)


def test_contract_lists_exactly_the_vllm_generation_methods_used():
    """The methods of TRL's `VLLMGeneration` that trl_lite/vllm_cpu.py calls on `vllm_generation` are the contract's
    VLLMGeneration entries."""
    from trl.generation.vllm_generation import VLLMGeneration

    tree = ast.parse((PACKAGE / "vllm_cpu.py").read_text())
    used = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name) and node.value.id == "vllm_generation"}
    methods = {name for name in used if callable(getattr(VLLMGeneration, name, None))}
    assert methods == {a.name for a in CONTRACT if a.owner == trl_contract._VLLM_GENERATION} == {
        "_iter_named_params", "sync_weights"}


@pytest.mark.parametrize("name", [a.name for a in CONTRACT if a.owner == trl_contract._VLLM_GENERATION])
def test_missing_vllm_generation_method_is_named(monkeypatch, name):
    # (both take no argument: there is no signature to compare)
    from trl.generation.vllm_generation import VLLMGeneration

    monkeypatch.setattr(VLLMGeneration, name, None)
    with pytest.raises(TRLContractError) as error:
        check_trl()
    _assert_names(error.value, name)


def test_vllm_generation_module_without_llm_is_named(monkeypatch):
    monkeypatch.setattr(trl_contract, "_import", lambda path: None)
    with pytest.raises(TRLContractError, match=r"trl\.generation\.vllm_generation\.LLM` is missing"):
        trl_contract.vllm_generation_module()


@pytest.mark.parametrize("name", [a.name for a in CONTRACT
                                  if a.kind == "method" and a.owner != trl_contract._VLLM_GENERATION])
@pytest.mark.parametrize("how", ["missing", "signature"])
def test_broken_method_stops_the_trainer_before_it_builds(monkeypatch, tiny_model_dir, tmp_path, name, how):
    monkeypatch.setattr(GRPOTrainer, name, None if how == "missing" else (lambda self, renamed_argument: None))
    args = LitePPOConfig(**train_args(tmp_path))
    built = []
    monkeypatch.setattr(GRPOTrainer, "__init__", lambda *a, **k: built.append(1))
    with pytest.raises(TRLContractError) as error:
        LitePPOTrainer(model=tiny_model_dir, reward_funcs=reward_digit_count, args=args, train_dataset=prompt_dataset())
    _assert_names(error.value, name)
    assert not built  # TRL's constructor never ran


@pytest.mark.parametrize("name", [a.name for a in CONFIG_FIELDS])
def test_broken_config_field(name):
    class Renamed:
        __dataclass_fields__ = {k: v for k, v in GRPOConfig.__dataclass_fields__.items() if k != name}

    with pytest.raises(TRLContractError) as error:
        check_trl(config_cls=Renamed)
    _assert_names(error.value, name)


_WRONG = {  # a value of the wrong kind for each checked attribute
    "_metrics": {"train": {}, "eval": {}}, "_logs": {"advantages": 0}, "_buffered_inputs": [{}], "_step": 3,
    "_tokenizer": object(), "eos_token_ids": [None], "num_generations": 4.0, "num_generations_eval": "4",
    "max_completion_length": None, "reward_funcs": (), "reward_func_names": None, "reward_weights": [1.0],
    "multi_objective_aggregation": "sum", "loss_type": None, "beta": None, "importance_sampling_level": "seq",
    "epsilon_low": "0.2", "epsilon_high": None, "callback_handler": object(), "num_iterations": 1.0, "use_vllm": "no",
    "is_deepspeed_enabled": None, "is_fsdp_enabled": "no",
}


@pytest.mark.parametrize("name", [a.name for a in CONTRACT if a.kind == "attribute"])
@pytest.mark.parametrize("how", ["missing", "wrong"])
def test_broken_attribute(monkeypatch, lite_trainer, name, how):
    assumption = next(a for a in CONTRACT if a.name == name)
    if how == "missing":
        monkeypatch.delattr(lite_trainer, name, raising=False)
        monkeypatch.setattr(type(lite_trainer), name, property(lambda self: (_ for _ in ()).throw(AttributeError)),
                            raising=False)
    elif assumption.check is None:
        pytest.skip(f"{name}: only its presence is assumed")
    else:
        monkeypatch.setattr(lite_trainer, name, _WRONG[name])
    with pytest.raises(TRLContractError) as error:
        check_trainer(lite_trainer)
    _assert_names(error.value, name)


def test_broken_attribute_stops_the_trainer_after_trl_builds_it(monkeypatch, tiny_model_dir, tmp_path):
    init = GRPOTrainer.__init__

    def renamed(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self._metrics_store = self.__dict__.pop("_metrics")

    monkeypatch.setattr(GRPOTrainer, "__init__", renamed)
    args = LitePPOConfig(**train_args(tmp_path))
    with pytest.raises(TRLContractError) as error:
        LitePPOTrainer(model=tiny_model_dir, reward_funcs=reward_digit_count, args=args, train_dataset=prompt_dataset())
    _assert_names(error.value, "_metrics")


# ------------------------------------------------------------------ runtime assumptions: the first batch
def _wrap(monkeypatch, method: str, change):
    original = getattr(GRPOTrainer, method)

    def wrapped(self, *args, **kwargs):
        return change(self, original(self, *args, **kwargs))

    monkeypatch.setattr(GRPOTrainer, method, wrapped)


def _train_one_step(tiny_model_dir, tmp_path, **fields):
    args = LitePPOConfig(**train_args(tmp_path, max_steps=1, **fields))
    trainer = LitePPOTrainer(model=tiny_model_dir, reward_funcs=reward_digit_count, args=args,
                             train_dataset=prompt_dataset())
    before = {k: v.detach().clone() for k, v in trainer.model.named_parameters()}
    with pytest.raises(TRLContractError) as error:
        trainer.train()
    after = dict(trainer.model.named_parameters())
    assert all(torch.equal(before[k], after[k].detach()) for k in before)  # stopped before any update
    return error.value


def _pop_key(key):
    def change(self, output):
        output.pop(key)
        return output

    return change


@pytest.mark.parametrize("key", [a.name for a in CONTRACT if a.kind == "output"])
def test_missing_output_key(monkeypatch, tiny_model_dir, tmp_path, key):
    _wrap(monkeypatch, "_generate_and_score_completions", _pop_key(key))
    fields = {"beta": 0.1} if key == "ref_per_token_logps" else {}
    _assert_names(_train_one_step(tiny_model_dir, tmp_path, **fields), key)


def test_changed_generate_output(monkeypatch, tiny_model_dir, tmp_path):
    _wrap(monkeypatch, "_generate", lambda self, out: (out[0], [torch.tensor(ids) for ids in out[1]], *out[2:]))
    _assert_names(_train_one_step(tiny_model_dir, tmp_path), "_generate.output[1]")


def test_changed_reward_shape(monkeypatch, tiny_model_dir, tmp_path):
    _wrap(monkeypatch, "_calculate_rewards", lambda self, rewards: rewards.sum(dim=1))
    _assert_names(_train_one_step(tiny_model_dir, tmp_path), "_calculate_rewards.output")


def test_changed_buffer(monkeypatch, tiny_model_dir, tmp_path):
    def shorten(self, inputs):
        self._buffered_inputs = self._buffered_inputs[:1]
        return inputs

    _wrap(monkeypatch, "_prepare_inputs", shorten)
    _assert_names(_train_one_step(tiny_model_dir, tmp_path, steps_per_generation=2, gradient_accumulation_steps=2),
                  "_buffered_inputs.length")


def test_missing_accumulation_counter(monkeypatch, tiny_model_dir, tmp_path):
    def forget(self, inputs):
        del self.current_gradient_accumulation_steps
        return inputs

    _wrap(monkeypatch, "_prepare_inputs", forget)
    _assert_names(_train_one_step(tiny_model_dir, tmp_path), "current_gradient_accumulation_steps")
