"""A transformers object detector loaded from a local folder: the objects GenEval's checks read on photographs.

The folder holds what ``save_pretrained`` writes for an ``AutoModelForObjectDetection`` (DETR with a transformers
backbone, Conditional DETR, YOLOS: no timm, nothing downloaded) and its ``AutoImageProcessor``; the class names are
the model's ``id2label``. Images are resized on the device by the processor's size rule (shortest edge, capped by
the longest edge; or a fixed height and width) and normalised with its mean and deviation; the model's own
post-processing (``post_process_object_detection``) turns its outputs into scores, labels and boxes in the
image's pixels. As GenEval's evaluate_images.py keeps them: per class, the objects above the threshold, most
confident first, at most ``MAX_OBJECTS``, no suppression of overlaps (its max_overlap 1.0).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from trainer.rewards.clip_embedding import field

MAX_OBJECTS = 16  # GenEval's max_objects: per class


@dataclass(frozen=True)
class Box:
    """One detected object: its class name, score, and box (x0, y0, x1, y1) in the image's pixels."""

    label: str
    score: float
    box: tuple[float, float, float, float]


class ObjectDetector:
    def __init__(self, path: str, device: torch.device) -> None:
        from transformers import AutoImageProcessor, AutoModelForObjectDetection

        directory = Path(path)
        self.device = device
        self.model = AutoModelForObjectDetection.from_pretrained(directory).to(device).eval().requires_grad_(False)
        self.processor = AutoImageProcessor.from_pretrained(directory)
        self.labels: dict[int, str] = {int(k): v for k, v in self.model.config.id2label.items()}
        self.mean = torch.tensor(self.processor.image_mean, device=device).reshape(1, 3, 1, 1)
        self.std = torch.tensor(self.processor.image_std, device=device).reshape(1, 3, 1, 1)

    def input_size(self, height: int, width: int) -> tuple[int, int]:
        """The processor's size for an image of ``height`` × ``width``."""
        size = self.processor.size
        fixed = (field(size, "height"), field(size, "width"))
        if all(fixed):
            return fixed
        shortest, longest = field(size, "shortest_edge"), field(size, "longest_edge")
        scale = shortest / min(height, width)
        if longest and max(height, width) * scale > longest:
            scale = longest / max(height, width)
        return max(1, round(height * scale)), max(1, round(width * scale))

    @torch.no_grad()
    def detect(self, images: torch.Tensor, threshold: float) -> list[list[Box]]:
        """Each image's objects above ``threshold``, by class in the model's label order, most confident first."""
        height, width = images.shape[-2:]
        pixels = F.interpolate(
            images.to(self.device).float(), size=self.input_size(height, width), mode="bilinear", antialias=True
        )
        outputs = self.model(pixel_values=(pixels - self.mean) / self.std)
        sizes = torch.tensor([[height, width]] * len(images), device=self.device)
        found = self.processor.post_process_object_detection(outputs, threshold=threshold, target_sizes=sizes)
        return [self.kept(result) for result in found]

    def kept(self, result: dict[str, torch.Tensor]) -> list[Box]:
        scores, labels, boxes = (result[key].cpu() for key in ("scores", "labels", "boxes"))
        objects: list[Box] = []
        for label in sorted(set(labels.tolist())):
            rows = (labels == label).nonzero().flatten()
            rows = rows[scores[rows].argsort(descending=True, stable=True)][:MAX_OBJECTS]
            objects += [
                Box(self.labels[label], float(scores[row]), tuple(boxes[row].tolist()))  # type: ignore[arg-type]
                for row in rows
            ]
        return objects
