"""`MathEvalCallback`: math benchmark accuracy logged during training (also importable from `trl_lite.evaluation`).

A module of its own because it subclasses transformers' `TrainerCallback` (which imports torch), and
`trl_lite.evaluation` is what `trl-lite eval` imports to build its parser.
"""

from __future__ import annotations

from collections.abc import Callable

from transformers import TrainerCallback

from .sampling import transformers_sampler
from .scoring import evaluate_benchmarks


class MathEvalCallback(TrainerCallback):
    """Evaluates the policy on math benchmarks every `eval_steps` optimizer steps (and at the end of training) and logs
    `math_eval/<benchmark>` and `math_eval/average`; the latest figures go into the model card.

        trainer.add_callback(MathEvalCallback(trainer, load_benchmarks(["math500"], limit=100), eval_steps=50))

    Args:
        trainer: the [`LitePPOTrainer`] (its model, processing class and logging are used).
        benchmarks (`dict[str, Dataset]`): e.g. from [`~trl_lite.evaluation.load_benchmarks`].
        eval_steps (`int`): evaluate every this many optimizer steps.
        n (`int`): samples per problem.
        max_new_tokens (`int`): most tokens generated per answer.
        temperature (`float`): sampling temperature.
        check: answer checker (a [`~trl_lite.rewards.MathChecker`] by default).
    """

    def __init__(self, trainer, benchmarks: dict, eval_steps: int = 100, n: int = 1, max_new_tokens: int = 1024,
                 temperature: float = 0.6, check: Callable[[str, str], str] | None = None):
        if eval_steps < 1:
            raise ValueError(f"eval_steps={eval_steps!r} is not supported; expected an integer >= 1.")
        self.trainer, self.benchmarks, self.eval_steps, self.n = trainer, benchmarks, eval_steps, n
        self.max_new_tokens, self.temperature, self.check = max_new_tokens, temperature, check
        self.history: list[dict] = []

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step % self.eval_steps == 0:
            self.run(state.global_step)

    def on_train_end(self, args, state, control, **kwargs):
        if not self.history or self.history[-1]["step"] != state.global_step:
            self.run(state.global_step)

    def run(self, step: int) -> dict:
        trainer = self.trainer
        model = trainer.accelerator.unwrap_model(trainer.model)
        was_training = model.training
        sample = transformers_sampler(model, trainer.processing_class, max_new_tokens=self.max_new_tokens,
                                      temperature=self.temperature, seed=step)
        results = evaluate_benchmarks(sample, self.benchmarks, n=self.n, check=self.check, progress=None)
        model.train(was_training)
        logs = {f"math_eval/{name}": r["accuracy"] for name, r in results["benchmarks"].items()}
        logs["math_eval/average"] = results["average"]
        self.history.append({"step": step, **logs})
        trainer.evaluation_results = {**trainer.evaluation_results, **logs}
        trainer.log(logs)
        return results
