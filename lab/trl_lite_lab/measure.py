"""The lab's measurements: pure functions over tensors and completions, and the held-out evaluation of a policy.

Everything here is computed the same way for every arm of an experiment, so two arms differ only in training.
"""

from __future__ import annotations

import math

import torch

from trl_lite.scoring import pass_at_k
from .stats import mean

LONG_WRONG = 40  # tokens: a wrong completion longer than this is a "long wrong" one (Takeaway 6)


def top_share(values: torch.Tensor, frac: float = 0.05) -> float:
    """Share of `values.abs().sum()` held by the largest `ceil(frac * N)` entries of `values.abs()` (Takeaway 1: how
    few samples carry a step's advantage mass). `(N,)`; NaN when the sum is 0."""
    magnitudes = values.detach().double().abs().flatten()
    magnitudes = magnitudes[~torch.isnan(magnitudes)]
    total = magnitudes.sum()
    if magnitudes.numel() == 0 or total == 0:
        return float("nan")
    top = max(1, math.ceil(frac * magnitudes.numel()))
    return (magnitudes.topk(top).values.sum() / total).item()


def update_size(model: torch.nn.Module, initial: torch.nn.Module) -> dict:
    """How far training moved the weights (version 3: an arm's update size, next to its gradient norms): the L2 norm
    of the trained weights minus the initial policy's over every parameter (`update_norm`), and that over the initial
    weights' norm (`update_rel`). Parameters are matched by name; tied ones count once (`named_parameters`)."""
    before = dict(initial.named_parameters())
    moved, size = 0.0, 0.0
    for name, weight in model.named_parameters():
        if name not in before:
            raise KeyError(f"parameter {name!r} of the trained model is not in the initial policy")
        start = before[name].detach().double().cpu()
        moved += (weight.detach().double().cpu() - start).pow(2).sum().item()
        size += start.pow(2).sum().item()
    return {"update_norm": math.sqrt(moved), "update_rel": math.sqrt(moved / size) if size else float("nan")}


def token_covariance(logps: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor) -> float:
    """Cov(log pi(y_t), A) over the batch's completion tokens (the entropy-dynamics term of Cui et al., 2025: a
    positive covariance means confident tokens are reinforced and entropy falls). `logps`, `mask`: `(B, T)`;
    `advantages`: `(B,)`."""
    mask = mask.bool()
    if not mask.any():
        return float("nan")
    x = logps.detach().double()[mask]  # (n,)
    a = advantages.detach().double().unsqueeze(1).expand_as(mask)[mask]  # (n,)
    return ((x - x.mean()) * (a - a.mean())).mean().item()


def late_jitter(values: list[float], tail: float = 1 / 3) -> float:
    """Std of the step-to-step changes of a series over its last `tail` (Takeaway 2's late-run reward jitter)."""
    values = [v for v in values if v is not None and not math.isnan(v)]
    last = values[-max(3, int(len(values) * tail)):]
    diffs = [b - a for a, b in zip(last, last[1:])]
    if len(diffs) < 2:
        return float("nan")
    mean = sum(diffs) / len(diffs)
    return math.sqrt(sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1))


################
# Held-out evaluation
################
def sample_completions(model, tokenizer, prompts: list[list[dict]], *, samples: int, max_new_tokens: int,
                       seed: int = 0, batch_size: int = 128,
                       temperature: float = 1.0) -> list[list[tuple[list[int], bool]]]:
    """`samples` completions per prompt at `temperature` (no top-k/top-p), as token ids without EOS/padding, with
    whether each ended with EOS (`trl_lite.sampling.transformers_sampler` with `return_ids=True`). Seeded, and the global
    RNG state is restored afterwards.

    A shorter budget needs no second generation: sampling is token by token, so the completion a budget `L` would
    have produced is the first `L` tokens of this one (truncated at `L` when no EOS came before)."""
    from trl_lite.sampling import transformers_sampler

    model.eval()
    sample = transformers_sampler(model, tokenizer, max_new_tokens=max_new_tokens, temperature=temperature, top_p=1.0,
                                  top_k=0,
                                  batch_size=batch_size, seed=seed, return_ids=True)
    return sample(prompts, samples)


def token_measures(model, tokenizer, prompts: list[list[dict]], completions: list[list[int]],
                   batch_size: int = 64) -> dict[str, list[float]]:
    """The policy's probability of (`"prob"`) and entropy in nats at (`"entropy"`) every completion token,
    teacher-forced on the given completions, from one forward pass per batch. A token sampled with probability p can
    be clipped at the high bound only if p < 1 / (1 + epsilon_high): its ratio pi / pi_old cannot exceed 1 / p."""
    texts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]
    out: dict[str, list[float]] = {"prob": [], "entropy": []}
    for start in range(0, len(texts), batch_size):
        prompt_ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts[start : start + batch_size]]
        rows = [p + c for p, c in zip(prompt_ids, completions[start : start + batch_size])]
        width = max(len(r) for r in rows)
        ids = torch.tensor([[tokenizer.pad_token_id] * (width - len(r)) + r for r in rows])  # (B, T) left-padded
        attention = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])  # (B, T)
        with torch.no_grad():
            logits = model(input_ids=ids.to(model.device), attention_mask=attention.to(model.device)).logits.float()
        logp = torch.log_softmax(logits[:, :-1], dim=-1)  # (B, T-1, V): position t predicts token t+1
        for i, completion in enumerate(completions[start : start + batch_size]):
            rows_logp = logp[i, width - 1 - len(completion) : width - 1]  # (L, V)
            index = torch.tensor(completion, dtype=torch.long, device=logp.device).unsqueeze(-1)  # (L, 1)
            out["prob"].extend(rows_logp.gather(-1, index).squeeze(-1).exp().tolist())
            out["entropy"].extend((-(rows_logp.exp() * rows_logp).sum(-1)).tolist())
    return out


def token_entropies(model, tokenizer, prompts: list[list[dict]], completions: list[list[int]],
                    batch_size: int = 64) -> list[float]:
    """The policy's entropy (nats) at every completion token, teacher-forced on the given completions."""
    return token_measures(model, tokenizer, prompts, completions, batch_size)["entropy"]


def is_correct(ids: list[int], ended: bool, answer: str, tokenizer) -> bool:
    """Whether a sampled completion (token ids without EOS, ended with EOS or not) earns reward 1: it ended, and its
    last `\\boxed{}` holds the answer."""
    from trl_lite.rewards import last_boxed

    return ended and last_boxed(tokenizer.decode(ids)) == answer


def sample_rewards(groups: list[list[tuple[list[int], bool]]], answers: list[str], tokenizer) -> list[list[float]]:
    """The {0,1} reward of every sample of `sample_completions`, per problem."""
    return [[float(is_correct(ids, ended, answer, tokenizer)) for ids, ended in group]
            for group, answer in zip(groups, answers)]


def score_samples(groups: list[list[tuple[list[int], bool]]], answers: list[str], ks: list[int], tokenizer, *,
                  budgets: dict[str, int], classify=None, carry=None, problems: list[str] | None = None,
                  primary: str | None = None) -> dict:
    """Accuracy, pass@n, accuracy for k >= 5, lengths by correctness, truncation and format shares, at each budget.

    `groups[i]`: the samples of problem i (token ids without EOS, ended), sampled at least as far as the longest
    budget; each budget `L` sees a sample's first `L` tokens. Sampled further (a horizon), they also tell which
    completions cut at a budget would have ended (`unending_share`: the share of the cut ones that did not end within
    the sample) and been right (`would_be_correct_share`). `classify(text, truncated, k) -> format` and `carry(text, problem) ->
    (carries, dropped)` (with `problems[i]` the prompt's text) add the SUM-k measures. Keys are `<measure>` for the
    `primary` budget (the longest when None) and `<measure>@<name>` for others.
    """
    from trl_lite.rewards import last_boxed

    main = primary or max(budgets, key=budgets.get)
    out: dict = {}
    for name, budget in budgets.items():
        suffix = "" if name == main else f"@{name}"
        correct_n, total, per_problem, k5 = 0, 0, [], []
        lengths = {True: [], False: []}
        truncated_n, loops, would_be, formats, unending, long_wrong = 0, 0, 0, {}, 0, 0
        filler_wrong = wrong = 0
        carries = dropped = 0
        for i, (group, answer, k) in enumerate(zip(groups, answers, ks)):
            c_problem = 0
            for ids, ended in group:
                cut = ids[:budget]
                done = ended and len(ids) < budget  # the EOS counts in the budget, as in TRL
                text = tokenizer.decode(cut)
                ok = done and last_boxed(text) == answer
                full_ok = is_correct(ids, ended, answer, tokenizer)
                c_problem += ok
                total += 1
                lengths[ok].append(len(cut))
                long_wrong += (not ok) and len(cut) > LONG_WRONG
                if k >= 5:
                    k5.append(ok)
                if not done:
                    truncated_n += 1
                    would_be += full_ok
                    unending += not ended
                if classify is not None:
                    fmt = classify(text, not done, k)
                    formats[fmt] = formats.get(fmt, 0) + 1
                    loops += fmt == "loop"
                    if not ok:
                        wrong += 1
                        filler_wrong += fmt == "filler"
                if carry is not None:
                    c, d = carry(text, problems[i])
                    carries, dropped = carries + c, dropped + d
            correct_n += c_problem
            per_problem.append(c_problem)
        n = len(groups[0]) if groups else 1
        measures = {
            "acc": correct_n / max(total, 1),
            f"pass@{n}": mean([pass_at_k(n, c, n) for c in per_problem]),
            "acc_k5": mean([float(x) for x in k5]),
            "len_correct": mean(lengths[True]),
            "len_incorrect": mean(lengths[False]),
            "trunc_share": truncated_n / max(total, 1),
            "would_be_correct_share": would_be / truncated_n if truncated_n else float("nan"),
            "truncated_n": truncated_n,
            "unending_share": unending / truncated_n if truncated_n else float("nan"),
            "long_wrong_share": long_wrong / max(total, 1),
        }
        measures["length_gap"] = measures["len_incorrect"] - measures["len_correct"]
        if classify is not None:
            measures["loop_share_of_truncated"] = loops / truncated_n if truncated_n else float("nan")
            measures["filler_rate_incorrect"] = filler_wrong / wrong if wrong else float("nan")
            measures["formats"] = {f: c / total for f, c in sorted(formats.items())}
        if carry is not None:
            measures["carry_drop_rate"] = dropped / carries if carries else float("nan")
        out.update({key + suffix: value for key, value in measures.items()})
    return out
