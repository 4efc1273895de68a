"""Which checkpoint a run resumes from (`--resume_from_checkpoint PATH`, or `true` for the last complete one), and the
per-process state trl-lite adds to a checkpoint so that a resumed run is the uninterrupted one.

`transformers.Trainer._save_checkpoint` writes the weights, then the optimizer, scheduler and RNG states, and
`trainer_state.json` last. A folder without `trainer_state.json` is one whose writing was cut off (the job was killed
while saving), so it is never resumed from.
"""

from __future__ import annotations

import logging
import os
import re
import socket

import torch
from transformers.trainer import TRAINER_STATE_NAME
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, get_last_checkpoint

logger = logging.getLogger(__name__)

TRAINER_STATE = TRAINER_STATE_NAME  # "trainer_state.json", written by transformers' `_save_checkpoint`
PROCESS_STATE = "trl_lite_state-{process}.pt"  # one per process, written before TRAINER_STATE
_CHECKPOINT = re.compile(rf"^{PREFIX_CHECKPOINT_DIR}-(\d+)$")
_TRUE, _FALSE = {"true", "yes", "1", "last"}, {"false", "no", "0", "none", ""}


def is_complete_checkpoint(path: str) -> bool:
    return os.path.isfile(os.path.join(path, TRAINER_STATE))


def last_complete_checkpoint(output_dir: str) -> str | None:
    """The `checkpoint-N` folder of `output_dir` with the largest N that holds `trainer_state.json`; None if none."""
    if not os.path.isdir(output_dir):
        return None
    steps = []
    for name in os.listdir(output_dir):
        match = _CHECKPOINT.match(name)
        if match and is_complete_checkpoint(os.path.join(output_dir, name)):
            steps.append((int(match.group(1)), name))
    return os.path.join(output_dir, max(steps)[1]) if steps else None


def resume_mode(value) -> str | None:
    """None (fresh start: None, False, `"false"`, `""`), `"last"` (True, `"true"`, `"last"`) or the path given."""
    if value is None or value is False or (isinstance(value, str) and value.strip().lower() in _FALSE):
        return None
    if value is True or (isinstance(value, str) and value.strip().lower() in _TRUE):
        return "last"
    return str(value)


def resolve_resume(value, output_dir: str) -> str | None:
    """The checkpoint path `resume_from_checkpoint=value` asks for, or None for a fresh start.

    `value` is a path, or `true` (also `True`, `"last"`) for the last complete checkpoint in `output_dir`, or
    `false` / None / `""` for none. A missing or incomplete checkpoint is an error naming the field: a preempted job
    must not silently start again at step 0 and overwrite its checkpoints.
    """
    mode = resume_mode(value)
    if mode is None:
        return None
    if mode == "last":
        found = last_complete_checkpoint(output_dir)
        if found is None:
            raise ValueError(
                f"resume_from_checkpoint={value!r}: no complete checkpoint (a {PREFIX_CHECKPOINT_DIR}-N folder with "
                f"{TRAINER_STATE}) in output_dir={output_dir!r}; expected one there, or a checkpoint path."
            )
        return found
    path = mode
    if not os.path.isdir(path):
        raise ValueError(
            f"resume_from_checkpoint={value!r} is not a folder; expected a checkpoint path or 'true' (the last "
            f"complete checkpoint in output_dir)."
        )
    if not is_complete_checkpoint(path):
        raise ValueError(
            f"resume_from_checkpoint={value!r} is an incomplete checkpoint (no {TRAINER_STATE}: its writing was cut "
            "off); expected a complete one, or 'true' for the last complete checkpoint in output_dir."
        )
    return path


# What a process reads from a checkpoint folder to resume (transformers' names): any one of the weight files, unless
# DeepSpeed loads its own (`latest` names the tag folder holding every rank's shards)
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json", "adapter_model.safetensors", "adapter_model.bin")
DEEPSPEED_TAG = "latest"


def rng_state_file(process_index: int, world_size: int) -> str:
    """The RNG-state file transformers writes for a process (`Trainer._save_rng_state`)."""
    return f"rng_state_{process_index}.pth" if world_size > 1 else "rng_state.pth"


def checkpoint_files(checkpoint: str | None, process_index: int, world_size: int,
                     weights: str = "transformers") -> dict:
    """What one process finds of what it reads to resume from `checkpoint`: `{"required": [missing names],
    "own": {kind: [its file name, present]}}`. Required: `trainer_state.json` and the weights (or DeepSpeed's
    `latest`); own: the files each process writes for itself (its RNG state and its trl-lite state), without which a
    resume continues inexactly (transformers and trl-lite warn, as for a checkpoint written by another trainer).
    `weights`: who wrote them, `"transformers"` (`WEIGHT_FILES`), `"deepspeed"` (`latest`) or `"fsdp"` (its own
    layout, not checked)."""
    if checkpoint is None or not os.path.isdir(checkpoint):
        return {"required": ["a checkpoint folder"], "own": {}}
    names = set(os.listdir(checkpoint))
    required = [] if TRAINER_STATE in names else [TRAINER_STATE]
    if weights == "deepspeed" and DEEPSPEED_TAG not in names:
        required.append(f"{DEEPSPEED_TAG} (DeepSpeed's checkpoint tag)")
    if weights == "transformers" and not names.intersection(WEIGHT_FILES):
        required.append(f"{WEIGHT_FILES[0]} (the weights; or any of {list(WEIGHT_FILES[1:])})")
    own = {"rng": rng_state_file(process_index, world_size), "trl_lite": PROCESS_STATE.format(process=process_index)}
    return {"required": required, "own": {kind: [name, name in names] for kind, name in own.items()}}


def resume_problems(reports: list[dict]) -> list[str]:
    """From every process's report (`checkpoint_files` plus `process`, `node`, `host`, `checkpoint`), what stops an
    exact resume: a required file missing, a file of its own missing on one process while the others have theirs
    (nodes that do not share output_dir), or processes resuming from different steps."""
    problems = []
    for report in reports:
        where = f"process {report['process']} (node {report['node']}, host {report['host']})"
        for name in report["required"]:
            problems.append(f"{where}: {report['checkpoint']} has no {name}")
    for kind in ("rng", "trl_lite"):
        found = [report["own"][kind][1] for report in reports if kind in report["own"]]
        if any(found) and not all(found):  # some processes have theirs: the others' are missing, not never written
            problems += [f"process {r['process']} (node {r['node']}, host {r['host']}): {r['checkpoint']} has no "
                         f"{r['own'][kind][0]}" for r in reports if kind in r["own"] and not r["own"][kind][1]]
    steps = {os.path.basename(os.path.normpath(str(r["checkpoint"]))) for r in reports}
    if len(steps) > 1:
        problems.append(f"the processes resume from different checkpoints: {sorted(steps)}")
    return problems


def save_process_state(checkpoint: str, process_index: int, state: dict) -> str:
    """Writes one process's trl-lite state (tensors, numbers, lists and dicts of them) into `checkpoint`."""
    os.makedirs(checkpoint, exist_ok=True)
    path = os.path.join(checkpoint, PROCESS_STATE.format(process=process_index))
    torch.save(_to_device(state, "cpu"), path)
    return path


def load_process_state(checkpoint: str, process_index: int, device=None) -> dict | None:
    """The state `save_process_state` wrote for this process, tensors on `device`; None when the checkpoint has none
    (written by another trainer, or by a run with fewer processes)."""
    path = os.path.join(checkpoint, PROCESS_STATE.format(process=process_index))
    if not os.path.isfile(path):
        return None
    state = torch.load(path, map_location="cpu", weights_only=True)
    return state if device is None else _to_device(state, device)


def _to_device(value, device):
    """`value` with every tensor in its dicts, lists and tuples moved to `device`."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {key: _to_device(item, device) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(item, device) for item in value)
    return value


class ExactResumeMixin:
    """Adds to every checkpoint what TRL and transformers leave out but the next steps need, one file per process
    (written before `trainer_state.json`), and restores it on resume. The dynamic-sampling and diagnostics mixins
    provide `_dynamic_sampling_state` / `_diagnostics_state` and their loaders."""

    def _save_checkpoint(self, model, trial):
        """Writes this process's trl-lite state into the checkpoint, then lets TRL and transformers write theirs.

        Every process writes its own file before `trainer_state.json`, which transformers writes last (after a barrier
        here), so a checkpoint cut off while being written has no `trainer_state.json` and is never resumed from.
        """
        folder = os.path.join(self._get_output_dir(trial=trial), f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}")
        save_process_state(folder, self.accelerator.process_index, self._lite_state_dict())
        self.accelerator.wait_for_everyone()
        super()._save_checkpoint(model, trial)

    def train(self, resume_from_checkpoint=None, *args, **kwargs):
        """`Trainer.train`; a resume first checks, on every process at once, that each process finds in its checkpoint
        folder what it reads (`resume_problems`): nodes without a shared `output_dir` would otherwise fail one by one,
        or hang in the first collective while another node stops, or continue inexactly."""
        if resume_from_checkpoint is not None and resume_from_checkpoint is not False:
            self._check_resume_on_every_node(resume_from_checkpoint)
        return super().train(resume_from_checkpoint, *args, **kwargs)

    def _check_resume_on_every_node(self, resume_from_checkpoint) -> None:
        from accelerate.utils import gather_object

        path = get_last_checkpoint(self.args.output_dir) if resume_from_checkpoint is True else resume_from_checkpoint
        weights = "deepspeed" if self.is_deepspeed_enabled else "fsdp" if self.is_fsdp_enabled else "transformers"
        report = checkpoint_files(path, self.accelerator.process_index, self.accelerator.num_processes, weights)
        report.update(process=self.accelerator.process_index, host=socket.gethostname(),
                      checkpoint=path if path is not None else f"output_dir={self.args.output_dir!r}",
                      node=os.environ.get("GROUP_RANK", os.environ.get("NODE_RANK", "0")))
        problems = resume_problems(gather_object([report]))
        if problems:
            raise ValueError(
                f"resume_from_checkpoint={resume_from_checkpoint!r} cannot resume exactly on every process:\n- "
                + "\n- ".join(problems) + "\nEach process reads its own output_dir. With nodes that do not share one "
                "(save_on_each_node=True), transformers writes the weights on the main process only "
                "(`save_pretrained` saves on global rank 0), so the other nodes' checkpoints hold no weights: resume "
                "from a shared output_dir, or copy the missing files from node 0's checkpoint folder into each "
                "node's before resuming."
            )

    def _lite_state_dict(self) -> dict:
        """What TRL and transformers do not checkpoint but the next steps need: TRL's micro-step counter and, in the
        middle of a generation cycle (`steps_per_generation` > accumulation steps, or `num_iterations` > 1), the
        buffered generation batch the next steps train on; the refill sampler's position; the completions counter;
        the open logging window (TRL's metrics and the diagnostics)."""
        generate_every = self.args.steps_per_generation * self.num_iterations
        mid_cycle = self._buffered_inputs is not None and self._step % generate_every != 0
        return {
            "world_size": self.accelerator.num_processes,
            "step": self._step,
            "buffered_inputs": self._buffered_inputs if mid_cycle else None,
            "completions_generated": self._lite_completions_generated,
            "metrics": {key: list(values) for key, values in self._metrics["train"].items()},
            "dynamic_sampling": self._dynamic_sampling_state(),
            "diagnostics": self._diagnostics_state(),
        }

    def _load_optimizer_and_scheduler(self, checkpoint):
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is None:
            return
        state = load_process_state(checkpoint, self.accelerator.process_index, self.accelerator.device)
        if state is None:
            logger.warning(
                "resume: %s has no trl-lite state for process %d (saved by another trainer or version); generation "
                "restarts at the resume step, so the run is not the uninterrupted one.", checkpoint,
                self.accelerator.process_index,
            )
            return
        self._lite_completions_generated = state["completions_generated"]
        self._metrics["train"].clear()
        self._metrics["train"].update(state["metrics"])
        if state["world_size"] != self.accelerator.num_processes:
            logger.warning(
                "resume: %s was saved by %d processes, this run has %d; the buffered generation batch, the refill "
                "sampler and the diagnostics window are per process and are not restored.", checkpoint,
                state["world_size"], self.accelerator.num_processes,
            )
            return
        buffered = state["buffered_inputs"]
        if buffered is not None and len(buffered) != self.args.steps_per_generation:
            logger.warning(
                "resume: %s holds a generation batch of %d micro-batches, this run has steps_per_generation=%d; it is "
                "dropped and a fresh batch is generated, so the run is not the uninterrupted one.", checkpoint,
                len(buffered), self.args.steps_per_generation,
            )
            buffered = None
        self._step, self._buffered_inputs = state["step"], buffered
        self._load_dynamic_sampling_state(state["dynamic_sampling"])
        self._load_diagnostics_state(state["diagnostics"])
