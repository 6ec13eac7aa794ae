"""A detector for ``builtin:shapes`` images, read from the pixels: what the GenEval-style reward checks there.

A shapes image (trainer/models/shapes_dataset.py) is a background of one palette colour with shapes of another
blended in by their coverage. The background is the border's median colour; every pixel's coverage α is its
distance from the background along the way to the fill colour; each 4-connected group of pixels with α > ½ is an
object. Its class comes from how much of its extent it fills (the area is Σα, the extent the coverage profiles
along each axis): a square fills all of it, a circle π/4, the triangle ½. Its colour is the palette colour nearest
the median of its pixels, its size small or large by its extent, and its place on the 3×3 grid the nearest of that
size's places. On images the dataset draws (with its pixel of jitter) every one of these is exact. The shapes model's
own images are softer (its squares and triangles come out rounded), and are read as what they look like.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from trainer.models.shapes_dataset import COLUMNS, IMAGE_SIZE, PALETTE, ROWS, SIZES
from trainer.rewards.geneval_checks import DetectedObject

OBJECT_ALPHA = 0.5  # a pixel at least half covered belongs to an object
MIN_OBJECT_PIXELS = 4  # fewer is noise, not a shape (the smallest shape covers about 45 pixels)
FILL_SQUARE = 0.89  # fill ratio above this: square (1.0); circles fill π/4 ≈ 0.785
FILL_CIRCLE = 0.64  # above this: circle; below: triangle (0.5)
LARGE_EXTENT = 14.0  # pixels across at 32 px: small shapes are about 8.5-10, large ones 15-18
TRIANGLE_CENTROID_DROP = 0.2  # apex at centre − half, base at centre + 0.8 half: centroid at centre + 0.2 half
PALETTE_RGB = torch.tensor(list(PALETTE.values()))


@dataclass(frozen=True)
class Detection:
    """One object: its class and colour names, its size word, grid place, and box (x0, y0, x1, y1) in pixels."""

    shape: str
    color: str
    size: str
    row: int
    column: int
    box: tuple[float, float, float, float]

    @property
    def place(self) -> str:
        """The place as words, row then column: ``top left``, ``middle center``."""
        return f"{ROWS[self.row]} {COLUMNS[self.column]}"

    def as_object(self) -> DetectedObject:
        return DetectedObject(label=self.shape, color=self.color, box=self.box, place=self.place)


def nearest_color(rgb: torch.Tensor) -> str:
    return list(PALETTE)[int(torch.linalg.vector_norm(PALETTE_RGB - rgb, dim=1).argmin())]


def background_color(image: torch.Tensor) -> torch.Tensor:
    """The median colour of the border pixels (shapes never reach the border of every side)."""
    border = torch.cat([image[:, 0, :], image[:, -1, :], image[:, :, 0], image[:, :, -1]], dim=1)
    return border.median(dim=1).values


def components(mask: torch.Tensor) -> list[list[tuple[int, int]]]:
    """The 4-connected groups of True pixels, each as its (y, x) list, in reading order of their first pixel."""
    height, width = mask.shape
    free = mask.tolist()
    groups = []
    for start_y in range(height):
        for start_x in range(width):
            if not free[start_y][start_x]:
                continue
            free[start_y][start_x] = False
            group, stack = [], [(start_y, start_x)]
            while stack:
                y, x = stack.pop()
                group.append((y, x))
                for ny, nx in ((y - 1, x), (y + 1, x), (y, x - 1), (y, x + 1)):
                    if 0 <= ny < height and 0 <= nx < width and free[ny][nx]:
                        free[ny][nx] = False
                        stack.append((ny, nx))
            groups.append(group)
    return groups


def shape_class(fill_ratio: float) -> str:
    if fill_ratio > FILL_SQUARE:
        return "square"
    return "circle" if fill_ratio > FILL_CIRCLE else "triangle"


def grid_place(centre: float, size: str, scale: float) -> int:
    """The index of the size's place (row or column) nearest to a centre coordinate."""
    places = torch.tensor(SIZES[size][1]) * scale
    return int((places - centre).abs().argmin())


def detect_shapes(image: torch.Tensor) -> tuple[list[Detection], str]:
    """The objects of one image [3, H, W] in [0, 1], largest first, and the background's colour name."""
    image = image.detach().float().cpu().clamp(0, 1)
    scale = image.shape[-1] / IMAGE_SIZE
    background = background_color(image)
    distance = torch.linalg.vector_norm(image - background.view(3, 1, 1), dim=0)
    found = []
    for group in components(distance > OBJECT_ALPHA * distance.max().clamp(min=0.2)):
        if len(group) < MIN_OBJECT_PIXELS:
            continue
        ys, xs = torch.tensor(group).T
        fill = image[:, ys, xs].median(dim=1).values  # the interior's colour: most of an object's pixels
        direction = fill - background
        # Coverage of the group's bounding window (a pixel off the group but inside the window is the edge's
        # anti-aliasing) by projection onto the background-to-fill line.
        y0, y1, x0, x1 = int(ys.min()) - 1, int(ys.max()) + 2, int(xs.min()) - 1, int(xs.max()) + 2
        window = image[:, max(y0, 0) : y1, max(x0, 0) : x1] - background.view(3, 1, 1)
        alpha = (torch.einsum("chw,c->hw", window, direction) / direction.dot(direction).clamp(min=1e-6)).clamp(0, 1)
        width, height = float(alpha.max(dim=0).values.sum()), float(alpha.max(dim=1).values.sum())
        area = float(alpha.sum())
        size = "large" if max(width, height) > LARGE_EXTENT * scale else "small"
        total = alpha.sum().clamp(min=1e-6)
        cy = float((alpha.sum(dim=1) * torch.arange(alpha.shape[0])).sum() / total) + max(y0, 0) + 0.5
        shape = shape_class(area / max(width * height, 1e-6))
        if shape == "triangle":  # its centroid lies 0.2 half-widths below the centre it is drawn about
            cy -= TRIANGLE_CENTROID_DROP * SIZES[size][0] * scale
        cx = float((alpha.sum(dim=0) * torch.arange(alpha.shape[1])).sum() / total) + max(x0, 0) + 0.5
        found.append(
            Detection(
                shape=shape,
                color=nearest_color(fill),
                size=size,
                row=grid_place(cy, size, scale),
                column=grid_place(cx, size, scale),
                box=(float(xs.min()), float(ys.min()), float(xs.max()) + 1, float(ys.max()) + 1),
            )
        )
    found.sort(key=lambda d: -(d.box[2] - d.box[0]) * (d.box[3] - d.box[1]))
    return found, nearest_color(background)
