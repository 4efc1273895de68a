"""DAPO's dynamic sampling (arXiv 2503.14476, Sec. 3.2) for [`~trl_lite.LitePPOTrainer`].

Groups whose counted rewards all match carry no signal under a group mean (every advantage is 0), so they are dropped
and the generation batch is refilled with groups generated from fresh prompts until it is full again, or until
`dynamic_sampling_max_rounds` extra rounds were spent. The pieces:

- [`RefillSampler`]: the fresh prompts, drawn like TRL's sampler with a separate seed; its position is part of a
  checkpoint, so a resumed run draws the same refills as an uninterrupted one.
- [`select_groups`]: assembles a batch from whole groups of several rounds' outputs (pure).
- [`DynamicSamplingMixin`]: the rounds loop, wired into the trainer's `_generate_and_score_completions`.
"""

from __future__ import annotations

import logging

import torch

from .advantages import uniform_groups
from .trl_contract import RepeatSampler

logger = logging.getLogger(__name__)


class RefillSampler:
    """Endless batches of dataset indices for refills: `group_size` copies of each of `batch_size // group_size`
    prompts, reshuffled every epoch (seed `seed + 1 + epoch`, so the refills are not the prompts TRL's sampler, seeded
    with `seed`, is about to draw). Each process takes its `local` slice of every batch.

    `state_dict()` is the number of batches drawn; `load_state_dict` replays the draws (index arithmetic only).
    """

    def __init__(self, dataset, group_size: int, batch_size: int, seed: int, local: slice):
        if len(dataset) < batch_size // group_size:
            raise ValueError(
                f"dynamic_sampling=True needs at least {batch_size // group_size} prompts in train_dataset to refill a "
                f"generation batch, got {len(dataset)}."
            )
        self.dataset, self.group_size, self.batch_size, self.seed, self.local = (
            dataset, group_size, batch_size, seed, local)
        self.drawn = 0
        self._batches = self._generate()

    def _generate(self):
        epoch = 0
        while True:
            sampler = RepeatSampler(self.dataset, mini_repeat_count=self.group_size,
                                    batch_size=self.batch_size // self.group_size, shuffle=True,
                                    seed=self.seed + 1 + epoch)
            indices = list(sampler)
            for begin in range(0, len(indices) - self.batch_size + 1, self.batch_size):
                yield indices[begin : begin + self.batch_size][self.local]
            epoch += 1

    def __next__(self) -> list[int]:
        self.drawn += 1
        return next(self._batches)

    def state_dict(self) -> dict:
        return {"drawn": self.drawn}

    def load_state_dict(self, state: dict) -> None:
        self.drawn, self._batches = 0, self._generate()
        for _ in range(state["drawn"]):
            next(self)


class DynamicSamplingMixin:
    """The generation rounds of dynamic sampling. Needs the trainer's `_score_round` (one generation round with its
    rewards and advantages) and `_set_advantages` (the advantages of an assembled batch)."""

    _lite_refill: RefillSampler | None = None
    _lite_refill_state: dict | None = None  # from a checkpoint, applied when the sampler is built

    def _dynamic_sampling(self, first: dict) -> tuple[dict, int]:
        """Drops the groups whose counted rewards all match and refills with groups generated from fresh prompts.

        Each process keeps whole groups of its own generation batch (LitePPOConfig checks that it holds whole groups
        on several processes); all processes generate the same number of rounds, which stop once every process has
        `local_size / num_generations` groups with signal or after `dynamic_sampling_max_rounds` extra rounds. Groups
        still missing then are taken from the dropped ones with their loss masked out, and a warning is logged.
        The advantages are recomputed on the assembled batch (`self._lite_last_advantages`). Returns the batch and
        the number of generation rounds it cost.
        """
        group_size = self.num_generations
        local_size = first["advantages"].shape[0]
        num_groups = local_size // group_size
        device = self.accelerator.device
        rounds, keeps = [first], [self._groups_with_signal(first)]
        while True:
            missing = max(num_groups - sum(int(k.sum()) for k in keeps), 0)
            missing_anywhere = self.accelerator.gather(torch.tensor([missing], device=device)).max().item()
            if missing_anywhere == 0 or len(rounds) > self.args.dynamic_sampling_max_rounds:
                break
            out = self._score_round(self._refill_batch())
            rounds.append(out)
            keeps.append(self._groups_with_signal(out))
        chosen = [(r, g) for r, k in enumerate(keeps) for g in k.nonzero().flatten().tolist()][:num_groups]
        fillers = [(r, g) for r, k in enumerate(keeps) for g in (~k).nonzero().flatten().tolist()]
        fillers = fillers[: num_groups - len(chosen)]
        output = select_groups(rounds, chosen + fillers, group_size, self._tokenizer.pad_token_id)
        trainable = torch.tensor([True] * len(chosen) + [False] * len(fillers), device=device)
        output["lite_trainable"] = trainable.repeat_interleave(group_size)  # (B,)
        output["completion_mask"] = output["completion_mask"] * output["lite_trainable"].unsqueeze(1)
        output["num_items_in_batch"] = self.accelerator.gather(output["completion_mask"].sum()).sum()

        rewards = self.accelerator.gather(output["lite_rewards"])  # (N,)
        truncated, trainable = (  # (N,) each, gathered as ints (not every backend gathers bools)
            self.accelerator.gather(output[key].int()).bool() for key in ("lite_truncated", "lite_trainable")
        )
        self._lite_last_advantages = self._set_advantages(output, group_size, rewards, truncated, trainable)

        short = self.accelerator.gather(torch.tensor([len(fillers)], device=device)).sum().item()
        total = num_groups * self.accelerator.num_processes
        self._metrics["train"]["generation/frac_groups_masked"].append(short / total)
        if short and self.accelerator.is_main_process:
            logger.warning(
                "dynamic sampling: %d of %d groups still had no reward spread after %d extra generation rounds "
                "(dynamic_sampling_max_rounds=%d); they are kept with their loss masked out.",
                short, total, len(rounds) - 1, self.args.dynamic_sampling_max_rounds,
            )
        return output, len(rounds)

    def _groups_with_signal(self, output: dict) -> torch.Tensor:
        """(G_local,) True for the groups of this process's slice whose counted rewards are not all equal."""
        valid = ~output["lite_truncated"] if self.args.overlong_filter else None
        return ~uniform_groups(output["lite_rewards"], self.num_generations, valid)

    def _refill_batch(self) -> list[dict]:
        """This process's share of a fresh generation batch (see [`RefillSampler`])."""
        if self._lite_refill is None:
            global_size = self.args.generation_batch_size
            self._lite_refill = RefillSampler(
                self.train_dataset, self.num_generations, global_size, self.args.seed,
                self._process_slice(global_size // self.accelerator.num_processes),
            )
            if self._lite_refill_state is not None:
                self._lite_refill.load_state_dict(self._lite_refill_state)
        return [self.train_dataset[i] for i in next(self._lite_refill)]

    def _dynamic_sampling_state(self) -> dict:
        """What a checkpoint keeps: the refill sampler's position."""
        if self._lite_refill is not None:
            return self._lite_refill.state_dict()
        return self._lite_refill_state or {"drawn": 0}

    def _load_dynamic_sampling_state(self, state: dict) -> None:
        self._lite_refill, self._lite_refill_state = None, state


def select_groups(outputs: list[dict], picks: list[tuple[int, int]], group_size: int, pad_token_id: int) -> dict:
    """Assembles a generation batch from whole groups of several generation rounds' outputs.

    `picks` lists `(round, group)` pairs; each per-sample tensor (first dim = the local batch size) is cut to those
    groups' rows, in order. Sequence tensors of different rounds are padded to the widest: on the left for the prompt
    (TRL left-pads prompts), on the right otherwise, with `pad_token_id` for ids and 0 for masks and log-probs.
    """
    local_size = outputs[0]["advantages"].shape[0]
    selected = {}
    for key, value in outputs[0].items():
        if not (isinstance(value, torch.Tensor) and value.ndim >= 1 and value.shape[0] == local_size):
            if isinstance(value, (list, tuple)) or (isinstance(value, torch.Tensor) and value.ndim > 0):
                raise ValueError(f"dynamic_sampling does not support batches with {key!r} (text-only batches are).")
            selected[key] = value  # scalars such as num_items_in_batch, recomputed by the caller
            continue
        parts = [outputs[r][key][g * group_size : (g + 1) * group_size] for r, g in picks]
        if value.ndim == 2:
            width = max(part.shape[1] for part in parts)
            fill = pad_token_id if key.endswith("_ids") else 0
            left = key.startswith("prompt")
            parts = [
                torch.nn.functional.pad(part, (width - part.shape[1], 0) if left else (0, width - part.shape[1]),
                                        value=fill)
                for part in parts
            ]
        elif value.ndim > 2:
            raise ValueError(f"dynamic_sampling does not support batches with {key!r} (text-only batches are).")
        selected[key] = torch.cat(parts)
    return selected
