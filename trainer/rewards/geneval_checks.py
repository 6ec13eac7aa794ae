"""GenEval's checks of one image against its prompt's metadata, on a detector's objects.

As GenEval's evaluation script (evaluation/evaluate_images.py, ``evaluate`` and ``relative_position``, in
github.com/djghosh13/geneval) reads a metadata line ``{"tag", "prompt", "include": [...], "exclude": [...]}``:
each include clause ``{"class", "count", "color"?, "position"?}`` is checked on the clause's class's most prominent
``count`` objects; a colour asks every one of them to have it; a position ``[relation, k]`` asks each to stand in
``relation`` ("left of", "right of", "above", "below") to every object that matched include clause ``k``, judged
on the boxes' centres less 0.1 of their sizes; an exclude clause ``{"class", "count"}`` asks for fewer than
``count`` objects of the class. A position ``[place, "grid"]`` (Sfumato's, for one-object prompts) asks each object
to stand at a place of the image's 3×3 grid ("top left", "middle center").

GenEval scores an image 1 only when every clause holds; here each check is also kept apart, so a reward can give
partial credit: presence (at least one object of the class), count (exactly ``count``, and every exclude clause),
color and position.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

POSITION_THRESHOLD = 0.1  # GenEval's default position_threshold
GRID = "grid"
CHECKS = ("presence", "count", "color", "position")


@dataclass(frozen=True)
class DetectedObject:
    """What a detector found: its class, colour name, box (x0, y0, x1, y1) and place on the 3×3 grid."""

    label: str
    color: str
    box: tuple[float, float, float, float]
    place: str


@dataclass
class CheckResults:
    """Each check's outcomes for one image, by kind."""

    outcomes: dict[str, list[bool]] = field(default_factory=lambda: {name: [] for name in CHECKS})

    def add(self, kind: str, passed: bool) -> None:
        self.outcomes[kind].append(passed)

    @property
    def correct(self) -> bool:
        """GenEval's verdict: every clause holds."""
        return all(all(results) for results in self.outcomes.values())

    def fraction(self, kind: str) -> float:
        """The share of this kind's checks that passed; 1 when the prompt asks none of this kind."""
        results = self.outcomes[kind]
        return sum(results) / len(results) if results else 1.0

    @property
    def score(self) -> float:
        """The share of all checks that passed."""
        every = [passed for results in self.outcomes.values() for passed in results]
        return sum(every) / len(every) if every else 0.0


def relative_position(a: DetectedObject, b: DetectedObject) -> set[str]:
    """GenEval's relations of A to B: the centres' offset less POSITION_THRESHOLD of both boxes' sizes, by axis."""
    centre_a = ((a.box[0] + a.box[2]) / 2, (a.box[1] + a.box[3]) / 2)
    centre_b = ((b.box[0] + b.box[2]) / 2, (b.box[1] + b.box[3]) / 2)
    sizes = (a.box[2] - a.box[0] + b.box[2] - b.box[0], a.box[3] - a.box[1] + b.box[3] - b.box[1])
    offset = (centre_a[0] - centre_b[0], centre_a[1] - centre_b[1])
    revised = [math.copysign(max(abs(o) - POSITION_THRESHOLD * s, 0), o) for o, s in zip(offset, sizes, strict=True)]
    if all(abs(r) < 1e-3 for r in revised):
        return set()
    norm = math.hypot(*offset)
    dx, dy = revised[0] / norm, revised[1] / norm
    relations = set()
    if dx < -0.5:
        relations.add("left of")
    if dx > 0.5:
        relations.add("right of")
    if dy < -0.5:
        relations.add("above")
    if dy > 0.5:
        relations.add("below")
    return relations


def check_image(metadata: dict[str, Any], objects: list[DetectedObject]) -> CheckResults:
    """Every check the metadata asks of an image whose objects (most prominent first) are ``objects``."""
    results = CheckResults()
    matched: list[list[DetectedObject] | None] = []
    for clause in metadata.get("include", []):
        of_class = [obj for obj in objects if obj.label == clause["class"]]
        wanted = int(clause["count"])
        found = of_class[:wanted]
        results.add("presence", bool(of_class))
        results.add("count", len(of_class) == wanted)
        enough = len(found) == wanted
        if "color" in clause:
            results.add("color", enough and all(obj.color == clause["color"] for obj in found))
        if "position" in clause:
            relation, target = clause["position"]
            results.add("position", enough and in_position(found, relation, target, matched))
        matched.append(found if enough else None)
    for clause in metadata.get("exclude", []):
        results.add("count", sum(obj.label == clause["class"] for obj in objects) < int(clause["count"]))
    return results


def in_position(
    found: list[DetectedObject], relation: str, target: str | int, matched: list[list[DetectedObject] | None]
) -> bool:
    if target == GRID:
        return all(obj.place == relation for obj in found)
    group = matched[int(target)] if int(target) < len(matched) else None
    if group is None:
        return False
    return all(relation in relative_position(obj, other) for obj in found for other in group)
