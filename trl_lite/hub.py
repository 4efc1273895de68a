"""Model cards and Hub pushes that never cost a run its local files."""

from __future__ import annotations

import importlib
import importlib.resources
import logging
import math
import os
from importlib.metadata import PackageNotFoundError, version

from huggingface_hub import ModelCard, ModelCardData
from huggingface_hub.errors import HfHubHTTPError

TEMPLATE = "lite_ppo.md"


def _transport_errors() -> tuple[type[BaseException], ...]:
    # The Hub client's transport errors depend on its version (requests' are OSErrors; httpx's and httpx2's are not).
    errors: list[type[BaseException]] = [OSError, HfHubHTTPError]
    for module in ("httpx2", "httpx"):
        try:
            errors.append(importlib.import_module(module).HTTPError)
        except (ImportError, AttributeError):
            pass
    return tuple(errors)


HUB_ERRORS = _transport_errors()


logger = logging.getLogger(__name__)

class HubPushError(RuntimeError):
    """Raised when a push to the Hub fails; the model and its card are saved locally first."""


def template_path() -> str:
    """The card template: `model_cards/lite_ppo.md` in the repository, installed as `trl_lite.model_cards`."""
    return str(importlib.resources.files("trl_lite.model_cards").joinpath(TEMPLATE))


def _versions() -> dict[str, str]:
    out = {}
    for name in ("trl-lite", "trl", "transformers", "torch", "accelerate", "peft", "datasets", "deepspeed", "vllm"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


def _is_hub_id(name: str) -> bool:
    """`owner/name` with no spaces and not an existing local path."""
    return name.count("/") == 1 and " " not in name and not os.path.exists(name)


def _final_reward(log_history: list[dict]) -> str:
    rewards = [log["reward"] for log in log_history if "reward" in log and log["reward"] is not None]
    return f"{rewards[-1]:.4g}" if rewards else "n/a"


def _evaluation(log_history: list[dict], extra: dict | None) -> dict:
    last_eval = next((log for log in reversed(log_history) if any(k.startswith("eval_") for k in log)), {})
    results = {k: v for k, v in last_eval.items() if k.startswith("eval_") and isinstance(v, (int, float))}
    results.update(extra or {})
    return {k: (f"{v:.4g}" if isinstance(v, float) and math.isfinite(v) else v) for k, v in sorted(results.items())}


def _recipe(args) -> str:
    """The card's recipe row: the recipe named in the config ("(modified)" when a method field was changed after it),
    else the one whose settings match, else "custom"."""
    from .recipes import RECIPES, has_recipe_settings, matching_recipe

    named = getattr(args, "recipe", None)
    if named:
        return named if named not in RECIPES or has_recipe_settings(args, named) else f"{named} (modified)"
    matched = matching_recipe(args)
    return f"{matched} (matching settings)" if matched else "custom"


def render_model_card(
    args,
    log_history: list[dict],
    *,
    model_name: str,
    trainer_name: str,
    paper: dict,
    tags: list[str],
    base_model: str | None = None,
    datasets: list[str] | None = None,
    model_id: str | None = None,
    adapter: bool = False,
    evaluation: dict | None = None,
    global_step: int = 0,
    epoch: float | None = None,
) -> ModelCard:
    """Renders the trl-lite model card for a run configured by `args` (a `LitePPOConfig`)."""
    datasets = list(datasets or [])
    hub_datasets = [d for d in datasets if _is_hub_id(d)]
    card_data = ModelCardData(
        base_model=base_model,
        datasets=hub_datasets or None,
        library_name="peft" if adapter else "transformers",
        model_name=model_name,
        tags=sorted(set(tags) | {"generated_from_trainer"}),
    )
    global_batch = args.per_device_train_batch_size * args.gradient_accumulation_steps * args.world_size
    return ModelCard.from_template(
        card_data,
        template_path=template_path(),
        model_name=model_name,
        base_model=base_model,
        datasets=datasets,
        hub_datasets=hub_datasets,
        model_id=model_id or model_name,
        adapter=adapter,
        trainer_name=trainer_name,
        paper_id=paper.get("id"),
        citation=paper.get("citation", ""),
        recipe=_recipe(args),
        advantage_mean=args.advantage_mean,
        advantage_std=(f"auto (threshold {args.auto_std_threshold})" if args.advantage_std == "auto"
                       else args.advantage_std),
        advantage_epsilon=args.advantage_epsilon,
        loss_aggregation=args.loss_aggregation,
        epsilon=args.epsilon,
        epsilon_high=args.epsilon_high if args.epsilon_high is not None else args.epsilon,
        overlong_filter=args.overlong_filter,
        soft_overlong_punishment=getattr(args, "soft_overlong_punishment", False),
        dynamic_sampling=(f"up to {args.dynamic_sampling_max_rounds} extra rounds"
                          if getattr(args, "dynamic_sampling", False) else False),
        beta=args.beta,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        temperature=args.temperature,
        top_p=args.top_p,
        learning_rate=args.learning_rate,
        global_batch=global_batch,
        global_step=global_step,
        max_steps=args.max_steps,
        epoch=f"{epoch:.3g}" if epoch is not None else "n/a",
        final_reward=_final_reward(log_history),
        evaluation=_evaluation(log_history, evaluation),
        versions=_versions(),
    )


def save_card(card: ModelCard, output_dir: str) -> str:
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, "README.md")
    card.save(path)
    return path


class ModelCardMixin:
    """Trainer mixin: renders the trl-lite card into every saved model and checkpoint, and makes Hub pushes fail with
    one clear error after the model and its card are safely on local disk.

    Set `card_datasets` (Hub ids or descriptions of the training data) and `evaluation_results` (metric -> value, e.g.
    benchmark accuracies) on the trainer to have them in the card.

    Every card gets the run's training curves (`trl_lite.curves`): `training_curves.png` beside it and a "Training
    curves" section that embeds it, drawn once per state of the log (a checkpoint's card and the output folder's share
    it). Drawing it never costs a save: a failure is logged and the model is saved anyway. Set `curves_points`
    (`{label: [(step, value), ...]}`) to add evaluations made outside the training loop, such as held-out accuracy
    before and after, to the held-out accuracy panel.
    """

    card_datasets: list[str] = []
    evaluation_results: dict = {}
    curves_points: dict | None = None
    _curves_drawn: tuple | None = None  # (the state drawn: log length and points, its `curves.draw`)
    _hub_init_error: BaseException | None = None

    def create_model_card(self, model_name=None, dataset_name=None, tags=None, output_dir=None):
        if not self.is_world_process_zero():
            return
        from transformers.utils import is_peft_available

        from .trl_contract import get_config_model_id

        model = self.accelerator.unwrap_model(self.model)
        model_id = get_config_model_id(model.config)
        base_model = model_id if model_id and not os.path.isdir(model_id) else None
        extra_tags = [tags] if isinstance(tags, str) else list(tags or [])
        datasets = [dataset_name] if isinstance(dataset_name, str) else list(dataset_name or self.card_datasets)
        adapter = False
        if is_peft_available():
            from peft import PeftModel

            adapter = isinstance(model, PeftModel)
        name = model_name or (self.args.hub_model_id or os.path.basename(os.path.normpath(self.args.output_dir)))
        card = render_model_card(
            self.args,
            self.state.log_history,
            model_name=name.split("/")[-1],
            trainer_name=self._name,
            paper=self._paper,
            tags=[*self._tag_names, *extra_tags],
            base_model=base_model,
            datasets=datasets,
            # the quick start loads from where this card is saved unless the model goes to the Hub
            model_id=self.hub_model_id or self.args.hub_model_id or (output_dir or self.args.output_dir),
            adapter=adapter,
            evaluation=self.evaluation_results,
            global_step=self.state.global_step,
            epoch=self.state.epoch,
        )
        save_card(card, output_dir or self.args.output_dir)
        self._add_curves(output_dir or self.args.output_dir)

    def _add_curves(self, folder: str) -> None:
        """The training curves into the card just saved in `folder` (`curves.add_to_card`); never raises."""
        from . import curves

        try:
            points = dict(self.curves_points or {})
            state = (len(self.state.log_history), repr(points))
            if self._curves_drawn is None or self._curves_drawn[0] != state:
                self._curves_drawn = (state, curves.draw(self.state.log_history, points))
            curves.add_to_card(folder, self.state.log_history, points, drawn=self._curves_drawn[1])
        except (OSError, ValueError, TypeError, KeyError) as err:  # the figure is optional; the save is not
            logger.warning("trl-lite: no training curves in %s (%s: %s)", folder, type(err).__name__, err)

    def save_model(self, output_dir: str | None = None, _internal_call: bool = False):
        # The card first: with push_to_hub=True the parent pushes from inside save_model.
        if self.args.should_save:
            self.create_model_card(output_dir=output_dir or self.args.output_dir)
        super().save_model(output_dir, _internal_call=_internal_call)

    def _save_checkpoint(self, model, trial):
        super()._save_checkpoint(model, trial)
        from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

        checkpoint = os.path.join(self._get_output_dir(trial=trial), f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}")
        if self.args.should_save and os.path.isdir(checkpoint):
            self.create_model_card(output_dir=checkpoint)

    def init_hf_repo(self, token: str | None = None, **kwargs) -> None:
        # Called at construction when push_to_hub=True: an unreachable Hub must not stop a run that saves locally.
        # `kwargs`: `private`, which transformers added after 5.17; forwarded as the installed version takes it.
        try:
            super().init_hf_repo(token=token, **kwargs)
            self._hub_init_error = None
        except HUB_ERRORS as err:
            self._hub_init_error = err
            from transformers.utils import logging

            logging.get_logger(__name__).warning(
                f"Could not create the Hub repo {self.args.hub_model_id!r} ({type(err).__name__}: {err}); training "
                "continues and saves locally, and the final push will try again."
            )

    def _push_from_checkpoint(self, checkpoint_folder: str) -> None:
        if self.hub_model_id is None:  # the repo could not be created: keep the checkpoint local
            return
        super()._push_from_checkpoint(checkpoint_folder)

    def push_to_hub(self, commit_message: str | None = "End of training", blocking: bool = True, token=None,
                    revision=None, **kwargs):
        if self.hub_model_id is None:
            self.init_hf_repo(token=token, **({"private": kwargs["private"]} if "private" in kwargs else {}))
            if self.hub_model_id is None:
                self.save_model(_internal_call=True)
                self._raise_push_error(self._hub_init_error)
        try:
            return super().push_to_hub(commit_message=commit_message, blocking=blocking, token=token,
                                       revision=revision, **kwargs)
        except HUB_ERRORS as err:  # the parent saved the model and the card before uploading
            self._raise_push_error(err)

    def _raise_push_error(self, err: BaseException):
        repo = self.hub_model_id or self.args.hub_model_id or os.path.basename(os.path.normpath(self.args.output_dir))
        raise HubPushError(
            f"push_to_hub to {repo!r} failed ({type(err).__name__}: {err}). The model and its model card are saved "
            f"in {os.path.abspath(self.args.output_dir)!r}; push them later with "
            f"`hf upload {repo} {self.args.output_dir}`."
        ) from err
