"""The lab's audit: what the initial policies do on fresh samples, before any training, and which experiments' audit
gates pass (`lab/trl_lite_lab/experiments.py`). An experiment whose audit gate fails is not run; its verdict is
`untestable`, with the measured value.

Measures (`audit.json`, flat keys):

- `add/<mix>/pass`, `add/<mix>/zero_std@8`, `add/<mix>/zero_std@16`: the carry-habit policy's pass rate and share of
  zero-std groups on `AUDIT_PROBLEMS` problems of each ADD mix (`ADD_AUDITED`), 16 samples each at the training temperature (the
  groups of 8 are the first 8 samples);
- `add/<policy>/acc@T1`: held-out accuracy of the two ADD policy sizes at temperature 1 (clip scaling);
- `sumk/<policy>/<measure>`: the SUM-k policies' held-out evaluation (1,000 problems x 4 samples to 160 tokens):
  `acc`, `would_be_correct_share@tight` (of the completions cut at 28 tokens, the share right with more room),
  `truncated_n` and `ending_share_of_truncated` (cut at 96 tokens; of those, the share that end by the horizon),
  `long_wrong_share`, `carry_drop_rate`, `trunc_share@tight` and `trunc_share@long` (the share cut at 28 and 124
  tokens), `recheck_link` (accuracy after a dropped carry fixed by a recheck - after one left alone),
  `connective_link` (accuracy after `chk` followed every dropped carry - after another token followed one).
"""

from __future__ import annotations

import json
import os

from .design import (
    ADD_SETTINGS,
    AUDIT_PROBLEMS,
    EVAL_PROBLEMS,
    EXPERIMENTS,
    Experiment,
    Gate,
    policy_dir,
    policy_sha256,
)
from .fingerprint import fingerprints
from .provenance import engine_sha256, product_stamp
from .results import AUDIT_FILE, check_provenance


def _measured(gate: Gate, measures: dict) -> bool:
    try:
        gate.value(measures)
    except KeyError:
        return False
    return True


def failed_audit_gates(experiment: Experiment, measures: dict) -> list[tuple[Gate, float]]:
    """The experiment's audit gates that fail, with their measured values (a gate not yet measured raises KeyError:
    audit the experiment first)."""
    out = []
    for gate in experiment.gates:
        if gate.stage == "audit":
            value = gate.value(measures)
            if not gate.passes(value):
                out.append((gate, value))
    return out


ADD_AUDITED = ("easy", "hard", "mostly-easy", "mostly-hard")


def _add_mixes(output: dict, progress: bool) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from .measure import sample_completions, sample_rewards
    from .training import ADD_BUDGET, add_mix

    model_id = policy_dir("add", "carry")
    tokenizer, model = AutoTokenizer.from_pretrained(model_id), AutoModelForCausalLM.from_pretrained(model_id)
    for mix in ADD_AUDITED:
        if f"add/{mix}/pass" in output:
            continue
        rows = add_mix(mix)[:AUDIT_PROBLEMS]
        groups = sample_completions(model, tokenizer, [r["prompt"] for r in rows], samples=16,
                                    max_new_tokens=ADD_BUDGET, temperature=ADD_SETTINGS["temperature"], seed=12345)
        rewards = torch.tensor(sample_rewards(groups, [r["answer"] for r in rows], tokenizer))  # (P, 16)
        output[f"add/{mix}/pass"] = rewards.mean().item()
        for size in (8, 16):
            part = rewards[:, :size]
            output[f"add/{mix}/zero_std@{size}"] = (part.max(1).values == part.min(1).values).float().mean().item()


def _sumk_policy(output: dict, policy: str, output_dir: str, eval_problems: int) -> None:
    from .runner import initial_eval

    initial = initial_eval("sumk", policy, output_dir, eval_problems)
    unending = initial["unending_share"]
    output.update({
        f"sumk/{policy}/acc": initial["acc"],
        f"sumk/{policy}/would_be_correct_share@tight": initial["would_be_correct_share@tight"],
        f"sumk/{policy}/truncated_n": initial["truncated_n"],
        f"sumk/{policy}/ending_share_of_truncated": 1 - unending if unending == unending else float("nan"),
        f"sumk/{policy}/long_wrong_share": initial["long_wrong_share"],
        f"sumk/{policy}/carry_drop_rate": initial["carry_drop_rate"],
        f"sumk/{policy}/trunc_share@tight": initial["trunc_share@tight"],
        f"sumk/{policy}/trunc_share@long": initial["trunc_share@long"],
        f"sumk/{policy}/recheck_link": initial["recheck_link"],
        f"sumk/{policy}/connective_link": initial["connective_link"],
    })


def sections(names: list[str]) -> list[tuple[str, str]]:
    """The (task, policy) parts of the audit that the experiments need, in a fixed order."""
    needed = {(a.task, a.policy) for name in names for a in EXPERIMENTS[name].arms.values()}
    return sorted(needed)


def audit(output_dir: str, names: list[str] | None = None, *, progress: bool = True,
          eval_problems: int = EVAL_PROBLEMS) -> dict:
    """Measures the parts of the audit the experiments `names` (default: all) need, once each (kept in
    `audit.json`), rewrites `audit.md`; returns every measure made so far."""
    from .runner import initial_eval

    path = os.path.join(output_dir, AUDIT_FILE)
    measures: dict = {"engine_sha256": engine_sha256(), "product": product_stamp()}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            measures = json.load(f)
        check_provenance(f"the audit in {path}", measures, remedy=f" (delete {path} to audit again)")
    before = dict(measures)
    for task, policy in sections(names or list(EXPERIMENTS.names())):
        weights, printed = f"weights/{task}/{policy}", f"fingerprints/{task}/{policy}"
        if weights in measures:
            check_provenance(f"the audit of {task}-{policy} in {path}",
                             {**measures, "policy_sha256": measures[weights], "fingerprints": measures.get(printed)},
                             policy_dir(task, policy), remedy=f" (delete {path} to audit again)",
                             evaluations=[(task, policy)])
        measures[weights] = policy_sha256(policy_dir(task, policy))
        measures[printed] = fingerprints(evaluations=[(task, policy)])
        if task == "add":
            if policy == "carry" and any(f"add/{mix}/pass" not in measures for mix in ADD_AUDITED):
                _add_mixes(measures, progress)
            if f"add/{policy}/acc@T1" not in measures:
                measures[f"add/{policy}/acc@T1"] = initial_eval("add", policy, output_dir, eval_problems)["acc"]
        elif f"sumk/{policy}/acc" not in measures:
            _sumk_policy(measures, policy, output_dir, eval_problems)
    if measures != before or not os.path.exists(os.path.join(output_dir, "audit.md")):
        os.makedirs(output_dir, exist_ok=True)
        if os.path.exists(path):  # another process (a pilot next to this one) may have added its parts meanwhile
            with open(path, encoding="utf-8") as f:
                measures = {**json.load(f), **{k: v for k, v in measures.items() if before.get(k) != v}}
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(measures, f, indent=2)
        os.replace(path + ".tmp", path)
        with open(os.path.join(output_dir, "audit.md"), "w", encoding="utf-8") as f:
            f.write(audit_markdown(measures))
    return measures


def audit_markdown(measures: dict) -> str:
    lines = ["# trl-lite-lab audit", "",
             "Fresh samples of the initial policies, before any training (`lab/trl_lite_lab/audit.py`).", "",
             "## Measures", "", "| measure | value |", "|---|---|"]
    lines += [f"| `{key}` | {value:.3f} |" for key, value in measures.items() if isinstance(value, (int, float))]
    lines += ["", f"engine_sha256 `{measures['engine_sha256']}`; policy weights (SHA-256): "
              + ", ".join(f"{key[len('weights/'):]} `{value[:12]}`" for key, value in measures.items()
                          if key.startswith("weights/"))]
    lines += ["", "## Audit gates", "", "| experiment | gate | value | threshold | passed |", "|---|---|---|---|---|"]
    for name in EXPERIMENTS.names():
        for gate in EXPERIMENTS[name].gates:
            if gate.stage == "audit" and _measured(gate, measures):
                value = gate.value(measures)
                sign = "<=" if gate.at_most else ">="
                lines.append(f"| {EXPERIMENTS[name].id} | {gate.name} | {value:.3f} | {sign} {gate.threshold} | "
                             f"{'yes' if gate.passes(value) else '**no**'} |")
    return "\n".join(lines) + "\n"
