"""The lab's design pieces (lab/trl_lite_lab/design.py, designs/, pilot.py, provenance.py, verdicts.py): the recheck
reading of SUM-k completions, T5's matched comparison, gain and power gates, the pilot's margin and registration,
the per-experiment hashes over the import closure, and the reasons an experiment is untestable. Hand-made inputs,
the arithmetic in comments; nothing here trains."""

import hashlib
import json
import math
import os
import random
import re

import pytest

from trl_lite_lab import provenance
from trl_lite_lab.design import (
    AUDIT_MARGIN,
    GAIN,
    PILOT_MARGIN,
    PILOT_SEED,
    REWARD_RISE,
    Gate,
    gain_gates,
    gained,
    mean_gain,
    power_ratio,
    reward_rise,
)
from trl_lite_lab.experiments import (
    EXPERIMENTS,
    engine_sha256,
    experiment_sha256,
    family_size,
)
from trl_lite_lab.fingerprint import fingerprints
from trl_lite_lab.stats import detectable_effect, mde
from trl_lite_lab.sumk import connective_after_drops, recheck_outcome, write_completion

PROBLEM = "a7+b8+c3+d9"  # 7 + 8 = 15 (carries), + 3 = 18 (no carry), + 9 = 27 (carries)


################
# SUM-k: how a scratchpad handled its dropped carries
################
def test_recheck_outcome_by_hand():
    # b8 written 5 (15 - 10: the carry dropped), then `chk` and b8 written right (15): fixed; c3, d9 right
    assert recheck_outcome("chkb8=5;chkb8=15;thenc3=18;thend9=27;so\\boxed{27}", PROBLEM) == "fixed"
    # b8 dropped and left alone: 5 + 3 = 8 (no carry, right), 8 + 9 = 17 (a carry, written right): kept
    assert recheck_outcome("chkb8=5;thenc3=8;thend9=17;so\\boxed{17}", PROBLEM) == "kept"
    # no step dropped a carry: None
    assert recheck_outcome("chkb8=15;thenc3=18;thend9=27;so\\boxed{27}", PROBLEM) is None
    assert recheck_outcome("\\boxed{27}", PROBLEM) is None
    # a right step written again (`chk` after a right step) is skipped, not read as a step on top of 15
    assert recheck_outcome("chkb8=15;chkb8=15;thenc3=18;thend9=27;so\\boxed{27}", PROBLEM) is None
    # ... and the steps after it are read from the right total: d9 written 17 = 27 - 10 is a drop, then fixed
    assert recheck_outcome("chkb8=15;chkb8=15;thenc3=18;thend9=17;chkd9=27;so\\boxed{27}", PROBLEM) == "fixed"
    # two drops, only the first fixed: kept (every drop must be fixed)
    assert recheck_outcome("chkb8=5;chkb8=15;thenc3=18;thend9=17;so\\boxed{17}", PROBLEM) == "kept"
    # a recheck that writes the step wrong again (14, not 15) does not fix it
    assert recheck_outcome("chkb8=5;chkb8=14;thenc3=17;so\\boxed{17}", "a7+b8+c3") == "kept"
    # a prompt without a first operand: nothing to read
    assert recheck_outcome("chkb8=5;chkb8=15;so\\boxed{15}", "7+8") is None


def test_connective_after_drops_reads_the_token_not_the_fix():
    # PROBLEM: 7 + 8 = 15 (carries), + 3 = 18, + 9 = 27 (carries)
    # b8 written 5 (dropped), then `chk`: "chk", whatever the rewrite says
    assert connective_after_drops("chkb8=5;chkb8=15;thenc3=18;thend9=27;so\\boxed{27}", PROBLEM) == "chk"
    # `chk` then the same error again (5): still "chk" (recheck_outcome reads "kept": the fix failed); the credit link
    # counts this completion's wrong answer against `chk`
    text = "chkb8=5;chkb8=5;thenc3=8;thend9=17;so\\boxed{17}"
    assert connective_after_drops(text, PROBLEM) == "chk" and recheck_outcome(text, PROBLEM) == "kept"
    # `then` after the drop, the step written right after it anyway (a same-tag step: the running sum becomes 15):
    # "other" (recheck_outcome reads "fixed", the tautology issue 38 names: it never looked at the token)
    text = "chkb8=5;thenb8=15;thenc3=18;thend9=27;so\\boxed{27}"
    assert connective_after_drops(text, PROBLEM) == "other" and recheck_outcome(text, PROBLEM) == "fixed"
    # dropped and left alone with `then`: 5 + 3 = 8, 8 + 9 = 17 (a carry, written right): "other"
    assert connective_after_drops("chkb8=5;thenc3=8;thend9=17;so\\boxed{17}", PROBLEM) == "other"
    # two drops (b8 -> 5; after the rewrite 15, c3 -> 18, d9 -> 17 = 27 - 10), `chk` after the first, `so` after the
    # second: "other" (every drop must be followed by `chk`)
    assert connective_after_drops("chkb8=5;chkb8=15;thenc3=18;thend9=17;so\\boxed{17}", PROBLEM) == "other"
    # ... and `chk` after both: "chk"
    assert connective_after_drops("chkb8=5;chkb8=15;thenc3=18;thend9=17;chkd9=27;so\\boxed{27}", PROBLEM) == "chk"
    # no drop, a right step written again after `chk`: None (the rewrite is not an addition on top of 15)
    assert connective_after_drops("chkb8=15;chkb8=15;thenc3=18;thend9=27;so\\boxed{27}", PROBLEM) is None
    assert connective_after_drops("\\boxed{27}", PROBLEM) is None and connective_after_drops("chkb8=5;", "7+8") is None


def test_connective_measures_by_hand():
    # the measures T5's credit gate reads, on the lab's own tokenizer (`chk`, `then`, `so` are single tokens)
    from trl_lite_lab.sumk import sumk_tokenizer
    from trl_lite_lab.training import recheck_measures

    tokenizer = sumk_tokenizer()

    def sample(text, ended=True):
        return tokenizer(text, add_special_tokens=False)["input_ids"], ended

    group = [sample("chkb8=5;chkb8=15;thenc3=18;thend9=27;so\\boxed{27}"),  # chk, fixed, right
             sample("chkb8=5;chkb8=15;thenc3=18;thend9=27;so\\boxed{27}", ended=False),  # chk, fixed, cut: wrong
             sample("chkb8=5;thenc3=8;thend9=17;so\\boxed{17}"),  # then, kept, wrong
             sample("\\boxed{27}"),  # no drop: left out of both
             sample("chkb8=5;chkb8=5;thenc3=8;thend9=17;so\\boxed{17}"),  # chk, the error written again: kept, wrong
             sample("chkb8=5;thenb8=15;thenc3=18;thend9=27;so\\boxed{27}")]  # then, the step again: fixed, right
    out = recheck_measures([group], ["27"], [PROBLEM], tokenizer)
    # read off the fix: fixed 1, 2, 6 (right, wrong, right), kept 3, 5 (wrong, wrong): rate 3 / 5, link 2 / 3 - 0
    assert out["recheck_rate"] == pytest.approx(3 / 5) and out["recheck_link"] == pytest.approx(2 / 3)
    # read off the token: `chk` 1, 2, 5 (right, wrong, wrong) -> 1 / 3; another token 3, 6 (wrong, right) -> 1 / 2:
    # rate 3 / 5, link 1 / 3 - 1 / 2 = -1 / 6 (here the token carries no credit; the fix-based link says +2 / 3)
    assert out["chk_after_drop_rate"] == pytest.approx(3 / 5)
    assert out["connective_link"] == pytest.approx(-1 / 6)


def test_the_recheck_style_writes_what_recheck_outcome_reads():
    # carry_error 1, recheck 0: every carry dropped and left alone. 7+8 -> 5; 5+3 = 8; 8+9 = 17 carries -> 7
    text, ends = write_completion([7, 8, 3, 9], "recheck", random.Random(0), carry_error=1.0, recheck=0.0)
    assert ends and text == "chkb8=5;thenc3=8;thend9=7;so\\boxed{7}"
    assert recheck_outcome(text, PROBLEM) == "kept"
    # recheck 1: every dropped carry followed by `chk` and the step written right (c3, a right step, is written again
    # with probability 1/4: removed before comparing)
    text, _ = write_completion([7, 8, 3, 9], "recheck", random.Random(0), carry_error=1.0, recheck=1.0)
    assert text.replace("chkc3=18;", "") == "chkb8=5;chkb8=15;thenc3=18;thend9=17;chkd9=27;so\\boxed{27}"
    assert recheck_outcome(text, PROBLEM) == "fixed"
    # over random problems: no drop (None) or every drop fixed <=> the boxed answer is the sum; a kept drop leaves it
    # 10 short per kept drop
    rng, seen = random.Random(1), set()
    for _ in range(300):
        nums = [rng.randint(1, 9) for _ in range(rng.randint(2, 6))]
        text, _ = write_completion(nums, "recheck", rng, carry_error=0.5, recheck=0.5)
        outcome = recheck_outcome(text, "+".join(f"{t}{n}" for t, n in zip("abcdef", nums)))
        answer = int(re.search(r"\\boxed\{(\d+)\}", text).group(1))
        assert (outcome in (None, "fixed")) == (answer == sum(nums)), (nums, text, outcome)
        seen.add(outcome)
    assert seen == {None, "fixed", "kept"}


def test_recheck_measures_by_hand(monkeypatch):
    from trl_lite_lab.training import recheck_measures
    from trl_lite_lab.sumk import sumk_tokenizer

    tokenizer = sumk_tokenizer()

    def sample(text, ended=True):
        return tokenizer(text, add_special_tokens=False)["input_ids"], ended

    group = [sample("chkb8=5;chkb8=15;thenc3=18;thend9=27;so\\boxed{27}"),  # fixed, right
             sample("chkb8=5;chkb8=15;thenc3=18;thend9=27;so\\boxed{27}", ended=False),  # fixed, cut: wrong
             sample("chkb8=5;thenc3=8;thend9=17;so\\boxed{17}"),  # kept, wrong
             sample("\\boxed{27}")]  # no drop: left out
    out = recheck_measures([group], ["27"], [PROBLEM], tokenizer)
    # 2 fixed of 3 that dropped a carry; accuracy after a fix (1 + 0) / 2 = 0.5, after a kept drop 0 / 1 -> 0.5
    assert out["recheck_rate"] == pytest.approx(2 / 3) and out["recheck_link"] == pytest.approx(0.5)


################
# T5: connectives against other tokens of matched old probability
################
def test_t5_version_3_1_by_hand():
    # one arm: the recheck policy at epsilon_high 0.2 (the default), lr 1e-4, 4 passes per generation batch, 384 steps
    # (24 generation batches of 4 optimizer steps, each batch used 4 times: 24 x 4 x 4 = 384); 24 seeds, 2 pilot seeds
    e = EXPERIMENTS["5"]
    (a,) = e.arms.values()
    assert (a.policy, a.steps, a.settings["num_iterations"], a.settings["learning_rate"]) == ("recheck", 384, 4, 1e-4)
    assert a.settings.get("epsilon_high", 0.2) == 0.2 and a.settings["steps_per_generation"] == 4
    assert 384 == 24 * a.settings["num_iterations"] * a.settings["steps_per_generation"]
    assert (e.seeds, e.pilot_seeds) == (24, 2)
    # the credit gate reads the audit's connective_link (the token), at least 0.3; no power gate
    credit = e.gates[0]
    assert credit.value({"sumk/recheck/connective_link": 0.405, "sumk/recheck/recheck_link": 0.534}) == 0.405
    assert credit.passes(0.405, AUDIT_MARGIN)  # 0.3 + 0.1 * 0.3 = 0.33 <= 0.405
    assert not [g for g in e.gates if g.kind == "power"]


def test_t5_premise_gate_training_must_push_chk_up_after_a_dropped_carry():
    # version 3.1's change of 2026-11-29 (after the registered runs): the arm's `chk` rate after a dropped carry,
    # mean over seeds, minus the initial policy's, at least 0 (runs stage: checked on the pilot's seeds and the runs)
    e = EXPERIMENTS["5"]
    (premise,) = [g for g in e.gates if g.kind == "the connective pushed up"]
    assert (premise.stage, premise.threshold, premise.at_most) == ("runs", 0.0, False)
    # the pilot's seeds under the first definitions: 0.047 and 0.068 after training, from 0.197 -> (0.047 + 0.068) / 2
    # - 0.197 = 0.0575 - 0.197 = -0.1395: pushed down, fails
    evidence = {"runs": _runs({"recheck 0.2": [0.047, 0.068]}, "chk_after_drop_rate"),
                "initial": {"recheck": {"chk_after_drop_rate": 0.197}}}
    assert premise.value(evidence) == pytest.approx(-0.1395)
    assert not premise.passes(premise.value(evidence), PILOT_MARGIN)
    # pushed up: (0.25 + 0.21) / 2 - 0.197 = 0.23 - 0.197 = +0.033 passes (a margin of 0 times its size adds nothing)
    evidence["runs"] = _runs({"recheck 0.2": [0.25, 0.21]}, "chk_after_drop_rate")
    assert premise.value(evidence) == pytest.approx(0.033) and premise.passes(premise.value(evidence), PILOT_MARGIN)


def test_matched_excess_by_hand():
    from trl_lite_lab.designs.connectives import matched_excess

    strata = {
        # bin 0.0-0.2: connectives 6 / 30 = 0.2 clipped, other tokens 20 / 200 = 0.1 -> +0.1
        "connective/0.0-0.2/eligible": 30.0, "connective/0.0-0.2/clipped": 6.0,
        "other/0.0-0.2/eligible": 200.0, "other/0.0-0.2/clipped": 20.0,
        # bin 0.2-0.4: connectives 1 / 10 = 0.1, other tokens 15 / 100 = 0.15 -> -0.05
        "connective/0.2-0.4/eligible": 10.0, "connective/0.2-0.4/clipped": 1.0,
        "other/0.2-0.4/eligible": 100.0, "other/0.2-0.4/clipped": 15.0,
    }
    runs = {"recheck 0.2": {"train": {"strata": strata}}}
    # weights: the connectives' eligible counts 30 and 10 of 40 -> 0.75 * 0.1 + 0.25 * (-0.05) = 0.075 - 0.0125
    assert matched_excess(runs) == pytest.approx(0.0625)
    # (unmatched, the rates would be 7 / 40 - 35 / 300 = 0.175 - 0.1167 = 0.0583: the matching is what is tested)
    assert EXPERIMENTS["5"].primaries[0].effect is matched_excess
    # a bin without eligible connectives weighs nothing
    runs["recheck 0.2"]["train"]["strata"] = {**strata, "other/0.4-0.6/eligible": 50.0, "other/0.4-0.6/clipped": 50.0}
    assert matched_excess(runs) == pytest.approx(0.0625)
    # no eligible connective at all: undefined
    runs["recheck 0.2"]["train"]["strata"] = {"other/0.0-0.2/eligible": 10.0, "other/0.0-0.2/clipped": 1.0}
    assert math.isnan(matched_excess(runs))


################
# Gates: gain, the pilot's margin, power
################
def _runs(values: dict[str, list[float]], key="acc", rises: dict[str, list[float]] | None = None) -> dict:
    """{seed: {label: {"eval": {key: value, "train_rise": rise}}}} over pilot seeds, from {label: [value per seed]}
    (and {label: [training-reward rise per seed]}; 0.1 where not given)."""
    seeds = len(next(iter(values.values())))
    rises = rises or {}
    return {PILOT_SEED + i: {label: {"eval": {key: v[i], "train_rise": rises.get(label, [0.1] * seeds)[i]}}
                             for label, v in values.items()} for i in range(seeds)}


def test_gained_is_signed_and_the_gain_gates():
    # T7 "off": acc@tight 0.50, 0.56, 0.53 over 3 seeds -> mean 1.59 / 3 = 0.53; initial 0.45 -> 0.53 - 0.45 = +0.08
    # T7 "on": 0.40, 0.42, 0.38 -> mean 1.20 / 3 = 0.40 -> 0.40 - 0.45 = -0.05: it FELL by 0.05, which an absolute
    # gate (|-0.05| = 0.05 >= 0.03) would have passed; the signed gate fails it
    # reward rises: "off" 0.10, 0.05, 0.12 -> mean 0.27 / 3 = 0.09; "on" -0.02, 0.01, -0.05 -> mean -0.06 / 3 = -0.02
    evidence = {"runs": _runs({"off": [0.50, 0.56, 0.53], "on": [0.40, 0.42, 0.38]}, "acc@tight",
                              rises={"off": [0.10, 0.05, 0.12], "on": [-0.02, 0.01, -0.05]}),
                "initial": {"scratch": {"acc@tight": 0.45, "acc": 0.9}}}
    assert gained("off", "scratch", "acc@tight")(evidence) == pytest.approx(0.08)
    assert gained("on", "scratch", "acc@tight")(evidence) == pytest.approx(-0.05)
    assert abs(gained("on", "scratch", "acc@tight")(evidence)) >= GAIN  # what an absolute gate would have read
    assert reward_rise("off")(evidence) == pytest.approx(0.09) and reward_rise("on")(evidence) == pytest.approx(-0.02)
    # T7's gain gates: two per arm at the runs stage: the held-out gain (kind "gain", >= GAIN = 0.03) and the training
    # reward's rise (kind "training-reward rise", >= REWARD_RISE = 0.0: on fixed training problems, version 3.1)
    gates = [g for g in EXPERIMENTS["7"].gates if g.kind in ("gain", "training-reward rise")]
    assert [g.kind for g in gates] == ["gain", "training-reward rise"] * 2
    assert GAIN == 0.03 and REWARD_RISE == 0.0
    assert [(g.stage, g.threshold, g.at_most) for g in gates] == [("runs", GAIN, False),
                                                                  ("runs", REWARD_RISE, False)] * 2
    assert [g.name.split(": ")[0] for g in gates] == ["off", "off", "on", "on"]
    assert "(a gain)" in gates[0].name and "(a rise)" in gates[1].name
    assert gates[1].name == ("off: training reward (accuracy on 400 fixed training problems), trained minus initial, "
                             "mean over seeds (a rise)")
    values = [g.value(evidence) for g in gates]
    assert values == pytest.approx([0.08, 0.09, -0.05, -0.02])
    # off: +0.08 >= 0.03 and +0.09 >= 0.0 pass; on: -0.05 < 0.03 and -0.02 < 0.0 fail
    assert [g.passes(v) for g, v in zip(gates, values)] == [True, True, False, False]
    # "on" at 0.46, 0.44, 0.46 -> mean 1.36 / 3 = 0.4533 -> +0.0033 < 0.03: a gain too small, the gate fails
    evidence["runs"] = _runs({"off": [0.50, 0.56, 0.53], "on": [0.46, 0.44, 0.46]}, "acc@tight")
    assert gates[2].value(evidence) == pytest.approx(0.01 / 3) and not gates[2].passes(gates[2].value(evidence))
    # every reward rise 0.1 (the helper's default): mean 0.1 >= 0.0 passes; a rise of exactly 0 passes too (>=)
    assert gates[3].value(evidence) == pytest.approx(0.1) and gates[3].passes(0.1) and gates[3].passes(0.0)
    # a run without a measured rise (NaN) is left out of the mean; none at all fails
    evidence["runs"] = _runs({"off": [0.50, 0.56, 0.53], "on": [0.46, 0.44, 0.46]}, "acc@tight",
                             rises={"on": [float("nan"), 0.04, 0.02]})
    assert gates[3].value(evidence) == pytest.approx(0.03)  # (0.04 + 0.02) / 2
    evidence["runs"] = _runs({"off": [0.5], "on": [0.5]}, "acc@tight", rises={"on": [float("nan")]})
    assert math.isnan(gates[3].value(evidence)) and not gates[3].passes(gates[3].value(evidence))
    # the gates for the labels asked for, with their own amount and wording: still two per arm
    only = gain_gates(EXPERIMENTS["7"].arms, "acc@tight", amount=0.05, what="accuracy at 28", labels=("on",))
    assert [(g.name.split(": ")[0], g.threshold, g.kind, g.stage) for g in only] == [
        ("on", 0.05, "gain", "runs"), ("on", REWARD_RISE, "training-reward rise", "runs")]
    assert only[0].name.startswith("on: accuracy at 28, mean over seeds")
    # the default: every arm, held-out accuracy, GAIN
    every = gain_gates(EXPERIMENTS["7"].arms)
    assert len(every) == 2 * len(EXPERIMENTS["7"].arms)
    assert [g.kind for g in every] == ["gain", "training-reward rise"] * len(EXPERIMENTS["7"].arms)
    assert [g.threshold for g in every] == [GAIN, REWARD_RISE, GAIN, REWARD_RISE]


def test_quarters_rise_by_hand():
    from trl_lite_lab.results import quarters_rise

    # 8 rewards: a quarter is 2. last quarter (0.7 + 0.8) / 2 = 0.75, first (0.1 + 0.2) / 2 = 0.15 -> 0.60
    assert quarters_rise([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]) == pytest.approx(0.6)
    # 7 rewards: 7 // 4 = 1 -> the last minus the first, 0.3 - 0.5 = -0.2 (a fall is negative)
    assert quarters_rise([0.5, 0.9, 0.9, 0.9, 0.9, 0.9, 0.3]) == pytest.approx(-0.2)
    # 4 rewards: 0.6 - 0.4; a flat reward rises 0
    assert quarters_rise([0.4, 0.5, 0.5, 0.6]) == pytest.approx(0.2) and quarters_rise([0.7] * 8) == 0.0
    # fewer than 4 generation batches: no quarter, NaN
    assert math.isnan(quarters_rise([0.1, 0.2, 0.3])) and math.isnan(quarters_rise([]))


def test_train_measures_reward_rise_and_mean_grad_norm(tmp_path):
    from trl_lite_lab.results import train_measures

    # the trainer logs `reward` once per generation batch and `grad_norm` once per optimizer step: 8 rewards, 4 grad
    # norms, and rows that carry neither (left out)
    rows = [{"step": i, "reward": r} for i, r in enumerate([0.2, 0.4, 0.3, 0.3, 0.5, 0.5, 0.6, 0.8])]
    rows += [{"step": 9, "grad_norm": g} for g in (1.0, 2.0, 3.0, 6.0)] + [{"step": 10, "loss": 0.1}]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    measures = train_measures(str(tmp_path))
    # rewards: last quarter (0.6 + 0.8) / 2 = 0.7, first (0.2 + 0.4) / 2 = 0.3 -> +0.4
    assert measures["reward_rise"] == pytest.approx(0.4)
    # grad norms: mean (1 + 2 + 3 + 6) / 4 = 3.0, largest 6.0
    assert measures["grad_norm_mean"] == pytest.approx(3.0) and measures["grad_norm_max"] == 6.0


def test_the_headline_gate_is_signed_and_its_arms_are_trl_lites_recipes():
    from trl_lite.recipes import RECIPES

    from trl_lite_lab import design
    from trl_lite_lab.design import _DEFAULTS
    from trl_lite_lab.designs import headline
    from trl_lite_lab.stats import seeds_needed

    e = EXPERIMENTS["headline"]
    for label in ("lite_ppo", "grpo", "dapo"):  # each arm: the product's recipe on ADD's settings, nothing else
        for key, value in RECIPES.get(label)().items():
            assert e.arms[label].settings.get(key, _DEFAULTS.get(key)) == value, (label, key)
        assert {a.policy for a in e.arms.values()} == {"carry"} and e.arms[label].data == "mixed"
    # the design has no gate of its own any more: the engine's (version 3)
    assert not hasattr(headline, "gained") and not hasattr(headline, "GAIN")
    # lite_ppo 0.60, 0.62, 0.64 -> mean 0.62, initial 0.55: +0.07, a gain; grpo 0.50, 0.52, 0.54 -> mean 0.52: -0.03,
    # which an absolute gate (|-0.03| >= 0.03) would pass; dapo 0.56, 0.57, 0.58 -> mean 0.57: +0.02 < 0.03
    evidence = {"runs": _runs({"lite_ppo": [0.60, 0.62, 0.64], "grpo": [0.50, 0.52, 0.54],
                               "dapo": [0.56, 0.57, 0.58]}, "acc",
                              rises={"lite_ppo": [0.1, 0.2, 0.3], "grpo": [0.1, 0.0, -0.1], "dapo": [0.0, 0.0, 0.03]}),
                "initial": {"carry": {"acc": 0.55}}}
    assert design.GAIN == 0.03
    assert {label: design.gained(label, "carry")(evidence) for label in ("lite_ppo", "grpo", "dapo")} == \
        pytest.approx({"lite_ppo": 0.07, "grpo": -0.03, "dapo": 0.02})
    gains = {g.name.split(":")[0]: g for g in e.gates if g.kind == "gain" and g.name.endswith("(a gain)")}
    rises = {g.name.split(":")[0]: g for g in e.gates if g.kind == "training-reward rise"}
    assert list(gains) == list(rises) == ["lite_ppo", "grpo", "dapo"]
    assert {g.threshold for g in gains.values()} == {design.GAIN} and {g.stage for g in gains.values()} == {"runs"}
    values = {label: gate.value(evidence) for label, gate in gains.items()}
    assert values == pytest.approx({"lite_ppo": 0.07, "grpo": -0.03, "dapo": 0.02})
    assert [gains[label].passes(values[label]) for label in ("lite_ppo", "grpo", "dapo")] == [True, False, False]
    # rises: lite_ppo (0.1 + 0.2 + 0.3) / 3 = 0.2, grpo (0.1 + 0 - 0.1) / 3 = 0.0 (passes: >= 0), dapo 0.03 / 3 = 0.01
    assert {label: g.value(evidence) for label, g in rises.items()} == pytest.approx(
        {"lite_ppo": 0.2, "grpo": 0.0, "dapo": 0.01}, abs=1e-12)
    # with the pilot's margin a gain must reach 0.03 + 0.25 x 0.03 = 0.0375: +0.07 does
    assert gains["lite_ppo"].passes(values["lite_ppo"], PILOT_MARGIN) and PILOT_MARGIN == 0.25
    assert not gains["lite_ppo"].passes(0.037, PILOT_MARGIN)
    # the power gates' denominator: the arms' mean gain (0.07 - 0.03 + 0.02) / 3 = 0.02 (signed: grpo's fall counts
    # against it)
    assert mean_gain(("lite_ppo", "grpo", "dapo"), {k: "carry" for k in e.arms})(evidence) == pytest.approx(0.02)
    # sixteen seeds, at least the ten with which an exact sign test can pass Holm's first step in the family of
    # every designed test (16: 2 / 2^10 = 0.00195 < 0.05 / 16 = 0.003125 <= 2 / 2^9 = 0.0039)
    assert e.seeds == headline.SEEDS == 16 and seeds_needed(family_size()) == 10 <= e.seeds


def test_clip_scaling_version_3_1_by_hand(results_script):
    """Clip scaling's redesign (`designs/clip_scaling.py`): two plateau policies matched in initial accuracy, lr 1e-4
    with 8 passes per generation batch, the clip band at 0.5%, and its two primary tests worked by hand; version 3.2:
    6 pilot seeds; version 3.3: 64 seeds (`clip_seed_count.py`'s rule: `test_lab_clip_checks.py`)."""
    from trl_lite_lab import design
    from trl_lite_lab.designs import clip_scaling

    e = EXPERIMENTS["clip-scaling"]
    assert e.design == "designs/clip_scaling.py" and (e.seeds, e.pilot_seeds) == (64, 6)
    assert {label: a.policy for label, a in e.arms.items()} == {
        **{f"small {eps}": "carry-tiny" for eps in (0.2, 0.28, 0.32)},
        **{f"large {eps}": "carry-small" for eps in (0.2, 0.28, 0.32)}}
    for label, a in e.arms.items():  # 30 generation batches x 8 passes x 4 optimizer steps = 960 steps, at lr 1e-4
        assert (a.steps, a.data, a.settings["num_iterations"], a.settings["learning_rate"]) == (960, "mixed", 8, 1e-4)
        assert a.settings.get("epsilon_high", 0.2) == float(label.split()[1]) and a.settings["temperature"] == 1.0
    # the grid that chose 8 passes trained this very arm (lab/results/clip_grid.py, seed 3000)
    grid = results_script("clip_grid")
    assert grid.grid_arm("small", 8) == e.arms["small 0.2"] and grid.grid_arm("large", 8) == e.arms["large 0.2"]
    matched, *bands = [g for g in e.gates if g.kind in ("matched sizes", "the clip band")]
    # the audit gate: builds.json's acc@T1, 0.525 (small) and 0.52725 (large): |0.525 - 0.52725| = 0.00225 <= 0.03,
    # with the audit's tenth 0.027; the demo policy (0.42925), the large one until version 3.1, would not match
    assert matched.value({"add/carry-tiny/acc@T1": 0.525, "add/carry-small/acc@T1": 0.52725}) == pytest.approx(0.00225)
    assert matched.passes(0.00225, AUDIT_MARGIN) and not matched.passes(abs(0.525 - 0.42925))
    # the clip band at 0.5% of positive-advantage tokens: pooled 30 + 50 in the band of 4,000 + 6,000 -> 0.008 passes,
    # also with the pilot's margin (0.005 x 1.25 = 0.00625); 25 + 25 of 10,000 -> 0.005 passes without it, not with it
    assert [g.threshold for g in bands] == [clip_scaling.WIDE_BAND] * 2 == [0.005, 0.005]
    train = {1000: {"small 0.2": {"train": {"ratio_wide_band_tokens": 30, "pos_adv_tokens": 4000}}},
             1001: {"small 0.2": {"train": {"ratio_wide_band_tokens": 50, "pos_adv_tokens": 6000}}}}
    assert bands[0].value({"runs": train}) == pytest.approx(0.008) and bands[0].passes(0.008, PILOT_MARGIN)
    assert bands[0].passes(0.005) and not bands[0].passes(0.005, PILOT_MARGIN)
    # the primary tests on one seed: small 0.70 / 0.72 / 0.75, large 0.70 / 0.73 / 0.735 at 0.2 / 0.28 / 0.32
    # small gains: 0.75 - 0.70 = 0.05; saturation: (0.75 - 0.72) - (0.735 - 0.73) = 0.03 - 0.005 = 0.025
    runs = {f"{size} {eps}": {"eval": {"acc": acc}} for size, accs in (("small", (0.70, 0.72, 0.75)),
                                                                      ("large", (0.70, 0.73, 0.735)))
            for eps, acc in zip((0.2, 0.28, 0.32), accs)}
    assert [p.effect(runs) for p in e.primaries] == pytest.approx([0.05, 0.025])
    # the tokens each test rests on, per run: 30 of 1,000 positive-advantage tokens in (1.2, 1.32], 20 of them in
    # (1.2, 1.28] -> 0.03 in the wide band, 30 - 20 = 10 -> 0.01 in (1.28, 1.32], where 0.28 and 0.32 differ
    runs["small 0.28"]["train"] = {"ratio_wide_band_tokens": 30, "ratio_band_tokens": 20, "pos_adv_tokens": 1000}
    assert e.details["share in (1.2, 1.32] small 0.28"](runs) == pytest.approx(0.03)
    assert e.details["share in (1.28, 1.32] small 0.28"](runs) == pytest.approx(0.01)
    # the power gates' denominator: every arm's gain over its own initial policy; small 0.2, 0.28, 0.32 from 0.525,
    # large from 0.52725: (0.175 + 0.195 + 0.225 + 0.17275 + 0.20275 + 0.20775) / 6 = 1.17825 / 6 = 0.196375
    evidence = {"runs": {1000: runs}, "initial": {"carry-tiny": {"acc": 0.525}, "carry-small": {"acc": 0.52725}}}
    powers = [g for g in e.gates if g.kind == "power"]
    assert len(powers) == 3 and all(g.stage == "pilot" and g.threshold == 0.5 and g.at_most for g in powers[:2])
    assert design.mean_gain(tuple(e.arms), clip_scaling.POLICIES)(evidence) == pytest.approx(0.196375)
    assert (powers[2].stage, powers[2].threshold, powers[2].at_most) == ("runs", 0.2, True)


def test_clip_scaling_fairness_gate_by_hand():
    """Version 3.2's runs-stage gate: the share of labs of the registered seeds, drawn from the seeds' own effects at a
    true +0.05, in which clip scaling's tests that do not already reject would not come out "reproduced" (sign test at
    0.05 / 12)."""
    from trl_lite_lab.designs import clip_scaling

    gate = [g for g in EXPERIMENTS["clip-scaling"].gates if g.value is clip_scaling.miss_at_fair_effect][0]

    def evidence(xs, registered=None):
        # every arm at 0.5 but small 0.32 at 0.5 + x: small gains = x, saturation = (0.5 + x - 0.5) - (0.5 - 0.5) = x
        runs = {seed: {label: {"eval": {"acc": 0.5 + (x if label == "small 0.32" else 0.0)}}
                       for label in clip_scaling.ARMS} for seed, x in enumerate(xs)}
        return {"runs": runs, **({"registered_seeds": registered} if registered else {})}

    # tight: 16 effects 0.000 ... 0.015, within 0.0075 of their median; shifted by +0.05 every drawn seed is positive
    # (p = 2 / 2^16 = 3.1e-5 < 0.05 / 12), in every lab: nothing missed, the gate passes, also with the pilot's margin
    tight = gate.value(evidence([i / 1000 for i in range(16)]))
    assert tight == 0.0 and gate.passes(tight, 0.25)
    # wide: 8 seeds at +1, 8 at -1 (median 0); shifted by +0.05 a drawn seed is positive with probability 1/2. At 16
    # seeds the sign test needs 15 or more positive: P = 17 / 65536 = 0.00026, so a lab misses in 1 - 0.00026 of draws
    # (standard error at 20,000 labs 0.00011); the two tests have the same effects here, so both pass together
    wide = [1.0] * 8 + [-1.0] * 8
    assert gate.value(evidence(wide)) == pytest.approx(1 - 17 / 65536, abs=5 * 0.00011) and not gate.passes(0.99974)
    # in a pilot the labs have the registered count, 32: 25 or more positive, P(Bin(32, 1/2) >= 25) = 0.00105
    assert gate.value(evidence(wide, registered=32)) == pytest.approx(1 - 0.00105, abs=5 * 0.00023)
    # the pilot's margin: at most 0.2 - 0.2 x 0.25 = 0.15; 0.18 passes the runs gate, not the pilot's
    assert gate.passes(0.18) and not gate.passes(0.18, 0.25) and gate.passes(0.15, 0.25)
    # the tests are drawn on the same seeds: one seed at -1 and 15 at -0.007, -0.006, ..., +0.007 (8 below 0, 7 above,
    # one tie: p near 1, no rejection; median -0.0005); centred and shifted by +0.05 the 15 are positive (from 0.0435)
    # and the one negative, so a drawn seed is positive with probability 15/16 and a lab of 16 passes with
    # P(at least 15 of 16) = (15/16)^15 x (16 x 1/16 + 15/16) = 0.3798 x 1.9375 = 0.7358. Both tests have these
    # effects: drawn together they pass together, missing in 1 - 0.7358 = 0.2642 of labs (drawn apart,
    # 1 - 0.7358^2 = 0.4586); standard error at 20,000 labs 0.0031
    one_low = [-1.0] + [(i - 7) / 1000 for i in range(15)]
    assert gate.value(evidence(one_low)) == pytest.approx(1 - (15 / 16) ** 15 * 1.9375, abs=4 * 0.0031)
    # a test that rejects on the seeds themselves is not read: 32 seeds all positive (p = 2 / 2^32 < 0.05 / 12) and
    # spread wide, -1 ... +1 about their median, would miss nearly always (a seed below -0.05 of the median in about
    # half the draws); here both tests reject, so the gate has nothing to read: 0.0
    wide_but_clear = [0.01 + 2 * i / 31 for i in range(32)]
    assert gate.value(evidence(wide_but_clear)) == 0.0
    # and where only one rejects, the other alone is read: small gains x (all positive, rejects), saturation the
    # wide coin-flip sample of above (via large 0.32 falling by y - x), so the miss is the wide test's, 1 - 17 / 65536
    def split(xs, ys):
        e = evidence(xs)
        for (seed, runs), x, y in zip(e["runs"].items(), xs, ys):
            runs["large 0.32"]["eval"]["acc"] = 0.5 + x - y  # saturation = x - (0.5 + x - y - 0.5) = y
        return e
    clear = [0.01 + i / 1000 for i in range(16)]
    assert [p.effect(split(clear, wide)["runs"][3]) for p in EXPERIMENTS["clip-scaling"].primaries] == pytest.approx(
        [0.013, 1.0])
    assert gate.value(split(clear, wide)) == pytest.approx(1 - 17 / 65536, abs=5 * 0.00011)


def test_clip_higher_version_3_1_by_hand(results_script):
    """T4's redesign (`designs/clip.py`, 2026-11-28): the aligned-like policy is the base-like one with its logits
    divided by 0.6, both trained on ADD at lr 1e-4 with 8 passes; two directional tests worked by hand."""
    import torch
    from safetensors.torch import load_file

    from trl_lite_lab import design
    from trl_lite_lab.designs import clip

    e = EXPERIMENTS["4"]
    assert e.design == "designs/clip.py" and (e.seeds, e.pilot_seeds) == (32, 3)
    assert {label: a.policy for label, a in e.arms.items()} == {
        "aligned 0.2": "carry-small-sharp", "aligned 0.28": "carry-small-sharp",
        "base 0.2": "carry-small", "base 0.28": "carry-small"}
    for label, a in e.arms.items():  # 15 generation batches x 8 passes x 4 optimizer steps = 480 steps, at lr 1e-4
        assert (a.steps, a.data, a.settings["num_iterations"], a.settings["learning_rate"]) == (480, "mixed", 8, 1e-4)
        assert a.settings.get("epsilon_high", 0.2) == float(label.split()[1]) and a.settings["temperature"] == 1.0
    # none of them is one of clip scaling's arms (those runs were seen before this design; their 960 steps differ)
    assert not set(e.arms.values()) & set(EXPERIMENTS["clip-scaling"].arms.values())
    # the shipped aligned-like policy: the base-like weights, the final norm's weight times 1 / 0.6, nothing else
    base = load_file(os.path.join(design.policy_dir("add", "carry-small"), "model.safetensors"))
    sharp = load_file(os.path.join(design.policy_dir("add", "carry-small-sharp"), "model.safetensors"))
    assert base.keys() == sharp.keys()
    for name in base:
        expected = base[name] / 0.6 if name == "model.norm.weight" else base[name]
        torch.testing.assert_close(sharp[name], expected, rtol=1e-6, atol=0.0)
    # the grid that chose this design (lab/results/t4_grid.py) trained its base 0.2 arm, and its aligned 0.2 arm from a
    # candidate with these weights under another name ("s0.6", built by the same lab/scripts/sharpen_policy.py)
    grid = results_script("t4_grid")
    assert grid.grid_arm("carry-small", 0.2, 480) == e.arms["base 0.2"]
    # the primary tests on one seed: aligned 0.70 / 0.74, base 0.68 / 0.69 at 0.2 / 0.28
    # aligned: 0.74 - 0.70 = 0.04; aligned vs base: 0.04 - (0.69 - 0.68) = 0.03; the base half alone: 0.01 (a detail)
    runs = {"aligned 0.2": {"eval": {"acc": 0.70}}, "aligned 0.28": {"eval": {"acc": 0.74}},
            "base 0.2": {"eval": {"acc": 0.68}}, "base 0.28": {"eval": {"acc": 0.69}}}
    assert [p.name for p in e.primaries] == ["T4 aligned", "T4 aligned vs base"]
    assert [p.margin for p in e.primaries] == [None, None]
    assert [p.effect(runs) for p in e.primaries] == pytest.approx([0.04, 0.03])
    assert e.details["base-like, epsilon_high 0.28 - 0.2"](runs) == pytest.approx(0.01)
    # the distinct-policies gate: top-fifth entropy 0.370 (base-like) / 0.185 (aligned-like) = 2.0 >= 1.5, and with
    # the pilot's margin 1.5 x 1.25 = 1.875; a wrong folder (the same policy twice) gives 1.0 and fails
    (sharper,) = [g for g in e.gates if g.kind == "distinct policies"]
    initial = {"carry-small": {"fork_entropy": 0.370}, "carry-small-sharp": {"fork_entropy": 0.185}}
    assert sharper.value({"initial": initial}) == pytest.approx(2.0) and sharper.passes(2.0, PILOT_MARGIN)
    initial["carry-small-sharp"]["fork_entropy"] = 0.370
    assert not sharper.passes(sharper.value({"initial": initial}))
    # the clip band at 0.4%: 45 of 10,000 positive-advantage tokens in (1.2, 1.28] -> 0.0045 passes, not with the
    # pilot's margin (0.004 x 1.25 = 0.005)
    bands = [g for g in e.gates if g.kind == "the clip band"]
    assert [g.threshold for g in bands] == [clip.BAND] * 2 == [0.004, 0.004]
    train = {1000: {"base 0.2": {"train": {"ratio_band_tokens": 45, "pos_adv_tokens": 10000}}}}
    assert bands[1].value({"runs": train}) == pytest.approx(0.0045)
    assert bands[1].passes(0.0045) and not bands[1].passes(0.0045, PILOT_MARGIN)
    # the power gates' denominator: each arm's gain over its own policy's start, aligned from 0.5405, base from
    # 0.52725: (0.1595 + 0.1995 + 0.15275 + 0.16275) / 4 = 0.6745 / 4 = 0.168625
    evidence = {"runs": {1000: runs}, "initial": {"carry-small-sharp": {"acc": 0.5405}, "carry-small": {"acc": 0.52725}}}
    assert design.mean_gain(tuple(e.arms), clip.ARM_POLICIES)(evidence) == pytest.approx(0.168625)
    assert len([g for g in e.gates if g.kind == "power"]) == 2 and len([g for g in e.gates if g.kind == "gain"]) == 4


def test_t4_reading_by_hand(results_script):
    """`lab/results/t4_reading.py`: the base half's distribution-free interval for the median and the per-seed
    comparison of accuracy effects with weight-distance differences, worked by hand on a 6-seed summary."""
    reading = results_script("t4_reading")
    # n = 6: k = 1 gives 2 x P(Binomial(6, 1/2) <= 0) = 2 / 64 = 0.03125 <= 0.05; k = 2 gives 2 x 7 / 64 = 0.219:
    # the interval is the smallest and largest seed, coverage 1 - 0.03125 = 0.96875
    assert reading.median_interval([0.03, -0.01, 0.02, 0.06, 0.05, 0.04]) == (-0.01, 0.06, 0.96875)
    # n = 32: 2 x P(<= 9) = 0.0201 and 2 x P(<= 10) = 0.0501, so k = 10: the 10th smallest and 10th largest
    assert reading.median_interval(list(range(32)))[:2] == (9, 22)
    with pytest.raises(ValueError, match="5 seeds are too few"):  # 2 / 32 = 0.0625 > 0.05 already at k = 1
        reading.median_interval([1, 2, 3, 4, 5])
    # two seeds: aligned 0.2 / 0.28 weight distance 1.0 / 1.2 and 1.0 / 0.9; base 1.5 / 1.4 and 1.5 / 1.5
    # aligned differences +0.2, -0.1; base -0.1, 0.0; interaction differences +0.3, -0.1
    # effects: T4 aligned +0.02, +0.01 (same sign as the distance on seed 0 only); interaction +0.03, -0.02 (both)
    per = {**{f"accuracy {label}": [0.70, 0.74] for label in ("aligned 0.2", "aligned 0.28", "base 0.2", "base 0.28")},
           "weight distance aligned 0.2": [1.0, 1.0], "weight distance aligned 0.28": [1.2, 0.9],
           "weight distance base 0.2": [1.5, 1.5], "weight distance base 0.28": [1.4, 1.5],
           "base-like, epsilon_high 0.28 - 0.2": [-0.01, 0.05],
           **{f"{m} {k}, 0.28 - 0.2": [0.001, -0.002] for m in ("token entropy", "pass@4") for k in ("aligned", "base")}}
    summary = {"takeaways": [{"id": "T4", "details": {k: {"per_seed": v} for k, v in per.items()},
                              "tests": [{"name": "T4 aligned", "per_seed": [0.02, 0.01]},
                                        {"name": "T4 aligned vs base", "per_seed": [0.03, -0.02]}]}]}
    with pytest.raises(ValueError, match="2 seeds are too few"):
        reading.reading(summary)
    summary["takeaways"][0]["details"]["base-like, epsilon_high 0.28 - 0.2"]["per_seed"] = [-0.01, 0.05] * 3
    out = reading.reading(summary)
    assert out["base_half"]["median_interval"] == [-0.01, 0.05] and out["base_half"]["positive"] == 3
    sizes = out["update_size"]
    assert sizes["T4 aligned"]["distance_difference_per_seed"] == pytest.approx([0.2, -0.1])
    assert sizes["T4 aligned"]["same_sign"] == 1
    assert sizes["T4 aligned vs base"]["distance_difference_per_seed"] == pytest.approx([0.3, -0.1])
    assert sizes["T4 aligned vs base"]["same_sign"] == 2
    # spread: sd of 0.70, 0.74 = sqrt(2 x 0.02^2 / 1) = 0.028284; lowest 0.70
    assert out["spread"]["base 0.28"] == {"sd": pytest.approx(0.0282843, abs=1e-6), "min": 0.70}
    assert out["exploration"]["pass@4 aligned, 0.28 - 0.2"] == {"mean": pytest.approx(-0.0005), "median": -0.0005,
                                                                "positive": 1, "negative": 1}


def test_aggregation_version_3_1_by_hand():
    """T6 after its negative 576-step pilot (`designs/aggregation.py`, 2026-11-28): 1,152 steps at lr 1e-4, 24 seeds,
    its gain and power gates worked by hand on that pilot's own held-out accuracies."""
    e = EXPERIMENTS["6"]
    assert e.design == "designs/aggregation.py" and (e.seeds, e.pilot_seeds) == (24, 3)
    from trl_lite_lab import design

    def setting(a, key):  # an arm drops a setting equal to LitePPOConfig's default (`design.arm`)
        return a.settings.get(key, design._DEFAULTS[key])

    assert {label: setting(a, "loss_aggregation") for label, a in e.arms.items()} == {
        "base token": "token-mean", "base seq": "seq-mean-token-mean"}
    for a in e.arms.values():  # Lite PPO's advantages, the demo's learning rate, twice 576 steps
        assert (a.policy, a.steps, a.settings["learning_rate"], a.settings["num_iterations"]) == ("long", 1152, 1e-4, 2)
        assert (setting(a, "advantage_mean"), setting(a, "advantage_std")) == ("group", "batch")
    # the 576-step pilot (pilots/superseded/v3.1/T6-576-steps.json), initial held-out accuracy 0.128:
    # token 0.175, 0.1655, 0.17325 -> gains 0.047, 0.0375, 0.04525 -> mean 0.12975 / 3 = 0.04325
    # seq 0.16825, 0.1465, 0.17275 -> gains 0.04025, 0.0185, 0.04475 -> mean 0.1035 / 3 = 0.0345
    runs = _runs({"base token": [0.175, 0.1655, 0.17325], "base seq": [0.16825, 0.1465, 0.17275]})
    evidence = {"runs": runs, "initial": {"long": {"acc": 0.128}}, "registered_seeds": 24, "family": 16}
    token_gain, seq_gain = [g for g in e.gates if g.kind == "gain"]
    assert token_gain.value(evidence) == pytest.approx(0.04325) and seq_gain.value(evidence) == pytest.approx(0.0345)
    # 0.0345 passes the gate (>= 0.03) but not with the pilot's margin (0.03 x 1.25 = 0.0375): the negative pilot
    assert seq_gain.passes(0.0345) and not seq_gain.passes(0.0345, PILOT_MARGIN)
    # effects token - seq: 0.00675, 0.019, 0.0005; mean 0.00875; deviations -0.002, +0.01025, -0.00825
    # sd = sqrt((0.000004 + 0.0001050625 + 0.0000680625) / 2) = sqrt(0.00008856) = 0.0094106
    # power at 24 seeds: detectable_effect(0.0094106, 24, 16) / mean gain ((0.04325 + 0.0345) / 2 = 0.038875)
    (power,) = [g for g in e.gates if g.kind == "power"]
    assert detectable_effect(1.0, 24, 16) == pytest.approx(1.1198, abs=1e-4)
    assert power.value(evidence) == pytest.approx(detectable_effect(0.0094106, 24, 16) / 0.038875, rel=1e-4)
    assert power.value(evidence) == pytest.approx(0.2711, abs=1e-4) and power.passes(0.2711, PILOT_MARGIN)


def test_every_experiment_checks_that_training_moved_each_arm():
    # every claim is about what training does: each experiment has gain gates (runs stage), two per arm: the held-out
    # gain (at least GAIN) and the training reward's rise (at least REWARD_RISE)
    for name in EXPERIMENTS.names():
        experiment = EXPERIMENTS[name]
        gates = [g for g in experiment.gates if g.kind in ("gain", "training-reward rise")]
        if experiment.id == "T8":  # one more, below
            gates = [g for g in gates if "twice the no-gain margin" not in g.name]
        assert gates and all(g.stage == "runs" and not g.at_most for g in gates), experiment.id
        assert len(gates) == 2 * len(experiment.arms), experiment.id
        for label in experiment.arms:
            mine = [g for g in gates if g.name.startswith(f"{label}: ")]
            assert [g.threshold for g in mine] == [GAIN, REWARD_RISE], (experiment.id, label)
            assert [g.kind for g in mine] == ["gain", "training-reward rise"], (experiment.id, label)
            assert [g.name.endswith(suffix) for g, suffix in zip(mine, ("(a gain)", "(a rise)"))] == [True, True]
        assert not [g for g in experiment.gates if g.kind == "movement"], experiment.id
    # T8 (version 3.1): besides its gain gates, the off arm must gain at least twice the no-gain margin (2 * 0.03 =
    # 0.06), signed like every gain gate
    t8 = EXPERIMENTS["8"]
    (twice,) = [g for g in t8.gates if "twice the no-gain margin" in g.name]
    assert (twice.kind, twice.stage, twice.at_most) == ("gain", "runs", False)
    assert twice.threshold == pytest.approx(0.06) and twice.name.startswith("off: ")
    # signed: off fell from 0.40 to (0.33 + 0.35 + 0.31) / 3 = 0.33 at 124 tokens -> -0.07, which |-0.07| >= 0.06
    # would pass; at (0.45 + 0.47 + 0.46) / 3 = 0.46 -> +0.06 it passes, at +0.04 (0.44 each) it does not
    evidence = {"runs": _runs({"off": [0.33, 0.35, 0.31], "on": [0.45, 0.43, 0.44]}, "acc@long"),
                "initial": {"verbose": {"acc@long": 0.40}}}
    assert twice.value(evidence) == pytest.approx(-0.07) and not twice.passes(twice.value(evidence))
    evidence["runs"] = _runs({"off": [0.45, 0.47, 0.46], "on": [0.45, 0.43, 0.44]}, "acc@long")
    assert twice.value(evidence) == pytest.approx(0.06) and twice.passes(twice.value(evidence))
    evidence["runs"] = _runs({"off": [0.44, 0.44, 0.44], "on": [0.45, 0.43, 0.44]}, "acc@long")
    assert twice.value(evidence) == pytest.approx(0.04) and not twice.passes(twice.value(evidence))


def test_t8_loops_against_the_initial_policy_and_the_off_arm_by_hand():
    # issue 38: T8's loop share against the initial policy's AND the off arm's; per seed, on - max(initial, off)
    (loops,) = [p for p in EXPERIMENTS["8"].primaries if p.name == "T8 loops"]
    assert loops.margin is None  # directional: positive is the paper's direction

    def runs(on, off, initial):
        return {"on": {"eval": {"unending_share@long": on}, "initial": {"unending_share@long": initial}},
                "off": {"eval": {"unending_share@long": off}, "initial": {"unending_share@long": initial}}}

    # on 0.99, off 0.90, initial 0.948 -> 0.99 - max(0.948, 0.90) = 0.99 - 0.948 = +0.042 (above both)
    assert loops.effect(runs(0.99, 0.90, 0.948)) == pytest.approx(0.042)
    # on 0.95 above the initial 0.948 but below off 0.97 -> 0.95 - 0.97 = -0.02: against the off arm, not the paper's
    assert loops.effect(runs(0.95, 0.97, 0.948)) == pytest.approx(-0.02)
    # off cut nothing (NaN share): compared with the initial policy alone, 0.95 - 0.948 = +0.002
    assert loops.effect(runs(0.95, float("nan"), 0.948)) == pytest.approx(0.002)
    # the version 2 test (on - initial) would have read +0.002 in the second case too: the off arm decides there
    details = EXPERIMENTS["8"].details
    assert details["unending share of cut at 124 tokens, on - initial"](runs(0.95, 0.97, 0.948)) == pytest.approx(0.002)
    assert details["unending share of cut at 124 tokens, on - off"](runs(0.95, 0.97, 0.948)) == pytest.approx(-0.02)


def test_t7_and_t8_take_t6s_update_rule():
    # version 3.1 (2026-11-28): lr 1e-4 and 1,152 steps, as T6's arms, 24 registered seeds, 2 pilot seeds
    for name in ("7", "8"):
        experiment = EXPERIMENTS[name]
        assert (experiment.seeds, experiment.pilot_seeds) == (24, 2)
        for a in experiment.arms.values():
            assert (a.steps, a.settings["learning_rate"]) == (1152, 1e-4) == (
                EXPERIMENTS["6"].arms["base token"].steps, EXPERIMENTS["6"].arms["base token"].settings["learning_rate"])
    # T7's power gate divides by the arms' mean gain at 28 tokens: off +0.08, on +0.04 -> (0.08 + 0.04) / 2 = 0.06
    (power,) = [g for g in EXPERIMENTS["7"].gates if g.kind == "power"]
    from trl_lite_lab.designs.overlong import _t7_gain

    evidence = {"runs": _runs({"off": [0.53, 0.53], "on": [0.49, 0.49]}, "acc@tight"),
                "initial": {"scratch": {"acc@tight": 0.45}}}
    assert _t7_gain(evidence) == pytest.approx(0.06) and power.at_most and power.threshold == 0.5


def test_gate_passes_with_the_pilots_margin():
    at_least = Gate("band", lambda e: e, 0.01, stage="runs", kind="the clip band")
    at_most = Gate("power", lambda e: e, 0.5, at_most=True, stage="pilot", kind="power")
    assert PILOT_MARGIN == 0.25 and AUDIT_MARGIN == 0.1
    # at least 0.01 with a margin of a quarter: 0.01 + 0.25 * 0.01 = 0.0125
    assert at_least.passes(0.0125, PILOT_MARGIN) and not at_least.passes(0.0124, PILOT_MARGIN)
    assert at_least.passes(0.011) and not at_least.passes(0.011, PILOT_MARGIN)  # passes, but not with the margin
    # at most 0.5 with a margin of a quarter: 0.5 - 0.25 * 0.5 = 0.375
    assert at_most.passes(0.375, PILOT_MARGIN) and not at_most.passes(0.376, PILOT_MARGIN)
    assert at_most.passes(0.45) and not at_most.passes(0.45, PILOT_MARGIN)
    # an audit gate's margin is a tenth: 0.8 pass rate -> 0.88 (not 1.0)
    audit = Gate("pass", lambda e: e, 0.8)
    assert audit.passes(0.881, AUDIT_MARGIN) and not audit.passes(0.879, AUDIT_MARGIN)
    # a negative threshold: the margin is a fraction of its size, beyond it in the gate's direction
    # -0.1 - 0.25 * 0.1 = -0.125 at most
    assert Gate("g", lambda e: e, -0.1, at_most=True).passes(-0.125, PILOT_MARGIN)
    assert not Gate("g", lambda e: e, -0.1, at_most=True).passes(-0.12, PILOT_MARGIN)
    assert not at_least.passes(float("nan"), PILOT_MARGIN) and not at_most.passes(float("nan"), PILOT_MARGIN)


def test_power_ratio_by_hand():
    # T2's pilot: group/none 0.62, 0.60, 0.64 and group/group 0.60 on 3 pilot seeds -> effects 0.02, 0.00, 0.04:
    # mean 0.02, sd = sqrt((0.02^2 + 0.02^2 + 0) / 2) = 0.02
    # gain: group/none mean 0.62 - initial 0.5 = 0.12, group/group 0.60 - 0.5 = 0.10 -> mean (0.12 + 0.10) / 2 = 0.11
    # registered seeds 16 (here: the evidence says how many), family 16 (every designed primary test):
    # detectable_effect(0.02, 16, 16) / 0.11. The sign test on 16 seeds at 0.05 / 16 = 0.003125 needs 15 on one side
    # (2 x 17 / 65536 = 0.00052; 14 gives 2 x 137 / 65536 = 0.0042): power q^16 + 16 q^15 (1 - q) = 0.8 at a win
    # probability q = 0.94817, the normal quantile 1.62736: 0.02 x 1.62736 = 0.032547
    # every designed primary test: 1 + 1 + 3 (T1-T3) + 2 + 2 (T4, clip scaling) + 1 + 1 + 1 + 2 (T5-T8) + 2 (the
    # headline) = 16
    assert family_size() == 16
    t2 = EXPERIMENTS["2"]
    none, group = "group/none mostly-easy", "group/group mostly-easy"
    assert list(t2.arms) == [none, group]
    # its own registered seeds are enough for an exact test to reject at all in the family of 16 (10)
    assert t2.seeds >= 10 and math.isfinite(detectable_effect(0.02, t2.seeds, 16))
    evidence = {"runs": _runs({none: [0.62, 0.60, 0.64], group: [0.60, 0.60, 0.60]}),
                "initial": {"carry": {"acc": 0.5}}, "registered_seeds": 16, "family": 16}
    (power,) = [g for g in t2.gates if g.kind == "power"]
    assert (power.stage, power.threshold, power.at_most) == ("pilot", 0.5, True)
    q = 0.9481698258
    assert q ** 16 + 16 * q ** 15 * (1 - q) == pytest.approx(0.8, abs=1e-9)
    assert detectable_effect(0.02, 16, 16) == pytest.approx(0.032547, abs=1e-6)
    assert detectable_effect(0.02, 16, 16) > mde(0.02, 16, 16)  # a sign test reads only signs
    expected = detectable_effect(0.02, 16, 16) / 0.11  # 0.032547 / 0.11 = 0.2959
    assert power.value(evidence) == pytest.approx(expected, rel=1e-9)
    assert power.value(evidence) == pytest.approx(0.2959, abs=1e-4) and power.passes(power.value(evidence),
                                                                                       PILOT_MARGIN)  # <= 0.375
    # the same with a gain given directly: 0.032547 / 0.075 = 0.434 > 0.375 (passes 0.5, not with the margin)
    primary = t2.primaries[0]
    direct = power_ratio(primary, lambda e: 0.075)(evidence)
    assert direct == pytest.approx(detectable_effect(0.02, 16, 16) / 0.075, rel=1e-9)
    assert direct == pytest.approx(0.4340, abs=1e-4)
    assert power.passes(direct) and not power.passes(direct, PILOT_MARGIN)
    # 8 registered seeds in the family of 16: a sign test's smallest p, 2 / 2^8 = 0.0078, is not below
    # 0.05 / 16 = 0.003125, so no effect is detectable: the ratio is infinite and the gate fails
    eight = {**evidence, "registered_seeds": 8}
    assert power.value(eight) == math.inf and not power.passes(power.value(eight))
    # no gain, a fall (the mean gain is signed), or one pilot seed (no spread): undefined, so the gate fails
    assert math.isnan(power_ratio(primary, lambda e: 0.0)(evidence))
    fell = {**evidence, "runs": _runs({none: [0.42, 0.40, 0.44], group: [0.40, 0.40, 0.40]})}  # -0.08, -0.10
    assert mean_gain((none, group), {none: "carry", group: "carry"})(fell) == pytest.approx(-0.09)
    assert math.isnan(power.value(fell)) and not power.passes(power.value(fell))
    one = {**evidence, "runs": _runs({none: [0.62], group: [0.60]})}
    value = power_ratio(primary, lambda e: 0.05)(one)
    assert math.isnan(value) and not power.passes(value)


################
# Pilots: registration
################
def _pilot(pilots_dir, name, passed=True, sha=None, gates=()):
    from trl_lite_lab.pilot import pilot_path

    experiment = EXPERIMENTS[name]
    record = {"id": experiment.id, "experiment_sha256": sha or experiment_sha256(experiment),
              "fingerprints": fingerprints(experiment.arms.values()),
              "margin": {"audit": AUDIT_MARGIN, "runs": PILOT_MARGIN, "pilot": PILOT_MARGIN},
              "seeds": experiment.seed_list(pilot=True), "registered_seeds": experiment.seeds, "gates": list(gates),
              "effects": {}, "passed": passed}
    path = pilot_path(str(pilots_dir), experiment)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(record, f)
    return record


def test_pilot_registration_and_the_runner_refusing_unregistered_experiments(tmp_path, monkeypatch):
    from trl_lite_lab.pilot import registration
    from trl_lite_lab.runner import run

    pilots = tmp_path / "pilots"
    experiment = EXPERIMENTS["2"]
    from trl_lite_lab.designs import normalization_t2 as normalization

    assert experiment.seed_list(pilot=True) == [1000, 1001, 1002]
    assert experiment.seed_list() == list(range(normalization.SEEDS)) and experiment.seeds == normalization.SEEDS
    assert registration(experiment, str(pilots)) is None  # no pilot
    with pytest.raises(ValueError, match=r"experiments \['2'\] are not registered"):
        run(["2"], str(tmp_path))
    record = _pilot(pilots, "2")
    assert registration(experiment, str(pilots)) == record and record["passed"]
    # registered: the runner runs its arms (recorded here instead of trained), a quick try with 2 seeds included,
    # each run naming the pilot it ran under
    from trl_lite_lab import runner

    calls = []
    monkeypatch.setattr(runner, "initial_eval", lambda *args, **kwargs: None)
    monkeypatch.setattr(runner, "run_arm", lambda a, seed, out, **kwargs: calls.append((a.name, seed, kwargs["pilots"])))
    monkeypatch.setattr(runner, "is_finished", lambda *args: True)
    assert run(["2"], str(tmp_path), seeds=2)
    assert sorted(calls) == sorted((a.name, seed, {"T2": None}) for a in experiment.arms.values() for seed in (0, 1))
    # but not a second, unregistered experiment named with it
    with pytest.raises(ValueError, match=r"experiments \['1'\] are not registered"):
        run(["2", "1"], str(tmp_path), seeds=2)
    # a pilot made under other definitions registers nothing
    _pilot(pilots, "2", sha="0" * 64)
    assert registration(experiment, str(pilots)) is None
    with pytest.raises(ValueError, match=r"\['2'\] are not registered"):
        run(["2"], str(tmp_path))
    # a failed pilot is on record (a negative pilot) but does not register
    _pilot(pilots, "2", passed=False)
    assert registration(experiment, str(pilots))["passed"] is False
    with pytest.raises(ValueError, match=r"\['2'\] are not registered"):
        run(["2"], str(tmp_path))
    # pilots elsewhere: `pilots_dir`
    _pilot(tmp_path / "elsewhere", "2")
    with pytest.raises(ValueError, match="shard=2/2 is not supported"):
        run(["2"], str(tmp_path), shard=(2, 2), pilots_dir=str(tmp_path / "elsewhere"))


def test_a_pilot_whose_audit_gate_fails_runs_nothing_and_is_a_negative_pilot(tmp_path):
    from trl_lite_lab.design import policy_dir, policy_sha256
    from trl_lite_lab.pilot import pilot, registration

    # the audit is on record (T5 needs the recheck policy's credit link, read off the connective): 0.2 < 0.3, so no
    # margin is even needed
    (tmp_path / "audit.json").write_text(json.dumps({
        "engine_sha256": engine_sha256(), "weights/sumk/recheck": policy_sha256(policy_dir("sumk", "recheck")),
        "fingerprints/sumk/recheck": fingerprints(evaluations=[("sumk", "recheck")]),
        "sumk/recheck/acc": 0.5, "sumk/recheck/connective_link": 0.2}))
    record = pilot("5", str(tmp_path), progress=False)
    assert record["passed"] is False and record["not_run"] and not (tmp_path / "runs").exists()
    (gate,) = record["gates"]
    assert (gate["stage"], gate["kind"], gate["value"], gate["threshold"], gate["margin"]) == (
        "audit", "the connective's credit", 0.2, 0.3, AUDIT_MARGIN)
    assert gate["passed"] is False and gate["passed_with_margin"] is False
    assert registration(EXPERIMENTS["5"], str(tmp_path / "pilots")) == json.loads(
        (tmp_path / "pilots" / "T5.json").read_text())
    # 0.32 passes the gate but not with the audit margin (0.3 + 0.1 * 0.3 = 0.33): still a negative pilot
    audit = json.loads((tmp_path / "audit.json").read_text())
    (tmp_path / "audit.json").write_text(json.dumps({**audit, "sumk/recheck/connective_link": 0.32}))
    (gate,) = pilot("5", str(tmp_path), progress=False)["gates"]
    assert gate["passed"] is True and gate["passed_with_margin"] is False


################
# Verdicts: why an experiment is untestable
################
def _row(name, stage, kind, value, threshold, at_most=False, passed=False):
    return {"name": name, "stage": stage, "kind": kind, "value": value, "threshold": threshold, "at_most": at_most,
            "passed": passed, "passed_with_margin": passed}


def test_untestable_reason():
    from trl_lite_lab.verdicts import untestable_reason

    assert untestable_reason({"registered": False, "pilot": None}).startswith("untestable (no pilot): ")
    pilot = {"passed": False, "gates": [_row("mostly-easy pass", "audit", "the audit", 0.95, 0.7, passed=True),
                                        _row("off: gain", "runs", "gain", 0.01, 0.03),
                                        _row("T2: power", "pilot", "power", 0.7, 0.5, at_most=True)]}
    assert untestable_reason({"registered": False, "pilot": pilot}) == (
        "untestable (negative pilot: gain, power): off: gain = 0.010 on the pilot, needs >= 0.03 with a margin; "
        "T2: power = 0.700 on the pilot, needs <= 0.5 with a margin")
    # registered, but a runs gate failed on the registered seeds: a signed gain, an arm that fell by 0.05
    gates = [_row("mostly-easy pass", "audit", "the audit", 0.95, 0.7, passed=True),
             _row("off: gain", "runs", "gain", -0.05, 0.03), _row("off: rise", "runs", "gain", 0.02, 0.0, passed=True)]
    reason = untestable_reason({"registered": True, "pilot": {"passed": True}, "gates": gates})
    assert reason.startswith("untestable (gain)") and reason == "untestable (gain): off: gain = -0.050, needs >= 0.03"
    # two kinds failed: both named, once each (two failed gain gates name "gain" once)
    gates += [_row("on: rise", "runs", "gain", -0.01, 0.0), _row("band", "runs", "the clip band", 0.001, 0.01)]
    assert untestable_reason({"registered": True, "pilot": {}, "gates": gates}) == (
        "untestable (gain, the clip band): off: gain = -0.050, needs >= 0.03; on: rise = -0.010, needs >= 0.0; "
        "band = 0.001, needs >= 0.01")
    assert untestable_reason({"registered": True, "pilot": {}, "gates": gates[:1]}) is None


def test_the_holm_family_is_every_registered_experiments_primary_tests():
    from trl_lite_lab.verdicts import family_size as registered_family

    records = {name: None for name in EXPERIMENTS.names()}
    records.update({"1": {"passed": True}, "3": {"passed": True}, "2": {"passed": False}})
    # T1 has 1 primary test, T3 3; T2's pilot failed, the others have none -> 1 + 3 = 4
    assert registered_family(records) == 4
    # every designed test: T1 1, T2 1, T3 3, T4 2, clip scaling 2, T5 1, T6 1, T7 1, T8 2, the headline 2 -> 16
    assert registered_family({name: {"passed": True} for name in EXPERIMENTS.names()}) == family_size() == 16


################
# The pre-registration table
################
def test_preregistration_has_one_row_per_experiment_naming_its_design_module():
    from trl_lite_lab.report import preregistration

    lines = preregistration().splitlines()
    assert lines[0].startswith("| experiment | arms |") and lines[1].startswith("|---")
    rows = lines[2:]
    assert len(rows) == len(EXPERIMENTS.names()) == 10
    modules = {"T1": "normalization_t1", "T2": "normalization_t2", "T3": "normalization_t3", "T4": "clip",
               "clip-scaling": "clip_scaling", "T5": "connectives", "T6": "aggregation", "T7": "overlong", "T8": "overlong",
               "headline": "headline"}
    for row, name in zip(rows, EXPERIMENTS.names()):
        experiment = EXPERIMENTS[name]
        assert row.startswith(f"| {experiment.id}: {experiment.title} |")
        assert f"`lab/trl_lite_lab/designs/{modules[experiment.id]}.py` `{experiment_sha256(experiment)[:12]}`" in row
        # seeds (pilot seeds), and the registered seeds where they do not start at 0 (clip scaling's 5000-5063)
        first = {"clip-scaling": ", seeds 5000-5063"}.get(experiment.id, "")
        assert f"| {experiment.seeds} ({experiment.pilot_seeds}){first} |" in row
        assert all(f"`{p.name}`" in row for p in experiment.primaries)
    assert len(preregistration(["5"]).splitlines()) == 3


################
# Provenance: what each result was made under
################
def test_engine_modules():
    engine = set(provenance.engine_modules())
    # the lab's own modules only: trl-lite's source is not hashed (its behaviour is fingerprinted instead)
    assert engine == {"audit", "carry", "design", "fingerprint", "measure", "pilot", "provenance", "results", "runner",
                      "stats", "sumk", "training", "verdicts"}
    assert not {"report", "cli", "experiments", ""} & engine
    assert not [name for name in engine if name.startswith("designs")]
    assert provenance.engine_modules() == sorted(engine)  # sorted, so the hash does not depend on a walk's order


def test_experiment_hashes_by_hand_and_distinct():
    hashes = {name: experiment_sha256(EXPERIMENTS[name]) for name in EXPERIMENTS.names()}
    assert len(set(hashes.values())) == 10  # T7 and T8 share a module: the id is hashed in
    assert all(len(h) == 64 for h in hashes.values()) and len(engine_sha256()) == 64
    # T2: sha256(engine + "\0" + sha256(name "\0" bytes "\0" of each of its design modules, sorted by name: the
    # shared `normalization` and its own `normalization_t2`) + "\0" + "T2")
    design = hashlib.sha256()
    for name in ("designs.normalization", "designs.normalization_t2"):
        with open(provenance.modules()[name], "rb") as f:
            design.update(name.encode() + b"\0" + f.read() + b"\0")
    expected = hashlib.sha256(f"{engine_sha256()}\0{design.hexdigest()}\0T2".encode()).hexdigest()
    assert hashes["2"] == expected


def _changed(monkeypatch, tmp_path, module: str) -> dict[str, str]:
    """Every experiment's hash with `module`'s file replaced by a copy with one more comment line."""
    files = dict(provenance.modules())
    copy = tmp_path / (module.replace(".", "_") + ".py")
    with open(files[module], "rb") as f:
        copy.write_bytes(f.read() + b"\n# changed\n")
    files[module] = str(copy)
    with monkeypatch.context() as patch:
        patch.setattr(provenance, "modules", lambda: files)
        return {name: experiment_sha256(EXPERIMENTS[name]) for name in EXPERIMENTS.names()} | {
            "engine": engine_sha256()}


def _changed_names(before: dict, after: dict) -> set[str]:
    return {name for name in before if before[name] != after[name]}


@pytest.fixture
def hashes():
    return {name: experiment_sha256(EXPERIMENTS[name]) for name in EXPERIMENTS.names()} | {"engine": engine_sha256()}


@pytest.mark.parametrize("module, names, own", [
    # what T1-T3 share (arms, mixes, gates): a change there is a change to all three; each has its own module besides,
    # so redesigning T3 leaves T1's and T2's runs and pilots valid
    ("designs.normalization", {"1", "2", "3"}, set()),
    ("designs.normalization_t1", {"1"}, {"1"}),
    ("designs.normalization_t3", {"3"}, {"3"}),
    ("designs.overlong", {"7", "8"}, {"7", "8"}),
    ("designs.aggregation", {"6"}, {"6"}),
    # clip scaling's own module since version 3.1 (it imports no other design module): T4 and T5 keep their hashes
    ("designs.clip_scaling", {"clip-scaling"}, {"clip-scaling"}),
    # T5's own since version 3.1 (it no longer imports T4's `clip`), so redesigning it left T4's runs valid
    ("designs.connectives", {"5"}, {"5"}),
    ("designs.clip", {"4"}, {"4"}),
])
def test_a_design_module_change_changes_exactly_its_experiments_hashes(monkeypatch, tmp_path, hashes, module, names,
                                                                       own):
    assert _changed_names(hashes, _changed(monkeypatch, tmp_path, module)) == names
    assert {n for n in EXPERIMENTS.names() if EXPERIMENTS[n].design == module.replace(".", "/") + ".py"} == own


def test_an_engine_change_changes_every_hash_and_the_report_none(monkeypatch, tmp_path, hashes):
    everything = set(EXPERIMENTS.names()) | {"engine"}
    assert _changed_names(hashes, _changed(monkeypatch, tmp_path, "stats")) == everything
    assert _changed_names(hashes, _changed(monkeypatch, tmp_path, "sumk")) == everything
    # the carry rules decide verdicts (an earlier summary's entry stands in for runs): inside the engine
    assert _changed_names(hashes, _changed(monkeypatch, tmp_path, "carry")) == everything
    # the report's formatting, the command line and the loader decide no verdict
    for module in ("report", "cli", "experiments"):
        assert _changed_names(hashes, _changed(monkeypatch, tmp_path, module)) == set()
    assert _changed(monkeypatch, tmp_path, "report") == hashes  # and the patch was undone


def test_a_design_module_change_changes_the_hashes_of_the_experiments_that_import_it(monkeypatch, tmp_path, hashes):
    # T1-T3 import the shared normalization module; T5, which imported T4's module until version 3.1, imports none
    assert "designs.normalization" in provenance.imports("designs.normalization_t2")
    assert _changed_names(hashes, _changed(monkeypatch, tmp_path, "designs.normalization")) == {"1", "2", "3"}
    assert not [m for m in provenance.imports("designs.connectives") if m.startswith("designs.")]
    assert _changed_names(hashes, _changed(monkeypatch, tmp_path, "designs.clip")) == {"4"}


################
# Import cycles in the lab
################
def _reaches(name: str) -> set[str]:
    seen, todo = set(), list(provenance.imports(name))
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(provenance.imports(module))
    return seen


def test_no_module_of_the_lab_imports_itself():
    assert {"runner", "pilot", "carry", "verdicts"} <= set(provenance.modules())
    # the runner reads a pilot's registration from results.py, so it no longer reaches the pilot (which runs it)
    assert "pilot" not in _reaches("runner") and "runner" in _reaches("pilot")
    cyclic = sorted(name for name in provenance.modules() if name in _reaches(name))
    assert cyclic == []


def test_fingerprint_comparison_tolerances_and_what_it_names():
    from trl_lite_lab.fingerprint import ATOL, RTOL, differences

    recorded = {"advantages": [0.5, -0.5], "steps": [{"loss": 0.2, "grad_norm": 1.0}], "weights": [0.1, 2.0],
                "config": {"max_grad_norm": 1.0, "beta": 0.0}}
    # within the tolerances: float noise in the trained parts (2e-3 relative < RTOL), a field a newer transformers
    # adds to the config
    noisy = {**recorded, "steps": [{"loss": 0.2 * (1 + 2e-3), "grad_norm": 1.0}],
             "config": {**recorded["config"], "new_field": 1}}
    assert RTOL == 1e-2 and ATOL == 1e-7 and differences(recorded, noisy) == []
    # the advantages are compared to 1e-9 relative and 1e-12 absolute: 9e-8 apart is a difference (RTOL would pass it)
    moved = {**recorded, "advantages": [0.5 + 9e-8, -0.5]}
    assert differences(recorded, moved) == ["advantages[0]: 0.5 -> 0.50000009"]
    # each differing part names where it first differs, and both values
    changed = {**recorded, "steps": [{"loss": 0.2, "grad_norm": 1.5}], "config": {"max_grad_norm": 0.1, "beta": 0.0}}
    assert differences(recorded, changed) == ["config.max_grad_norm: 1.0 -> 0.1", "steps[0].grad_norm: 1.0 -> 1.5"]
    assert differences(recorded, {k: v for k, v in recorded.items() if k != "weights"}) == ["weights: not computed now"]
    assert differences({"weights": [1.0]}, {"weights": [1.0], "config": {}}) == ["config: not recorded"]

