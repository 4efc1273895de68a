"""How many tokens the high clip bound can act on at all, for the lab's two SUM-k policies (Takeaways 4-5).

A token sampled with probability p has ratio pi / pi_old <= 1 / p, so with a positive advantage it can be clipped at
the high bound only if p < 1 / (1 + epsilon_high): 0.833 at 0.2, 0.781 at 0.28, and only if its advantage is positive
(reward above its group's mean). This samples 500 training prompts x 8 completions of each initial policy (temperature
1, the loose length) and reports the share of completion tokens (EOS not counted) below those thresholds, the share in
completions with a positive advantage, and both at once: the most the high bound could clip at 0.2. The clip census of
short runs with more updates per batch is in bench/lab/README.md.

    python bench/lab/clip_ceiling.py [--prompts 500]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from trl_lite.lab.experiments import LOOSE  # noqa: E402
from trl_lite.lab.measure import mean, sample_completions, sample_rewards, token_measures  # noqa: E402
from trl_lite.tasks.sumk import sumk_dataset, sumk_policy_path  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=500)
    args = parser.parse_args()
    data = sumk_dataset(args.prompts, split="train", seed=0)
    prompts = list(data["prompt"])
    print("| policy | accuracy | tokens | p < 0.833 | p < 0.781 | A > 0 | p < 0.833 and A > 0 | mean p "
          "| entropy (nats) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kind in ("base", "aligned"):
        path = sumk_policy_path(kind)
        model, tokenizer = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
        groups = sample_completions(model, tokenizer, prompts, samples=8, max_new_tokens=LOOSE, seed=0)
        rows = [(prompt, ids) for prompt, group in zip(prompts, groups) for ids, _ in group]
        rewards = sample_rewards(groups, data["answer"], tokenizer)
        positive = [r > mean(group) for group in rewards for r in group]  # A > 0 under any mean-subtracting scheme
        measures = token_measures(model, tokenizer, [p for p, _ in rows], [ids for _, ids in rows])
        probs, entropy = measures["prob"], measures["entropy"]
        up = [pos for (_, ids), pos in zip(rows, positive) for _ in ids]  # per token: its completion's A > 0
        share = lambda eps: mean([p < 1 / (1 + eps) for p in probs])  # noqa: E731
        both = mean([p < 1 / 1.2 and u for p, u in zip(probs, up)])
        print(f"| {kind} | {mean([r for g in rewards for r in g]):.3f} | {len(probs)} | {share(0.2):.3f} | "
              f"{share(0.28):.3f} | {mean(up):.3f} | {both:.3f} | {mean(probs):.3f} | {mean(entropy):.3f} |")


if __name__ == "__main__":
    main()
