"""The checkpoint's scheduler config, read without torch so the server can check it at submit time.

A diffusers pipeline folder keeps its noise schedule in ``scheduler/scheduler_config.json``; the
σ grid a job samples on is built from it (``schedule.py``). Only the flow-matching schedulers the
supported pipelines ship are accepted: FlowMatchEulerDiscreteScheduler (SD3, FLUX) and
UniPCMultistepScheduler with flow sigmas (Wan).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEDULER_CONFIG = Path("scheduler") / "scheduler_config.json"
FLOW_SCHEDULERS = ("FlowMatchEulerDiscreteScheduler", "UniPCMultistepScheduler")


def read_scheduler_config(directory: Path) -> dict[str, Any]:
    """The folder's scheduler config; ValueError naming the file and what it must hold otherwise."""
    path = directory / SCHEDULER_CONFIG
    wanted = f"{' or '.join(FLOW_SCHEDULERS)} (with use_flow_sigmas)"
    if not path.is_file():
        raise ValueError(f"{path} is missing: the model folder needs its checkpoint's scheduler config, a {wanted}")
    try:
        config = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is not a readable JSON scheduler config: {error}") from None
    name = config.get("_class_name") if isinstance(config, dict) else None
    if name not in FLOW_SCHEDULERS:
        raise ValueError(f"{path} configures {name!r}; a flow-matching job needs a {wanted}")
    if name == "UniPCMultistepScheduler" and not config.get("use_flow_sigmas"):
        raise ValueError(f"{path} configures UniPCMultistepScheduler without use_flow_sigmas: not a flow-matching grid")
    return config
