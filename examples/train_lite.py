"""Train a policy with Lite PPO (arXiv 2508.08221): the main job, `trl-lite train`, run from a clone.

This file is a thin launcher for `trl_lite.train`, so the program is the same whether it is installed or cloned:

    python examples/train_lite.py                       # the CPU demo (about a minute on 2 cores)
    python examples/train_lite.py --max_steps 20        # the demo for 20 steps: each flag overrides its own field
    accelerate launch examples/train_lite.py            # the same under accelerate
    accelerate launch --config_file trl_lite/accelerate_configs/deepspeed_zero3.yaml examples/train_lite.py \
        --config lite_ppo_qwen3_4b_base                 # a paper recipe shipped in trl_lite/recipe_configs

`python examples/train_lite.py --help` lists every flag; the module docstring of `trl_lite/train.py` explains the
defaults, recipes, resume and launching.
"""

import sys

from trl_lite.train import run

if __name__ == "__main__":
    run(sys.argv[1:])
