"""A character-level tokenizer built locally (no Hub), for the embedded policy and the tests' tiny models."""

from __future__ import annotations

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>"]


def char_tokenizer(chars: str, chat_template: str) -> PreTrainedTokenizerFast:
    """One token per character of `chars` (duplicates dropped) after the specials `<pad> <eos> <bos> <unk>`; left
    padding, as TRL's GRPOTrainer expects."""
    vocab = {tok: i for i, tok in enumerate(SPECIALS + list(dict.fromkeys(chars)))}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    backend.decoder = decoders.Fuse()  # join characters without spaces
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", eos_token="<eos>",
                                        bos_token="<bos>", unk_token="<unk>", padding_side="left")
    tokenizer.chat_template = chat_template
    return tokenizer
