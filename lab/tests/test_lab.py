"""The lab (lab/trl_lite_lab, with SUM-k: trl_lite/tasks/sumk.py and lab/trl_lite_lab/sumk.py): the measures on hand-made inputs with the arithmetic in comments,
the verdict rule, the SUM-k task and tokenizer, the experiments' definitions, reports from synthetic runs, and a tiny
lab end to end (a negative pilot, 2 steps, 2 seeds) through the CLI, resumed. The design pieces (gates, gain,
power, pilots, provenance) are in tests/test_lab_design.py."""

import hashlib
import json
import math
import os
import random
import re
import subprocess
import sys

import pytest
import torch

from trl_lite_lab.experiments import EXPERIMENTS, HORIZON, LOOSE, TIGHT
from trl_lite_lab.fingerprint import changed, fingerprints
from trl_lite_lab.measure import late_jitter, score_samples, token_covariance, top_share
from trl_lite.tasks.sumk import question, sample_problems
from trl_lite_lab.sumk import carry_errors, completion_format, steps, sumk_tokenizer, token_class, write_completion

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the clone


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
    # `primary` names the budget whose keys have no suffix (the longest by default)
    tight_first = score_samples(groups, ["9"], [3], tokenizer, budgets={"loose": 96, "tight": 32}, primary="tight")
    assert tight_first["acc"] == pytest.approx(0.25) and tight_first["acc@loose"] == pytest.approx(0.5)
    assert "acc@tight" not in tight_first
    # the EOS counts in the budget: a 31-token completion fits in 32, a 32-token one does not
    fits = score_samples([[(ids("." * 27 + "\\boxed{9}"), True)]], ["9"], [3], tokenizer, budgets={"t": 32})
    cut = score_samples([[(ids("." * 28 + "\\boxed{9}"), True)]], ["9"], [3], tokenizer, budgets={"t": 32})
    assert fits["acc"] == 1.0 and cut["acc"] == 0.0
    # sampled past the budget (a horizon): of the two cut at 32, long_ok ended within the sample, the loop did not
    assert out["unending_share@tight"] == pytest.approx(0.5) and out["unending_share"] == pytest.approx(1.0)
    # wrong and longer than 40 tokens: only the loop (60 tokens at 96), of 4 samples
    assert out["long_wrong_share"] == pytest.approx(0.25)


################
# Definitions (the pre-registration)
################
def test_experiments_cover_the_takeaways_and_clip_scaling():
    from trl_lite import LitePPOConfig
    from trl_lite_lab.design import LONG
    from trl_lite_lab.runner import arm_hashes

    assert EXPERIMENTS.names() == ([str(n) for n in range(1, 5)] + ["clip-scaling"] + [str(n) for n in range(5, 9)]
                                   + ["headline"])
    for name in EXPERIMENTS:
        experiment = EXPERIMENTS[name]
        assert experiment.claim and experiment.arms and experiment.primaries and experiment.gates
        assert experiment.seeds >= 5 and experiment.pilot_seeds >= 2
        # each experiment names the design module it is defined in, and that file exists
        assert experiment.design.startswith("designs/") and os.path.exists(
            os.path.join(ROOT, "lab", "trl_lite_lab", experiment.design))
        for a in experiment.arms.values():  # every override is a LitePPOConfig field
            LitePPOConfig(output_dir="/tmp/unused", use_cpu=True, bf16=False, **a.settings)
    # arms shared across experiments run once and record the hash of every experiment that has them: T1's arms and
    # T2's are T3's (the same normalizations on the same mixes, version 3: mostly-easy and mostly-hard); T2's
    # group/group arm is T1's too
    for name in ("1", "2"):
        for label, a in EXPERIMENTS[name].arms.items():
            assert EXPERIMENTS["3"].arms[label] == a and a.data in ("mostly-easy", "mostly-hard")
    assert sorted(arm_hashes(EXPERIMENTS["1"].arms["batch/batch mostly-hard"])) == ["T1", "T3"]
    assert sorted(arm_hashes(EXPERIMENTS["2"].arms["group/group mostly-easy"])) == ["T1", "T2", "T3"]
    assert sorted(arm_hashes(EXPERIMENTS["2"].arms["group/none mostly-easy"])) == ["T2", "T3"]
    assert sorted(arm_hashes(EXPERIMENTS["3"].arms["group/batch mostly-easy"])) == ["T3"]
    assert len(EXPERIMENTS["3"].arms) == 8 and {a.data for a in EXPERIMENTS["3"].arms.values()} == {
        "mostly-easy", "mostly-hard"}
    assert TIGHT < LOOSE < LONG < HORIZON and EXPERIMENTS["7"].arms["on"].settings["max_completion_length"] == TIGHT
    assert {a.settings["max_completion_length"] for a in EXPERIMENTS["8"].arms.values()} == {LONG}
    # T3: three pairwise contrasts, no max over competitors, and auto left out with its reason
    assert [p.name for p in EXPERIMENTS["3"].primaries] == [
        "T3 vs batch/batch", "T3 vs group/group", "T3 vs group/none"]
    assert "auto" in EXPERIMENTS["3"].excluded and not any("auto" in label for label in EXPERIMENTS["3"].arms)
    # T8's half the paper says makes no difference is an equivalence test with a stated margin; T4's base half is read
    # as a directional contrast since version 3.1 (its TOST rested on normality)
    assert [p.margin for p in EXPERIMENTS["4"].primaries] == [None, None]
    assert [p.margin for p in EXPERIMENTS["8"].primaries] == [0.03, None]
    assert len(EXPERIMENTS["clip-scaling"].primaries) == 2


def test_an_arm_identical_to_another_is_refused():
    from trl_lite_lab.experiments import Experiment, Gate, Primary, arm

    # epsilon_high=0.2 is the default: the two arms train alike, so they compare equal and the definition is refused
    assert arm("sumk", "fork", epsilon_high=0.2) == arm("sumk", "fork")
    with pytest.raises(ValueError, match="arms 'a' and 'b' train alike"):
        Experiment(id="X", title="t", claim="c", arms={"a": arm("sumk", "fork"),
                                                        "b": arm("sumk", "fork", epsilon_high=0.2)},
                   primaries=(Primary("X", "m", lambda runs: 0.0),), gates=(Gate("g", lambda e: 1.0, 0.0),))
    with pytest.raises(ValueError, match="arms of one task expected"):
        Experiment(id="X", title="t", claim="c", arms={"a": arm("sumk", "fork"), "b": arm("add", "carry")},
                   primaries=(Primary("X", "m", lambda runs: 0.0),))
    with pytest.raises(ValueError, match="pilot_seeds=1"):
        Experiment(id="X", title="t", claim="c", arms={"a": arm("sumk", "fork")},
                   primaries=(Primary("X", "m", lambda runs: 0.0),), pilot_seeds=1)


def test_registered_seeds_from_first_seed_and_the_runs_seed_by_seed(monkeypatch):
    """`Experiment.first_seed` (version 3.3 of clip scaling: a later version on seeds no earlier one has seen): the
    registered seeds, a quick try's, the runner's order, and a first seed that is refused."""
    from trl_lite_lab import runner
    from trl_lite_lab.experiments import EXPERIMENTS, Experiment, Primary, arm

    def make(**kw):
        return Experiment(id="X", title="t", claim="c", arms={"a": arm("sumk", "fork"), "b": arm("sumk", "loop")},
                          primaries=(Primary("X", "m", lambda runs: 0.0),), **kw)

    # 3 seeds from 5000: 5000, 5001, 5002; a quick try of 2 takes the first 2; the pilot's stay 1000, 1001
    e = make(seeds=3, first_seed=5000)
    assert e.seed_list() == [5000, 5001, 5002] and e.seed_list(count=2) == [5000, 5001]
    assert e.seed_list(pilot=True) == [1000, 1001] and make(seeds=3).seed_list() == [0, 1, 2]
    # refused: below 0, and registered seeds that would be pilot seeds (999, 1000 with pilot seeds 1000, 1001)
    with pytest.raises(ValueError, match=r"first_seed=-1 gives registered seeds -1-1; expected an int >= 0 whose "
                                         r"seeds miss the pilot seeds 1000-1001"):
        make(seeds=3, first_seed=-1)
    with pytest.raises(ValueError, match=r"first_seed=999 gives registered seeds 999-1000"):
        make(seeds=2, first_seed=999)
    assert make(seeds=2, first_seed=1002).seed_list() == [1002, 1003]  # just past the pilot seeds
    # the runner, seed by seed over the experiments: X's 2 seeds from 5000, Y's 3 from 0, sharing no arm
    other = Experiment(id="Y", title="t", claim="c", arms={"c": arm("sumk", "fork", epsilon_high=0.28)},
                       primaries=(Primary("Y", "m", lambda runs: 0.0),), seeds=3)
    monkeypatch.setattr(runner, "EXPERIMENTS", {"X": make(seeds=2, first_seed=5000), "Y": other})
    a, b, c = arm("sumk", "fork"), arm("sumk", "loop"), arm("sumk", "fork", epsilon_high=0.28)
    assert runner.jobs(["X", "Y"]) == [(a, 5000), (b, 5000), (c, 0), (a, 5001), (b, 5001), (c, 1), (c, 2)]
    assert runner.jobs(["X", "Y"], seeds=2) == [(a, 5000), (b, 5000), (c, 0), (a, 5001), (b, 5001), (c, 1)]
    # clip scaling's version 3.3 is registered on 5000-5063
    assert EXPERIMENTS["clip-scaling"].seed_list()[::63] == [5000, 5063]


def test_gates():
    from trl_lite_lab.experiments import Gate

    at_least, at_most = Gate("g", lambda e: e["x"], 0.5), Gate("g", lambda e: e["x"], 0.35, at_most=True)
    assert at_least.passes(0.5) and not at_least.passes(0.49) and not at_least.passes(float("nan"))
    assert at_most.passes(0.35) and not at_most.passes(0.36) and not at_most.passes(float("nan"))
    # T5: the audit gate (the connective's credit), the runs gate (connectives clipped at the high bound, pooled over
    # seeds, from the clip census by old-probability bin), the premise gate added 2026-11-29 (training pushes `chk` up
    # after a dropped carry), then the two gain gates of its one arm (held-out gain, training reward rise)
    credit, clipped, premise, *gain = EXPERIMENTS["5"].gates
    assert (credit.stage, credit.kind, clipped.stage, clipped.kind) == ("audit", "the connective's credit", "runs",
                                                                        "the clip band")
    assert (premise.stage, premise.kind, premise.threshold) == ("runs", "the connective pushed up", 0.0)
    assert [(g.kind, g.stage, g.threshold) for g in gain] == [("gain", "runs", 0.03),
                                                              ("training-reward rise", "runs", 0.0)]
    assert all(g.name.startswith("recheck 0.2: ") for g in gain)
    # version 3.1: the link read off the connective token (`connective_link`), not off the fix (`recheck_link`)
    assert credit.value({"sumk/recheck/connective_link": 0.42, "sumk/recheck/recheck_link": 0.1}) == 0.42
    assert credit.passes(0.42) and not credit.passes(0.29)

    def run(strata):
        return {"recheck 0.2": {"train": {"strata": strata}}}

    # seed 0: 5 + 7 connectives clipped (bins 0.0-0.2 and 0.2-0.4; the 100 other tokens do not count);
    # seed 1: 6 -> pooled 5 + 7 + 6 = 18 < 20
    evidence = {"runs": {0: run({"connective/0.0-0.2/clipped": 5.0, "connective/0.2-0.4/clipped": 7.0,
                                 "connective/0.0-0.2/eligible": 50.0, "other/0.0-0.2/clipped": 100.0}),
                         1: run({"connective/0.4-0.6/clipped": 6.0, "other/0.4-0.6/clipped": 3.0})}}
    assert clipped.value(evidence) == pytest.approx(18.0) and not clipped.passes(clipped.value(evidence))
    evidence["runs"][2] = run({"connective/0.0-0.2/clipped": 2.0})  # 18 + 2 = 20: passes (>=)
    assert clipped.value(evidence) == pytest.approx(20.0) and clipped.passes(clipped.value(evidence))


################
# Reports from finished runs (synthetic runs: the report reads, never trains)
################
def _weights(task="add", policy="carry"):
    from trl_lite_lab.experiments import policy_dir, policy_sha256

    return policy_sha256(policy_dir(task, policy))


REWARDS = (0.4, 0.5, 0.5, 0.6)  # a fake run's training reward per generation batch: rises 0.6 - 0.4 = 0.2 (quarters)
TRAIN_ACC = (0.70, 0.75)  # a fake run's accuracy on the fixed training problems before and after: a rise of 0.05


def _fake_run(out, a, seed, eval_values, sha=None, train_rows=None, weights=None):
    """A finished run of arm `a`: its result records the hash of every experiment that has the arm (as `run_arm`
    does), or `sha` (a dict, or one hash for each of them). Its evaluation: `eval_values`, with the training reward
    before and after (`TRAIN_ACC`, which the gain gates read) unless given; its logs: `train_rows`, or four generation
    batches with the rewards `REWARDS` and gradient norm 1.0."""
    from trl_lite_lab.results import run_folder
    from trl_lite_lab.runner import arm_hashes

    hashes = arm_hashes(a)
    if isinstance(sha, str):
        hashes = {key: sha for key in hashes}
    elif isinstance(sha, dict):
        hashes = sha
    folder = run_folder(str(out), a, seed)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "result.json"), "w") as f:
        before, after = TRAIN_ACC
        eval_values = {"train_acc_initial": before, "train_acc": after, "train_rise": after - before, **eval_values}
        json.dump({"eval": eval_values, "wall_s": 30.0, "eval_problems": 1000, "experiment_sha256": hashes,
                   "policy_sha256": weights or _weights(a.task, a.policy), "fingerprints": fingerprints([a])}, f)
    with open(os.path.join(folder, "metrics.jsonl"), "w") as f:
        for row in train_rows or [{"step": 4 * i + 4, "reward": r, "grad_norm": 1.0} for i, r in enumerate(REWARDS)]:
            f.write(json.dumps(row) + "\n")


def _fake_pilot(out, name, passed=True, sha=None, gates=None, registered_seeds=None):
    """A pilot record of experiment `name` in `<out>/pilots/<id>.json`, as `trl_lite_lab.pilot.pilot` writes it."""
    from trl_lite_lab.design import AUDIT_MARGIN, PILOT_MARGIN
    from trl_lite_lab.experiments import experiment_sha256
    from trl_lite_lab.pilot import pilot_path

    experiment = EXPERIMENTS[name]
    record = {"id": experiment.id, "made": "2026-11-26T07:00:00Z", "experiment_sha256": sha or experiment_sha256(experiment),
              "fingerprints": fingerprints(experiment.arms.values()), "margin": {"audit": AUDIT_MARGIN, "runs": PILOT_MARGIN, "pilot": PILOT_MARGIN},
              "seeds": experiment.seed_list(pilot=True), "registered_seeds": registered_seeds or experiment.seeds,
              "gates": gates or [], "effects": {p.name: [0.01, 0.02] for p in experiment.primaries},
              "passed": passed}
    path = pilot_path(os.path.join(str(out), "pilots"), experiment)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(record, f)
    return record


@pytest.fixture
def t2_at_8_seeds(monkeypatch):
    """T2 as first designed, at 8 seeds (version 3 registers more: `designs/normalization_t2.py`'s SEEDS): the
    hand-worked values of the report tests are for 8 seeds (alone in the family, a sign-flip test on 8 seeds reaches
    2 / 2^8 = 0.0078 < 0.05)."""
    import dataclasses

    monkeypatch.setitem(EXPERIMENTS._entries, "2", dataclasses.replace(EXPERIMENTS["2"], seeds=8))


NONE, GROUP = "group/none mostly-easy", "group/group mostly-easy"  # T2's arms


def _fake_lab(out, accuracies, audit=None, initial=0.5, pilot=True, rewards=None, train_acc=None):
    """T2's two arms over 8 seeds (each run's held-out accuracy, its weight distance 2.0 and relative 0.01, and the
    training rewards `REWARDS`, or `rewards[label]`, and the training reward on fixed problems before and after,
    `TRAIN_ACC` or `train_acc[label]`), its initial policy's evaluation, an audit whose gates pass
    (unless `audit` says otherwise) and a passing pilot (unless `pilot` is False)."""
    from trl_lite_lab.experiments import engine_sha256

    experiment = EXPERIMENTS["2"]
    rewards = rewards or {}
    for seed, (none, group) in enumerate(accuracies):
        for label, acc in ((NONE, none), (GROUP, group)):
            rows = [{"step": 4 * i + 4, "reward": r, "grad_norm": 1.0}
                    for i, r in enumerate(rewards.get(label, REWARDS))]
            before, after = (train_acc or {}).get(label, TRAIN_ACC)
            _fake_run(out, experiment.arms[label], seed, {"acc": acc, "update_norm": 2.0, "update_rel": 0.01,
                                                          "train_acc_initial": before, "train_acc": after,
                                                          "train_rise": after - before}, train_rows=rows)
    # T2's audit gates read the mostly-easy mix (its pass rate, its share of zero-std groups of 8: `MIX_GATES[:2]`);
    # T1 and T3's the mostly-hard one's pass rate too
    measures = {"add/mostly-easy/pass": 0.9, "add/mostly-easy/zero_std@8": 0.62, "add/mostly-easy/zero_std@16": 0.45,
                "add/mostly-hard/pass": 0.3, "add/mostly-hard/zero_std@8": 0.1, "add/mostly-hard/zero_std@16": 0.05,
                "engine_sha256": engine_sha256(), **(audit or {})}
    os.makedirs(os.path.join(out, "initial"), exist_ok=True)
    with open(os.path.join(out, "initial", "add-carry-T0.6-1000.json"), "w") as f:
        json.dump({"acc": initial, "engine_sha256": engine_sha256(), "policy_sha256": _weights(),
                   "fingerprints": fingerprints(evaluations=[("add", "carry")])}, f)
    with open(os.path.join(out, "audit.json"), "w") as f:
        json.dump(measures, f)
    if pilot:
        _fake_pilot(out, "2")


@pytest.mark.usefixtures("t2_at_8_seeds")
def test_report_verdict_fields_and_holm(tmp_path):
    from trl_lite_lab.experiments import engine_sha256, experiment_sha256
    from trl_lite_lab.report import report

    # group/none beats group/group by 0.02 +- 0.003 on every seed: all 8 effects positive, so of the 2^8 sign patterns
    # only the observed one and its negation are as extreme: sign-flip p = 2 / 256 = 0.0078 < 0.05 (a family of 1)
    gains = [0.020, 0.022, 0.018, 0.021, 0.019, 0.020, 0.023, 0.017]
    _fake_lab(tmp_path, [(0.6 + g, 0.6) for g in gains])
    summary = report(["2"], str(tmp_path))
    (entry,) = summary["takeaways"]
    assert entry["verdict"] == "reproduced" and entry["id"] == "T2" and entry["registered"]
    (test,) = entry["tests"]
    assert test["p_value"] == 2 / 256 and entry["adjusted"] == 2 / 256
    assert entry["reads"].startswith("T2: reproduced: +0.020 [") and entry["reads"].endswith("Holm-adjusted p = 0.008")
    # what training did to each arm, descriptive: group/none's held-out accuracy is 0.6 + the mean gain 0.02; the
    # initial policy's 0.5; every fake run logs the rewards 0.4, 0.5, 0.5, 0.6 over its 4 generation batches (first
    # quarter 0.4, last 0.6), gradient norm 1.0, and a weight distance of 2.0
    arms = entry["arm_summary"]
    assert arms[NONE]["held_out_acc"] == pytest.approx(0.62) and arms[GROUP]["held_out_acc"] == 0.6
    assert arms[NONE]["initial_acc"] == 0.5
    assert arms[GROUP]["train_reward_first_quarter"] == pytest.approx(0.4)
    assert arms[GROUP]["train_reward_last_quarter"] == pytest.approx(0.6)
    assert arms[GROUP]["grad_norm_mean"] == 1.0 and arms[GROUP]["update_norm"] == 2.0
    assert entry["effect"] == pytest.approx(0.02) and entry["per_seed"] == pytest.approx(gains)
    assert entry["interval"][0] > 0 and entry["adjusted"] < 0.05 and entry["mde"] > 0
    # the update sizes, descriptive: every run's weight distance 2.0 and mean gradient norm 1.0
    assert entry["details"][f"weight distance {NONE}"]["mean"] == 2.0
    assert entry["details"][f"mean gradient norm {GROUP}"]["mean"] == 1.0
    # 2 audit gates (the mostly-easy mix), then 2 gain gates per arm (runs): group/none mean 0.62 - initial 0.5 =
    # +0.12 and its training reward's rise on the fixed problems 0.75 - 0.70 = +0.05; group/group +0.10 and +0.05
    assert [(g["stage"], g["kind"], g["passed"]) for g in entry["gates"]] == [
        ("audit", "the audit", True), ("audit", "the audit", True)] + [
        ("runs", "gain", True), ("runs", "training-reward rise", True)] * 2
    assert [g["value"] for g in entry["gates"]] == pytest.approx([0.9, 0.62, 0.12, 0.05, 0.10, 0.05])
    assert arms[GROUP]["train_acc_initial"] == pytest.approx(0.7) and arms[GROUP]["train_acc"] == pytest.approx(0.75)
    from trl_lite_lab.designs.normalization import MIX_GATES

    assert [g["threshold"] for g in entry["gates"]] == [g.threshold for g in MIX_GATES[:2]] + [0.03, 0.0, 0.03, 0.0]
    assert entry["design"] == "designs/normalization_t2.py"
    assert entry["experiment_sha256"] == experiment_sha256(EXPERIMENTS["2"])
    # Holm over the primary tests of the registered experiments: only T2 has a passing pilot here, so a family of 1
    assert summary["family_size"] == 1 and summary["tested"] == 1 and summary["engine_sha256"] == engine_sha256()
    assert entry["adjusted"] == pytest.approx(entry["tests"][0]["p_value"])
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["takeaways"][0]["verdict"] == "reproduced"
    text = (tmp_path / "summary.md").read_text()
    assert "Holm-adjusted p" in text and "`lab/trl_lite_lab/designs/normalization_t2.py`" in text
    assert "- pilot (seeds 1000, 1001, 1002; passed" in text


@pytest.mark.usefixtures("t2_at_8_seeds")
def test_report_family_is_every_registered_experiments_primary_tests(tmp_path):
    from trl_lite_lab.report import report

    gains = [0.020, 0.022, 0.018, 0.021, 0.019, 0.020, 0.023, 0.017]
    _fake_lab(tmp_path, [(0.6 + g, 0.6) for g in gains])
    # T3 (3 primary tests) registered too, though not in this report: the family is 1 + 3 = 4, the 3 at p = 1, so
    # Holm multiplies T2's raw p by 4; a failed pilot (T1) registers nothing
    _fake_pilot(tmp_path, "3")
    _fake_pilot(tmp_path, "1", passed=False)
    summary = report(["2"], str(tmp_path))
    (entry,) = summary["takeaways"]
    assert summary["family_size"] == 4 and summary["tested"] == 1
    assert entry["adjusted"] == pytest.approx(min(1.0, 4 * entry["tests"][0]["p_value"]))
    # 4 x 2 / 256 = 0.03125 < 0.05: still reproduced
    assert entry["adjusted"] == pytest.approx(0.03125) and entry["verdict"] == "reproduced"


@pytest.mark.usefixtures("t2_at_8_seeds")
def test_report_inconclusive_reads_the_interval_and_the_power(tmp_path):
    from trl_lite_lab.report import report

    noise = [0.01, -0.012, 0.004, -0.006, 0.009, -0.011, 0.002, 0.005]
    _fake_lab(tmp_path, [(0.6 + g, 0.6) for g in noise])
    (entry,) = report(["2"], str(tmp_path))["takeaways"]
    assert entry["verdict"] == "inconclusive" and entry["mde"] > abs(entry["effect"])
    low, high = entry["interval"]
    assert low < 0 < high and f"[{low:+.3f}, {high:+.3f}]" in entry["reads"]
    assert "a power statement, not a bound on the effect" in entry["reads"]


@pytest.mark.usefixtures("t2_at_8_seeds")
def test_report_untestable_when_an_audit_gate_fails(tmp_path):
    from trl_lite_lab.report import report

    _fake_lab(tmp_path, [(0.6, 0.6)] * 8, audit={"add/mostly-easy/zero_std@8": 0.31})
    (entry,) = report(["2"], str(tmp_path))["takeaways"]
    assert entry["verdict"] == "untestable"
    assert entry["reads"] == ("untestable (the audit): mostly-easy mix: share of zero-std groups of 8 = 0.310, "
                              "needs >= 0.5")
    assert [g["passed"] for g in entry["gates"]] == [True, False]  # the audit's gates only: the arms were never run
    assert json.loads((tmp_path / "summary.json").read_text())["tested"] == 0


@pytest.mark.usefixtures("t2_at_8_seeds")
def test_report_untestable_when_an_arm_did_not_gain(tmp_path):
    from trl_lite_lab.report import report

    # group/none: 0.45 on every seed against an initial 0.5 -> it FELL by 0.05, which an absolute gate
    # (|-0.05| >= 0.03) would have passed; its training reward fell too, 0.70 -> 0.50 on the fixed training problems:
    # -0.2. group/group 0.6 -> +0.1, its training reward rising 0.70 -> 0.75: both its gates pass
    _fake_lab(tmp_path, [(0.45, 0.6)] * 8, train_acc={NONE: (0.7, 0.5)})
    (entry,) = report(["2"], str(tmp_path))["takeaways"]
    assert entry["verdict"] == "untestable"
    assert entry["reads"] == (
        f"untestable (gain, training-reward rise): {NONE}: held-out accuracy, mean over seeds, minus the initial "
        f"policy's (a gain) = -0.050, needs >= 0.03; {NONE}: training reward (accuracy on 400 fixed training "
        "problems), trained minus initial, mean over seeds (a rise) = -0.200, needs >= 0.0")
    assert [g["passed"] for g in entry["gates"]] == [True, True, False, False, True, True]
    # the effect is shown, not tested: 0.45 - 0.6 = -0.15 on every seed
    (test,) = entry["tests"]
    assert test["verdict"] is None and test["mean"] == pytest.approx(-0.15)
    assert json.loads((tmp_path / "summary.json").read_text())["tested"] == 0


@pytest.mark.usefixtures("t2_at_8_seeds")
def test_report_untestable_when_an_arms_training_reward_did_not_rise(tmp_path):
    from trl_lite_lab.report import report

    # both arms gain held-out accuracy (+0.12, +0.10), but group/group's training reward, on the fixed training
    # problems, falls on every seed: 0.72 -> 0.70, -0.02 < 0.0. Its generation batches' rewards rise (0.4 -> 0.6, the
    # default logs): version 3.0's gate read those; version 3.1's reads the fixed problems
    _fake_lab(tmp_path, [(0.62, 0.6)] * 8, train_acc={GROUP: (0.72, 0.70)})
    (entry,) = report(["2"], str(tmp_path))["takeaways"]
    assert entry["verdict"] == "untestable"
    assert entry["reads"].startswith(f"untestable (training-reward rise): {GROUP}: training reward")
    assert entry["reads"].endswith("(a rise) = -0.020, needs >= 0.0") and NONE not in entry["reads"]
    assert [g["value"] for g in entry["gates"][2:]] == pytest.approx([0.12, 0.05, 0.10, -0.02])


@pytest.mark.usefixtures("t2_at_8_seeds")
def test_report_untestable_without_a_pilot_or_with_a_stale_or_negative_one(tmp_path):
    from trl_lite_lab.report import report

    gains = [0.020, 0.022, 0.018, 0.021, 0.019, 0.020, 0.023, 0.017]
    _fake_lab(tmp_path, [(0.6 + g, 0.6) for g in gains], pilot=False)
    (entry,) = report(["2"], str(tmp_path))["takeaways"]
    assert entry["verdict"] == "untestable" and entry["reads"].startswith("untestable (no pilot)")
    assert not entry["tests"] and not entry["gates"]  # never run: nothing read
    _fake_pilot(tmp_path, "2", sha="0" * 64)  # made under other definitions: registers nothing
    (entry,) = report(["2"], str(tmp_path))["takeaways"]
    assert entry["reads"].startswith("untestable (no pilot)") and entry["pilot"] is None
    failed = {"name": "T2: power", "stage": "pilot", "kind": "power", "value": 0.8, "threshold": 0.5,
              "at_most": True, "passed": False, "passed_with_margin": False}
    _fake_pilot(tmp_path, "2", passed=False, gates=[failed], registered_seeds=16)  # a pilot planned for 16 seeds
    summary = report(["2"], str(tmp_path))
    (entry,) = summary["takeaways"]
    assert entry["reads"] == ("untestable (negative pilot: power): T2: power = 0.800 on the pilot, needs <= 0.5 "
                              "with a margin")
    assert summary["family_size"] == 0 and summary["tested"] == 0
    # what a failed power gate would take: its value scales as detectable_effect(1, n, 16) / detectable_effect(1, 16,
    # 16) (the family of every designed test, 16; the sign test's, version 3.1); with the margin it must reach
    # 0.5 * (1 - 0.25) = 0.375, i.e. the ratio 0.375 / 0.8 = 0.469: 45 seeds (0.8 x ratio = 0.3698; 44 give 0.3958)
    from trl_lite_lab.experiments import family_size
    from trl_lite_lab.report import seeds_needed
    from trl_lite_lab.stats import detectable_effect

    def scaled(n):
        return 0.8 * detectable_effect(1.0, n, 16) / detectable_effect(1.0, 16, 16)

    assert family_size() == 16 and seeds_needed(failed, entry["pilot"]) == 45
    assert scaled(45) == pytest.approx(0.3698, abs=1e-4) and scaled(44) == pytest.approx(0.3958, abs=1e-4)
    assert "what it would take: 45 seeds per arm" in (tmp_path / "summary.md").read_text()
    assert json.loads((tmp_path / "summary.json").read_text())["takeaways"][0]["seeds_needed"] == {"T2: power": 45}
    # a pilot planned for 8 seeds in the family of 16 could detect nothing (2 / 2^8 = 0.0078 >= 0.05 / 16): its
    # power gate's value has no finite scale to extrapolate from
    assert seeds_needed(failed, {**entry["pilot"], "registered_seeds": 8}) is None
    # the README's row says which gate failed, its value and threshold
    from trl_lite_lab.report import readme_table

    assert readme_table(summary).splitlines()[2].endswith(
        "| untestable | pilot, power 0.800 > 0.5 |")
    # a value past the threshold but not by the margin (0.48 <= 0.5, not <= 0.375) is not printed as failing it
    from trl_lite_lab.report import _failed_gate

    near = {**entry, "pilot": {**entry["pilot"], "gates": [{**failed, "value": 0.48}]}}
    assert _failed_gate(near) == "pilot, power 0.480 not past 0.5 by the margin"
    # a gain gate says which of an arm's two failed (`design.gain_gates`): the held-out gain or the training reward's
    # rise; 0.030 is past 0.03 but not by the margin (0.03 x 1.25 = 0.0375); -0.007 is below 0 outright (version
    # 3.1's gate has its own kind; version 3.0's records gave it kind "gain", told apart by name)
    for name, kind, value, said in (
            ("base seq: held-out accuracy, mean over seeds, minus the initial policy's (a gain)", "gain", 0.030,
             "pilot, held-out gain 0.030 not past 0.03 by the margin"),
            ("base seq: training reward (accuracy on 400 fixed training problems), trained minus initial, mean over "
             "seeds (a rise)", "training-reward rise", -0.007, "pilot, training-reward rise -0.007 < 0.0"),
            ("base seq: training reward, last quarter of the generation batches minus the first, mean over seeds (a "
             "rise)", "gain", -0.007, "pilot, training-reward rise -0.007 < 0.0")):
        gate = {"name": name, "stage": "runs", "kind": kind, "value": value, "threshold": 0.03 if value > 0 else 0.0,
                "at_most": False, "passed_with_margin": False}
        assert _failed_gate({**entry, "pilot": {**entry["pilot"], "gates": [gate]}}) == said
    # a tested row: a directional test's seeds above 0 (as its sign test reads them: 1e-13 is a tie, neither), its
    # mean and 95% interval; an equivalence test's mean, 90% interval and margin
    tested = {"takeaways": [{"id": "T8", "title": "at long lengths, no gain", "verdict": "inconclusive", "tests": [
        {"name": "T8 no gain", "mean": -0.009, "interval": [-0.032, 0.014], "margin": 0.03,
         "per_seed": [-0.01, -0.008]},
        {"name": "T8 loops", "mean": 0.008, "interval": [-0.041, 0.056], "per_seed": [0.02, 1e-13, -0.01, 0.03]}]}]}
    assert readme_table(tested).splitlines()[2] == (
        "| T8 at long lengths | inconclusive | no gain -0.009 [-0.032, +0.014] (90%, margin 0.03); "
        "loops 2/4, +0.008 [-0.041, +0.056] |")
    assert readme_table(tested).splitlines()[0] == "| experiment | verdict | seeds > 0, mean [95%] |"


@pytest.mark.usefixtures("t2_at_8_seeds")
def test_report_refuses_missing_metrics_runs_and_mixed_definitions(tmp_path):
    from trl_lite_lab.experiments import engine_sha256, experiment_sha256
    from trl_lite_lab.report import report
    from trl_lite_lab.results import DefinitionMismatch, MissingRun, run_folder
    from trl_lite_lab.stats import MetricError

    _fake_lab(tmp_path, [(0.61, 0.6)] * 8)
    experiment = EXPERIMENTS["2"]
    _fake_run(tmp_path, experiment.arms[NONE], 3, {"accuracy": 0.6})  # a typo in the metric's key
    with pytest.raises(KeyError):
        report(["2"], str(tmp_path))
    # a NaN accuracy: the gain gate's mean over seeds leaves it out, the test refuses it
    _fake_run(tmp_path, experiment.arms[NONE], 3, {"acc": float("nan")})
    with pytest.raises(MetricError, match="seed 3"):
        report(["2"], str(tmp_path))
    _fake_run(tmp_path, experiment.arms[NONE], 3, {"acc": 0.61}, sha="0" * 64)
    with pytest.raises(DefinitionMismatch, match=r"experiment_sha256\['T2'\]='0{64}'.*different definitions"):
        report(["2"], str(tmp_path))
    # made for another experiment only: it does not count for T2
    _fake_run(tmp_path, experiment.arms[NONE], 3, {"acc": 0.61},
              sha={"T1": experiment_sha256(EXPERIMENTS["1"])})
    with pytest.raises(DefinitionMismatch, match=r"experiment_sha256\['T2'\]=None"):
        report(["2"], str(tmp_path))
    _fake_run(tmp_path, experiment.arms[NONE], 3, {"acc": 0.61}, weights="1" * 64)  # a rebuilt policy
    with pytest.raises(DefinitionMismatch, match="other weights"):
        report(["2"], str(tmp_path))
    # made by a trl-lite that computed otherwise for this arm: its recorded fingerprint differs from today's
    a = experiment.arms[NONE]
    _fake_run(tmp_path, a, 3, {"acc": 0.61})
    path = os.path.join(run_folder(str(tmp_path), a, 3), "result.json")
    with open(path) as f:
        made = json.load(f)
    with open(path, "w") as f:
        json.dump({**made, "fingerprints": {"arms": {a.name: {"arm": "else"}}, "evaluations": {}}}, f)
    with pytest.raises(DefinitionMismatch, match=rf"computed otherwise.*arm {re.escape(a.name)}: arm: "
                                                 r"\"else\" -> .*evaluation add/carry: not recorded"):
        report(["2"], str(tmp_path))
    _fake_run(tmp_path, experiment.arms[NONE], 3, {"acc": 0.61})
    initial = tmp_path / "initial" / "add-carry-T0.6-1000.json"
    initial.write_text(json.dumps({"acc": 0.5, "engine_sha256": "2" * 64, "policy_sha256": _weights()}))
    with pytest.raises(DefinitionMismatch, match=r"initial evaluation of add-carry was made under engine_sha256="):
        report(["2"], str(tmp_path))
    initial.write_text(json.dumps({"acc": 0.5, "engine_sha256": engine_sha256(), "policy_sha256": _weights(),
                                   "fingerprints": fingerprints(evaluations=[("add", "carry")])}))
    audit = json.loads((tmp_path / "audit.json").read_text())
    (tmp_path / "audit.json").write_text(json.dumps({**audit, "engine_sha256": "3" * 64}))
    with pytest.raises(DefinitionMismatch, match="the audit in .* engine_sha256='3{64}'"):
        report(["2"], str(tmp_path))
    (tmp_path / "audit.json").write_text(json.dumps(audit))
    import shutil

    shutil.rmtree(run_folder(str(tmp_path), experiment.arms[NONE], 3))
    with pytest.raises(MissingRun, match="seed 3 has not finished"):
        report(["2"], str(tmp_path))


@pytest.mark.usefixtures("t2_at_8_seeds")
def test_report_carries_an_experiment_from_an_earlier_summary_with_its_hash(tmp_path):
    """An experiment whose runs are not here is carried from an earlier summary.json made under the same hash: the
    same per-seed effects give the same tests, and Holm is made again over the current family."""
    import shutil

    from trl_lite_lab.report import report
    from trl_lite_lab.results import MissingRun

    first, second = tmp_path / "first", tmp_path / "second"
    gains = [0.020, 0.022, 0.018, 0.021, 0.019, 0.020, 0.023, 0.017]
    _fake_lab(first, [(0.6 + g, 0.6) for g in gains])
    made = report(["2"], str(first))["takeaways"][0]
    # the second lab holds the audit and the pilot, not the runs
    second.mkdir()
    shutil.copy(first / "audit.json", second / "audit.json")
    shutil.copytree(first / "pilots", second / "pilots")
    with pytest.raises(MissingRun):
        report(["2"], str(second))
    carried = report(["2"], str(second), carry=str(first / "summary.json"))["takeaways"][0]
    assert "carried" not in made and carried["carried"]["file"] == str(first / "summary.json")
    assert carried["carried"]["sha256"] == hashlib.sha256((first / "summary.json").read_bytes()).hexdigest()
    for key in ("verdict", "effect", "interval", "per_seed", "adjusted", "mde", "gates", "details", "arm_summary",
                "cost_min", "figure", "reads"):
        assert json.dumps(carried[key]) == json.dumps(made[key]), key  # as text: NaN (no spread) equals itself
    assert (second / "T2.png").exists()  # the figure is copied from beside the earlier summary
    assert "Carried: the per-seed effects" in (second / "summary.md").read_text()
    # a second registered experiment (T1, 1 primary test) joins the family: T2's raw p is unchanged, its Holm-adjusted
    # p is min(1, 2 x raw) (T1 untested enters at p = 1, so T2's is the smallest of 2)
    _fake_pilot(second, "1")
    wider = report(["2"], str(second), carry=str(first / "summary.json"))
    assert wider["family_size"] == 2
    assert wider["takeaways"][0]["adjusted"] == pytest.approx(min(1.0, 2 * made["tests"][0]["p_value"]))
    # carried only under the same engine, seeds and definitions: another seed count carries nothing
    with pytest.raises(MissingRun):
        report(["2"], str(second), seeds=4, carry=str(first / "summary.json"))
    stale = json.loads((first / "summary.json").read_text())
    stale["takeaways"][0]["experiment_sha256"] = "0" * 64
    (tmp_path / "stale.json").write_text(json.dumps(stale))
    with pytest.raises(MissingRun):
        report(["2"], str(second), carry=str(tmp_path / "stale.json"))
    stale["takeaways"][0]["experiment_sha256"], stale["engine_sha256"] = made["experiment_sha256"], "1" * 64
    (tmp_path / "stale.json").write_text(json.dumps(stale))
    with pytest.raises(MissingRun):
        report(["2"], str(second), carry=str(tmp_path / "stale.json"))
    # nor from another pilot (a pilot made again, here with other registered seeds) ...
    _fake_pilot(second, "2", registered_seeds=9)
    with pytest.raises(MissingRun):
        report(["2"], str(second), carry=str(first / "summary.json"))
    _fake_pilot(second, "2")
    assert report(["2"], str(second), carry=str(first / "summary.json"))["takeaways"][0]["carried"]
    # ... nor where an audit gate reads otherwise now (a rebuilt policy)
    audit = json.loads((second / "audit.json").read_text())
    (second / "audit.json").write_text(json.dumps({**audit, "add/mostly-easy/pass": 0.8}))
    with pytest.raises(MissingRun):
        report(["2"], str(second), carry=str(first / "summary.json"))
    (second / "audit.json").write_text(json.dumps(audit))
    # where any run is here, the runs are read (a missing one is an error), never carried
    from trl_lite_lab.results import run_folder

    shutil.copytree(run_folder(str(first), EXPERIMENTS["2"].arms[NONE], 0),
                    run_folder(str(second), EXPERIMENTS["2"].arms[NONE], 0))
    with pytest.raises(MissingRun):
        report(["2"], str(second), carry=str(first / "summary.json"))
    assert "carried" not in report(["2"], str(first), carry=str(first / "summary.json"))["takeaways"][0]


def test_the_report_never_trains():
    """Importing the report (and the results and verdicts it reads through) loads neither the runner, the trainer nor
    torch; the results, verdicts and statistics do not import the runner or the audit at all, lazily or not, except
    through the fingerprint: checking that a result still holds runs each of its arms for a few steps (in a temporary
    folder; it writes no result), the one place the report trains."""
    from trl_lite_lab import provenance

    code = ("import sys, trl_lite_lab.report; "
            "print(sorted(m for m in ('trl_lite_lab.runner', 'trl_lite.trainer', 'trl_lite_lab.audit', 'torch') "
            "if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"

    def closure(name):
        seen, todo = set(), list(provenance.imports(name))
        while todo:
            module = todo.pop()
            if module not in seen and module != "fingerprint":
                seen.add(module)
                todo.extend(provenance.imports(module))
        return seen

    assert "training" in provenance.imports("fingerprint")
    for module in ("results", "verdicts", "stats", "design", "experiments", "carry"):
        assert not {"runner", "audit", "pilot"} & closure(module), f"lab/trl_lite_lab/{module}.py may start work"


def test_lab_rejects_bad_input(tmp_path):
    from trl_lite_lab.runner import run

    with pytest.raises(ValueError, match=r"names \['9'\]; expected among"):
        run(["9"], str(tmp_path))
    with pytest.raises(ValueError, match="seeds=1 is not supported"):
        run(["1"], str(tmp_path), seeds=1)
    with pytest.raises(ValueError, match="shard=2/2 is not supported"):
        run(["1"], str(tmp_path), seeds=2, shard=(2, 2))
    with pytest.raises(ValueError, match=r"experiments \['1'\] are not registered"):
        run(["1"], str(tmp_path), shard=(1, 2))  # unregistered: refused before any run
    with pytest.raises(ValueError, match=r"experiments \['1'\] are not registered"):
        run(["1"], str(tmp_path), seeds=2)  # a quick try with fewer seeds too


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
    # the recheck fork: every step followed by `chk` and the step again (recheck=1), or never (recheck=0, above)
    assert write_completion([7, 8], "careful", rng, recheck=1.0)[0] == "chkb8=15;chkb8=15;so\\boxed{15}"
    tokenizer = sumk_tokenizer()
    for _ in range(20):  # the long format ends, 80-120 tokens (one per character, \boxed one), steps intact
        text, ends = write_completion(nums, "long", rng)
        assert ends and 80 <= len(tokenizer(text, add_special_tokens=False)["input_ids"]) <= 120
        assert text.replace(".", "") == "b8=15;c3=18;d9=27;\\boxed{27}"
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
    return subprocess.run([sys.executable, "-m", "trl_lite_lab", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=900)


@pytest.mark.real_fingerprints
def test_lab_cli_tiny_pilot_run_report_and_resume(tmp_path):
    """T1 (its audit gates pass) and T5 (its audit gate fails: a recheck link of 0.1 written into the audit) through
    the CLI: T5's pilot fails on its audit gate without running anything (a negative pilot); an unregistered T1 is
    refused a run, a quick try (`--seeds 2`) included; once registered it runs as a quick try (2 steps, 8 held-out
    problems), each run naming its pilot; T5 is never run; the report reads T1 only once it has a passing pilot; a
    second run repeats nothing. The CLI's processes compute the real fingerprints (of T1's and T5's arms), so this
    test's hand-made audit and pilot record them too."""
    from trl_lite_lab.experiments import engine_sha256, experiment_sha256
    from trl_lite_lab.runner import arm_hashes

    out = tmp_path / "lab"
    listed = _lab("list", cwd=ROOT)
    assert listed.returncode == 0 and listed.stdout.count("the paper:") == len(EXPERIMENTS.names())
    out.mkdir()
    (out / "audit.json").write_text(json.dumps({
        "engine_sha256": engine_sha256(), "weights/sumk/recheck": _weights("sumk", "recheck"),
        "fingerprints/sumk/recheck": fingerprints(evaluations=[("sumk", "recheck")]),
        "sumk/recheck/acc": 0.5, "sumk/recheck/connective_link": 0.1}))
    piloted = _lab("pilot", "5", "--output-dir", str(out), cwd=ROOT)
    assert piloted.returncode == 0, piloted.stderr[-3000:]
    assert "T5: pilot FAILED: recheck policy: accuracy after `chk` followed every dropped carry" in piloted.stderr
    record = json.loads((out / "pilots" / "T5.json").read_text())
    assert record["passed"] is False and "not_run" in record and record["effects"] == {}
    assert record["experiment_sha256"] == experiment_sha256(EXPERIMENTS["5"]) and record["seeds"] == [1000, 1001]
    assert record["made"].endswith("Z") and record["product"]["versions"]["trl"]  # when, and with what
    assert changed(record["fingerprints"], EXPERIMENTS["5"].arms.values()) == []  # what trl-lite computed for it
    (gate,) = record["gates"]  # the audit gate only: the runs gates were never reached
    assert (gate["value"], gate["kind"], gate["passed_with_margin"]) == (0.1, "the connective's credit", False)

    tiny = ["--steps", "2", "--eval-problems", "8", "--output-dir", str(out)]
    for seeds in ([], ["--seeds", "2"]):  # T1 has no pilot: not registered, so not run, not even as a quick try
        refused = _lab("run", "1", *seeds, *tiny, cwd=ROOT)
        assert refused.returncode != 0 and "experiments ['1'] are not registered" in refused.stderr
    skipped = _lab("run", "5", "--seeds", "2", *tiny, cwd=ROOT)  # its audit gate failed: never run
    assert skipped.returncode == 0 and "T5: an audit gate failed, not run" in skipped.stderr
    assert not (out / "runs").exists()

    unregistered = _lab("report", "1,5", "--seeds", "2", "--output-dir", str(out), cwd=ROOT)
    assert unregistered.returncode == 0, unregistered.stderr[-3000:]
    t1, t5 = json.loads((out / "summary.json").read_text())["takeaways"]
    assert t1["reads"].startswith("untestable (no pilot)") and not t1["tests"]
    assert t1["unregistered_because"] == [f"no pilot ({out / 'pilots' / 'T1.json'})"]
    made = _fake_pilot(out, "1")["made"]
    result = _lab("run", "1", "--seeds", "2", *tiny, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    reported = _lab("report", "1,5", "--seeds", "2", "--output-dir", str(out), cwd=ROOT)
    assert reported.returncode == 0, reported.stderr[-3000:]
    assert "| T1: group-level normalization" in reported.stdout and "**untestable**" in reported.stdout
    summary = json.loads((out / "summary.json").read_text())
    t1, t5 = summary["takeaways"]
    # 2 steps may not gain 0.03 held-out accuracy: then T1 is untestable (gain), its effects shown untested
    assert t1["verdict"] in ("inconclusive", "reproduced", "not reproduced") or t1["reads"].startswith(
        ("untestable (gain", "untestable (training-reward rise"))
    assert len(t1["per_seed"]) == 2 and [g["kind"] for g in t1["gates"]] == ["the audit"] * 3 + [
        "gain", "training-reward rise"] * 4
    assert t5["reads"].startswith("untestable (negative pilot: the connective's credit): ")
    assert summary["family_size"] == 1 and summary["seeds_override"] == 2  # T1 registered, T5 not
    assert summary["tested"] == (1 if t1["verdict"] != "untestable" else 0)
    assert summary["engine_sha256"] == engine_sha256()
    assert (out / "T1.png").stat().st_size > 10_000 and not (out / "T5.png").exists()
    a = EXPERIMENTS["1"].arms["group/group mostly-hard"]
    run = out / "runs" / a.name / "seed1"
    result_json = json.loads((run / "result.json").read_text())
    assert result_json["steps"] == 2 and 0 <= result_json["eval"]["acc"] <= 1
    # how far the 2 steps moved the weights (version 3's update size): measured against the initial policy's
    assert result_json["eval"]["update_norm"] > 0 and 0 < result_json["eval"]["update_rel"] < 1
    # the arm is T1's and T3's: its run records both experiments' hashes
    assert result_json["experiment_sha256"] == arm_hashes(a) and sorted(result_json["experiment_sha256"]) == [
        "T1", "T3"]
    # the pilot it ran under (T1's: T3 was not run), what trl-lite computed for the arm, and what it was made with
    assert result_json["pilots"] == {"T1": made} and changed(result_json["fingerprints"], [a]) == []
    assert result_json["product"]["versions"]["torch"] == torch.__version__
    initial = json.loads((out / "initial" / "add-carry-T0.6-8.json").read_text())
    assert initial["engine_sha256"] == engine_sha256()
    logged = {key for line in (run / "metrics.jsonl").read_text().splitlines() for key in json.loads(line)}
    # what LabTrainer measures through the trainer's public hooks (on_generation_batch, on_loss_tokens)
    assert {"lab/top5_abs_adv_share", "lab/abs_adv_mean", "lab/pos_adv_tokens", "lab/ratio_band_tokens",
            "lab/eligible/digit", "lab/strata/other/0.0-0.2/eligible",
            "lab/strata/connective/0.6-1.0/clipped"} <= logged
    stamp = (run / "result.json").stat().st_mtime
    again = _lab("run", "1", "--seeds", "2", *tiny, cwd=ROOT)
    assert again.returncode == 0 and (run / "result.json").stat().st_mtime == stamp  # finished runs are kept
    _fake_pilot(out, "3")  # T3 registered (its audit gates are T1's) but never run
    missing = _lab("report", "3", "--seeds", "2", "--output-dir", str(out), cwd=ROOT)
    assert missing.returncode == 1 and "has not finished" in missing.stderr and "Traceback" not in missing.stderr


def test_shipped_lab_policies():
    """The SUM-k policies are small, and differ as built: the base-like ones mix formats, the aligned-like ones keep
    one (the connective one its careful format), measured on 100 held-out problems x 2 samples."""
    import glob

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trl_lite_lab.measure import sample_completions
    from trl_lite.tasks.sumk import sumk_dataset
    from trl_lite_lab.design import policy_dir

    data = sumk_dataset(100, split="test", seed=0)
    formats = {}
    for kind in ("base", "aligned", "fork", "connective", "long"):
        path = policy_dir("sumk", kind)
        assert sum(os.path.getsize(f) for f in glob.glob(os.path.join(path, "*"))) < 20 * 2**20  # under 20 MB
        model, tokenizer = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
        groups = sample_completions(model, tokenizer, list(data["prompt"]), samples=2, max_new_tokens=LOOSE)
        seen = [completion_format(tokenizer.decode(ids), not ended) for group in groups for ids, ended in group]
        formats[kind] = {f: seen.count(f) / len(seen) for f in set(seen)}
    assert formats["aligned"].get("step", 0) > 0.95  # one clean format
    assert sum(share >= 0.03 for share in formats["base"].values()) >= 3  # direct, step, careful/filler/...
    assert formats["base"].get("direct", 0) > 0.2
    assert formats["fork"].get("step", 0) > 0.95 and formats["connective"].get("careful", 0) > 0.9
    assert sum(share >= 0.03 for share in formats["long"].values()) >= 3
    with pytest.raises(ValueError, match=r"\(task, policy\)=\('sumk', 'instruct'\) names no lab policy; known: "):
        policy_dir("sumk", "instruct")


def test_teacher_forced_token_measures_match_one_unpadded_forward():
    """`token_measures` (and `token_entropies`, read from it) batches completions of different lengths (one empty)
    with left padding; each value must equal the one from a forward pass over that sequence alone."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trl_lite_lab.measure import token_entropies, token_measures
    from trl_lite.tasks.sumk import sumk_dataset
    from trl_lite_lab.design import policy_dir

    path = policy_dir("sumk", "base")
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
    # 8 held-out problems: every measure of the audit runs, for T1-T3 (ADD) and T5 (the recheck SUM-k policy)
    from trl_lite_lab.audit import audit, failed_audit_gates
    from trl_lite_lab.experiments import engine_sha256

    out = audit(str(tmp_path), ["1", "5"], progress=False, eval_problems=8)
    assert out["engine_sha256"] == engine_sha256()
    for mix in ("easy", "hard", "mostly-easy", "mostly-hard"):
        assert 0 <= out[f"add/{mix}/pass"] <= 1 and 0 <= out[f"add/{mix}/zero_std@16"] <= out[f"add/{mix}/zero_std@8"]
    # by a feature of the problem: the carry-habit policy gets the easy mix right, drops the hard mix's carry; the
    # version 3 mixes hold both kinds, three to one (committed audit: 0.959, 0.751, 0.339, 0.133)
    assert out["add/easy/pass"] > 0.8 > 0.35 > out["add/hard/pass"]
    assert out["add/easy/pass"] > out["add/mostly-easy/pass"] > out["add/mostly-hard/pass"] > out["add/hard/pass"]
    assert out["sumk/recheck/truncated_n"] <= 32 and 0 <= out["sumk/recheck/long_wrong_share"] <= 1
    for key in ("trunc_share@tight", "trunc_share@long", "would_be_correct_share@tight"):
        value = out[f"sumk/recheck/{key}"]
        assert math.isnan(value) or 0 <= value <= 1  # NaN where nothing was cut
    assert out["sumk/recheck/trunc_share@long"] <= out["sumk/recheck/trunc_share@tight"]  # 124 tokens cut less
    assert "sumk/recheck/recheck_link" in out and "sumk/recheck/connective_link" in out
    assert "sumk/fork/acc" not in out  # only what the experiments asked for
    assert failed_audit_gates(EXPERIMENTS["1"], out) == []
    credit = EXPERIMENTS["5"].gates[0]
    assert [g for g, _ in failed_audit_gates(EXPERIMENTS["5"], out)] == (
        [] if credit.passes(out["sumk/recheck/connective_link"]) else [credit])
    text = (tmp_path / "audit.md").read_text()
    assert "## Audit gates" in text and "| T5 |" in text
    again = audit(str(tmp_path), ["1"])  # measured once, then read (NaN != NaN: compare as JSON)
    assert json.dumps(again, sort_keys=True) == json.dumps(out, sort_keys=True)


def test_readme_and_docs_lab_tables_match_the_committed_summary():
    """The verdicts quoted in README.md and docs/lab.md are the ones the report wrote into lab/results/summary.json."""
    import re

    with open(os.path.join(ROOT, "lab", "results", "summary.json")) as f:
        summary = json.load(f)
    # the hash of what the summary was made under (`preregistration_sha256` before the per-experiment hashes)
    assert summary.get("engine_sha256") or summary.get("preregistration_sha256")
    # every experiment, but one whose registered runs are under way (T3 since 2026-11-27): its committed pilot passed
    # under its current definitions (its fingerprints: test_lab_claims.py and test_lab_fingerprint.py)
    from trl_lite_lab.provenance import experiment_sha256

    reported = {entry["id"] for entry in summary["takeaways"]}
    for name in EXPERIMENTS.names():
        if EXPERIMENTS[name].id not in reported:
            with open(os.path.join(ROOT, "lab", "results", "pilots", f"{EXPERIMENTS[name].id}.json")) as f:
                pilot = json.load(f)
            assert pilot["passed"] and pilot["experiment_sha256"] == experiment_sha256(EXPERIMENTS[name]), name
    verdicts = {entry["id"]: entry["verdict"] for entry in summary["takeaways"]}
    for doc in ("README.md", os.path.join("docs", "lab.md")):
        text = open(os.path.join(ROOT, doc)).read()
        # the verdict cell, bold or not (the README's table dropped the bold on 2026-11-29 to stay under 10 KiB)
        row = r"^\| (T\d|clip-scaling|headline) [^|]*\| (?:\*\*)?([a-z ]+?)(?:\*\*)? \|"
        quoted = dict(re.findall(row, text, flags=re.M))
        assert quoted == verdicts, doc


def test_a_pilot_trl_lite_no_longer_computes_alike_stops_the_report(tmp_path, t2_at_8_seeds):
    # T2's runs and pilot are here, but its pilot's recorded fingerprint of one arm is not what trl-lite computes
    # now: the report stops, naming T2, the arm and both values, rather than calling T2 unregistered (which would also
    # shrink the Holm family of the others)
    from trl_lite_lab.report import report
    from trl_lite_lab.results import DefinitionMismatch

    _fake_lab(tmp_path, [(0.62, 0.6)] * 8)
    path = tmp_path / "pilots" / "T2.json"
    record = json.loads(path.read_text())
    a = EXPERIMENTS["2"].arms[NONE]
    record["fingerprints"]["arms"][a.name] = {"arm": "else"}
    path.write_text(json.dumps(record))
    with pytest.raises(DefinitionMismatch, match=rf"the results of T2 \(their pilots in .*\) no longer hold: .*pilot "
                                                 rf"and run them again.*\n  T2: arm {re.escape(a.name)}: arm: \"else\""):
        report(["2"], str(tmp_path))
    assert not (tmp_path / "summary.json").exists()
