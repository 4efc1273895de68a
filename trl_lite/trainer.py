from __future__ import annotations

import textwrap

import torch
from trl import GRPOConfig, GRPOTrainer
from trl.trainer.utils import get_config_model_id

from .advantages import normalize_advantages, zero_std_group_fraction
from .aggregation import sequence_weights
from .config import LitePPOConfig
from .hub import ModelCardMixin


class LitePPOTrainer(ModelCardMixin, GRPOTrainer):
    r"""
    Trainer for Lite PPO ("Tricks or Traps? A Deep Dive into RL for LLM Reasoning",
    https://huggingface.co/papers/2508.08221), a drop-in replacement for [`~trl.GRPOTrainer`].

    Same constructor and behaviour as [`~trl.GRPOTrainer`] (tested against TRL 1.16); only `args` must be a
    [`LitePPOConfig`]. What differs, each by wrapping a parent method and post-processing its output:

    - **Advantages** (`_generate_and_score_completions`): recomputed from the gathered rewards with
      [`~trl_lite.advantages.normalize_advantages`] at the configured mean/std levels. With `overlong_filter=True`,
      truncated completions get advantage 0 and stay out of every mean and std (`_generate` records which are
      truncated; TRL's `mask_truncated_completions` removes them from the loss).
    - **Loss aggregation** (`_prepare_inputs`, `_compute_loss`): every mode is `sum_i w_i * sum_t m_it * l_it` with
      per-sequence weights `w` from [`~trl_lite.aggregation.sequence_weights`]. The weights are computed once per
      optimizer step from the loss-token counts of all its micro-batches on all processes, so the update does not
      depend on how samples are split over micro-batches or processes. TRL's token-sum branch (`loss_type="dapo"`)
      then does the summing: its normalizer is set to the step's exact token count and each sequence's weight rides on
      its advantage (the clipped PPO objective is positively homogeneous in the advantage, so clip decisions and
      TRL's clip metrics are unchanged). With `beta > 0` the KL term is re-weighted the same way.

    TRL metrics stay as they are; Lite PPO adds `advantages/mean`, `advantages/std`,
    `advantages/frac_zero_std_groups` (per group, whatever the std level), `overlong/frac_truncated` and
    `overlong/frac_filtered`. The clip fractions at the low and high bound are TRL's `clip_ratio/low_mean` and
    `clip_ratio/high_mean`.

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

    def __init__(self, model, reward_funcs, args: LitePPOConfig | None = None, **kwargs):
        if args is None:
            model_name = model if isinstance(model, str) else get_config_model_id(model.config)
            args = LitePPOConfig(f"{model_name.split('/')[-1]}-LitePPO")
        elif not isinstance(args, LitePPOConfig):
            kind = "a GRPOConfig" if isinstance(args, GRPOConfig) else type(args).__name__
            raise ValueError(
                f"args must be a LitePPOConfig, got {kind}; build it with LitePPOConfig(...) (scale_rewards and "
                "loss_type are translated to advantage_std and loss_aggregation)."
            )
        super().__init__(model, reward_funcs, args=args, **kwargs)
        # The aggregation is carried by per-sequence weights (see `_set_loss_weights`); TRL's token-sum branch sums.
        self.loss_type = "dapo"
        self._lite_truncated: torch.Tensor | None = None
        self._lite_rewards_per_func: torch.Tensor | None = None
        self._lite_logps: torch.Tensor | None = None
        self._lite_capture_logps = False

    # ------------------------------------------------------------------ generation: record what the advantages need
    def _generate(self, prompts: list):
        output = super()._generate(prompts)
        completion_ids_list = output[1]
        # Same rule as TRL's `mask_truncated_completions`: truncated = the last token is neither EOS nor padding
        eos_and_pad = {*self.eos_token_ids, self._tokenizer.pad_token_id}
        self._lite_truncated = torch.tensor(
            [bool(ids) and ids[-1] not in eos_and_pad for ids in completion_ids_list], device=self.accelerator.device
        )
        return output

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._lite_rewards_per_func = rewards_per_func  # (N_global, num_funcs), gathered over processes
        return rewards_per_func

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        mode = "train" if self.model.training else "eval"
        group_size = self.num_generations if mode == "train" else self.num_generations_eval
        device = self.accelerator.device

        # Weighted reward sum, as TRL's `sum_then_normalize` (the only aggregation LitePPOConfig accepts)
        rewards_per_func = self._lite_rewards_per_func
        unscorable = torch.isnan(rewards_per_func).all(dim=1)  # (N,)
        rewards = (rewards_per_func * self.reward_weights.to(device).unsqueeze(0)).nansum(dim=1)
        rewards[unscorable] = torch.nan
        truncated = self.accelerator.gather(self._lite_truncated.int()).bool()  # (N,)
        valid = ~truncated if self.args.overlong_filter else None

        advantages = normalize_advantages(
            rewards,
            group_size,
            mean=self.args.advantage_mean,
            std=self.args.advantage_std,
            eps=self.args.advantage_epsilon,
            valid=valid,
        )  # (N,)
        local_size = output["advantages"].shape[0]
        start = self.accelerator.process_index * local_size
        output["advantages"] = advantages[start : start + local_size].to(output["advantages"].dtype)

        # The completions table shows the advantages actually trained on
        logged = self._logs["advantages"]
        for _ in range(min(len(advantages), len(logged))):
            logged.pop()
        logged.extend(advantages.tolist())

        counted = ~torch.isnan(rewards) if valid is None else ~torch.isnan(rewards) & valid
        metrics = self._metrics[mode]
        metrics["advantages/mean"].append(advantages[counted].mean().item() if counted.any() else float("nan"))
        metrics["advantages/std"].append(advantages[counted].std().item() if counted.sum() > 1 else float("nan"))
        metrics["advantages/frac_zero_std_groups"].append(zero_std_group_fraction(rewards, group_size, valid))
        metrics["overlong/frac_truncated"].append(truncated.float().mean().item())
        metrics["overlong/frac_filtered"].append(truncated.float().mean().item() if valid is not None else 0.0)
        return output

    # ------------------------------------------------------------------ loss aggregation, exact per optimizer step
    def _prepare_inputs(self, generation_batch):
        previous_buffer = self._buffered_inputs
        inputs = super()._prepare_inputs(generation_batch)
        if not self.model.training:  # eval: one batch, no accumulation
            self._set_loss_weights([inputs], train=False)
        elif self._buffered_inputs is not previous_buffer:  # a new generation batch was buffered
            # LitePPOConfig guarantees steps_per_generation % gradient_accumulation_steps == 0, so the buffer splits
            # into whole optimizer steps: micro-batches [k*G, (k+1)*G) are the k-th step of this generation round.
            steps = self.args.gradient_accumulation_steps
            for start in range(0, len(self._buffered_inputs), steps):
                self._set_loss_weights(self._buffered_inputs[start : start + steps], train=True)
        return inputs

    def _set_loss_weights(self, micro_batches: list[dict], train: bool):
        """Attaches each sequence's aggregation weight to the micro-batches of one optimizer step (in place).

        The loss-token counts of all micro-batches of the step are gathered over processes, turned into weights `w`
        (N,) by the configured aggregation, and each process keeps its slice. TRL's token-sum branch divides by
        `num_items_in_batch / num_processes * (accumulation steps / steps_per_generation)`; `num_items_in_batch` is
        set so that this normalizer is `T / P` (T the step's loss tokens, P processes), and each advantage is scaled by
        `w_i * T`. Since DDP averages gradients over processes, the step's gradient is that of
        `sum_i w_i * sum_t m_it * l_it` exactly.
        """
        local_lengths = torch.cat([self._loss_mask(batch).sum(-1) for batch in micro_batches]).double()  # (G*B,)
        lengths = self.accelerator.gather(local_lengths)  # (P*G*B,), in process order
        weights = sequence_weights(lengths, self.args.loss_aggregation, max_length=self.max_completion_length)
        total = lengths.sum()
        start = self.accelerator.process_index * local_lengths.numel()
        local_weights = weights[start : start + local_lengths.numel()]  # (G*B,)
        token_weight = torch.where(total > 0, 1.0 / total.clamp(min=1), torch.zeros_like(total))
        num_processes = self.accelerator.num_processes
        num_items = total * self.args.steps_per_generation / self.current_gradient_accumulation_steps if train else total
        offset = 0
        for batch in micro_batches:
            size = batch["advantages"].shape[0]
            w = local_weights[offset : offset + size]
            offset += size
            batch["lite_advantage_scale"] = (w * total).float()  # token-mean: exactly 1
            batch["lite_kl_weight"] = (num_processes * (w - token_weight)).float()  # token-mean: exactly 0
            batch["num_items_in_batch"] = num_items.float()

    @staticmethod
    def _loss_mask(inputs: dict) -> torch.Tensor:
        mask = inputs["completion_mask"]
        return mask if "tool_mask" not in inputs else mask * inputs["tool_mask"]

    def _compute_loss(self, model, inputs):
        weighted = {**inputs, "advantages": inputs["advantages"] * inputs["lite_advantage_scale"]}
        kl_weight = inputs["lite_kl_weight"]
        self._lite_capture_logps = self.beta != 0.0 and bool((kl_weight != 0).any())
        try:
            loss = super()._compute_loss(model, weighted)
            if self._lite_capture_logps:
                loss = loss + self._kl_reweighting(inputs, self._lite_logps, kl_weight)
        finally:
            self._lite_capture_logps, self._lite_logps = False, None
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
        if self._lite_capture_logps:  # the policy forward inside `_compute_loss`
            self._lite_logps = output[0]
        return output
