"""orjson for responses that have no response model (errors, plain dicts).

Routes with a response model are serialised by Pydantic's own Rust encoder, which FastAPI
uses when the default response class is left in place; this class only changes the rest.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi.responses import JSONResponse


class OrjsonResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS)
