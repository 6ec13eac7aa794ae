"""The shape of the tiny T5-style text encoders (T5 for SD3 and FLUX, UMT5 for Wan): one layer, small enough
to build in a second, with the word tokenizer's special tokens."""

from __future__ import annotations


def tiny_t5_config(vocab_size: int, hidden: int) -> dict[str, int]:
    """Keyword arguments for T5Config or UMT5Config."""
    return {
        "vocab_size": vocab_size,
        "d_model": hidden,
        "d_kv": 8,
        "d_ff": 64,
        "num_layers": 1,
        "num_heads": 4,
        "pad_token_id": 0,
        "eos_token_id": 3,
        "decoder_start_token_id": 0,
    }
