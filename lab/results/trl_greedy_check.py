"""Does TRL's own GRPOTrainer also lower the aligned-like SUM-k policy's greedy accuracy? (lab/results/README.md)

    python lab/results/trl_greedy_check.py trl 60 1e-4     # TRL GRPOTrainer (loss_type dapo, batch std)
    python lab/results/trl_greedy_check.py lite 60 1e-4    # LitePPOTrainer, the same settings

Measured 2026-11-23 (2-core CI box), trl, 60 steps, lr 1e-4, on 500 held-out k = 2-3 problems at 40 tokens:
- the 3,000-step aligned-like policy: greedy 0.542 -> 0.470, sampled 0.244 -> 0.240 (TRL could not raise it either);
- the shipped 8,000-step one: greedy 0.890 -> 0.914, sampled 0.660 -> 0.774 (the main job's `--task sumk`, LitePPO
  at 96 tokens: 0.890 -> 0.902 and 0.660 -> 0.776).
"""
import sys, torch
torch.set_num_threads(1)
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig, GRPOTrainer
from trl_lite import LitePPOConfig, LitePPOTrainer
from trl_lite.tasks.sumk import sumk_dataset, sumk_policy_path
from trl_lite.tasks.arithmetic import exact_answer_reward, pass_rate
which = sys.argv[1]
p = sumk_policy_path("aligned"); tok = AutoTokenizer.from_pretrained(p); model = AutoModelForCausalLM.from_pretrained(p)
train = sumk_dataset(5000, split="train", ks=(2, 3), seed=0); ev = sumk_dataset(500, split="test", ks=(2, 3), seed=0)
common = dict(output_dir=f"/tmp/chk_{which}", max_steps=int(sys.argv[2]), per_device_train_batch_size=32, steps_per_generation=2,
              num_generations=8, max_completion_length=40, learning_rate=float(sys.argv[3]), temperature=1.0, report_to="none",
              save_strategy="no", bf16=False, use_cpu=True, lr_scheduler_type="constant", seed=0, disable_tqdm=True, logging_steps=10, beta=0.0)
if which == "trl":
    tr = GRPOTrainer(model=model, reward_funcs=[exact_answer_reward], args=GRPOConfig(**common, loss_type="dapo", scale_rewards="batch"), train_dataset=train, processing_class=tok)
else:
    tr = LitePPOTrainer(model=model, reward_funcs=[exact_answer_reward], args=LitePPOConfig(**common), train_dataset=train, processing_class=tok)
print("before", pass_rate(model, tok, ev, greedy=True, max_new_tokens=40), pass_rate(model, tok, ev, greedy=False, max_new_tokens=40))
tr.train()
print("after", pass_rate(tr.model, tok, ev, greedy=True, max_new_tokens=40), pass_rate(tr.model, tok, ev, greedy=False, max_new_tokens=40))
print([round(h["reward"],2) for h in tr.state.log_history if "reward" in h])
