"""What every spec section shares: the error that names a field, the strict section base, path checks."""

from __future__ import annotations

import functools
import os
import re
import sys
from importlib.metadata import entry_points
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo

from trainer.spec.judge_options import VLM_JUDGE

REWARD_ENTRY_POINT_GROUP = "sfumato.rewards"

BUILTIN_MODEL_PATH = "builtin:tiny"
BUILTIN_SHAPES_PATH = "builtin:shapes"  # the trained SD3-family shapes model (docs/shapes-model.md)
BUILTIN_PROMPT_SOURCES = ("builtin:colors", "builtin:shapes", "builtin:ocr", "builtin:shapes-geneval")
BUILTIN_FAMILIES = ("sd3", "flux", "wan", "qwen_image")

PIXEL_REWARDS = (
    "brightness",
    "colorfulness",
    "jpeg_compressibility",
    "jpeg_incompressibility",
    "orange_background",
    "prompt_color_match",
    "ocr",  # the quoted text read back by Tesseract (docs/rewards.md)
    "geneval",  # GenEval's composition checks on the shape detector's objects (docs/rewards.md)
)
MODEL_REWARDS = ("clip_score", "pickscore", "hpsv2", "aesthetic", "imagereward")
REMOTE_REWARD = "remote"  # scored by a reward server over HTTP (docs/rewards.md)
# A reward service of the job's team, by name: the platform turns it into a remote reward at its URL at dispatch.
SERVICE_REWARD = "service"

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class SpecError(ValueError):
    """A spec that cannot run, with the dotted field it concerns."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class SpecProblems:
    """The cross-field problems a section's checks find, gathered so that a spec reports them all at once
    (one error per field, its messages joined) rather than stopping at the first."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.found: dict[str, list[str]] = {}

    def add(self, field: str, message: str) -> None:
        self.found.setdefault(field, []).append(message)

    def __contains__(self, field: str) -> bool:
        return field in self.found

    def raise_all(self) -> None:
        """Nothing when no check failed; else a ValidationError with one value error (a SpecError) per field."""
        errors = [SpecError(field, "; ".join(messages)) for field, messages in self.found.items()]
        if len(errors) == 1:
            raise errors[0]
        if errors:
            line_errors = [{"type": "value_error", "loc": (), "input": None, "ctx": {"error": e}} for e in errors]
            raise ValidationError.from_exception_data(self.title, line_errors)  # type: ignore[arg-type]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


def is_stored(info: ValidationInfo) -> bool:
    """Re-reading a spec the platform stored: its files and plugins were checked when it was submitted."""
    return bool((info.context or {}).get("stored"))


def allows_private_urls(info: ValidationInfo) -> bool:
    """Whether a URL may name a loopback or private destination: the platform says so at submit
    (SFUMATO_ALLOW_PRIVATE_URLS); the trainer, reading what the platform gave it, allows it."""
    return bool((info.context or {}).get("allow_private_urls", True))


def check_local_path(value: str, field: str, info: ValidationInfo) -> str:
    """A path must exist and, when roots are configured, lie inside one of them. A relative (or `~`) path is
    resolved once, against the context's `base_dir` (the platform's data root at submit, the spec's folder for a
    spec file), and returned absolute: the path checked is the path stored and read."""
    if is_stored(info):
        return value
    path = Path(value).expanduser()
    roots = (info.context or {}).get("path_roots") if info.context else None
    if not path.is_absolute():
        base = (info.context or {}).get("base_dir")
        path = Path(base) / path if base else path.resolve()
    resolved = path.resolve()
    if roots and not any(resolved.is_relative_to(Path(r).resolve()) for r in roots):
        allowed = ", ".join(str(r) for r in roots)
        raise ValueError(f"{field} {value!r} is outside the allowed roots ({allowed})")
    if not resolved.exists():
        raise ValueError(f"{field} {value!r} does not exist")
    return value if Path(value).is_absolute() else str(resolved)


def known_rewards() -> set[str]:
    """Built-in rewards, the remote one, plus third-party ones registered as entry points."""
    builtin = set(PIXEL_REWARDS) | set(MODEL_REWARDS) | {REMOTE_REWARD, SERVICE_REWARD, VLM_JUDGE}
    return builtin | _plugin_rewards(_import_path_state())


def _import_path_state() -> tuple[tuple[str, int], ...]:
    """Each import path's modification time: installing or removing a package changes its directory's."""
    state = []
    for entry in sys.path:
        try:
            state.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            state.append((entry, -1))
    return tuple(state)


@functools.lru_cache(maxsize=4)
def _plugin_rewards(import_path_state: tuple[tuple[str, int], ...]) -> frozenset[str]:
    """The entry points' reward names, read again only when an import path changed: reading every installed
    package's metadata takes tens of milliseconds, and an experiment validates up to 64 specs at once."""
    return frozenset(ep.name for ep in entry_points(group=REWARD_ENTRY_POINT_GROUP))
