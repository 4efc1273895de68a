"""Builders for a tiny local policy, datasets, rewards and deterministic rollouts, shared by the tests and bench/."""

from __future__ import annotations

import hashlib
import logging
import string
import time

import torch
from datasets import Dataset
from transformers import LlamaConfig, LlamaForCausalLM, TrainerCallback

from trl_lite import LitePPOTrainer
from trl_lite.tasks.char_tokenizer import char_tokenizer
from trl_lite.teardown import finish

CHARS = string.digits + "+-=? abc"
CHAT_TEMPLATE = "{% for m in messages %}{{ m['content'] }}{% endfor %}{% if add_generation_prompt %}={% endif %}"


def build_tokenizer():
    return char_tokenizer(CHARS, CHAT_TEMPLATE)


def build_tiny_model(path, seed: int = 0) -> str:
    """Saves a 2-layer Llama (a few thousand parameters) and its tokenizer to `path`; returns the path as a string."""
    tokenizer = build_tokenizer()
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,  # tiny so a training step takes milliseconds on CPU
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


class StepClock(TrainerCallback):
    """Times each optimizer step by the wall clock, from one `on_step_end` to the next (the first from
    `on_train_begin`): generation, loss, backward, the optimizer step and the logging of the step before, where
    trl-lite reduces its diagnostics. TRL's own `step_time` metric times `training_step` alone, without the optimizer
    step and the logging. With CUDA, each mark waits for the GPU (`torch.cuda.synchronize`)."""

    def __init__(self):
        self.ends = []

    def _mark(self):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        self.ends.append(time.perf_counter())

    def on_train_begin(self, args, state, control, **kwargs):
        self.ends = []
        self._mark()

    def on_step_end(self, args, state, control, **kwargs):
        self._mark()

    def step_times(self) -> list[float]:
        return [b - a for a, b in zip(self.ends, self.ends[1:])]


class LogRecords(logging.Handler):
    """Keeps the messages of the records a logger emits (add it with `logging.getLogger(name).addHandler`)."""

    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def leave_process_group() -> None:
    """End of a torchrun script: leave the process group and end the process without interpreter teardown, as the main
    job does (`trl_lite.teardown.finish`: gloo's threads outlive `destroy_process_group()` once DDP has run, and a
    finished process could abort with SIGABRT at teardown). Returns on a single process."""
    finish(0)


def prompt_dataset(num_prompts: int = 8, conversational: bool = False) -> Dataset:
    prompts = [f"{a}+{b}?" for a, b in zip(range(num_prompts), range(3, 3 + num_prompts))]
    if conversational:
        return Dataset.from_dict({"prompt": [[{"role": "user", "content": p}] for p in prompts]})
    return Dataset.from_dict({"prompt": prompts})


def _text(completion) -> str:
    return completion if isinstance(completion, str) else completion[-1]["content"]


def reward_digit_count(completions, **kwargs) -> list[float]:
    """A graded reward: how many digits the completion holds."""
    return [float(sum(ch.isdigit() for ch in _text(c))) for c in completions]


def reward_has_seven(completions, **kwargs) -> list[float]:
    """A {0, 1} reward: 1 when the completion contains a '7'."""
    return [float("7" in _text(c)) for c in completions]


def deterministic_rollout(prompts, trainer) -> dict:
    """A `rollout_func` whose completions depend only on (prompt, occurrence within the local batch).

    The same prompt groups give the same completions however the batch is split over processes or micro-batches,
    so runs can be compared exactly. Lengths vary and some completions end without EOS (truncated at
    `max_completion_length`), so masks, filters and aggregations all have work to do.
    """
    tokenizer = trainer.processing_class
    max_len = trainer.max_completion_length
    token_ids = tokenizer.convert_tokens_to_ids(list(CHARS))
    seen: dict[str, int] = {}
    prompt_ids, completion_ids, logprobs = [], [], []
    for prompt in prompts:
        text = prompt if isinstance(prompt, str) else tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
        occurrence = seen.get(text, 0)
        seen[text] = occurrence + 1
        digest = hashlib.sha256(f"{text}|{occurrence}".encode()).digest()
        if digest[-1] % 4 == 0:  # a quarter run to max_len without EOS: truncated
            ids = [token_ids[b % len(token_ids)] for b in digest[:max_len]]
        else:  # 1..max_len-1 tokens, then EOS
            length = 1 + digest[0] % (max_len - 1)
            ids = [token_ids[b % len(token_ids)] for b in digest[1 : 1 + length]] + [tokenizer.eos_token_id]
        prompt_ids.append(tokenizer(text, add_special_tokens=False)["input_ids"])
        completion_ids.append(ids)
        logprobs.append([0.0] * len(ids))
    return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": logprobs}


def train_run(trainer_cls, config_cls, model_dir, output_dir, **fields):
    """Builds one trainer on the tiny task and trains it. Comparisons must train each run before building the next:
    a trainer seeds the global RNG when it is built."""
    args = config_cls(**train_args(output_dir, **fields))
    trainer = trainer_cls(model=model_dir, reward_funcs=reward_digit_count, args=args, train_dataset=prompt_dataset())
    trainer.train()
    return trainer


def assert_same_weights(a, b, atol=1e-6):
    first, second = snapshot(a.model), snapshot(b.model)
    for name in first:
        torch.testing.assert_close(first[name], second[name], rtol=0, atol=atol, msg=name)


def snapshot(model) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone().double() for name, p in model.named_parameters()}



def train_args(output_dir, **overrides) -> dict:
    """Common settings for CPU runs. Every shrunk value is there to keep a run to about a second."""
    defaults = dict(
        output_dir=str(output_dir),
        per_device_train_batch_size=4,  # one group of num_generations=4 per micro-batch
        num_generations=4,
        max_completion_length=8,  # short completions: a few ms per generation on CPU
        max_steps=2,
        learning_rate=0.5,  # large, so a scale error shows up in the parameters
        optim="sgd",  # no Adam normalisation hiding a gradient scale error
        lr_scheduler_type="constant",
        report_to="none",
        use_cpu=True,
        # float32 on both sides of a parity test: TRL turns an unset bf16 on (CPU autocast under use_cpu), while
        # LitePPOConfig resolves it off without an accelerator
        bf16=False,
        logging_steps=1,
        save_strategy="no",
        seed=0,
    )
    return {**defaults, **overrides}


class RecordingTrainer(LitePPOTrainer):
    """Keeps what each generation round produced, for the assertions."""

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        self.rounds = getattr(self, "rounds", [])
        self.rounds.append(
            {
                "rewards": self._lite_rewards_per_func[:, 0].clone(),
                "truncated": self._lite_truncated.clone(),
                "advantages": output["advantages"].clone(),
                "completion_mask": output["completion_mask"].clone(),
            }
        )
        return output


# ------------------------------------------------------------------ dynamic sampling
GROUP = 4


def uniform_or_mixed(prompts, completions, **kwargs):
    """Prompts with an 'a' always score 1 (a uniform group); the others alternate 0, 1 by position (mixed)."""
    return [1.0 if "a" in prompt else float(i % 2) for i, prompt in enumerate(prompts)]


def uniform_or_mixed_dataset(uniform: int, mixed: int) -> Dataset:
    return Dataset.from_dict({"prompt": [f"a{i}?" for i in range(uniform)] + [f"b{i}?" for i in range(mixed)]})


class DynamicRecorder(LitePPOTrainer):
    """Keeps the prompt and reward of every generated group (per round) and of every trained group (per step)."""

    def _score_round(self, inputs):
        output = super()._score_round(inputs)
        self.generated = getattr(self, "generated", [])
        prompts = self.processing_class.batch_decode(output["prompt_ids"], skip_special_tokens=True)
        self.generated.append(list(zip(prompts[::GROUP], output["lite_rewards"].view(-1, GROUP).tolist())))
        return output

    def _compute_loss(self, model, inputs):
        self.trained = getattr(self, "trained", [])
        prompts = self.processing_class.batch_decode(inputs["prompt_ids"], skip_special_tokens=True)
        self.trained.append((prompts, inputs["lite_trainable"].tolist(), inputs["completion_mask"].sum(-1).tolist()))
        return super()._compute_loss(model, inputs)


# ------------------------------------------------------------------ a real architecture: Qwen3 + byte-level BPE
QWEN3_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>",
                  "<tool_response>", "</tool_response>"]
_BPE_CORPUS = [
    "Please reason step by step, and put your final answer within \\boxed{}.",
    "Let x = 3. Then 2x + 5 = 11, so the answer is \\boxed{11}.",
    "We compute \\frac{1}{2} + \\frac{1}{3} = \\frac{5}{6}. Therefore the answer is \\boxed{\\frac{5}{6}}.",
    "If n is even, then n^2 is even; thus \\sqrt{16} = 4 and the sum is \\boxed{4}.",
    '{"name": "count", "arguments": {"digit": "7"}}',
    "What is the remainder when 2^{10} is divided by 7? The answer is 2.",
] * 20


def build_qwen3_tokenizer():
    """A byte-level BPE tokenizer trained here on a few math sentences (about 400 tokens), with Qwen3's special tokens
    and Qwen3's chat template (TRL's copy, which TRL recognises for tool calling and response parsing)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen3_chat_template

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=QWEN3_SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    backend.train_from_iterator(_BPE_CORPUS, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        padding_side="left")
    tokenizer.chat_template = qwen3_chat_template
    return tokenizer


QWEN3_TINY = dict(  # tiny: a training step in milliseconds on CPU
    hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=16,
)


def build_qwen3_model(path, seed: int = 0, **size) -> str:
    """Saves a Qwen3 with the byte-level BPE tokenizer to `path` (by default 2 layers, about 30k parameters; `size`
    overrides `QWEN3_TINY`'s fields, e.g. for `scripts/gpu_check.py`); returns the path."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tokenizer = build_qwen3_tokenizer()
    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        **{**QWEN3_TINY, **size},
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,  # as Qwen3-0.6B/1.7B/4B
    )
    model = Qwen3ForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)
