"""Builds a lab policy's sharpened copy: the same weights with the output logits divided by a temperature, so that
sampled at temperature 1 it is the source policy sampled at that temperature (lower entropy, the same most likely
token at every step). Deterministic: no data, no seed.

T4's aligned-like policy (version 3.1, `lab/trl_lite_lab/designs/clip.py`) is `arith_carry_small` sharpened to 0.6:

    python lab/scripts/sharpen_policy.py --task add --policy carry-small --temperature 0.6 \\
        --output lab/trl_lite_lab/policies/arith_carry_small_sharp

The lab's policies are Llamas with the output layer tied to the embeddings, so the logits are scaled through the final
RMSNorm's weight (logits = W_emb (g * x_normed); g / T gives logits / T) and the embeddings are left alone.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def sharpen(source: str, output: str, temperature: float) -> None:
    """Writes `source`'s policy (a folder) with its logits divided by `temperature` into `output`; every file but the
    weights is copied byte for byte (config, tokenizer, chat template)."""
    import shutil

    import torch
    from transformers import AutoModelForCausalLM

    if not 0.0 < temperature < float("inf"):
        raise ValueError(f"temperature={temperature!r} is not supported; expected a finite number > 0.")
    model = AutoModelForCausalLM.from_pretrained(source)
    if not model.config.tie_word_embeddings or getattr(model.lm_head, "bias", None) is not None:
        raise ValueError(f"{source}: expected an output layer tied to the embeddings, without a bias")
    with torch.no_grad():
        model.model.norm.weight.mul_(1.0 / temperature)
    model.save_pretrained(output)
    for name in os.listdir(source):
        if name != "model.safetensors" and os.path.isfile(os.path.join(source, name)):
            shutil.copyfile(os.path.join(source, name), os.path.join(output, name))


def main() -> None:
    from trl_lite_lab.design import policy_dir

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="add")
    parser.add_argument("--policy", default="carry-small")
    parser.add_argument("--temperature", type=float, default=0.6)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    sharpen(policy_dir(args.task, args.policy), args.output, args.temperature)
    print(f"saved {args.task}/{args.policy} sharpened to temperature {args.temperature} in {args.output}")


if __name__ == "__main__":
    main()
