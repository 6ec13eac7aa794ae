"""The procedural captioned dataset ``builtin:shapes`` is trained on: one coloured shape on a plain background.

Every image is 32×32: a circle, square or triangle, small or large, at one of nine places of a 3×3
grid (with a pixel of jitter), in one of six colours, on a background of another of the six. The
caption says all of it, e.g. "a small red circle at the top left on a black background". Shapes are
rasterised at 4× and averaged down, so edges are anti-aliased. Everything is drawn from a seeded
``torch.Generator``, so a seed gives the same images on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

IMAGE_SIZE = 32
SUPERSAMPLE = 4
PALETTE: dict[str, tuple[float, float, float]] = {
    "red": (0.9, 0.1, 0.1),
    "green": (0.1, 0.7, 0.1),
    "blue": (0.1, 0.2, 0.9),
    "yellow": (0.95, 0.9, 0.1),
    "white": (1.0, 1.0, 1.0),
    "black": (0.0, 0.0, 0.0),
}
SHAPES = ("circle", "square", "triangle")
# Half the shape's width in pixels, and where its centre may be along each axis (3 places).
SIZES: dict[str, tuple[float, tuple[float, float, float]]] = {
    "small": (5.0, (8.0, 16.0, 24.0)),
    "large": (9.0, (11.0, 16.0, 21.0)),
}
ROWS = ("top", "middle", "bottom")
COLUMNS = ("left", "center", "right")
JITTER = 1.0


def position_phrase(row: int, column: int) -> str:
    """The caption's words for a place on the 3×3 grid (row, column in 0..2)."""
    if row == 1:
        return "in the center" if column == 1 else f"on the {COLUMNS[column]}"
    side = "" if column == 1 else f" {COLUMNS[column]}"
    return f"at the {ROWS[row]}{side}"


def caption(size: str, color: str, shape: str, row: int, column: int, background: str) -> str:
    return f"a {size} {color} {shape} {position_phrase(row, column)} on a {background} background"


def vocabulary() -> list[str]:
    """Every word a caption can use."""
    words = {"a", "at", "the", "in", "on", "background", "top", "bottom", "left", "right", "center"}
    return sorted(words | set(PALETTE) | set(SHAPES) | set(SIZES))


HELDOUT_EVERY = 10  # one caption in ten, by its place in all_captions(), is held out from RL training


def all_captions() -> list[str]:
    """Every caption the dataset can draw, in a fixed order."""
    return [
        caption(size, color, shape, row, column, background)
        for size in SIZES
        for color in PALETTE
        for shape in SHAPES
        for row in range(3)
        for column in range(3)
        for background in PALETTE
        if background != color
    ]


def training_captions() -> list[str]:
    """The ``builtin:shapes`` prompt set RL jobs train on: every caption but the held-out ones."""
    return [text for index, text in enumerate(all_captions()) if index % HELDOUT_EVERY != 0]


def heldout_captions() -> list[str]:
    """The ``builtin:shapes-heldout`` prompt set (162 captions, every attribute among them): never a training
    prompt, so an evaluation on it measures what a job learnt beyond the prompts it was rewarded on."""
    return [text for index, text in enumerate(all_captions()) if index % HELDOUT_EVERY == 0]


@dataclass
class ShapeScene:
    """What one image shows; ``row``/``column`` index the 3×3 grid."""

    size: str
    color: str
    shape: str
    row: int
    column: int
    background: str

    @property
    def caption(self) -> str:
        return caption(self.size, self.color, self.shape, self.row, self.column, self.background)

    def centre(self) -> tuple[float, float]:
        """(x, y) of the shape's centre in pixels, before jitter."""
        places = SIZES[self.size][1]
        return places[self.column], places[self.row]


def random_scenes(count: int, generator: torch.Generator) -> list[ShapeScene]:
    colors = list(PALETTE)
    scenes = []
    for _ in range(count):
        picks = torch.randint(0, 1 << 30, (6,), generator=generator).tolist()
        color = colors[picks[1] % len(colors)]
        others = [name for name in colors if name != color]
        scenes.append(
            ShapeScene(
                size=list(SIZES)[picks[0] % len(SIZES)],
                color=color,
                shape=SHAPES[picks[2] % len(SHAPES)],
                row=picks[3] % 3,
                column=picks[4] % 3,
                background=others[picks[5] % len(others)],
            )
        )
    return scenes


def shape_mask(scene: ShapeScene, dx: float = 0.0, dy: float = 0.0) -> torch.Tensor:
    """Coverage in [0, 1] of each pixel by the shape, [IMAGE_SIZE, IMAGE_SIZE]."""
    fine = IMAGE_SIZE * SUPERSAMPLE
    coords = (torch.arange(fine, dtype=torch.float32) + 0.5) / SUPERSAMPLE
    y, x = torch.meshgrid(coords, coords, indexing="ij")
    cx, cy = scene.centre()
    cx, cy = cx + dx, cy + dy
    half = SIZES[scene.size][0]
    if scene.shape == "circle":
        inside = (x - cx) ** 2 + (y - cy) ** 2 <= half**2
    elif scene.shape == "square":
        side = 0.85 * half  # about a circle's area
        inside = ((x - cx).abs() <= side) & ((y - cy).abs() <= side)
    else:  # an upright triangle, apex at the top
        top, base = cy - half, cy + 0.8 * half
        inside = (y <= base) & ((x - cx).abs() <= (y - top) / (base - top) * half)
    coverage = inside.float().reshape(IMAGE_SIZE, SUPERSAMPLE, IMAGE_SIZE, SUPERSAMPLE)
    return coverage.mean(dim=(1, 3))


def render(scene: ShapeScene, dx: float = 0.0, dy: float = 0.0) -> torch.Tensor:
    """The scene as an image [3, IMAGE_SIZE, IMAGE_SIZE] in [0, 1]."""
    mask = shape_mask(scene, dx, dy)
    fill = torch.tensor(PALETTE[scene.color]).view(3, 1, 1)
    background = torch.tensor(PALETTE[scene.background]).view(3, 1, 1)
    return background + (fill - background) * mask


def random_batch(count: int, generator: torch.Generator) -> tuple[torch.Tensor, list[str]]:
    """``count`` random scenes with a pixel of jitter: images [count, 3, 32, 32] in [0, 1] and captions."""
    scenes = random_scenes(count, generator)
    offsets = (torch.rand(count, 2, generator=generator) * 2 - 1) * JITTER
    images = torch.stack([render(scene, *offset.tolist()) for scene, offset in zip(scenes, offsets, strict=True)])
    return images, [scene.caption for scene in scenes]
