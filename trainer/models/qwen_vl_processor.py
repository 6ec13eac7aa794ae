"""Qwen2-VL's processor for images only: what an edit pipeline's prompt encoding calls.

transformers' ``Qwen2VLProcessor`` also holds a video processor, and the class checks for one whenever it is
built; video processors need torchvision, which the trainer does not install. Edit prompts carry images only, so
this subclass holds the image processor and the tokenizer; its ``__call__`` (the image processor's patches and the
expansion of ``<|image_pad|>`` into one token per merged patch) is ``Qwen2VLProcessor``'s own.
"""

from __future__ import annotations

from typing import Any

from transformers import Qwen2VLProcessor
from transformers.processing_utils import ProcessorMixin


class QwenImagesProcessor(Qwen2VLProcessor):
    """``Qwen2VLProcessor`` without its video processor; loads from a checkpoint's ``processor`` folder."""

    def __init__(self, image_processor: Any = None, tokenizer: Any = None, chat_template: str | None = None) -> None:
        self.image_token = "<|image_pad|>"
        self.video_token = "<|video_pad|>"
        self.image_token_id = tokenizer.convert_tokens_to_ids(self.image_token)
        self.video_token_id = tokenizer.convert_tokens_to_ids(self.video_token)
        ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)
