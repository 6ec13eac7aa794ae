"""The ``ocr`` reward: how well the image shows the text the prompt quotes, as flow_grpo scores text rendering.

flow_grpo (flow_grpo/ocr.py, ``OcrScorer``) takes the target as the text between the prompt's first pair of double
quotes, removes spaces from it and from the recognised text and lowercases both; the distance is 0 when the target
appears in the recognised text, else their Levenshtein distance, capped at the target's length; the score is
1 − distance / len(target), in [0, 1]. flow_grpo recognises with PaddleOCR; this reward uses Tesseract (the OS
package ``tesseract-ocr``, through ``pytesseract``), one process per image, several at once.

A prompt that quotes no text scores 0 for every image (no advantage signal). The sub-score ``exact`` is 1 where the
target was found whole.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytesseract
import torch
from PIL import Image

from trainer.spec.ocr_prompt_file import quoted_target

# One text block (Tesseract's page segmentation mode 6): a generated image is not a page with columns.
TESSERACT_CONFIG = "--psm 6"


def normalised(text: str) -> str:
    """flow_grpo's normalisation: spaces removed, lower case."""
    return text.replace(" ", "").lower()


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: insertions, deletions and substitutions, each costing 1."""
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b)))
        previous = current
    return previous[-1]


def text_match(recognised: str, target: str) -> float:
    """1 − distance / len(target) after normalising both, the distance 0 when the target is contained and at
    most len(target) (flow_grpo: "recognized many unrelated characters, only add one character penalty")."""
    text, wanted = normalised(recognised), normalised(target)
    if not wanted:
        return 0.0
    distance = 0 if wanted in text else min(edit_distance(text, wanted), len(wanted))
    return 1 - distance / len(wanted)


def recognise(pixels: np.ndarray) -> str:
    """Tesseract's text for one HWC uint8 RGB image, its lines joined (flow_grpo joins PaddleOCR's lines)."""
    text = pytesseract.image_to_string(Image.fromarray(pixels, mode="RGB"), config=TESSERACT_CONFIG)
    return "".join(text.splitlines())


def make_ocr(device: torch.device) -> Callable[[torch.Tensor, list[str]], tuple[torch.Tensor, dict[str, torch.Tensor]]]:
    """The reward; a host without the Tesseract binary fails here, when the job builds its rewards."""
    try:
        pytesseract.get_tesseract_version()
    except (pytesseract.TesseractNotFoundError, OSError) as exc:
        raise ValueError(
            "reward.name: 'ocr' needs Tesseract on the training host (apt-get install tesseract-ocr)"
        ) from exc
    pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="ocr")

    def ocr(images: torch.Tensor, prompts: list[str]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        pixels = (images.detach().float().clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()
        targets = [quoted_target(prompt) for prompt in prompts]
        rows = [row for row, target in enumerate(targets) if target]
        texts = dict(zip(rows, pool.map(recognise, [pixels[row] for row in rows]), strict=True))
        scores = torch.zeros(len(prompts))
        for row in rows:
            scores[row] = text_match(texts[row], targets[row] or "")
        return scores.to(images.device), {"exact": (scores == 1).float().to(images.device)}

    return ocr
