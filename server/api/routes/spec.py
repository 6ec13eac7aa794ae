"""The job spec's JSON Schema, for forms, editors and clients."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from server.api.deps import CallerDep
from trainer.spec import json_schema

router = APIRouter(tags=["spec"])


@router.get("/spec/schema")
def spec_schema(_caller: CallerDep) -> dict[str, Any]:
    return json_schema()
