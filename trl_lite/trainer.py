from __future__ import annotations

import copy
import textwrap

import torch
from accelerate.utils import set_seed
from datasets import IterableDataset

from .vllm_cpu import quiet_vllm

with quiet_vllm():  # TRL's trainer module imports vLLM when it is installed
    from trl import GRPOConfig, GRPOTrainer

from .advantages import normalize_advantages, normalize_then_sum, resolve_auto_std, zero_std_group_fraction
from .aggregation import OBJECTIVE_LOSS_TYPES, sequence_weights
from .checkpoints import ExactResumeMixin
from .config import LitePPOConfig
from .diagnostics_window import DiagnosticsMixin
from .dynamic_sampling import DynamicSamplingMixin
from .hub import ModelCardMixin
from .reward_faults import RewardFaultsMixin
from .rewards import soft_overlong_punishment
from .sync_check import SyncCheckMixin
from .trl_contract import (
    adapt,
    check_buffer,
    check_generate_output,
    check_output_keys,
    check_rewards,
    check_trainer,
    check_trl,
    get_config_model_id,
    quiet_upstream_deprecations,
)
from .truncation import stop_strings, truncated_flags
from .vllm_cpu import engine_in_trainer_dtype, use_cpu_sync, use_vllm_problem

# TRL 1.16 loss types whose branch of `GRPOTrainer._compute_loss` sums per-token losses over the step
# (`sum(m*l) / normalizer`, the normalizer from `num_items_in_batch`); the others ("sapo") take a per-micro-batch mean of
# per-sequence token means. The aggregation weights are converted to whichever branch the objective runs through.
_TOKEN_SUM_LOSS_TYPES = ("dapo", "cispo", "vespo")


class LitePPOTrainer(
    ModelCardMixin, ExactResumeMixin, RewardFaultsMixin, DiagnosticsMixin, DynamicSamplingMixin, SyncCheckMixin,
    GRPOTrainer
):
    r"""
    Trainer for Lite PPO ("Tricks or Traps? A Deep Dive into RL for LLM Reasoning",
    https://huggingface.co/papers/2508.08221), a drop-in replacement for [`~trl.GRPOTrainer`].

    Same constructor and behaviour as [`~trl.GRPOTrainer`] (tested against TRL 1.16); only `args` must be a
    [`LitePPOConfig`]. What differs, each by wrapping a parent method and post-processing its output:

    - **Advantages** (`_generate_and_score_completions`): recomputed from the gathered rewards with
      [`~trl_lite.advantages.normalize_advantages`] at the configured mean/std levels. With `overlong_filter=True`,
      truncated completions (`max_completion_length` tokens without a final EOS, recorded by `_generate`) get
      advantage 0, stay out of every mean and std, and are masked out of the loss.
    - **Loss aggregation** (`_prepare_inputs`, `_compute_loss`): every mode is `sum_i w_i * sum_t m_it * l_it` with
      per-sequence weights `w` from [`~trl_lite.aggregation.sequence_weights`]. The weights are computed once per
      optimizer step from the loss-token counts of all its micro-batches on all processes, so the update does not
      depend on how samples are split over micro-batches or processes. TRL's token-sum branch (`loss_type="dapo"`)
      then does the summing: its normalizer is set to the step's exact token count and each sequence's weight rides on
      its advantage (the clipped PPO objective is positively homogeneous in the advantage, so clip decisions and
      TRL's clip metrics are unchanged). With `beta > 0` the KL term is re-weighted the same way.
    - **Objectives** (`loss_type="cispo"`, `"sapo"`, `"vespo"`): TRL's per-token objective is kept and the same
      weights are converted to the branch of `_compute_loss` it runs through (token sum for cispo and vespo, the mean
      of per-sequence means for sapo), so Lite PPO's advantages and every aggregation compose with it.
    - **`multi_objective_aggregation="normalize_then_sum"`**: each reward function is normalized within its group
      ([`~trl_lite.advantages.normalize_then_sum`]), then the configured mean and std apply to the weighted sum.

    - **DAPO** (`soft_overlong_punishment`, `dynamic_sampling`): the soft overlong punishment is appended to the reward
      functions; dynamic sampling calls TRL's `_generate_and_score_completions` once per generation round, keeps the
      groups with reward spread, refills from fresh prompts and assembles the batch ([`DynamicSamplingMixin`]).
    - **Diagnostics** (`diagnostics=True`, [`DiagnosticsMixin`]): per generation round, repetition, reward
      concentration and lengths of correct vs incorrect completions; per loss call, the clipped tokens at each bound
      and the entropy of correct vs incorrect completions, accumulated over the logging window, reduced over
      processes at `log`, and the clipped-token table written to `output_dir/clipped_tokens.jsonl` (and trackers).
    - **Reward faults** (`on_reward_error`, `reward_timeout`, `_calculate_rewards`): each reward function runs in a
      guard ([`~trl_lite.reward_faults.RewardGuard`]); a raise, a wrong count, a non-finite value or a timeout stops
      the run on every process, naming the function, step and sample, or (`"skip"`) makes the touched samples
      unscorable and counts them in `rewards/<name>/errors`.
    - **Exact resume** (`_save_checkpoint`, `_load_optimizer_and_scheduler`): each process checkpoints what TRL and
      transformers do not, TRL's micro-step counter, the generation batch of an unfinished cycle, the refill sampler
      position, the completions counter and the open logging window, so a resumed run is the uninterrupted one.

    - **vLLM on its CPU backend** (`use_vllm=True, vllm_mode="colocate"` without a GPU, [`~trl_lite.vllm_cpu`]): the
      weights are synced through vLLM's layerwise reload, a tied LM head is packed again, and the engine runs in the
      trainer's dtype; TRL's own sync fails there. On a GPU, TRL's path is unchanged.

    TRL metrics stay as they are; Lite PPO adds `advantages/*` (mean, std, abs_mean, frac_zero_std_groups per group
    whatever the std level, std_kept under `advantage_std="auto"`), `overlong/frac_truncated`,
    `overlong/frac_filtered`, `generation/*` (rounds and completions each generation batch cost), and the
    diagnostics `repetition/*`, `rewards/frac_groups_*`, `rewards/group_std_mean`, `rewards/batch_std`,
    `completions/mean_length_(in)correct`, `entropy/(in)correct`, and under `on_reward_error="skip"`
    `rewards/<name>/errors`. The clip fractions at the low and high bound are
    TRL's `clip_ratio/low_mean` and `clip_ratio/high_mean`.

    Every saved model and checkpoint gets the trl-lite model card (`model_cards/lite_ppo.md`: technique settings,
    training length, final reward, evaluation results); a failed `push_to_hub` raises one [`~trl_lite.hub.HubPushError`]
    after the model and its card are saved locally (see [`~trl_lite.hub.ModelCardMixin`]).
    """

    _tag_names = ["trl", "trl-lite", "lite-ppo"]
    _name = "LitePPO"
    _paper = {
        "title": "Tricks or Traps? A Deep Dive into RL for LLM Reasoning",
        "id": "2508.08221",
        # docstyle-ignore
        "citation": textwrap.dedent("""\
            @article{liu2025tricks,
                title        = {{Tricks or Traps? A Deep Dive into RL for LLM Reasoning}},
                author       = {Zihe Liu and Jiashun Liu and Yancheng He and Weixun Wang and Jiaheng Liu and Ling Pan and Xinyu Hu and Shaopan Xiong and Ju Huang and Jian Hu and Shengyi Huang and Siran Yang and Jiamang Wang and Wenbo Su and Bo Zheng},
                year         = 2025,
                eprint       = {arXiv:2508.08221},
            }"""),
    }

    def __init__(
        self,
        model,
        reward_funcs=None,
        args: LitePPOConfig | None = None,
        train_dataset=None,
        eval_dataset=None,
        processing_class=None,
        reward_processing_classes=None,
        callbacks=None,
        optimizers=(None, None),
        quantization_config=None,
        peft_config=None,
        tools=None,
        rollout_func=None,
        environment_factory=None,
    ):
        # The signature mirrors `GRPOTrainer.__init__` of TRL 1.16 keyword for keyword (a test checks it), so that a
        # misspelled keyword is a TypeError here as it is there.
        check_trl()  # every TRL internal this class relies on (trl_lite/trl_contract.py), before anything is built
        if args is None:
            model_name = model if isinstance(model, str) else get_config_model_id(model.config)
            args = LitePPOConfig(f"{model_name.split('/')[-1]}-LitePPO")
        elif not isinstance(args, LitePPOConfig):
            kind = "a GRPOConfig" if isinstance(args, GRPOConfig) else type(args).__name__
            raise ValueError(
                f"args must be a LitePPOConfig, got {kind}; build it with LitePPOConfig(...) (scale_rewards and "
                "loss_type are translated to advantage_std and loss_aggregation)."
            )
        if args.soft_overlong_punishment:  # DAPO's length-aware penalty, one more reward function (weight 1)
            buffer = args.overlong_buffer_length or max(1, int(args.max_completion_length * 0.2))
            if reward_funcs is None:
                funcs = []
            else:
                funcs = list(reward_funcs) if isinstance(reward_funcs, (list, tuple)) else [reward_funcs]
            reward_funcs = [*funcs, soft_overlong_punishment(args.max_completion_length, buffer)]
            if args.reward_weights is not None:
                args = copy.copy(args)  # the caller's config keeps its own weights
                args.reward_weights = [*args.reward_weights, 1.0]
        if (problem := use_vllm_problem(args.use_vllm)) is not None:
            raise ImportError(problem)
        if args.dynamic_sampling and isinstance(train_dataset, IterableDataset):
            raise ValueError(
                "dynamic_sampling=True is not supported with an IterableDataset train_dataset; expected a map-style "
                "dataset, from which fresh prompts are drawn to refill the batch."
            )
        # vLLM's CPU backend: the engine in the trainer's dtype, without the noise vLLM prints there
        with engine_in_trainer_dtype(args, model), quiet_vllm():
            super().__init__(
                model, reward_funcs, args=args, train_dataset=train_dataset, eval_dataset=eval_dataset,
                processing_class=processing_class, reward_processing_classes=reward_processing_classes,
                callbacks=callbacks, optimizers=optimizers, quantization_config=quantization_config,
                peft_config=peft_config, tools=tools, rollout_func=rollout_func,
                environment_factory=environment_factory,
            )
        if self.use_vllm:
            # vLLM's CPU backend packs its linear weights, which TRL's per-parameter load cannot write into: sync
            # through vLLM's layerwise reload there (trl_lite/vllm_cpu.py); TRL's own sync everywhere else
            use_cpu_sync(getattr(self, "vllm_generation", None))
        if self.use_vllm and args.vllm_mode == "colocate":
            # vLLM's worker runs in this process and reseeded Python's, NumPy's and torch's generators with the engine
            # seed (the process index // tensor-parallel size, whatever `seed` is) when it started; it draws each
            # request's sampling seed from NumPy's. TRL seeded them with `set_seed(seed, device_specific=True)` just
            # before building the engine: restoring that makes `seed` decide the sampling, different on each engine
            # (seed + process index; the ranks of one tensor-parallel group share it, as they must sample alike), and
            # checkpointed with the RNG states, so a resume continues the same samples.
            set_seed(args.seed + self.accelerator.process_index // args.vllm_tensor_parallel_size)
        # The aggregation is carried by per-sequence weights (see `_set_loss_weights`). The clipped PPO objective runs
        # through TRL's token-sum branch; cispo, sapo and vespo keep their own objective and branch.
        self.loss_type = args.loss_type if args.loss_type in OBJECTIVE_LOSS_TYPES else "dapo"
        self._lite_truncated: torch.Tensor | None = None
        self._lite_rewards_per_func: torch.Tensor | None = None
        self._lite_capture = False
        self._lite_logps: torch.Tensor | None = None
        self._lite_entropies: torch.Tensor | None = None
        self._lite_completions_generated = 0
        self._lite_contract_seen: set = set()  # the runtime checks already run (once each, on the first batch)
        adapt(self)  # what a supported older TRL release names differently (trl_lite/trl_contract.py)
        check_trainer(self)
        self._lite_correct_index = self._correct_index(args.correct_reward)
        self._guard_reward_funcs()  # see trl_lite/reward_faults.py

    def _correct_index(self, name: str | None) -> int:
        """Which reward function says a completion is correct: `correct_reward` by name, else the first."""
        if name is None:
            return 0
        if name not in self.reward_func_names:
            raise ValueError(f"correct_reward={name!r} is not supported; expected one of the reward functions' names "
                             f"{list(self.reward_func_names)} (as in rewards/<name>/mean), or None for the first.")
        return self.reward_func_names.index(name)

    def train(self, *args, **kwargs):
        # TRL's own calls into deprecated transformers names warn at every run; the user cannot act on them
        with quiet_upstream_deprecations():  # trl_lite/trl_contract.py: UPSTREAM_DEPRECATIONS
            return super().train(*args, **kwargs)

    # ------------------------------------------------------------------ generation: record what the advantages need
    def _generate(self, prompts: list):
        output = super()._generate(prompts)
        self._check_once(check_generate_output, output, len(prompts))
        # Truncated = cut by the length limit (vLLM's finish_reason "length"), see trl_lite/truncation.py
        truncated = truncated_flags(
            output[1], set(self.eos_token_ids), self.max_completion_length,
            stop_strings(self.args.generation_kwargs), self.processing_class.decode,
        )
        self._lite_truncated = torch.tensor(truncated, dtype=torch.bool, device=self.accelerator.device)  # (B,)
        return output

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)  # (N, F)
        self._check_once(check_rewards, rewards_per_func, len(self.reward_funcs))
        self._contain_reward_faults(rewards_per_func, prompts, completions)  # see trl_lite/reward_faults.py
        self._lite_rewards_per_func = rewards_per_func  # (N_global, num_funcs), gathered over processes
        return rewards_per_func

    def _generate_and_score_completions(self, inputs):
        output = self._score_round(inputs)
        mode = "train" if self.model.training else "eval"
        rounds = 1
        if mode == "train" and self.args.dynamic_sampling:  # see trl_lite/dynamic_sampling.py
            output, rounds = self._dynamic_sampling(output)
        advantages, counted, std_level = self._lite_last_advantages
        metrics = self._metrics[mode]
        metrics["advantages/mean"].append(advantages[counted].mean().item() if counted.any() else float("nan"))
        metrics["advantages/std"].append(advantages[counted].std().item() if counted.sum() > 1 else float("nan"))
        metrics["advantages/abs_mean"].append(advantages[counted].abs().mean().item() if counted.any() else float("nan"))
        if self.args.advantage_std == "auto":
            metrics["advantages/std_kept"].append(float(std_level != "none"))
        if mode == "train":
            generated = rounds * output["advantages"].shape[0] * self.accelerator.num_processes
            self._lite_completions_generated += generated
            metrics["generation/rounds"].append(float(rounds))
            metrics["generation/completions"].append(float(generated))
            steps_per_batch = self.args.steps_per_generation // self.args.gradient_accumulation_steps
            metrics["generation/completions_per_optimizer_step"].append(generated / steps_per_batch)
            metrics["generation/completions_total"].append(float(self._lite_completions_generated))
        self.on_generation_batch(output, advantages, counted)
        return output

    def _check_once(self, check, *args, **kwargs) -> None:
        """Runs one of the contract's runtime checks (trl_lite/trl_contract.py) the first time it is reached."""
        if check not in self._lite_contract_seen:
            self._lite_contract_seen.add(check)
            check(*args, **kwargs)

    # ------------------------------------------------------------------ public hooks for subclasses
    def on_generation_batch(self, output: dict, advantages: torch.Tensor, counted: torch.Tensor) -> None:
        """Called once per generation batch (train and eval), after its advantages are set; does nothing by default.

        A subclass that measures training (the lab's `trl_lite.lab.runner.LabTrainer`) reads the batch here instead of
        the trainer's private state. `output`: this process's batch as TRL returns it, plus `lite_rewards`,
        `lite_truncated` and `lite_correct` `(B,)`; `advantages`: the whole batch's advantages `(N,)`, gathered over
        processes; `counted`: which of them entered the normalization statistics `(N,)`.
        """

    def on_loss_tokens(self, inputs: dict, per_token_logps: torch.Tensor) -> None:
        """Called on each training micro-batch when `diagnostics=True`, with the policy's per-token log-probs `(B, T)`
        (detached) from the loss's forward pass; does nothing by default. With `inputs["old_per_token_logps"]` they
        give the PPO ratio that the clip acts on."""

    def _score_round(self, inputs) -> dict:
        """One generation round: TRL generates and scores, then the advantages and diagnostics are recomputed."""
        output = super()._generate_and_score_completions(inputs)
        self._check_once(check_output_keys, output, kl=self.beta != 0.0)
        mode = "train" if self.model.training else "eval"
        self._check_weight_sync(output, mode)  # the stale-weight alarm (trl_lite/sync_check.py), before any masking
        group_size = self.num_generations if mode == "train" else self.num_generations_eval
        device = self.accelerator.device

        rewards_per_func = self._lite_rewards_per_func  # (N, F)
        truncated = self.accelerator.gather(self._lite_truncated.int()).bool()  # (N,) gathered as ints
        weights = self.reward_weights.to(device)  # (F,)
        if self.multi_objective_aggregation == "normalize_then_sum":  # each function normalized in its group first
            valid = ~truncated if self.args.overlong_filter else None
            rewards = normalize_then_sum(
                rewards_per_func, group_size, weights, eps=self.args.advantage_epsilon, valid=valid
            )  # (N,)
        else:  # TRL's `sum_then_normalize`: the weighted reward sum
            unscorable = torch.isnan(rewards_per_func).all(dim=1)  # (N,)
            rewards = (rewards_per_func * weights.unsqueeze(0)).nansum(dim=1)  # (N,)
            rewards[unscorable] = torch.nan
        correct = rewards_per_func[:, self._lite_correct_index] > 0  # (N,) `correct_reward`'s, by default the first
        local = self._process_slice(output["advantages"].shape[0])
        if self.args.overlong_filter:  # out of the loss here, out of the statistics in `_set_advantages`
            mask = output["completion_mask"]
            output["completion_mask"] = mask * (~truncated[local]).unsqueeze(1).to(mask.dtype)
        output["lite_rewards"] = rewards[local]
        output["lite_truncated"] = truncated[local]
        output["lite_correct"] = correct[local]

        self._lite_last_advantages = self._set_advantages(output, group_size, rewards, truncated)
        advantages = self._lite_last_advantages[0]
        # The completions table shows the advantages computed on this round
        logged = self._logs["advantages"]
        for _ in range(min(len(advantages), len(logged))):
            logged.pop()
        logged.extend(advantages.tolist())

        metrics = self._metrics[mode]
        valid = ~truncated if self.args.overlong_filter else None
        metrics["advantages/frac_zero_std_groups"].append(zero_std_group_fraction(rewards, group_size, valid))
        metrics["overlong/frac_truncated"].append(truncated.float().mean().item())
        metrics["overlong/frac_filtered"].append(truncated.float().mean().item() if valid is not None else 0.0)
        if self.args.diagnostics:  # see trl_lite/diagnostics_window.py
            self._log_round_diagnostics(metrics, truncated, correct, rewards, group_size)
        return output

    def _set_advantages(
        self, output: dict, group_size: int, rewards: torch.Tensor, truncated: torch.Tensor,
        trainable: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, str]:
        """Recomputes the advantages of a generation batch and sets this process's slice in `output`.

        `rewards`, `truncated` and `trainable` (dynamic sampling's masked filler groups are False) are the whole
        batch's `(N,)` values, gathered over processes. Returns the global advantages `(N,)`, the mask of samples that
        count in the statistics `(N,)`, and the std level used (the branch `advantage_std="auto"` took).
        """
        keep = ~torch.isnan(rewards)
        valid = ~truncated if self.args.overlong_filter else None
        if trainable is not None:
            valid = trainable if valid is None else valid & trainable
        std_level = self.args.advantage_std
        if std_level == "auto":
            std_level = resolve_auto_std(rewards, group_size, self.args.auto_std_threshold, valid)
        advantages = normalize_advantages(
            rewards, group_size, mean=self.args.advantage_mean, std=std_level, eps=self.args.advantage_epsilon,
            valid=valid,
        )  # (N,)
        local = self._process_slice(output["advantages"].shape[0])
        output["advantages"] = advantages[local].to(output["advantages"].dtype)
        counted = keep if valid is None else keep & valid
        return advantages, counted, std_level

    # ------------------------------------------------------------------ loss aggregation, exact per optimizer step
    def _prepare_inputs(self, generation_batch):
        previous_buffer = self._buffered_inputs
        inputs = super()._prepare_inputs(generation_batch)
        if not self.model.training:  # eval: one batch, no accumulation
            self._set_loss_weights([inputs], train=False)
        elif self._buffered_inputs is not previous_buffer:  # a new generation batch was buffered
            accumulation = getattr(self, "current_gradient_accumulation_steps", None)
            self._check_once(check_buffer, self._buffered_inputs, self.args.steps_per_generation, accumulation)
            # LitePPOConfig guarantees steps_per_generation % gradient_accumulation_steps == 0, so the buffer splits
            # into whole optimizer steps: micro-batches [k*G, (k+1)*G) are the k-th step of this generation round.
            steps = self.args.gradient_accumulation_steps
            for start in range(0, len(self._buffered_inputs), steps):
                self._set_loss_weights(self._buffered_inputs[start : start + steps], train=True)
        return inputs

    def _set_loss_weights(self, micro_batches: list[dict], train: bool):
        """Attaches each sequence's aggregation weight to the micro-batches of one optimizer step (in place).

        The loss-token counts of all micro-batches of the step are gathered over processes and turned into weights `w`
        (N,) by the configured aggregation; each process keeps its slice. DDP averages gradients over the P processes,
        so a process's loss must be `P * sum_i w_i * sum_t m_it * l_it` over its sequences. TRL's branch of
        `_compute_loss` already gives sequence i a native weight `u_i`:

        - token-sum branch (`dapo`, `cispo`, `vespo`): it divides by `num_items_in_batch / P * (accumulation steps /
          steps_per_generation)`; `num_items_in_batch` is set so that this normalizer is `T / P` (T the step's loss
          tokens), so `u_i = P / T`;
        - per-sequence mean branch (`sapo`): `u_i = 1 / (B * |o_i| * accumulation steps)`, B the micro-batch size.

        Each advantage is scaled by `P * w_i / u_i` (the objectives are positively homogeneous in the advantage, so
        clip decisions and TRL's clip metrics do not change), and the KL term, added per token before TRL's
        aggregation, is corrected by `P * w_i - u_i`. The step's gradient is that of `sum_i w_i * sum_t m_it * l_it`.
        """
        local_lengths = torch.cat([self._loss_mask(batch).sum(-1) for batch in micro_batches]).double()  # (G*B,)
        lengths = self.accelerator.gather(local_lengths)  # (P*G*B,), in process order
        weights = sequence_weights(lengths, self.args.loss_aggregation, max_length=self.max_completion_length)
        total = lengths.sum()
        local_weights = weights[self._process_slice(local_lengths.numel())]  # (G*B,)
        num_processes = self.accelerator.num_processes
        accumulation = self.current_gradient_accumulation_steps if train else 1
        num_items = total * self.args.steps_per_generation / accumulation if train else total
        token_weight = torch.where(total > 0, 1.0 / total.clamp(min=1), torch.zeros_like(total))  # u_i / P
        offset = 0
        for batch in micro_batches:
            size = batch["advantages"].shape[0]
            w = local_weights[offset : offset + size]  # (B,)
            length = local_lengths[offset : offset + size]  # (B,)
            offset += size
            if self.loss_type in _TOKEN_SUM_LOSS_TYPES:  # P * w_i / u_i = w_i * T
                scale, native = w * total, num_processes * token_weight
            else:
                native = 1.0 / (size * length.clamp(min=1) * accumulation)  # (B,)
                scale = num_processes * w / native
            batch["lite_advantage_scale"] = scale.float()  # token-mean: exactly 1
            batch["lite_kl_weight"] = (num_processes * w - native).float()  # token-mean: exactly 0
            batch["num_items_in_batch"] = num_items.float()

    def _process_slice(self, local_size: int) -> slice:
        """This process's rows of a batch gathered over processes (in process order, `local_size` rows each)."""
        start = self.accelerator.process_index * local_size
        return slice(start, start + local_size)

    @staticmethod
    def _loss_mask(inputs: dict) -> torch.Tensor:
        mask = inputs["completion_mask"]
        return mask if "tool_mask" not in inputs else mask * inputs["tool_mask"]

    def _compute_loss(self, model, inputs):
        weighted = {**inputs, "advantages": inputs["advantages"] * inputs["lite_advantage_scale"]}
        kl_weight = inputs["lite_kl_weight"]
        reweight_kl = self.beta != 0.0 and bool((kl_weight != 0).any())
        diagnose = self.args.diagnostics and self.model.training
        self._lite_capture = reweight_kl or diagnose
        try:
            loss = super()._compute_loss(model, weighted)
            if reweight_kl:
                loss = loss + self._kl_reweighting(inputs, self._lite_logps, kl_weight)
            if diagnose and self._lite_logps is not None:
                self._record_loss_diagnostics(inputs, self._lite_logps.detach(), self._lite_entropies)
                self.on_loss_tokens(inputs, self._lite_logps.detach())
        finally:
            self._lite_capture, self._lite_logps, self._lite_entropies = False, None, None
        return loss

    def _kl_reweighting(self, inputs: dict, per_token_logps: torch.Tensor, kl_weight: torch.Tensor) -> torch.Tensor:
        """The difference between the KL term aggregated by the configured mode and TRL's token-sum of it.

        Mirrors TRL 1.16's KL term in `GRPOTrainer._compute_loss` (k3 estimator, optional importance-sampling bias
        correction), which TRL adds to every token's loss before aggregation.
        """
        mask = self._loss_mask(inputs)
        ref_logps = inputs["ref_per_token_logps"]
        per_token_kl = torch.exp(ref_logps - per_token_logps) - (ref_logps - per_token_logps) - 1  # (B, T)
        if self.args.use_bias_correction_kl:
            old_logps = inputs.get("old_per_token_logps")
            log_ratio = per_token_logps - (per_token_logps.detach() if old_logps is None else old_logps)
            if self.importance_sampling_level == "sequence":
                log_ratio = ((log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).unsqueeze(-1)
            per_token_kl = per_token_kl * torch.exp(log_ratio)
        return self.beta * ((per_token_kl * mask).sum(-1) * kl_weight).sum()

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, *args, **kwargs):
        output = super()._get_per_token_logps_and_entropies(
            model, input_ids, attention_mask, logits_to_keep, *args, **kwargs
        )
        if self._lite_capture:  # the policy forward inside `_compute_loss`
            self._lite_logps, self._lite_entropies = output[0], output[1]
        return output
