"""The ``geneval`` reward: GenEval's composition checks (object presence, count, colour, position) as a reward.

Each prompt's metadata is its GenEval row (trainer/prompt_metadata.py): a shapes caption's
(trainer/shapes_geneval_prompts.py), or the row of a loaded GenEval ``metadata.jsonl`` prompt set. The objects are,
without a ``path``, the shape detector's (trainer/rewards/shape_detector.py), exact on the shapes dataset's images;
with a ``path``, a transformers object detector's (trainer/rewards/object_detector.py), above ``score_threshold``
(GenEval's counting threshold for prompts tagged ``counting``), each coloured by CLIP's zero-shot choice on its crop
(trainer/rewards/clip_colors.py) and placed on the image's 3×3 grid by its box's centre. The score is the share of
the prompt's checks that pass, in [0, 1]; the sub-scores are each kind's share (``presence``, ``count``, ``color``,
``position``) and GenEval's strict verdict ``correct`` (1 only when every check passes). A prompt without metadata
scores 0 on everything (no signal).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from trainer.models.shapes_dataset import COLUMNS, ROWS
from trainer.prompt_metadata import metadata_of
from trainer.rewards.clip_colors import ClipColors
from trainer.rewards.geneval_checks import CHECKS, CheckResults, DetectedObject, check_image
from trainer.rewards.object_detector import Box, ObjectDetector
from trainer.rewards.shape_detector import detect_shapes
from trainer.spec import RewardSpec, SpecError
from trainer.spec.geneval_options import COUNTING_THRESHOLD, DEFAULT_SCORE_THRESHOLD

GenevalOutput = tuple[torch.Tensor, dict[str, torch.Tensor]]
COUNTING_TAG = "counting"


def scored(
    images: torch.Tensor, prompts: list[str], objects: Callable[[int, dict[str, Any]], list[DetectedObject]]
) -> GenevalOutput:
    """Each prompt's checks on ``objects(row, metadata)``; the scores and sub-scores on the images' device."""
    names = (*CHECKS, "correct")
    scores = torch.zeros(len(prompts))
    subs = {name: torch.zeros(len(prompts)) for name in names}
    for row, prompt in enumerate(prompts):
        metadata = metadata_of(prompt)
        if metadata is None:
            continue
        results: CheckResults = check_image(metadata, objects(row, metadata))
        scores[row] = results.score
        for name in CHECKS:
            subs[name][row] = results.fraction(name)
        subs["correct"][row] = float(results.correct)
    return scores.to(images.device), {name: values.to(images.device) for name, values in subs.items()}


def geneval(images: torch.Tensor, prompts: list[str]) -> GenevalOutput:
    """On the shape detector's objects."""
    pixels = images.detach().float().cpu()  # the detector reads pixels on the host: one copy for the batch
    return scored(images, prompts, lambda row, _: [d.as_object() for d in detect_shapes(pixels[row])[0]])


def make_geneval(spec: RewardSpec, device: torch.device) -> Callable[[torch.Tensor, list[str]], GenevalOutput]:
    """The shape detector's reward, or with ``spec.path`` the configured detector's with CLIP's colours."""
    if spec.path is None:
        return geneval
    if spec.clip_path is None:
        raise SpecError("reward.clip_path", "geneval with a detector path names colours with a CLIP directory")
    detector = ObjectDetector(spec.path, device)
    try:
        colors = ClipColors(spec.clip_path, device)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise SpecError("reward.clip_path", f"no CLIP model loads from {spec.clip_path}: {exc}") from exc
    threshold = spec.score_threshold or DEFAULT_SCORE_THRESHOLD

    def detected_geneval(images: torch.Tensor, prompts: list[str]) -> GenevalOutput:
        found = detector.detect(images, threshold)
        pixels = images.detach().float().clamp(0, 1)
        return scored(images, prompts, lambda row, metadata: described(found[row], pixels[row], metadata, colors))

    return detected_geneval


def described(
    boxes: list[Box], image: torch.Tensor, metadata: dict[str, Any], colors: ClipColors
) -> list[DetectedObject]:
    """The boxes the prompt's threshold keeps, with colours (for the classes a clause asks a colour of) and places."""
    if metadata.get("tag") == COUNTING_TAG:
        boxes = [box for box in boxes if box.score > COUNTING_THRESHOLD]
    coloured = {clause["class"] for clause in metadata.get("include", []) if "color" in clause}
    names: dict[int, str] = {}
    for label in coloured:
        rows = [index for index, box in enumerate(boxes) if box.label == label]
        names |= dict(zip(rows, colors.colors(image, label, [boxes[i].box for i in rows]), strict=True))
    height, width = image.shape[-2:]
    return [
        DetectedObject(box.label, names.get(index, ""), box.box, grid_place(box.box, height, width))
        for index, box in enumerate(boxes)
    ]


def grid_place(box: tuple[float, float, float, float], height: int, width: int) -> str:
    """The third of the image (row, then column) the box's centre falls in: ``top left``, ``middle center``."""
    row = min(int((box[1] + box[3]) / 2 / height * 3), 2)
    column = min(int((box[0] + box[2]) / 2 / width * 3), 2)
    return f"{ROWS[row]} {COLUMNS[column]}"
