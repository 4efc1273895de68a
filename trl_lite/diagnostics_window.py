"""The paper's diagnostics in the training loop of [`~trl_lite.LitePPOTrainer`] (`diagnostics=True`).

The measurements are the pure functions of [`~trl_lite.diagnostics`]; this module decides when they run and where
they go:

- per generation round (`_log_round_diagnostics`): repetition, reward concentration, lengths of correct vs incorrect
  completions, logged with TRL's metrics of that round;
- per loss call (`_record_loss_diagnostics`): the tokens clipped at each bound and the entropy of correct vs incorrect
  completions, added to a [`DiagnosticsWindow`] that spans the logging window;
- at each `log`: the window is reduced over processes, `entropy/(in)correct` is logged, and the clipped-token table
  goes to `output_dir/clipped_tokens.jsonl` (one line per log) and to wandb / trackio / TensorBoard.

The window is part of a checkpoint, so a run resumed between two logs logs what an uninterrupted run logs.
"""

from __future__ import annotations

import json
import os
from collections import Counter

import torch
from accelerate.utils import gather_object
from transformers import is_trackio_available, is_wandb_available
from transformers.integrations import TensorBoardCallback

from .diagnostics import (
    clipped_token_masks,
    clipped_token_table,
    count_tokens,
    masked_mean_by,
    repeats_itself,
    repetition_shares,
    reward_concentration,
)

CLIPPED_TOKENS_FILE = "clipped_tokens.jsonl"


class DiagnosticsWindow:
    """What the loss calls of one logging window add up to, on one process: token counts clipped at each bound and the
    entropy sums `[correct entropy, correct tokens, incorrect entropy, incorrect tokens]`."""

    def __init__(self, device=None):
        self.clipped = {"low": Counter(), "high": Counter()}
        self.entropy_sums = torch.zeros(4, dtype=torch.float64, device=device)

    def state_dict(self) -> dict:
        return {"clipped": {bound: dict(counts) for bound, counts in self.clipped.items()},
                "entropy_sums": self.entropy_sums.tolist()}

    def load_state_dict(self, state: dict) -> None:
        self.clipped = {bound: Counter({int(k): v for k, v in counts.items()}) for bound, counts in
                        state["clipped"].items()}
        self.entropy_sums = torch.tensor(state["entropy_sums"], dtype=torch.float64, device=self.entropy_sums.device)


class DiagnosticsMixin:
    """Logs the paper's diagnostics; the trainer calls `_log_round_diagnostics` per generation round and
    `_record_loss_diagnostics` per loss call (with the policy's log-probs and entropies of that call)."""

    _lite_repetitive: torch.Tensor | None = None
    _lite_lengths: torch.Tensor | None = None
    _lite_window: DiagnosticsWindow | None = None

    def _generate(self, prompts: list):
        output = super()._generate(prompts)
        if self.args.diagnostics:
            completion_ids_list = output[1]
            eos_and_pad = {*self.eos_token_ids, self._tokenizer.pad_token_id}
            texts = [_strip_trailing(list(ids), eos_and_pad) for ids in completion_ids_list]
            device = self.accelerator.device
            self._lite_repetitive = torch.tensor([repeats_itself(ids) for ids in texts], device=device)  # (B,)
            self._lite_lengths = torch.tensor([len(ids) for ids in completion_ids_list], device=device)  # (B,)
        return output

    @property
    def _diagnostics_window(self) -> DiagnosticsWindow:
        if self._lite_window is None:
            self._lite_window = DiagnosticsWindow(self.accelerator.device)
        return self._lite_window

    def _log_round_diagnostics(self, metrics: dict, truncated: torch.Tensor, correct: torch.Tensor,
                               rewards: torch.Tensor, group_size: int) -> None:
        """Repetition, reward concentration and lengths of one generation round; all inputs `(N,)`, gathered."""
        lengths = self.accelerator.gather(self._lite_lengths).double()  # (N,)
        repetitive = self.accelerator.gather(self._lite_repetitive.int()).bool()  # (N,) gathered as ints
        for name, value in repetition_shares(repetitive, truncated, correct).items():
            metrics[f"repetition/{name}"].append(value)
        for name, value in reward_concentration(correct, rewards, group_size).items():
            metrics[f"rewards/{name}"].append(value)
        length_correct, length_incorrect = masked_mean_by(lengths, torch.ones_like(lengths), correct)
        metrics["completions/mean_length_correct"].append(length_correct)
        metrics["completions/mean_length_incorrect"].append(length_incorrect)

    def _record_loss_diagnostics(self, inputs: dict, per_token_logps: torch.Tensor, entropies: torch.Tensor | None):
        """Adds one micro-batch's clipped tokens and entropy sums (correct / incorrect) to the logging window."""
        window = self._diagnostics_window
        mask = self._loss_mask(inputs)  # (B, T)
        old_logps = inputs.get("old_per_token_logps")
        # Only the clipped objectives clip (sapo and vespo gate smoothly); without old log-probs the ratio is 1
        if old_logps is not None and self.loss_type in ("dapo", "cispo"):
            log_ratio = per_token_logps - old_logps  # (B, T)
            if self.importance_sampling_level == "sequence":
                log_ratio = ((log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).unsqueeze(-1)  # (B, 1)
            # TRL's cispo caps the ratio itself at epsilon_high and has no low bound (a ratio is never < 0)
            eps_low, eps_high = (1.0, self.epsilon_high - 1.0) if self.loss_type == "cispo" else (
                self.epsilon_low, self.epsilon_high)
            low, high = clipped_token_masks(torch.exp(log_ratio), inputs["advantages"], mask, eps_low, eps_high)
            window.clipped["low"].update(count_tokens(inputs["completion_ids"], low))
            window.clipped["high"].update(count_tokens(inputs["completion_ids"], high))
        if entropies is not None:
            correct = inputs["lite_correct"].bool()  # (B,)
            per_seq = (entropies.detach() * mask).sum(-1).double()  # (B,)
            tokens = mask.sum(-1).double()  # (B,)
            window.entropy_sums += torch.stack(
                [per_seq[correct].sum(), tokens[correct].sum(), per_seq[~correct].sum(), tokens[~correct].sum()]
            )

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if self.args.diagnostics and self.model.training and "train_runtime" not in logs:  # not the closing summary
            self._log_window()
        super().log(logs, start_time)

    def _log_window(self):
        """Reduces the window's diagnostics over processes; the main process writes the clipped-token table."""
        window, self._lite_window = self._diagnostics_window, None
        sums = self.accelerator.reduce(window.entropy_sums, reduction="sum")  # (4,)
        metrics = self._metrics["train"]
        if sums[1] > 0:
            metrics["entropy/correct"] = [(sums[0] / sums[1]).item()]
        if sums[3] > 0:
            metrics["entropy/incorrect"] = [(sums[2] / sums[3]).item()]
        clipped = {"low": Counter(), "high": Counter()}
        for part in gather_object([window.clipped]):
            for bound in clipped:
                clipped[bound].update(part[bound])
        if not self.accelerator.is_main_process:
            return
        rows = clipped_token_table(
            clipped["low"], clipped["high"], lambda token_id: self._tokenizer.decode([token_id]),
            top_k=self.args.clipped_tokens_top_k,
        )
        os.makedirs(self.args.output_dir, exist_ok=True)
        with open(os.path.join(self.args.output_dir, CLIPPED_TOKENS_FILE), "a", encoding="utf-8") as f:
            f.write(json.dumps({"step": self.state.global_step, "low_total": sum(clipped["low"].values()),
                                "high_total": sum(clipped["high"].values()), "tokens": rows}) + "\n")
        if rows and self.args.report_to:
            self._log_table("clipped_tokens", rows)

    def _log_table(self, name: str, rows: list[dict]):
        """Logs rows as a table to wandb and trackio when they are active reporters, as TRL does for completions
        (without a step: the trackers' own step counters stay in charge), and to TensorBoard as a markdown text
        summary at the global step (TensorBoard has no table type)."""
        import pandas as pd

        frame = pd.DataFrame(rows)
        if "wandb" in self.args.report_to and is_wandb_available():
            import wandb

            if wandb.run is not None:
                wandb.log({name: wandb.Table(dataframe=frame)})
        if "trackio" in self.args.report_to and is_trackio_available():
            import trackio

            trackio.log({name: trackio.Table(dataframe=frame)})
        if "tensorboard" in self.args.report_to:
            for callback in self.callback_handler.callbacks:
                if isinstance(callback, TensorBoardCallback) and callback.tb_writer is not None:
                    callback.tb_writer.add_text(f"train/{name}", _markdown_table(rows), self.state.global_step)

    def _diagnostics_state(self) -> dict:
        """What a checkpoint keeps: this process's part of the open logging window."""
        return self._diagnostics_window.state_dict()

    def _load_diagnostics_state(self, state: dict) -> None:
        self._diagnostics_window.load_state_dict(state)


def _markdown_table(rows: list[dict]) -> str:
    """Rows of equal keys as a markdown table (TensorBoard renders text summaries as markdown)."""
    columns = list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(repr(row[c]) if c == "token" else str(row[c]) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def _strip_trailing(ids: list[int], tokens: set) -> list[int]:
    """`ids` without its trailing EOS / padding tokens."""
    end = len(ids)
    while end and ids[end - 1] in tokens:
        end -= 1
    return ids[:end]
