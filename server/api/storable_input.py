"""The API's door for values the database cannot store (services.storable_values): every /api/v1 request's
query values and JSON body are checked before its route runs, so no route can pass one on to the database.

A JSON body is scanned as bytes first (an escaped NUL, or a run of 19 digits: the shortest integer beyond 64
bits); only a body that has one is parsed again and walked. Multipart bodies (sample uploads) are left to
their route: reading them here would consume the stream a route without form fields never reads.
"""

from __future__ import annotations

import json
import re
from contextlib import suppress

from fastapi import Request

from server.services.errors import FieldErrors
from server.services.storable_values import NUL_MESSAGE, unstorable_fields

_SUSPECT = re.compile(rb"\\u0000|\d{19}")


async def refuse_unstorable_input(request: Request) -> None:
    """422 naming each query parameter or body field that holds a NUL or an integer beyond 64 bits."""
    errors = [{"field": k, "message": NUL_MESSAGE} for k, v in request.query_params.multi_items() if "\x00" in v]
    if not request.headers.get("content-type", "").startswith("multipart/"):
        body = await request.body()
        if _SUSPECT.search(body):
            with suppress(ValueError, RecursionError):  # not JSON: the route answers for its own body
                errors += unstorable_fields(json.loads(body))
    if errors:
        raise FieldErrors(errors)
