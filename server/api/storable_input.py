"""The API's door for values the database cannot store (services.storable_values): every /api/v1 request's
query values and JSON body are checked before its route runs, so no route can pass one on to the database
(a query's `offset=2**64` made SQLite raise OverflowError, whatever the route's own bounds left out).

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
from server.services.storable_values import INT64_MAX, INT64_MIN, INT_MESSAGE, NUL_MESSAGE, unstorable_fields

_SUSPECT = re.compile(rb"\\u0000|\d{19}")
_INTEGER = re.compile(r"[+-]?\d{19,}")  # the only integers that can lie outside 64 bits


async def refuse_unstorable_input(request: Request) -> None:
    """422 naming each query parameter or body field that holds a NUL or an integer beyond 64 bits."""
    errors = [error for k, v in request.query_params.multi_items() for error in _query_errors(k, v)]
    if not request.headers.get("content-type", "").startswith("multipart/"):
        body = await request.body()
        if _SUSPECT.search(body):
            with suppress(ValueError, RecursionError):  # not JSON: the route answers for its own body
                errors += unstorable_fields(json.loads(body))
    if errors:
        raise FieldErrors(errors)


def _query_errors(name: str, value: str) -> list[dict[str, str]]:
    """A query value with a NUL, or an integer beyond 64 bits (SQLite raised OverflowError binding one)."""
    if "\x00" in value:
        return [{"field": name, "message": NUL_MESSAGE}]
    if _INTEGER.fullmatch(value):
        significant = value.lstrip("+-").lstrip("0")  # past 19 digits int() is not needed (nor allowed past 4300)
        if len(significant) > 19 or not INT64_MIN <= int(value) <= INT64_MAX:
            return [{"field": name, "message": INT_MESSAGE}]
    return []
