"""An object's colour as GenEval names it: CLIP's zero-shot choice among ten colour names on the object's crop.

As GenEval's evaluate_images.py (``color_classification``, with clip_benchmark's ``zero_shot_classifier``): for
an object of class ``c`` each colour's text embedding is the mean of the normalised embeddings of "a photo of a
{colour} {c}", "a photo of a {colour}-colored {c}" and "a photo of a {colour} object", normalised again; the crop
of the object's box (GenEval crops the box; a box detector has no mask to grey the background with) is embedded
by the CLIP image tower and the colour is the one of highest cosine. The CLIP folder is read as the other CLIP
rewards read theirs (trainer/rewards/clip_embedding.py).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from trainer.rewards.clip_embedding import ClipEmbedder

COLORS = ("red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white")
TEMPLATES = ("a photo of a {color} {name}", "a photo of a {color}-colored {name}", "a photo of a {color} object")


class ClipColors:
    def __init__(self, path: str, device: torch.device) -> None:
        self.embedder = ClipEmbedder(path, device)
        self.classifiers: dict[str, torch.Tensor] = {}

    def classifier(self, name: str) -> torch.Tensor:
        """[colours, dim]: each colour's mean template embedding for objects of class ``name`` (cached)."""
        if name not in self.classifiers:
            texts = [template.format(color=color, name=name) for color in COLORS for template in TEMPLATES]
            embeds = self.embedder.text_embeds(texts).reshape(len(COLORS), len(TEMPLATES), -1)
            self.classifiers[name] = F.normalize(embeds.mean(dim=1), dim=-1)
        return self.classifiers[name]

    def colors(self, image: torch.Tensor, name: str, boxes: list[tuple[float, float, float, float]]) -> list[str]:
        """The colour name of each box of one image [3, H, W] in [0, 1], its objects being of class ``name``."""
        if not boxes:
            return []
        crops = [crop(image, box) for box in boxes]
        embeds = torch.cat([self.embedder.image_embeds(part.unsqueeze(0)) for part in crops])
        chosen = (embeds @ self.classifier(name).T).argmax(dim=-1).tolist()
        return [COLORS[index] for index in chosen]


def crop(image: torch.Tensor, box: tuple[float, float, float, float]) -> torch.Tensor:
    """The pixels of ``box`` (x0, y0, x1, y1) rounded to whole pixels, inside the image, at least one pixel."""
    height, width = image.shape[-2:]
    x0, y0 = min(max(round(box[0]), 0), width - 1), min(max(round(box[1]), 0), height - 1)
    x1, y1 = max(min(round(box[2]), width), x0 + 1), max(min(round(box[3]), height), y0 + 1)
    return image[:, y0:y1, x0:x1]
