from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Literal

from transformers.utils import logging
from trl import GRPOConfig

from .advantages import ADVANTAGE_MEANS, ADVANTAGE_STDS, AUTO_STD_KEEP
from .aggregation import AGGREGATIONS, OBJECTIVE_LOSS_TYPES, TRL_LOSS_TYPE_TO_AGGREGATION
from .recipes import recipe_settings
from .sync_check import ON_SYNC_MISMATCH, SYNC_MISMATCH_THRESHOLD
from .trl_assumptions import DIFFERENCES_URL
from .trl_contract import check_trl
from .vllm_cpu import is_cpu_engine

logger = logging.get_logger(__name__)


def _bf16_supported(use_cpu: bool) -> bool:
    """Whether an unset `bf16` can resolve to on: an accelerator with bf16 support is present and not turned off."""
    from transformers.utils import is_torch_bf16_gpu_available, is_torch_xla_available

    return not use_cpu and (is_torch_bf16_gpu_available() or is_torch_xla_available())


# TRL `scale_rewards` (after TRL's own True/False translation) -> `advantage_std`
_SCALE_REWARDS_TO_STD = {"group": "group", "batch": "batch", "none": "none", True: "group", False: "none"}
# `loss_aggregation` -> the TRL `loss_type` with the same aggregation and no other semantics, mirrored for readability
_AGGREGATION_TO_LOSS_TYPE = {"token-mean": "dapo", "seq-mean-token-mean": "grpo", "seq-mean-token-sum-norm": "dr_grpo"}


def _is_number(value) -> bool:
    """An int or float, not a bool (`True` is an int to Python, and would pass as 1)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _flag(value, config) -> bool:
    return isinstance(value, bool)


# What each field trl-lite adds or constrains accepts: (field, accepts(value, config), what is accepted as the error
# says it, or a function of the config giving that). `LitePPOConfig.__post_init__` checks them in this order, after
# translating TRL's `scale_rewards` and `loss_type`; a failure is a ValueError naming the field, the value and this.
VALIDATION = (
    ("advantage_mean", lambda v, c: v in ADVANTAGE_MEANS, lambda c: f"one of {ADVANTAGE_MEANS.names()}"),
    ("advantage_epsilon", lambda v, c: _is_number(v) and v >= 0, "a float >= 0"),
    ("overlong_filter", _flag, "True or False"),
    ("epsilon", lambda v, c: _is_number(v) and 0 < v < 1, "a float in (0, 1)"),
    ("epsilon_high", lambda v, c: v is None or (_is_number(v) and v > 0), "a float > 0 or None"),
    ("multi_objective_aggregation", lambda v, c: v in ("sum_then_normalize", "normalize_then_sum"),
     "'sum_then_normalize' or 'normalize_then_sum'"),
    ("auto_std_threshold", lambda v, c: _is_number(v) and 0 <= v <= 1, "a float in [0, 1]"),
    ("soft_overlong_punishment", _flag, "True or False"),
    ("dynamic_sampling", _flag, "True or False"),
    ("diagnostics", _flag, "True or False"),
    ("overlong_buffer_length", lambda v, c: v is None or (_is_int(v) and 0 < v <= c.max_completion_length),
     lambda c: f"an int in [1, max_completion_length={c.max_completion_length}] or None"),
    ("dynamic_sampling_max_rounds", lambda v, c: _is_int(v) and v >= 0, "an int >= 0"),
    ("clipped_tokens_top_k", lambda v, c: _is_int(v) and v >= 1, "an int >= 1"),
    ("correct_reward", lambda v, c: v is None or (isinstance(v, str) and v != ""), "a reward function's name, or None"),
    ("on_reward_error", lambda v, c: v in ("raise", "skip"), "'raise' or 'skip'"),
    ("reward_timeout", lambda v, c: v is None or (_is_number(v) and v > 0), "a number of seconds > 0, or None"),
    ("on_sync_mismatch", lambda v, c: v in ON_SYNC_MISMATCH, f"one of {list(ON_SYNC_MISMATCH)}"),
    ("sync_mismatch_threshold", lambda v, c: _is_number(v) and v > 0, "a number > 0 (nats per token)"),
)


@dataclass
class LitePPOConfig(GRPOConfig):
    r"""
    Configuration class for [`LitePPOTrainer`].

    [`LitePPOConfig`] inherits every parameter from [`~trl.GRPOConfig`]. Its defaults are Lite PPO from "Tricks or
    Traps? A Deep Dive into RL for LLM Reasoning" (https://huggingface.co/papers/2508.08221): group-level mean,
    batch-level std, token-level loss, symmetric clip 0.2, no overlong filter, no critic and no KL. It adds the full
    advantage grid, the verl/ROLL loss aggregations and a stronger overlong filter. Only the fields below are new or
    changed.

    Parameters:
        advantage_mean (`str`, *optional*, defaults to `"group"`):
            Level of the mean subtracted from the rewards: `"group"` (the `num_generations` completions of one
            prompt), `"batch"` (the whole generation batch gathered from all processes) or `"none"`. Any name
            registered in `trl_lite.advantages.ADVANTAGE_MEANS` is accepted.
        advantage_std (`str`, *optional*, defaults to `"batch"`):
            Level of the Bessel-corrected std the centred rewards are divided by: `"group"`, `"batch"` or `"none"` (no
            division). Any name registered in `trl_lite.advantages.ADVANTAGE_STDS` is accepted. The paper recommends
            `"batch"` (with a group mean), and `"none"` when rewards are concentrated (easy data). TRL's
            `scale_rewards` is translated to this field; setting both to different values is an error.
            `"auto"` keeps the batch std unless the generation batch's rewards are concentrated (see
            `auto_std_threshold`), and logs which branch each batch took as `advantages/std_kept`.
        auto_std_threshold (`float`, *optional*, defaults to `0.5`):
            With `advantage_std="auto"`: the std is dropped for a generation batch when at least this share of its
            groups have rewards that all match (all correct or all wrong), the paper's "concentrated rewards" (easy
            data, Takeaway 2). The rule and the default are trl-lite's reading of the takeaway, not a value from the
            paper.
        advantage_epsilon (`float`, *optional*, defaults to `1e-4`):
            Added to the std before dividing. TRL's value, so matching settings reproduce TRL exactly.
        loss_aggregation (`str`, *optional*, defaults to `"token-mean"`):
            How per-token losses are aggregated, with the verl/ROLL definitions: `"token-mean"` (`sum(m*l) / sum(m)`,
            token-level, the paper's choice for base models), `"seq-mean-token-mean"` (mean over sequences of the
            per-sequence token mean, sequence-level, the paper's choice for aligned models), `"seq-mean-token-sum"`
            (mean over sequences of the token sum) or `"seq-mean-token-sum-norm"` (`sum(m*l) / (N *
            max_completion_length)`, Dr. GRPO). Any name registered in `trl_lite.aggregation.AGGREGATIONS` is accepted. Every mode is exact for the optimizer step as a whole,
            over gradient accumulation, `steps_per_generation` and processes. TRL's `loss_type` is translated to this
            field (`"dapo"`/`"bnpo"` -> `"token-mean"`, `"grpo"` -> `"seq-mean-token-mean"`, `"luspo"` ->
            `"seq-mean-token-sum"`, `"dr_grpo"` -> `"seq-mean-token-sum-norm"`). With `loss_type` `"cispo"`, `"sapo"`
            or `"vespo"` (which change the per-token objective), it defaults to TRL's aggregation for that loss type
            (`"token-mean"`, `"seq-mean-token-mean"`, `"token-mean"`) and may be set to any other mode.
        overlong_filter (`bool`, *optional*, defaults to `False`):
            Exclude completions truncated at `max_completion_length` (no EOS) from the loss *and* from the advantage
            statistics: they get advantage 0 and shift no group or batch mean/std, while their rewards still show in
            the reward metrics. Truncated = `max_completion_length` tokens that do not end with EOS (vLLM's
            `finish_reason="length"`). TRL's `mask_truncated_completions` only removes them from the loss (their
            rewards still move the other samples' advantages), and by a rule ("the last token is neither EOS nor
            padding") that also drops completions a stop string ended early. The paper finds the filter helps at
            short maximum lengths (8k) but not at 20k (Takeaways 7-8).
        soft_overlong_punishment (`bool`, *optional*, defaults to `False`):
            Add DAPO's soft overlong punishment (TRL's `get_soft_overlong_punishment`) as an extra reward function with
            weight 1: 0 up to `max_completion_length - overlong_buffer_length` tokens, then falling linearly to -1 at
            `max_completion_length`.
        overlong_buffer_length (`int`, *optional*):
            Length of that buffer; defaults to 20% of `max_completion_length` (DAPO's 4096 of 20480).
        dynamic_sampling (`bool`, *optional*, defaults to `False`):
            DAPO's dynamic sampling: groups whose counted rewards all match (no signal under a group mean) are dropped
            from each generation batch, which is refilled with groups of fresh prompts, generating again up to
            `dynamic_sampling_max_rounds` extra rounds. The rounds and completions each batch really cost are logged
            under `generation/`. Requires a map-style train dataset and, with several processes, a per-process
            generation batch (`per_device_train_batch_size * steps_per_generation`) holding whole groups.
        dynamic_sampling_max_rounds (`int`, *optional*, defaults to `3`):
            Most extra generation rounds per generation batch. When they do not fill the batch, a warning is logged
            and the missing groups are taken from the dropped ones with their loss masked out (they train nothing).
        diagnostics (`bool`, *optional*, defaults to `True`):
            Log the paper's diagnostics (see [`~trl_lite.diagnostics`]): clipped tokens at each bound (a table per
            logging step, also written to `output_dir/clipped_tokens.jsonl`), repetition split by truncated/finished
            and correct/incorrect, reward concentration, lengths and entropy of correct vs incorrect completions. A
            completion is "correct" when the `correct_reward` function gives it a reward > 0.
        correct_reward (`str`, *optional*):
            The reward function that says whether a completion is correct (its reward > 0), for the diagnostics that
            split correct from incorrect completions: its name as the reward metrics show it
            (`rewards/<name>/mean`: a function's `__name__`, a reward model's name). Defaults to the first reward
            function. A name that is not among the trainer's reward functions is refused when the trainer is built.
        clipped_tokens_top_k (`int`, *optional*, defaults to `20`):
            How many of the most clipped tokens per bound the clipped-token table keeps.
        on_reward_error (`str`, *optional*, defaults to `"raise"`):
            What a reward function's fault does: it raises, returns a number of values other than one per completion,
            returns a non-finite value, or (async) exceeds `reward_timeout`. `"raise"`: the run stops with an error
            naming the function, the global step and the first offending sample; nothing is trained on that batch.
            `"skip"`: the samples the fault touches (all of the batch for a raise, a wrong count or a timeout; the
            non-finite ones otherwise) become unscorable, like `None` rewards: advantage 0, out of every statistic.
            Each function's count is logged as `rewards/<name>/errors`, and the first fault of each function is
            logged as a warning with its traceback.
        reward_timeout (`float`, *optional*):
            Seconds an async reward function may take on one batch (TRL waits forever); past it, the call is
            cancelled and counts as a fault (see `on_reward_error`). A synchronous reward function cannot be
            interrupted from the outside and must enforce its own limit, as `math_accuracy` does per check.
        on_sync_mismatch (`str`, *optional*, defaults to `"warn"`):
            With vLLM: what a stale-weight alarm does. On the first generation batch after each weight sync, the
            log-probs vLLM reported for the tokens it sampled are compared with the trainer's for the same tokens
            (the forward TRL already runs for importance sampling, or one extra forward without it), and the mean
            absolute gap per token is logged as `sampling/sync_logp_gap`. Above `sync_mismatch_threshold`: `"warn"`
            logs one warning (once per run) naming the likely causes (sleep mode, a LoRA merge, a ZeRO-3 gather);
            `"raise"` stops the run with that message; `"ignore"` only logs the gap (and skips the extra forward).
        sync_mismatch_threshold (`float`, *optional*, defaults to `0.01`):
            The gap (nats per token) above which `on_sync_mismatch` acts. The default is set from the CPU vLLM
            stand-in: 15x above the noise of its bf16 model copy (7e-4 at most over 20 steps), and below the gap of
            an engine left one step behind on the tiny test model (0.019); see `trl_lite.sync_check`. vLLM's real
            bf16 kernels on a GPU have not been measured here (`scripts/gpu_check.py` records them): on a fresh run
            the first sync's gap is that noise (the weights are identical there), and the warning quotes it.
            With `top_p` < 1 the alarm acts above `sync_mismatch_threshold - log(top_p)`: vLLM reports log-probs
            renormalized over the nucleus, the trainer does not, which alone adds up to `-log(top_p)` (0.01005 at the
            paper's 0.99). `top_k` and `min_p` have no such bound: raise the threshold when using them.
        recipe (`str`, *optional*):
            Name of the recipe these settings come from (e.g. `"lite_ppo"`), recorded in the model card. Setting it
            does not apply the recipe: use [`LitePPOConfig.from_recipe`] or `--recipe` on the command line.
        epsilon (`float`, *optional*, defaults to `0.2`):
            Lower clip bound of the PPO ratio, `1 - epsilon` (TRL's field, unchanged).
        epsilon_high (`float`, *optional*):
            Upper clip bound of the PPO ratio, `1 + epsilon_high`; defaults to `epsilon` (TRL's field, unchanged).
            Clip-higher (Takeaways 4-5): the paper reports it helping aligned (Instruct) models, with `0.28` for 8B
            and up to `0.32` for 4B, and helping base models little or hurting them, so keep `0.2` there.
        bf16 (`bool`, *optional*):
            TRL's field. Unset, it turns on where an accelerator with bf16 support is present (TRL's default) and off
            otherwise, with a one-line warning (once per process), so that a config left at its defaults trains on a CPU-only machine (TRL's
            default there stops with transformers' "Your setup doesn't support bf16/gpu"). Set it to force either.
        scale_rewards (`str` or `bool`, *optional*):
            TRL's field, kept for compatibility: when set, it is translated to `advantage_std`. After construction it
            mirrors `advantage_std` (`"none"` for a custom std).
        loss_type (`str`, *optional*):
            TRL's field. `"dapo"`, `"bnpo"`, `"grpo"`, `"luspo"` and `"dr_grpo"` share the clipped PPO objective and
            are translated to `loss_aggregation`; after construction the field names the TRL loss type with the same
            aggregation (`"dapo"`, `"grpo"`, `"dr_grpo"`), or `"dapo"` for the others. `"cispo"`, `"sapo"` and
            `"vespo"` select TRL's per-token objective of that name and are kept; Lite PPO's advantages and
            `loss_aggregation` then apply on top of it. [`LitePPOTrainer`] aggregates with `loss_aggregation` whatever
            this field says.
        multi_objective_aggregation (`str`, *optional*, defaults to `"sum_then_normalize"`):
            TRL's field. `"sum_then_normalize"`: the weighted reward sum is normalized with `advantage_mean` and
            `advantage_std`. `"normalize_then_sum"`: each reward function is first normalized within its group (mean
            and std, as TRL does), then the weighted sum of those is normalized with `advantage_mean` and
            `advantage_std` (TRL itself uses batch mean and batch std there).
    """

    advantage_mean: str = field(
        default="group",
        metadata={"help": "Level of the mean subtracted from the rewards: 'group', 'batch' or 'none' (or a registered name)."},
    )
    advantage_std: str | None = field(
        default=None,
        metadata={
            "help": "Level of the std the centred rewards are divided by: 'group', 'batch' or 'none' (no division), or "
            "a registered name, or 'auto'. Defaults to 'batch' (Lite PPO); TRL's `scale_rewards` is translated to it."
        },
    )
    auto_std_threshold: float = field(
        default=0.5,
        metadata={"help": "With advantage_std='auto': drop the std when at least this share of groups have rewards that "
                          "all match."},
    )
    advantage_epsilon: float = field(
        default=1e-4,
        metadata={"help": "Added to the std before dividing (TRL's 1e-4)."},
    )
    loss_aggregation: str | None = field(
        default=None,
        metadata={
            "help": "Loss aggregation: 'token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum' or "
            "'seq-mean-token-sum-norm' (or a registered name). Defaults to 'token-mean' (Lite PPO); TRL's `loss_type` "
            "is translated to it."
        },
    )
    overlong_filter: bool = field(
        default=False,
        metadata={
            "help": "Exclude truncated completions (max_completion_length tokens without EOS) from the loss and from "
            "the advantage statistics (advantage 0). Stronger than TRL's `mask_truncated_completions`."
        },
    )
    soft_overlong_punishment: bool = field(
        default=False,
        metadata={"help": "Add DAPO's soft overlong punishment as an extra reward (weight 1)."},
    )
    overlong_buffer_length: int | None = field(
        default=None,
        metadata={"help": "Soft overlong punishment buffer; defaults to 0.2 * max_completion_length."},
    )
    dynamic_sampling: bool = field(
        default=False,
        metadata={"help": "DAPO's dynamic sampling: drop groups whose rewards all match and refill with fresh prompts."},
    )
    dynamic_sampling_max_rounds: int = field(
        default=3,
        metadata={"help": "Most extra generation rounds per generation batch under dynamic sampling."},
    )
    diagnostics: bool = field(
        default=True,
        metadata={"help": "Log the paper's diagnostics (clipped tokens, repetition, reward concentration, lengths, "
                          "entropy of correct vs incorrect completions)."},
    )
    correct_reward: str | None = field(
        default=None,
        metadata={"help": "The reward function whose reward > 0 marks a completion correct, for the diagnostics "
                          "(correct vs incorrect lengths, entropy, repetition): its name in the reward metrics "
                          "(rewards/<name>/mean). Defaults to the first reward function."},
    )
    clipped_tokens_top_k: int = field(
        default=20,
        metadata={"help": "Most clipped tokens kept per bound in the clipped-token table."},
    )
    multi_objective_aggregation: Literal["sum_then_normalize", "normalize_then_sum"] = field(
        default="sum_then_normalize",
        metadata={"help": "TRL's field, its two choices as a Literal so that --help lists them: how several reward "
                          "functions combine. 'sum_then_normalize' sums the weighted rewards, then normalizes them "
                          "into advantages; 'normalize_then_sum' normalizes each function's rewards within the group, "
                          "then sums them (GDPO)."},
    )
    on_reward_error: Literal["raise", "skip"] = field(
        default="raise",
        metadata={"help": "A reward function's fault (raise, wrong count, non-finite, timeout): 'raise' stops the run "
                          "naming the function, step and sample; 'skip' makes the touched samples unscorable and "
                          "counts them in rewards/<name>/errors."},
    )
    reward_timeout: float | None = field(
        default=None,
        metadata={"help": "Seconds an async reward function may take on one batch; past it the call counts as a "
                          "fault. Synchronous reward functions must enforce their own limit."},
    )
    on_sync_mismatch: Literal["warn", "raise", "ignore"] = field(
        default="warn",
        metadata={"help": "With vLLM, when the log-prob gap after a weight sync (sampling/sync_logp_gap) exceeds "
                          "sync_mismatch_threshold: 'warn' once, 'raise', or 'ignore'."},
    )
    sync_mismatch_threshold: float = field(
        default=SYNC_MISMATCH_THRESHOLD,
        metadata={"help": "Mean absolute log-prob gap per token (nats) between vLLM and the trainer after a weight "
                          "sync above which on_sync_mismatch acts."},
    )
    recipe: str | None = field(
        default=None,
        metadata={"help": "Name of the recipe these settings come from, recorded in the model card."},
    )
    epsilon: float = field(
        default=0.2,
        metadata={"help": "Lower clip bound of the PPO ratio, 1 - epsilon."},
    )
    epsilon_high: float | None = field(
        default=None,
        metadata={
            "help": "Upper clip bound of the PPO ratio, 1 + epsilon_high; defaults to `epsilon`. Clip-higher: 0.28 for "
            "aligned 8B models, up to 0.32 for aligned 4B models, keep 0.2 for base models."
        },
    )
    scale_rewards: str | None = field(
        default=None,
        metadata={"help": "TRL's field, translated to `advantage_std` when set."},
    )
    loss_type: str | None = field(
        default=None,
        metadata={"help": "TRL's field: 'dapo', 'bnpo', 'grpo', 'luspo' and 'dr_grpo' are translated to "
                          "`loss_aggregation`; 'cispo', 'sapo' and 'vespo' select that per-token objective."},
    )

    def __post_init__(self):
        check_trl(methods=False)  # the imports and GRPOConfig fields trl-lite relies on (trl_lite/trl_contract.py)
        self._check_finite()
        if self.scale_rewards == "batch" and self.loss_type == "dapo" and self.advantage_std in (None, "batch") and (
            self.loss_aggregation in (None, "token-mean")
        ):
            logger.info_once(
                "scale_rewards='batch' with loss_type='dapo' is TRL's Lite PPO setting; it is translated to trl-lite's "
                "exact Lite PPO (advantage_std='batch', loss_aggregation='token-mean'), which differs from TRL's in a "
                f"few documented places: {DIFFERENCES_URL}"
            )
        self._translate_trl_field(
            "advantage_std", "scale_rewards", _SCALE_REWARDS_TO_STD, "batch", [*ADVANTAGE_STDS, "auto"],
            "; expected one of ['group', 'batch', 'none', True, False] (or set advantage_std instead).",
        )
        std = AUTO_STD_KEEP if self.advantage_std == "auto" else self.advantage_std
        self.scale_rewards = std if std in ("group", "batch", "none") else "none"
        objective = self.loss_type if self.loss_type in OBJECTIVE_LOSS_TYPES else None
        if objective is not None:  # the objective stays TRL's; only its default aggregation comes from the table
            self.loss_type = None
            self.loss_aggregation = self.loss_aggregation or OBJECTIVE_LOSS_TYPES[objective]
        self._translate_trl_field(
            "loss_aggregation", "loss_type", TRL_LOSS_TYPE_TO_AGGREGATION, "token-mean", AGGREGATIONS,
            f"; expected one of {[*TRL_LOSS_TYPE_TO_AGGREGATION, *OBJECTIVE_LOSS_TYPES]} (or set loss_aggregation to "
            f"one of {AGGREGATIONS.names()}).",
        )
        self.loss_type = objective or _AGGREGATION_TO_LOSS_TYPE.get(self.loss_aggregation, "dapo")
        for name, accepts, expected in VALIDATION:
            value = getattr(self, name)
            if not accepts(value, self):
                expected = expected(self) if callable(expected) else expected
                raise ValueError(f"{name}={value!r} is not supported; expected {expected}.")
        if self.use_vllm and self.vllm_mode == "colocate" and self.vllm_enable_sleep_mode and is_cpu_engine():
            raise ValueError(
                "vllm_enable_sleep_mode=True is not supported by vLLM's CPU backend, which the installed vLLM runs on: "
                "vLLM offers sleep mode on CUDA, ROCm and XPU only (its engine config refuses it elsewhere); expected "
                "False on this machine (docs/vllm-cpu.md)."
            )

        if self.bf16 is None and not self.fp16 and not _bf16_supported(self.use_cpu):
            # TRL turns an unset bf16 on, which transformers refuses on a machine without a bf16 accelerator
            # once per process, at warning level so that it shows under transformers' default verbosity
            logger.warning_once("bf16 is unset and no accelerator with bf16 support was found: training in float32 "
                                "(bf16=False). Set bf16=True to override.")
            self.bf16 = False
        # transformers >= 5.24 renamed `gradient_checkpointing` to `activation_checkpointing` and warns when only the old
        # name is set, as GRPOConfig's default (True) is: the new name takes the value, so the user sees no warning
        if getattr(self, "activation_checkpointing", False) is None and self.gradient_checkpointing is not None:
            self.activation_checkpointing = self.gradient_checkpointing

        super().__post_init__()

        # An optimizer step that spans several generation rounds would need the loss-token counts of rounds that are
        # not generated yet, so its aggregation could only be approximated (as TRL's `dapo` does). Refuse it.
        if self.steps_per_generation % self.gradient_accumulation_steps != 0:
            raise ValueError(
                f"steps_per_generation={self.steps_per_generation!r} is not supported with "
                f"gradient_accumulation_steps={self.gradient_accumulation_steps!r}; expected a multiple of "
                "gradient_accumulation_steps, so that every optimizer step lies within one generation batch and its "
                "loss aggregation is exact."
            )

        # Dynamic sampling keeps or drops whole groups within each process's generation batch.
        local_batch = self.per_device_train_batch_size * self.steps_per_generation
        if self.dynamic_sampling and self.world_size > 1 and local_batch % self.num_generations != 0:
            raise ValueError(
                f"dynamic_sampling=True is not supported with per_device_train_batch_size * steps_per_generation = "
                f"{local_batch} and num_generations={self.num_generations} on {self.world_size} processes; expected a "
                "per-process generation batch that holds whole groups (a multiple of num_generations)."
            )

    @classmethod
    def from_recipe(cls, name: str, **overrides) -> "LitePPOConfig":
        r"""
        Builds a config from a named recipe of [`~trl_lite.recipes.RECIPES`], with `overrides` on top.

        Args:
            name (`str`):
                `"lite_ppo"`, `"grpo"`, `"dr_grpo"`, `"instruct"`, `"dapo"`, or any registered recipe.
            **overrides:
                Any `LitePPOConfig` field; wins over the recipe's value.

        Example:

        ```python
        config = LitePPOConfig.from_recipe("instruct", output_dir="runs/instruct", epsilon_high=0.32)
        ```
        """
        return cls(**{**recipe_settings(name), **overrides})

    def _check_finite(self):
        """NaN passes every `<` / `>` check and inf most of them: refuse both in every float field (TRL's included)
        and in every float of a list field such as `reward_weights`, naming the field."""
        for f in fields(self):
            value = getattr(self, f.name)
            values = value if isinstance(value, (list, tuple)) else [value]
            bad = [v for v in values if isinstance(v, float) and not math.isfinite(v)]
            if bad:
                raise ValueError(f"{f.name}={value!r} is not supported; expected finite numbers (no NaN or inf).")

    def _translate_trl_field(self, name, trl_name, translations, default, registry, unknown_trl_value):
        """Sets field `name` from TRL's overlapping field `trl_name` when that is set (never silently ignored)."""
        value, trl_value = getattr(self, name), getattr(self, trl_name)
        if trl_value is not None:
            if trl_value not in translations:
                raise ValueError(f"{trl_name}={trl_value!r} is not supported{unknown_trl_value}")
            translated = translations[trl_value]
            if value is not None and value != translated:
                raise ValueError(
                    f"{trl_name}={trl_value!r} ({name}={translated!r}) conflicts with {name}={value!r}; set only {name}."
                )
            value = translated
        elif value is None:
            value = default
        if value not in registry:
            raise ValueError(f"{name}={value!r} is not supported; expected one of {list(registry)}.")
        setattr(self, name, value)
