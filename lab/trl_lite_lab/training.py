"""What one lab run trains and evaluates: the lab's trainer (`LabTrainer`, which logs the lab's measures through
`LitePPOTrainer`'s public hooks), an arm's training data, the held-out problems and the held-out evaluation. The
runner (`trl_lite_lab.runner`) runs these for every arm and seed; the fingerprint (`trl_lite_lab.fingerprint`) runs
them for a few steps to record what trl-lite computes for an arm.
"""

from __future__ import annotations

import time

import torch

from trl_lite.trainer import LitePPOTrainer

from .design import ADD_SETTINGS, EVAL_PROBLEMS, EVAL_SAMPLES, HORIZON, LONG, LOOSE, TIGHT, TRAIN_PROBE, Arm
from .measure import score_samples, top_share
from .stats import mean

ADD_BUDGET = ADD_SETTINGS["max_completion_length"]  # ADD's held-out budget: its training length
FORK_QUANTILE = 0.8  # "fork tokens": the 20% of completion tokens where the policy's entropy is highest
RATIO_BANDS = {"ratio_band_tokens": (1.2, 1.28), "ratio_wide_band_tokens": (1.2, 1.32)}  # where clip arms differ
# Bins of a token's old probability (Takeaway 5's matched comparison): the ratio of a token sampled with probability p
# can pass 1 + epsilon_high only if p < 1 / (1 + epsilon_high), so how far it can move is set by p
PROB_BINS = (0.0, 0.2, 0.4, 0.6, 1.0)


class LabTrainer(LitePPOTrainer):
    """`LitePPOTrainer` that also logs what the lab measures, through the trainer's public hooks (single process):
    per generation batch `lab/top5_abs_adv_share`, `lab/abs_adv_mean`, `lab/inv_sigma_batch`, `lab/tokens/<class>`;
    per training micro-batch `lab/strata/<connective|other>/<bin>/<eligible|clipped>` (eligible tokens, and those
    clipped at the high bound, by the old probability's bin in `PROB_BINS`), `lab/pos_adv_tokens`, `lab/ratio_band_tokens` / `lab/ratio_wide_band_tokens` (positive-advantage
    tokens whose ratio pi/pi_old lies in (1.2, 1.28] / (1.2, 1.32], where arms with those epsilon_high differ) and
    `lab/eligible/<class>` (tokens that can be clipped at the high bound: positive advantage and an old probability
    below 1 / (1 + epsilon_high), so that pi / pi_old can pass the bound)."""

    def on_generation_batch(self, output: dict, advantages: torch.Tensor, counted: torch.Tensor) -> None:
        if not self.model.training:
            return
        metrics = self._metrics["train"]
        metrics["lab/top5_abs_adv_share"].append(top_share(advantages[counted]))
        metrics["lab/abs_adv_mean"].append(advantages[counted].double().abs().mean().item())
        rewards = output["lite_rewards"].double()  # (N,)
        sigma = rewards[~torch.isnan(rewards)].std().item()
        metrics["lab/inv_sigma_batch"].append(1.0 / sigma if sigma > 0 else float("nan"))
        ids = output["completion_ids"][output["completion_mask"].bool()]  # (n,) tokens trained on
        for name, members in self._token_classes().items():
            metrics[f"lab/tokens/{name}"].append(float(torch.isin(ids, members).sum()))

    def on_loss_tokens(self, inputs: dict, per_token_logps: torch.Tensor) -> None:
        old = inputs.get("old_per_token_logps")
        mask = inputs["completion_mask"].bool()  # (B, T)
        positive = mask & (inputs["advantages"] > 0).unsqueeze(1)  # (B, T)
        ratio = torch.ones_like(per_token_logps) if old is None else torch.exp(per_token_logps - old)  # (B, T)
        metrics = self._metrics["train"]
        metrics["lab/pos_adv_tokens"].append(float(positive.sum()))
        for key, (low, high) in RATIO_BANDS.items():
            metrics[f"lab/{key}"].append(float((positive & (ratio > low) & (ratio <= high)).sum()))
        old_prob = torch.exp(per_token_logps if old is None else old)  # (B, T)
        eligible = inputs["completion_ids"][positive & (old_prob < 1.0 / (1.0 + self.epsilon_high))]  # (n,)
        for name, members in self._token_classes().items():
            metrics[f"lab/eligible/{name}"].append(float(torch.isin(eligible, members.to(eligible.device)).sum()))
        can_clip = positive & (old_prob < 1.0 / (1.0 + self.epsilon_high))  # (B, T)
        clipped = can_clip & (ratio > 1.0 + self.epsilon_high)  # (B, T)
        connective = torch.isin(inputs["completion_ids"], self._token_classes().get(
            "connective", torch.tensor([], dtype=torch.long)).to(mask.device))  # (B, T)
        for low, high in zip(PROB_BINS, PROB_BINS[1:]):
            in_bin = (old_prob >= low) & (old_prob < high)  # (B, T)
            for cls, members in (("connective", connective), ("other", ~connective)):
                name = f"lab/strata/{cls}/{low:.1f}-{high:.1f}"
                metrics[f"{name}/eligible"].append(float((can_clip & in_bin & members).sum()))
                metrics[f"{name}/clipped"].append(float((clipped & in_bin & members).sum()))

    def _token_classes(self) -> dict[str, torch.Tensor]:
        if not hasattr(self, "_lab_classes"):
            from .sumk import token_class

            by_class: dict[str, list[int]] = {}
            for token, index in self.processing_class.get_vocab().items():
                by_class.setdefault(token_class(token), []).append(index)
            self._lab_classes = {name: torch.tensor(ids) for name, ids in by_class.items()}
        return self._lab_classes


################
# Policies, data, evaluation
################
ADD_MIXES = ("easy", "hard", "mixed", "mostly-easy", "mostly-hard")


def add_mix(mix: str, size: int = 800) -> list[dict]:
    """An ADD mix, by a feature of the problem: `easy` = training problems (medium and hard levels) whose sum does not
    carry into the hundreds, `hard` = those whose sum does, `mixed` = the two interleaved one to one; `mostly-easy`
    three easy to one hard, `mostly-hard` one easy to three hard (version 3: every mix of T1-T3 holds both kinds, so
    the mix changes how concentrated the rewards are, not which problems held-out accuracy counts); `size` problems
    each."""
    from trl_lite.tasks.arithmetic import arithmetic_dataset, carries_into_hundreds

    data = arithmetic_dataset("medium,hard", split="train", seed=0).shuffle(seed=0)
    rows = [{"prompt": p, "answer": a} for p, a in zip(data["prompt"], data["answer"])]
    easy = [r for r in rows if not carries_into_hundreds(r["prompt"][-1]["content"])][:size]
    hard = [r for r in rows if carries_into_hundreds(r["prompt"][-1]["content"])][:size]
    if mix == "easy":
        return easy
    if mix == "hard":
        return hard
    if mix == "mixed":
        return [row for pair in zip(easy[: size // 2], hard[: size // 2]) for row in pair]
    if mix in ("mostly-easy", "mostly-hard"):
        many, few = (easy, hard) if mix == "mostly-easy" else (hard, easy)
        quarter = size // 4
        return [row for i in range(quarter) for row in (*many[3 * i: 3 * i + 3], few[i])]
    raise ValueError(f"mix={mix!r} is not supported; expected one of {list(ADD_MIXES)}.")


def train_set(arm: Arm, seed: int):
    from datasets import Dataset

    if arm.task == "add":
        rows = add_mix(arm.data)
        return Dataset.from_dict({"prompt": [r["prompt"] for r in rows], "answer": [r["answer"] for r in rows]})
    from trl_lite.tasks.sumk import sumk_dataset

    return sumk_dataset(4000, split="train", seed=1000 + seed)


def probe_set(arm: Arm, problems: int = TRAIN_PROBE) -> tuple[list, list[str]]:
    """The fixed training problems on which an arm's training reward is measured before and after training (version
    3.1): ADD's first `problems` of the arm's mix (whole blocks of four, so a mostly-easy probe is three easy to one
    hard exactly), SUM-k's first `problems` of one fixed training draw (seed 999: every arm and seed sees the same)."""
    if arm.task == "add":
        rows = add_mix(arm.data)[:problems]
        return [r["prompt"] for r in rows], [r["answer"] for r in rows]
    from trl_lite.tasks.sumk import sumk_dataset

    data = sumk_dataset(problems, split="train", seed=999)
    return list(data["prompt"]), list(data["answer"])


def training_accuracy(arm: Arm, model, tokenizer, problems: int = TRAIN_PROBE) -> float:
    """The arm's expected training reward, measured (version 3.1): the share of `EVAL_SAMPLES` samples per problem of
    [`probe_set`] that are correct, sampled as in training (the arm's temperature and maximum completion length) with a
    fixed seed, so that the initial and the trained policy meet the same problems and the same random draws."""
    from .measure import sample_completions, sample_rewards

    prompts, answers = probe_set(arm, problems)
    groups = sample_completions(model, tokenizer, prompts, samples=EVAL_SAMPLES,
                                max_new_tokens=arm.settings["max_completion_length"],
                                temperature=arm.settings["temperature"])
    return mean([r for rewards in sample_rewards(groups, answers, tokenizer) for r in rewards])


def heldout(task: str, problems: int):
    """The held-out problems and their k (SUM-k; 3 for ADD)."""
    if task == "add":  # both levels, so both kinds of sum (with and without a carry into the hundreds)
        from trl_lite.tasks.arithmetic import arithmetic_dataset

        data = arithmetic_dataset("medium,hard", split="test", num_per_level=(problems + 1) // 2, seed=0)
        data = data.shuffle(seed=0).select(range(min(problems, len(data))))
        return data, [3] * len(data)
    from trl_lite.tasks.sumk import sumk_dataset

    data = sumk_dataset(problems, split="test", seed=0)
    return data, list(data["k"])


def evaluate(task: str, model, tokenizer, problems: int = EVAL_PROBLEMS, temperature: float = 1.0) -> dict:
    """The held-out evaluation every run of a task gets: `problems` x `EVAL_SAMPLES` completions at the training
    temperature. SUM-k samples run to `HORIZON` tokens; the 96-, 28- and 124-token budgets are read off their prefixes
    (keys without a suffix are at 96 tokens, `@tight` at 28, `@long` at 124)."""
    from .measure import sample_completions, token_entropies

    data, ks = heldout(task, problems)
    started = time.time()
    budget = ADD_BUDGET if task == "add" else HORIZON
    groups = sample_completions(model, tokenizer, list(data["prompt"]), samples=EVAL_SAMPLES, max_new_tokens=budget,
                                temperature=temperature)
    if task == "add":
        out = score_samples(groups, list(data["answer"]), ks, tokenizer, budgets={"max": budget})
    else:
        from .sumk import carry_errors, completion_format

        problems = [p[-1]["content"] for p in data["prompt"]]
        out = score_samples(groups, list(data["answer"]), ks, tokenizer,
                            budgets={"loose": LOOSE, "tight": TIGHT, "long": LONG}, primary="loose",
                            classify=completion_format, carry=carry_errors, problems=problems)
        out.update(recheck_measures(groups, list(data["answer"]), problems, tokenizer))
    first = min(256, len(groups))  # entropies on one sample of the first 256 problems
    values = sorted(token_entropies(model, tokenizer, list(data["prompt"])[:first], [g[0][0] for g in groups[:first]]))
    out["entropy"] = mean(values)
    out["fork_entropy"] = mean(values[int(len(values) * FORK_QUANTILE):])
    out["eval_s"] = time.time() - started
    return out


def recheck_measures(groups, answers: list[str], problems: list[str], tokenizer) -> dict:
    """Takeaway 5's link between the connective and the reward, on full samples: `recheck_rate` (of the completions
    that dropped a carry, the share that fixed every drop with a `chk` recheck) and `recheck_link` (accuracy of those
    completions - accuracy of the ones that kept a drop), read off whether the step was written again right; and,
    read off the connective token itself (`sumk.connective_after_drops`), `chk_after_drop_rate` (of the completions
    that dropped a carry, the share that wrote `chk` after every drop) and `connective_link` (accuracy of those - of
    the ones that wrote another token after a drop). NaN where no completion did either."""
    from .measure import is_correct
    from .sumk import connective_after_drops, recheck_outcome

    right: dict[str, list[float]] = {"fixed": [], "kept": []}
    after: dict[str, list[float]] = {"chk": [], "other": []}
    for group, answer, problem in zip(groups, answers, problems):
        for ids, ended in group:
            text = tokenizer.decode(ids)
            outcome, connective = recheck_outcome(text, problem), connective_after_drops(text, problem)
            if outcome is None and connective is None:
                continue
            correct = float(is_correct(ids, ended, answer, tokenizer))
            if outcome is not None:
                right[outcome].append(correct)
            if connective is not None:
                after[connective].append(correct)
    dropped = len(right["fixed"]) + len(right["kept"])
    chk_dropped = len(after["chk"]) + len(after["other"])
    return {"recheck_rate": len(right["fixed"]) / dropped if dropped else float("nan"),
            "recheck_link": mean(right["fixed"]) - mean(right["kept"]),
            "chk_after_drop_rate": len(after["chk"]) / chk_dropped if chk_dropped else float("nan"),
            "connective_link": mean(after["chk"]) - mean(after["other"])}
