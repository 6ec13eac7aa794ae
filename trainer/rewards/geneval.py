"""The ``geneval`` reward: GenEval's composition checks (object presence, count, colour, position) as a reward.

On shapes captions (``builtin:shapes-geneval``, and every other shapes caption) the metadata is the caption's
(trainer/shapes_geneval_prompts.py) and the objects are the shape detector's (trainer/rewards/shape_detector.py),
exact on the shapes dataset's images. The score is the share of the prompt's checks that pass, in [0, 1]; the
sub-scores are each kind's share (``presence``, ``count``, ``color``, ``position``) and GenEval's strict verdict
``correct`` (1 only when every check passes). A prompt without metadata scores 0 on everything (no signal).
"""

from __future__ import annotations

import torch

from trainer.rewards.geneval_checks import CHECKS, check_image
from trainer.rewards.shape_detector import detect_shapes
from trainer.shapes_geneval_prompts import metadata_by_caption


def geneval(images: torch.Tensor, prompts: list[str]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    table = metadata_by_caption()
    names = (*CHECKS, "correct")
    scores = torch.zeros(len(prompts))
    subs = {name: torch.zeros(len(prompts)) for name in names}
    pixels = images.detach().float().cpu()  # the detector reads pixels on the host: one copy for the batch
    for row, prompt in enumerate(prompts):
        metadata = table.get(prompt)
        if metadata is None:
            continue
        detections, _ = detect_shapes(pixels[row])
        results = check_image(metadata, [detection.as_object() for detection in detections])
        scores[row] = results.score
        for name in CHECKS:
            subs[name][row] = results.fraction(name)
        subs["correct"][row] = float(results.correct)
    return scores.to(images.device), {name: values.to(images.device) for name, values in subs.items()}
