# %% [markdown]
# # Lite PPO in a notebook
# Builds `LitePPOTrainer(...)` directly in Python on the built-in arithmetic task with the small policy shipped in
# the package. Runs offline on CPU in about a minute: `python examples/notebook_quickstart.py`, or cell by cell in
# Jupyter/VS Code (the `# %%` markers are cells).

# %%
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from trl_lite import LitePPOConfig, LitePPOTrainer
from trl_lite.tasks.arithmetic import arithmetic_dataset, embedded_policy_path, exact_answer_reward, pass_rate

# %% The data: prompts in the math datasets' chat schema, a gold answer, an exact-answer reward on \boxed{}
train_set = arithmetic_dataset("hard", split="train")
test_set = arithmetic_dataset("hard", split="test", num_per_level=200)
print(train_set[0])

# %% The policy
model = AutoModelForCausalLM.from_pretrained(embedded_policy_path())
tokenizer = AutoTokenizer.from_pretrained(embedded_policy_path())
print("sampled accuracy before:", pass_rate(model, tokenizer, test_set, greedy=False))

# %% Lite PPO: the config's defaults are the paper's (group mean, batch std, token-level loss, clip 0.2)
args = LitePPOConfig(
    output_dir="runs/notebook-lite-ppo",
    per_device_train_batch_size=64,  # 8 prompts x 8 completions per step
    num_generations=8,
    max_completion_length=14,  # "\boxed{1098}" and EOS
    learning_rate=1e-4,
    max_steps=80,
    logging_steps=20,
    report_to="none",
    use_cpu=not torch.cuda.is_available(),
    bf16=False,
)
trainer = LitePPOTrainer(
    model=model, reward_funcs=exact_answer_reward, args=args, train_dataset=train_set, processing_class=tokenizer
)
trainer.train()

# %% Held-out accuracy after, and the saved model with its card (output_dir/README.md)
print("sampled accuracy after:", pass_rate(trainer.model, tokenizer, test_set, greedy=False))
trainer.save_model()
