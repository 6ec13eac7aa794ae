"""A word-level tokenizer built offline from a word list: the tiny models' (and tests') stand-in
for a real BPE tokenizer, saved and loaded through the same ``AutoTokenizer`` path."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

SPECIAL_TOKENS = ["<pad>", "<unk>", "<bos>", "<eos>"]  # ids 0, 1, 2, 3


def word_tokenizer(words: list[str], max_tokens: int) -> PreTrainedTokenizerFast:
    """``<bos> words <eos>``, lower-cased, split on whitespace; unknown words map to ``<unk>``."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {word: index for index, word in enumerate(SPECIAL_TOKENS + sorted(set(words) - set(SPECIAL_TOKENS)))}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<bos> $A <eos>", special_tokens=[("<bos>", vocab["<bos>"]), ("<eos>", vocab["<eos>"])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token="<pad>",
        unk_token="<unk>",
        bos_token="<bos>",
        eos_token="<eos>",
        model_max_length=max_tokens,
    )
