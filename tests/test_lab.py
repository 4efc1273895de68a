"""The lab (trl_lite/lab, trl_lite/tasks/sumk.py): the measures on hand-made inputs with the arithmetic in comments,
the verdict rule, the SUM-k task and tokenizer, the experiments' definitions, and a tiny lab end to end (2 steps,
1 seed) through the CLI, resumed."""

import json
import math
import os
import random
import subprocess
import sys

import pytest
import torch

from trl_lite.lab.experiments import EXPERIMENTS, LOOSE, TIGHT
from trl_lite.lab.measure import late_jitter, score_samples, token_covariance, top_share
from trl_lite.lab.report import interval, verdict
from trl_lite.tasks.sumk import (
    carry_errors,
    completion_format,
    question,
    sample_problems,
    steps,
    sumk_tokenizer,
    token_class,
    write_completion,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


################
# Measures
################
def test_top_share():
    # |A| = 5, 1, 1, 1, 1, 1, 0, 0, 0, 0 (+ 10 zeros): total 10; N = 20 -> top ceil(0.05 * 20) = 1 sample: 5 / 10
    values = torch.tensor([5.0, -1, 1, -1, 1, -1] + [0.0] * 14, dtype=torch.float64)
    assert top_share(values) == pytest.approx(0.5)
    # N = 21 -> ceil(1.05) = 2 samples: (5 + 1) / 10
    assert top_share(torch.cat([values, torch.zeros(1, dtype=torch.float64)])) == pytest.approx(0.6)
    assert math.isnan(top_share(torch.zeros(8)))  # no advantage mass at all


def test_token_covariance():
    # tokens (masked-in): logp 0, -2 (advantage +1) and -1 (advantage -1)
    # mean logp = -1, mean A = (1 + 1 - 1) / 3 = 1/3
    # cov = [(0+1)(1-1/3) + (-2+1)(1-1/3) + (-1+1)(-1-1/3)] / 3 = [2/3 - 2/3 + 0] / 3 = 0
    logps = torch.tensor([[0.0, -2.0], [-1.0, -5.0]], dtype=torch.float64)
    mask = torch.tensor([[1, 1], [1, 0]])
    assert token_covariance(logps, torch.tensor([1.0, -1.0]), mask) == pytest.approx(0.0)
    # confident tokens (high logp) reinforced: logp 0 with A = +1, logp -2 with A = -1
    # means -1 and 0; cov = [(1)(1) + (-1)(-1)] / 2 = 1
    assert token_covariance(torch.tensor([[0.0], [-2.0]]), torch.tensor([1.0, -1.0]), torch.ones(2, 1)) == \
        pytest.approx(1.0)


def test_late_jitter():
    # the last third of 9 values is the last 3: 1, 3, 2 -> changes +2, -1: mean 0.5, std sqrt(((1.5)^2 + 1.5^2)/1)
    values = [0, 0, 0, 0, 0, 0, 1, 3, 2]
    assert late_jitter(values) == pytest.approx(math.sqrt(4.5))
    assert late_jitter([0.0, 0.1, 0.2, 0.3, 0.4, 0.5]) == pytest.approx(0.0, abs=1e-12)  # a steady trend: no jitter


def test_score_samples_budgets_truncation_and_formats():
    tokenizer = sumk_tokenizer()
    ids = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    short = ids("\\boxed{9}")  # 4 tokens: \boxed { 9 }
    long_ok = ids("b2=3;c6=9;" + "." * 22 + "\\boxed{9}")  # 10 + 22 + 4 = 36 tokens
    loop = ids("b2=3;" * 12)  # 60 tokens, never ends
    wrong = ids("\\boxed{8}")
    groups = [[(short, True), (long_ok, True), (loop, False), (wrong, True)]]
    out = score_samples(groups, ["9"], [3], tokenizer, budgets={"loose": 96, "tight": 32},
                        classify=completion_format, carry=carry_errors, problems=["a1+b2+c6"])
    # loose (96): correct = short and long_ok -> 2 / 4; the loop is the only truncated completion, and a loop
    assert out["acc"] == pytest.approx(0.5)
    assert out["pass@4"] == pytest.approx(1.0)
    assert out["trunc_share"] == pytest.approx(0.25) and out["loop_share_of_truncated"] == pytest.approx(1.0)
    # lengths: correct 4 and 36 -> 20; incorrect: 60 (the loop, cut at 96 -> 60) and 4 -> 32; gap 12
    assert out["len_correct"] == pytest.approx(20) and out["length_gap"] == pytest.approx(12)
    # tight (32): long_ok (36 tokens) is cut -> truncated, and it would have been correct at the full budget
    assert out["acc@tight"] == pytest.approx(0.25)
    assert out["trunc_share@tight"] == pytest.approx(0.5)
    assert out["would_be_correct_share@tight"] == pytest.approx(0.5)  # long_ok yes, the loop no
    # incorrect at loose: the loop and "\boxed{8}" (direct); none is filler
    assert out["filler_rate_incorrect"] == pytest.approx(0.0)
    assert out["formats"] == {"direct": 0.5, "filler": 0.25, "loop": 0.25}
    # the EOS counts in the budget: a 31-token completion fits in 32, a 32-token one does not
    fits = score_samples([[(ids("." * 27 + "\\boxed{9}"), True)]], ["9"], [3], tokenizer, budgets={"t": 32})
    cut = score_samples([[(ids("." * 28 + "\\boxed{9}"), True)]], ["9"], [3], tokenizer, budgets={"t": 32})
    assert fits["acc"] == 1.0 and cut["acc"] == 0.0


################
# Verdicts
################
def test_interval_and_verdict():
    # effects 1, 2, 3: mean 2, sd 1, t_{0.975,2} = 4.303 -> half-width 4.303 / sqrt(3) = 2.484
    mean, low, high = interval([1.0, 2.0, 3.0])
    assert (mean, low, high) == pytest.approx((2.0, 2.0 - 2.4843, 2.0 + 2.4843), abs=1e-4)
    assert verdict([1.0, 2.0, 3.0]) == "inconclusive"  # every sign agrees, the interval does not exclude 0
    assert verdict([1.0, 1.1, 0.9, 1.05, 0.95]) == "reproduced"
    assert verdict([-1.0, -1.1, -0.9, -1.05, -0.95]) == "not reproduced"
    assert verdict([1.0, 1.1, -0.9, 1.05, 0.95]) == "inconclusive"  # one seed disagrees
    assert verdict([1.0]) == "inconclusive"  # one seed proves nothing
    assert verdict([1.0, 1.1, 0.9], untestable="no clipping") == "untestable"
    assert verdict([1.0, float("nan")]) == "inconclusive"


def test_experiments_cover_the_eight_takeaways():
    assert EXPERIMENTS.names() == [str(n) for n in range(1, 9)]
    for name in EXPERIMENTS:
        experiment = EXPERIMENTS[name]
        assert experiment.metric and experiment.claim and experiment.arms
        for arm in experiment.arms.values():  # every override is a LitePPOConfig field
            from trl_lite import LitePPOConfig

            LitePPOConfig(output_dir="/tmp/unused", use_cpu=True, bf16=False, **arm.settings)
    # paired arms shared across experiments run once: T5's runs are T4's runs at 0.2, T8's "off" is T4's base 0.2
    assert EXPERIMENTS["5"].arms["base 0.2"] == EXPERIMENTS["4"].arms["base 0.2"] == EXPERIMENTS["8"].arms["off"]
    assert EXPERIMENTS["6"].arms["base token"] == EXPERIMENTS["4"].arms["base 0.2"]
    assert TIGHT < LOOSE and EXPERIMENTS["7"].arms["on"].settings["max_completion_length"] == TIGHT


def test_t5_needs_enough_clips_to_see_the_connectives():
    """T5's effect is -1 whenever no connective was clipped; that is a finding only if, with clipping blind to the token
    class, at least 5 of the clipped tokens would have been connectives (e^-5 < 1% chance of none)."""
    from trl_lite.lab.experiments import _t5_requires

    def runs(clipped, tokens):
        return {"base 0.2": {"train": {"clipped_high_by_class": clipped, "tokens_by_class": tokens}}}

    # the lab's seed 0: 30 clipped of 17,634 tokens, 331 connectives (1.9%): 30 * 331 / 17634 = 0.56 expected
    reason = _t5_requires(runs({"digit": 29, "tag": 1}, {"digit": 9000.0, "connective": 331.0, "other": 8303.0}))
    assert "30 tokens clipped" in reason and "(1.9%)" in reason and "0.6 of them" in reason
    # 500 clipped at a 1% share: 5 expected, enough (none clipped would then be a result)
    assert _t5_requires(runs({"digit": 500}, {"digit": 99.0, "connective": 1.0})) is None
    assert _t5_requires(runs({"digit": 499}, {"digit": 99.0, "connective": 1.0})) is not None  # 4.99 expected
    assert _t5_requires(runs({}, {"connective": 1.0})) == "no token was clipped at the high bound"
    assert _t5_requires(runs({"digit": 9}, {"digit": 1.0})) == "the policy emitted no connective tokens"


def test_lab_rejects_bad_input(tmp_path):
    from trl_lite.lab import run

    with pytest.raises(ValueError, match=r"names \['9'\]; expected among"):
        run(["9"], 1, str(tmp_path))
    with pytest.raises(ValueError, match="seeds=0 is not supported"):
        run(["1"], 0, str(tmp_path))
    with pytest.raises(ValueError, match="shard=2/2 is not supported"):
        run(["1"], 1, str(tmp_path), shard=(2, 2))


################
# SUM-k
################
def test_sumk_tokenizer_keeps_connectives_whole():
    tokenizer = sumk_tokenizer()
    tokens = tokenizer.convert_ids_to_tokens(tokenizer("chkb6=11;thenc9=20;so\\boxed{20}",
                                                       add_special_tokens=False)["input_ids"])
    assert tokens == ["chk", "b", "6", "=", "1", "1", ";", "then", "c", "9", "=", "2", "0", ";", "so", "\\boxed", "{",
                      "2", "0", "}"]
    assert [token_class(t) for t in ("then", "so", "chk", "\\boxed", "7", "+", "{", ".", "c", "<eos>")] == [
        "connective", "connective", "connective", "boxed", "digit", "operator", "brace", "filler", "tag", "eos"]
    text = tokenizer.apply_chat_template([{"role": "user", "content": question([4, 8])}], tokenize=False,
                                         add_generation_prompt=True)
    assert text == "a4+b8="


def test_sumk_completions():
    rng = random.Random(0)
    nums = [7, 8, 3, 9]
    # a7+b8+c3+d9: 7+8 = 15, +3 = 18, +9 = 27
    assert write_completion(nums, "step", rng)[0] == "b8=15;c3=18;d9=27;\\boxed{27}"
    assert write_completion(nums, "careful", rng)[0] == "chkb8=15;thenc3=18;thend9=27;so\\boxed{27}"
    assert write_completion(nums, "direct", rng) == ("\\boxed{27}", True)
    loop, ends = write_completion(nums, "loop", rng, max_len=40)
    assert not ends and len(loop) >= 80
    # the carry habit: 7+8 carries (7 + 8 >= 10), so a dropped carry writes 5; 5+3 = 8 does not carry; 8+9 carries -> 7
    parts, total = steps(nums, random.Random(0), carry_error=1.0)
    assert parts == ["b8=5", "c3=8", "d9=7"] and total == 7
    assert carry_errors(";".join(parts), "a7+b8+c3+d9") == (2, 2)  # 7+8 and 8+9 carry, and both dropped it
    assert carry_errors("b8=15;c3=18;d9=27;\\boxed{27}", "a7+b8+c3+d9") == (2, 0)
    assert carry_errors("chkb8=15;thenc3=18;thend9=27;so\\boxed{27}", "a7+b8+c3+d9") == (2, 0)
    assert completion_format("chkb8=15;so\\boxed{15}", False) == "careful"
    assert completion_format("...b8=15;\\boxed{15}", False) == "filler"
    assert completion_format("c3=18;" * 6, True) == "loop"  # an exact repeat
    assert completion_format("b8=15;c3=18;d9=27;e8=34;e8=33;f1=21", True, k=4) == "loop"  # runs past its operands
    assert completion_format("b8=15;c3=18;d9=27;e8=34;e8=33;f1=21", True, k=6) == "truncated"
    assert completion_format("b8=15;c3=18;d9=2", True) == "truncated"
    assert completion_format("\\boxed{15}", False) == "direct"


def test_sumk_splits_are_disjoint():
    train = {tuple(p) for p in sample_problems(3000, split="train")}
    test = {tuple(p) for p in sample_problems(1000, split="test")}
    assert not train & test
    assert {len(p) for p in test} == {2, 3, 4, 5, 6}
    with pytest.raises(ValueError, match="split='dev' is not supported"):
        sample_problems(1, split="dev")


################
# End to end, tiny: 2 steps, 1 seed, through the CLI; a second call repeats nothing
################
def _lab(*args, cwd):
    return subprocess.run([sys.executable, "-m", "trl_lite.cli", "lab", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=900)


def test_lab_cli_tiny_run_and_resume(tmp_path):
    out = tmp_path / "lab"
    listed = _lab("list", cwd=ROOT)
    assert listed.returncode == 0 and listed.stdout.count("claim:") == 8
    result = _lab("run", "5,8", "--seeds", "1", "--steps", "2", "--eval-problems", "8", "--output-dir", str(out),
                  cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = (out / "summary.md").read_text()
    for takeaway in ("5: with a low upper bound", "8: at long maximum lengths"):
        assert f"| {takeaway}" in summary
    rows = json.loads((out / "summary.json").read_text())
    assert {r["verdict"] for r in rows} <= {"inconclusive", "untestable"}  # 1 seed never earns more
    assert len(rows[1]["effects"]) == 1
    assert (out / "T5.png").stat().st_size > 10_000 and (out / "T8.png").exists()
    run = out / "runs" / EXPERIMENTS["8"].arms["on"].name / "seed0"
    result_json = json.loads((run / "result.json").read_text())
    assert result_json["steps"] == 2 and result_json["eval"]["acc"] >= 0
    stamp = (run / "result.json").stat().st_mtime
    again = _lab("run", "8", "--seeds", "1", "--steps", "2", "--eval-problems", "8", "--output-dir", str(out),
                 cwd=ROOT)
    assert again.returncode == 0 and (run / "result.json").stat().st_mtime == stamp  # finished runs are kept
    assert "| 8: at long maximum lengths" in again.stdout


def test_shipped_lab_policies():
    """The two SUM-k policies are small, and differ as built: the base-like one mixes formats, the aligned-like one
    keeps one (measured on 100 held-out problems x 2 samples)."""
    import glob

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trl_lite.lab.measure import sample_completions
    from trl_lite.tasks.sumk import sumk_dataset, sumk_policy_path

    data = sumk_dataset(100, split="test", seed=0)
    formats = {}
    for kind in ("base", "aligned"):
        path = sumk_policy_path(kind)
        assert sum(os.path.getsize(f) for f in glob.glob(os.path.join(path, "*"))) < 20 * 2**20  # under 20 MB
        model, tokenizer = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
        groups = sample_completions(model, tokenizer, list(data["prompt"]), samples=2, max_new_tokens=LOOSE)
        seen = [completion_format(tokenizer.decode(ids), not ended) for group in groups for ids, ended in group]
        formats[kind] = {f: seen.count(f) / len(seen) for f in set(seen)}
    assert formats["aligned"].get("step", 0) > 0.95  # one clean format
    assert sum(share >= 0.03 for share in formats["base"].values()) >= 3  # direct, step, careful/filler/...
    assert formats["base"].get("direct", 0) > 0.2
    with pytest.raises(ValueError, match="kind='instruct' is not supported"):
        sumk_policy_path("instruct")


def test_teacher_forced_token_measures_match_one_unpadded_forward():
    """`token_measures` (and `token_entropies`, read from it) batches completions of different lengths (one empty)
    with left padding; each value must equal the one from a forward pass over that sequence alone."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trl_lite.lab.measure import token_entropies, token_measures
    from trl_lite.tasks.sumk import sumk_dataset, sumk_policy_path

    path = sumk_policy_path("base")
    model, tokenizer = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    prompts = list(sumk_dataset(3, split="test", seed=0)["prompt"])
    completions = [tokenizer("b6=11;", add_special_tokens=False)["input_ids"],
                   tokenizer("\\boxed{7}", add_special_tokens=False)["input_ids"], []]
    measures = token_measures(model, tokenizer, prompts, completions)
    probs, entropies = measures["prob"], measures["entropy"]
    assert token_entropies(model, tokenizer, prompts, completions) == entropies
    expected_p, expected_h = [], []
    for prompt, completion in zip(prompts, completions):
        text = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=torch.tensor([ids + completion])).logits[0, :-1].float(), -1)
        for i, token in enumerate(completion):  # position len(ids) - 1 + i predicts completion token i
            row = logp[len(ids) - 1 + i]
            expected_p.append(row[token].exp().item())
            expected_h.append(-(row.exp() * row).sum().item())
    assert len(probs) == len(entropies) == sum(map(len, completions)) == len(expected_p) > 0
    assert probs == pytest.approx(expected_p, abs=1e-5) and entropies == pytest.approx(expected_h, abs=1e-4)
    assert all(0 < p <= 1 for p in probs)


def test_audit_tiny(tmp_path):
    # 8 prompts, 8 steps (one SUM-k generation batch, 2 passes of 4 steps), 8 held-out problems: every check runs
    from trl_lite.lab import audit

    out = audit(str(tmp_path), progress=False, prompts=8, steps=8, eval_problems=8)
    assert set(out["advantages"]) == {"add-easy", "add-hard", "add-mixed", "sumk-base", "sumk-aligned"}
    for row in out["advantages"].values():
        # the top-5% share is scale-free: dividing by the batch std (group/batch) or not (group/none) cannot change it
        assert row["group/batch"]["top5_abs_adv_share"] == pytest.approx(row["group/none"]["top5_abs_adv_share"])
        assert 0 <= row["batch"]["mean_reward"] <= 1
    for policy in ("base", "aligned"):
        census = out["clip_census"][policy]
        assert 0 <= census["clip_low_frac"] <= 1 and 0 <= census["clip_high_frac"] <= 1
        truncation = out["truncation"][policy]
        assert truncation["truncated_share"]["tight"] >= truncation["truncated_share"]["loose"]  # a shorter budget
    text = (tmp_path / "audit.md").read_text()
    for heading in ("Advantage audit", "Clip census", "Truncation census", "Length-gap pilot"):
        assert f"## {heading}" in text
