"""The truncation rule (trl_lite/truncation.py) on hand-made completions: cut by the length limit, or not."""

from trl_lite.truncation import stop_strings, truncated_flags

EOS, PAD = 9, 0
TEXT = {1: "a", 2: "b", 3: "e", 4: "1", EOS: "", PAD: ""}


def _decode(ids):
    return "".join(TEXT[i] for i in ids)


def test_the_length_limit_without_eos_is_a_cut():
    completions = [[1, 2, 1], [1, 2, EOS], [1, 2], [1, 2, PAD], []]
    # full length, no EOS: cut; EOS last: finished; shorter: finished (EOS or a stop); the padding token sampled last
    # at full length is still a cut (TRL's rule calls it finished); empty: nothing to cut
    assert truncated_flags(completions, {EOS}, max_length=3) == [True, False, False, True, False]


def test_a_stop_string_on_the_last_allowed_token_is_not_a_cut():
    # max_length 3, stop "e": [1, 2, 3] decodes to "abe", which vLLM ends with finish_reason "stop" although the limit
    # was reached too; [1, 3, 2] ("aeb") cannot be generated past "e" by vLLM, but the rule reads the text alone and
    # calls it finished as well; [1, 2, 1] ("aba") holds no stop string: cut
    completions = [[1, 2, 3], [1, 3, 2], [1, 2, 1]]
    assert truncated_flags(completions, {EOS}, 3, stops=["e", "1"], decode=_decode) == [False, False, True]
    assert truncated_flags(completions, {EOS}, 3) == [True, True, True]  # without stop strings, the length decides


def test_stop_strings_from_either_generation_api():
    assert stop_strings(None) == [] and stop_strings({"temperature": 1.0}) == []
    assert stop_strings({"stop": ["e", "1"]}) == ["e", "1"]  # vLLM's SamplingParams
    assert stop_strings({"stop": "e", "stop_strings": ["\n\n"]}) == ["e", "\n\n"]  # a string, and transformers'
    assert stop_strings({"stop": [""]}) == []  # an empty string stops nothing
