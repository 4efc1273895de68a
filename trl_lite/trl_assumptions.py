"""The table of the TRL contract: every TRL (and transformers) internal trl-lite relies on, and what it assumes of each.

One [`Assumption`] per internal, in [`CONTRACT`]; the checks that hold the installed TRL to it are
`trl_lite/trl_contract.py`'s. A new reliance on a TRL internal is a new row here (docs/design.md). Also here: the
supported TRL range, the config defaults a field must keep, and the upstream deprecations the trainer quiets.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

# The supported range, as pyproject.toml declares it (a test checks that the two agree).
SUPPORTED_TRL = ">=1.14,!=1.15.0,<1.17"
DIFFERENCES_URL = "docs/trl-differences.md (trl-lite's docs: Where trl-lite differs from TRL)"
TESTED_TRL = ("1.14.0", "1.14.1", "1.14.2", "1.16.0")  # the whole suite passed on each (docs/versions.md)


@dataclass(frozen=True)
class Assumption:
    """One TRL (or transformers) internal and what trl-lite assumes of it.

    `kind` is `"import"` (a private helper), `"method"` (of `GRPOTrainer`, overridden or called through `super()`),
    `"attribute"` (set on the trainer by `GRPOTrainer.__init__`), `"config"` (a `GRPOConfig` field read),
    `"runtime"` (a value that exists once training runs), `"output"` (a key of the batch TRL's generation returns;
    `"optional output"` when TRL may leave it out), `"metric"` (a name TRL logs, read back from the log history) or
    `"release"` (a problem of one TRL release, see `_release_problems`). `params` are the
    leading positional parameters a method must accept; `verified_by` names the tests that pin the behaviour the check
    cannot see.
    """

    name: str
    kind: str
    owner: str
    assumes: str
    params: tuple[str, ...] = ()
    verified_by: str = ""
    check: object = field(default=None, compare=False, repr=False)  # attribute/runtime: value -> problem or None


def _int_problem(value):
    return None if isinstance(value, int) and not isinstance(value, bool) else f"is {value!r}, expected an int"


def _number_problem(value):
    return None if isinstance(value, (int, float)) and not isinstance(value, bool) else (
        f"is {value!r}, expected a number")


def _int_list(value):
    if isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value):
        return None
    return f"is {value!r}, expected a list of token ids"


def _metrics_store(value):
    """`_metrics[mode][name]` is a list that can be appended to, created on first use."""
    for mode in ("train", "eval"):
        store = value.get(mode) if isinstance(value, dict) else None
        if not isinstance(store, collections.defaultdict) or store.default_factory is not list:
            return f"_metrics[{mode!r}] is {type(store).__name__}, expected a defaultdict(list)"
    return None


def _logs_store(value):
    advantages = value.get("advantages") if isinstance(value, dict) else None
    if not all(hasattr(advantages, method) for method in ("pop", "extend", "__len__")):
        return f"_logs['advantages'] is {type(advantages).__name__}, expected a list or deque"
    return None


def _one_of(*choices):
    def check(value):
        return None if value in choices else f"is {value!r}, expected one of {list(choices)}"

    return check


def _is_none(value):
    return None if value is None else f"is {type(value).__name__} on a fresh trainer, expected None"


def _is_zero(value):
    return None if value == 0 and isinstance(value, int) else f"is {value!r} on a fresh trainer, expected 0"


def _has_pad_token(value):
    return None if hasattr(value, "pad_token_id") and hasattr(value, "decode") else (
        f"is {type(value).__name__}, expected a tokenizer with pad_token_id and decode")


def _tensor(value):
    import torch

    return None if isinstance(value, torch.Tensor) else f"is {type(value).__name__}, expected a tensor"


def _is_list(value):
    return None if isinstance(value, list) else f"is {type(value).__name__}, expected a list"


def _has_callbacks(value):
    return None if isinstance(getattr(value, "callbacks", None), list) else "has no list `callbacks`"


_GRPO = "trl.GRPOTrainer"
_VLLM_GENERATION = "trl.generation.vllm_generation.VLLMGeneration"
_TRAINER = "transformers.Trainer"
_PARITY = "tests/trainer/test_trainer_parity.py"
_DIFF = "tests/trainer/test_trl_differences.py"
_RESUME = "tests/trainer/test_resume_exact.py"

CONTRACT: tuple[Assumption, ...] = (
    # ------------------------------------------------------------------ private helpers imported from TRL
    Assumption("trl.trainer.utils.is_async_callable", "import", "trl",
               "`is_async_callable(func) -> bool`: whether TRL awaits a reward function (its guard must be async too)",
               params=("func",), verified_by="tests/trainer/test_reward_faults.py"),
    Assumption("trl.trainer.utils.RepeatSampler", "import", "trl",
               "`RepeatSampler(data_source, mini_repeat_count, batch_size, repeat_count, shuffle, seed)` yields each "
               "prompt index `mini_repeat_count` times in a row, `batch_size` prompts at a time, shuffled by `seed`: "
               "TRL's own prompt order, which dynamic sampling's refills follow",
               params=("data_source", "mini_repeat_count", "batch_size", "repeat_count", "shuffle", "seed"),
               verified_by="tests/trainer/test_dynamic_sampling.py"),
    Assumption("trl.trainer.utils.get_config_model_id", "import", "trl",
               "`get_config_model_id(config) -> str`: the model id for the default output_dir and the model card",
               params=("config",), verified_by="tests/config/test_model_card.py"),
    Assumption("trl.rewards.get_soft_overlong_punishment", "import", "trl",
               "`get_soft_overlong_punishment(max_completion_len, soft_punish_cache)`: DAPO's length penalty as a "
               "reward function", params=("max_completion_len", "soft_punish_cache"),
               verified_by="tests/unit/test_rewards.py"),
    # ------------------------------------------------------------------ VLLMGeneration (`GRPOTrainer.vllm_generation`
    # when `use_vllm=True`: `mode`, `llm`, the in-process `vllm.LLM` in colocate mode), methods trl-lite calls
    Assumption("_iter_named_params", "method", _VLLM_GENERATION,
               "`_iter_named_params()` yields `(name, tensor)` under vLLM's names, one parameter at a time: gathered "
               "from ZeRO-3 shards, with a LoRA adapter merged while it yields and unmerged in place once it ends. "
               "trl-lite streams it into vLLM's layerwise reload on vLLM's CPU backend (trl_lite/vllm_cpu.py)",
               verified_by="tests/distributed/test_vllm_cpu.py"),
    Assumption("sync_weights", "method", _VLLM_GENERATION,
               "`sync_weights()` pushes the trainer's weights to vLLM and resets its prefix cache; trl-lite replaces "
               "it on the instance where vLLM runs on its CPU backend. TRL builds the colocated engine as "
               "`trl.generation.vllm_generation.LLM(...)` without a dtype (`vllm_generation_module`)",
               verified_by="tests/distributed/test_vllm_cpu.py"),
    # ------------------------------------------------------------------ GRPOTrainer methods wrapped or called
    Assumption("_generate", "method", _GRPO,
               "`_generate(prompts)` returns a tuple whose item 1 is the completions' token ids, one list per prompt "
               "(prompts already repeated `num_generations` times); the truncation rule reads it",
               params=("prompts",), verified_by=_DIFF),
    Assumption("_calculate_rewards", "method", _GRPO,
               "`_calculate_rewards(inputs, prompts, completions, completion_ids_list)` returns the rewards (N, F) "
               "gathered over processes in process order, NaN where a function returned None",
               params=("inputs", "prompts", "completions", "completion_ids_list"),
               verified_by="tests/trainer/test_reward_faults.py"),
    Assumption("_generate_and_score_completions", "method", _GRPO,
               "`_generate_and_score_completions(inputs)` generates, scores and returns this process's batch as a "
               "dict (see the output keys); its `advantages` are recomputed afterwards",
               params=("inputs",), verified_by=_PARITY),
    Assumption("_prepare_inputs", "method", _GRPO,
               "`_prepare_inputs(generation_batch)` generates every `steps_per_generation * num_iterations` "
               "micro-steps, stores the batch split into `steps_per_generation` micro-batches in `_buffered_inputs` "
               "(a new list object each time) and returns micro-batch `_step % steps_per_generation`",
               params=("generation_batch",), verified_by=f"{_PARITY}, {_RESUME}"),
    Assumption("_compute_loss", "method", _GRPO,
               "`_compute_loss(model, inputs)`: for loss_type dapo, cispo and vespo it returns "
               "`sum(per_token_loss * mask) / (num_items_in_batch / P * accumulation / steps_per_generation)`; for "
               "sapo the mean of per-sequence token means divided by accumulation; the KL term (beta > 0) is added "
               "per token before aggregation; the objectives are positively homogeneous in `advantages`",
               params=("model", "inputs"), verified_by=f"{_PARITY}, {_DIFF}, tests/trainer/test_objectives.py"),
    Assumption("_get_per_token_logps_and_entropies", "method", _GRPO,
               "`_get_per_token_logps_and_entropies(model, input_ids, attention_mask, logits_to_keep, ...)` returns "
               "a tuple starting with per-token log-probs (B, T) and entropies (B, T) or None; `_compute_loss` calls "
               "it once for the policy forward",
               params=("model", "input_ids", "attention_mask", "logits_to_keep"),
               verified_by="tests/unit/test_diagnostics.py, tests/unit/test_aggregation.py"),
    Assumption("_save_checkpoint", "method", _GRPO,
               "`_save_checkpoint(model, trial)` writes the checkpoint folder `checkpoint-<global_step>` under "
               "`_get_output_dir(trial)`: weights, optimizer, scheduler and RNG states, then `trainer_state.json` "
               "(transformers); trl-lite's per-process state is written before it is called. Not covered: with "
               "`use_adaptive_entropy`, TRL writes `entropy_ctrl_state.json` after `trainer_state.json`, so a "
               "checkpoint cut off between the two is resumed without it",
               params=("model", "trial"), verified_by=_RESUME),
    Assumption("_load_optimizer_and_scheduler", "method", _GRPO,
               "`_load_optimizer_and_scheduler(checkpoint)` runs once on resume, after the trainer is built and "
               "before the first step (transformers)", params=("checkpoint",), verified_by=_RESUME),
    Assumption("_get_output_dir", "method", _TRAINER,
               "`_get_output_dir(trial)` is the folder `checkpoint-N` is written in", params=("trial",),
               verified_by=_RESUME),
    Assumption("_push_from_checkpoint", "method", _TRAINER,
               "`_push_from_checkpoint(checkpoint_folder)` pushes a saved checkpoint to the Hub",
               params=("checkpoint_folder",), verified_by="tests/config/test_model_card.py"),
    Assumption("save_model", "method", _TRAINER,
               "`save_model(output_dir, _internal_call)` saves the final model and, with `push_to_hub`, pushes it: "
               "the model card is written before", params=("output_dir", "_internal_call"),
               verified_by="tests/config/test_model_card.py"),
    Assumption("create_model_card", "method", _GRPO,
               "`create_model_card(model_name, dataset_name, tags)`: TRL's `_save_checkpoint` calls it with "
               "`model_name=`; trl-lite's card replaces TRL's", params=("model_name", "dataset_name", "tags"),
               verified_by="tests/config/test_model_card.py"),
    Assumption("init_hf_repo", "method", _TRAINER,
               "`init_hf_repo(token)` is called by the constructor when `push_to_hub=True`, and creates the repo",
               params=("token",), verified_by="tests/config/test_model_card.py"),
    # ------------------------------------------------------------------ attributes GRPOTrainer.__init__ sets
    Assumption("_metrics", "attribute", _GRPO,
               "`_metrics[mode][name]` (mode 'train' or 'eval') is a list of values, created on first use, averaged "
               "and cleared at each `log`", check=_metrics_store, verified_by="tests/unit/test_diagnostics.py"),
    Assumption("_logs", "attribute", _GRPO,
               "`_logs['advantages']` holds the advantages of the completions table, the newest batch last",
               check=_logs_store, verified_by="tests/trainer/test_smoke.py"),
    Assumption("_buffered_inputs", "attribute", _GRPO,
               "None until the first generation batch, then the list `_prepare_inputs` trains from (see above)",
               check=_is_none, verified_by=_RESUME),
    Assumption("_step", "attribute", _GRPO,
               "the micro-step counter: 0 on a fresh trainer, +1 per `training_step`; with `_buffered_inputs` it "
               "decides when to generate", check=_is_zero, verified_by=_RESUME),
    Assumption("_tokenizer", "attribute", _GRPO, "the text tokenizer of `processing_class` (pad_token_id, decode)",
               check=_has_pad_token, verified_by="tests/unit/test_diagnostics.py"),
    Assumption("eos_token_ids", "attribute", _GRPO, "the token ids that end a completion", check=_int_list,
               verified_by=_DIFF),
    Assumption("num_generations", "attribute", _GRPO, "completions per prompt in training", check=_int_problem,
               verified_by=_PARITY),
    Assumption("num_generations_eval", "attribute", _GRPO, "completions per prompt in evaluation", check=_int_problem,
               verified_by="tests/trainer/test_evaluation.py"),
    Assumption("max_completion_length", "attribute", _GRPO, "the completion length limit, in tokens",
               check=_int_problem, verified_by=_DIFF),
    Assumption("reward_funcs", "attribute", _GRPO,
               "the list of reward callables and models `_calculate_rewards` calls, by index (guards replace them)",
               check=_is_list, verified_by="tests/trainer/test_reward_faults.py"),
    Assumption("reward_func_names", "attribute", _GRPO, "one name per reward function, for the metrics",
               check=_is_list, verified_by="tests/trainer/test_reward_faults.py"),
    Assumption("reward_weights", "attribute", _GRPO, "a tensor (F,) of the reward functions' weights",
               check=_tensor, verified_by=_PARITY),
    Assumption("multi_objective_aggregation", "attribute", _GRPO,
               "'sum_then_normalize' (weighted sum, then normalize) or 'normalize_then_sum'",
               check=_one_of("sum_then_normalize", "normalize_then_sum"), verified_by="tests/trainer/test_objectives.py"),
    Assumption("num_iterations", "attribute", _GRPO, "optimization passes over each generation batch",
               check=_int_problem, verified_by=_RESUME),
    Assumption("loss_type", "attribute", _GRPO, "the branch of `_compute_loss` that aggregates (set by trl-lite)",
               check=lambda value: None if isinstance(value, str) else f"is {value!r}, expected a str",
               verified_by=_PARITY),
    Assumption("beta", "attribute", _GRPO, "the KL coefficient (0 builds no reference model)", check=_number_problem,
               verified_by="tests/unit/test_aggregation.py"),
    Assumption("importance_sampling_level", "attribute", _GRPO, "'token' or 'sequence' (GSPO)",
               check=_one_of("token", "sequence"), verified_by="tests/unit/test_diagnostics.py"),
    Assumption("epsilon_low", "attribute", _GRPO, "the lower clip bound of the PPO ratio", check=_number_problem,
               verified_by="tests/unit/test_diagnostics.py"),
    Assumption("epsilon_high", "attribute", _GRPO, "the upper clip bound of the PPO ratio (clip-higher)",
               check=_number_problem, verified_by="tests/unit/test_diagnostics.py"),
    Assumption("use_vllm", "attribute", _GRPO,
               "whether vLLM generates (`args.use_vllm`); TRL then pushes the weights to vLLM at the first generation "
               "of each new global step, before generating (the stale-weight alarm checks that generation)",
               check=_one_of(True, False), verified_by="tests/trainer/test_sync_alarm.py, tests/trainer/test_vllm_seeds.py"),
    *(Assumption(name, "attribute", _TRAINER,
                 f"whether {engine} runs the training (transformers' `Trainer.__init__`): a resume then checks the "
                 "checkpoint's weights in its own layout", check=_one_of(True, False),
                 verified_by="tests/distributed/test_multinode.py")
      for name, engine in (("is_deepspeed_enabled", "DeepSpeed"), ("is_fsdp_enabled", "FSDP"))),
    Assumption("callback_handler", "attribute", _TRAINER, "`callback_handler.callbacks`: the trainer's callbacks",
               check=_has_callbacks, verified_by="tests/unit/test_diagnostics.py"),
    Assumption("hub_model_id", "attribute", _TRAINER,
               "the Hub repo a push goes to, set by `init_hf_repo` (None when `push_to_hub=False`)",
               verified_by="tests/config/test_model_card.py"),
    # ------------------------------------------------------------------ set once training runs
    Assumption("current_gradient_accumulation_steps", "runtime", _TRAINER,
               "the micro-batches of the current optimizer step, set by the training loop before the first step "
               "(`gradient_accumulation_steps` except in a short last step)", check=_int_problem, verified_by=_PARITY),
    Assumption("_generate.output[1]", "runtime", _GRPO, "the completion ids: one sequence of token ids per prompt",
               verified_by=_DIFF),
    Assumption("_calculate_rewards.output", "runtime", _GRPO, "a float tensor (N_global, F)",
               verified_by="tests/trainer/test_reward_faults.py"),
    Assumption("_buffered_inputs.length", "runtime", _GRPO,
               "after a generation, `steps_per_generation` micro-batches (dicts)", verified_by=_RESUME),
    # ------------------------------------------------------------------ keys of the batch TRL's generation returns
    Assumption("advantages", "output", _GRPO, "(B,) this process's advantages, replaced by trl-lite's",
               verified_by=_PARITY),
    Assumption("completion_mask", "output", _GRPO, "(B, T) the loss mask of the completion tokens",
               verified_by=_PARITY),
    Assumption("completion_ids", "output", _GRPO, "(B, T) right-padded completion token ids",
               verified_by="tests/trainer/test_dynamic_sampling.py"),
    Assumption("prompt_ids", "output", _GRPO, "(B, S) left-padded prompt token ids",
               verified_by="tests/trainer/test_dynamic_sampling.py"),
    Assumption("prompt_mask", "output", _GRPO, "(B, S) the prompt attention mask",
               verified_by="tests/trainer/test_dynamic_sampling.py"),
    Assumption("num_items_in_batch", "output", _GRPO,
               "the loss tokens of the generation batch over all processes, the token-sum normalizer's input",
               verified_by=_DIFF),
    Assumption("ref_per_token_logps", "output", _GRPO, "(B, T) the reference model's log-probs, when beta != 0",
               verified_by="tests/unit/test_aggregation.py"),
    Assumption("old_per_token_logps", "optional output", _GRPO,
               "(B, T) the sampling policy's log-probs; absent when the batch is trained on at once, on-policy (the "
               "PPO ratio is then 1, as TRL computes it)", verified_by="tests/unit/test_diagnostics.py"),
    Assumption("sampling_per_token_logps", "optional output", _GRPO,
               "(B, T) with vLLM: the log-probs vLLM reported for the tokens it sampled (NaN where it could not score "
               "one), processed as sampled (temperature); the stale-weight alarm compares them with "
               "`old_per_token_logps`", verified_by="tests/trainer/test_sync_alarm.py"),
    Assumption("tool_mask", "optional output", _GRPO,
               "(B, T) 0 on tool-output tokens; present with tools, and then part of the loss mask",
               verified_by="tests/unit/test_aggregation.py"),
    # ------------------------------------------------------------------ metrics TRL logs that trl-lite reads back
    *(Assumption(name, "metric", _GRPO, f"TRL logs `{name}` each logging step ({use})",
                 verified_by="tests/config/test_trl_contract.py")
      for name, use in (
          ("reward", "the model card's final reward, the lab's reward curve"),
          ("entropy", "the ablation's and the lab's entropy curves"),
          ("completions/mean_length", "the ablation's and the lab's length curves"),
          ("clip_ratio/low_mean", "the clipped fraction at the low bound"),
          ("clip_ratio/high_mean", "the clipped fraction at the high bound (clip-higher)"),
          ("rewards/{name}/mean", "each reward function's mean, the ablation's accuracy"),
      )),
)

# GRPOConfig fields trl-lite reads (beyond transformers' TrainingArguments and its own LitePPOConfig fields)
CONFIG_FIELDS: tuple[Assumption, ...] = tuple(
    Assumption(name, "config", "trl.GRPOConfig", assumes)
    for name, assumes in (
        ("steps_per_generation", "micro-batches per generation batch, a multiple of gradient_accumulation_steps"),
        ("generation_batch_size", "completions per generation batch over all processes"),
        ("num_generations", "completions per prompt"),
        ("max_completion_length", "the completion length limit"),
        ("scale_rewards", "TRL's std level, translated to advantage_std"),
        ("loss_type", "TRL's aggregation and objective, translated to loss_aggregation"),
        ("multi_objective_aggregation", "how several reward functions combine"),
        ("gradient_checkpointing", "GRPOConfig's default differs from transformers' (True); with transformers' "
         "activation_checkpointing, it is the value that name takes"),
        ("reward_weights", "one weight per reward function"),
        ("epsilon", "the lower clip bound (and the upper one unless epsilon_high is set)"),
        ("epsilon_high", "the upper clip bound"),
        ("use_bias_correction_kl", "importance-sampling correction of the KL term"),
        ("beta", "the KL coefficient, on the model card"),
        ("temperature", "the sampling temperature, on the model card"),
        ("top_p", "the nucleus sampling bound, on the model card"),
        ("learning_rate", "on the model card (GRPOConfig's default, 1e-6, is not transformers')"),
        ("vllm_mode", "'colocate' builds the vLLM engine in this process (its worker reseeds the process-wide "
                      "generators when it starts) or 'server'"),
        ("vllm_tensor_parallel_size", "the processes of one colocated engine, which share its seed"),
        ("bf16", "unset is None until GRPOConfig.__post_init__ turns it on; LitePPOConfig resolves it first"),
        ("use_vllm", "whether vLLM generates: a working vLLM is required before the trainer is built, and on vLLM's "
                     "CPU backend trl-lite syncs the weights itself"),
        ("vllm_enable_sleep_mode", "vLLM's sleep mode, refused when the config is built on vLLM's CPU backend"),
        ("generation_kwargs", "extra generation settings; its stop strings (`stop`, `stop_strings`) end a completion "
                              "without cutting it (trl_lite/truncation.py)"),
        ("model_init_kwargs", "how a model given by name is loaded; its `dtype` is the CPU engine's (vllm_cpu.py)"),
    )
)
_CONFIG_DEFAULTS = {"bf16": None}  # the declared default a field must keep

# Deprecation warnings that TRL's own calls raise in the libraries beneath it: nothing a trl-lite user can act on (the
# calls are TRL's), so a run does not print them (`trl_contract.quiet_upstream_deprecations`). TRL 1.16 calls
# transformers' `gradient_checkpointing_enable`, `gradient_checkpointing_disable` and `is_gradient_checkpointing`,
# which transformers 5.24 renamed `activation_*`.
UPSTREAM_DEPRECATIONS = (
    r"`(is_)?gradient_checkpointing(_enable|_disable)?` is deprecated and will be removed in v6",
)
