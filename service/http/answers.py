"""Answers: a response Struct as JSON, an empty answer, an error in our body."""

from __future__ import annotations

import uuid
from typing import Any

import msgspec
from aiohttp import web

from service.appkeys import ERROR_ID, ERROR_NAME

_encoder = msgspec.json.Encoder()


def json_response(body: Any, status: int = 200) -> web.Response:
    """A response Struct (or, for errors and probes, a small dict) as the JSON answer."""
    return web.Response(body=_encoder.encode(body), status=status, content_type="application/json")


def empty(status: int = 200) -> web.Response:
    return web.Response(status=status)


def error_response(
    request: web.Request,
    status: int,
    name: str,
    message: str,
    extra: dict[str, object] | None = None,
) -> web.Response:
    """Our error body; `extra` adds fields after ours (never instead of them)."""
    error_id = str(uuid.uuid4())
    request[ERROR_ID] = error_id
    request[ERROR_NAME] = name
    return json_response(
        {"id": error_id, "name": name, "message": message, **(extra or {})}, status
    )
