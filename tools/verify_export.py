"""Re-verify a `python -m service export` file without the service or its database.
Usage: python3 tools/verify_export.py FILE   (FILE may be -, standard input).
Checks dense positions, stream versions 1..k (for an export from position 1), each prev_hash
against the line before (32 zero bytes before position 1) and recomputes each hash as
docs/events.md "Hash chain" says. Exit 0 when all holds, else 1 naming the first bad position.
"""

import decimal
import hashlib
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ESCAPES = dict(zip('"\\\b\f\n\r\t', '"\\bfnrt', strict=True))  # the rest below U+0020: \u00XX


def text(value: object) -> str:
    """PostgreSQL's jsonb output: keys by UTF-8 length then bytes, ', ' and ': ' separators."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (len(k.encode()), k.encode()))
        return "{" + ", ".join(f"{text(k)}: {text(value[k])}" for k in keys) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(text(v) for v in value) + "]"
    if isinstance(value, str):
        out = (
            f"\\{ESCAPES[c]}" if c in ESCAPES else f"\\u{ord(c):04x}" if c < " " else c
            for c in value
        )
        return '"' + "".join(out) + '"'
    return json.dumps(value) if value is None or isinstance(value, bool) else str(value)


def canonical(e: dict[str, Any]) -> bytes:
    at = datetime.fromisoformat(e["recorded_at"]).astimezone(UTC)
    fields = ["position", "stream_type", "stream_key", "stream_version", "event_id", "type"]
    parts = [e[f] for f in fields] + [e["schema_version"], e["data"], e["metadata"]]
    return text([*parts, at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")]).encode()


def check(lines: list[str]) -> str | None:
    versions: dict[tuple[str, str], int] = {}
    previous, expected, whole = None, None, False
    for number, line in enumerate(lines, start=1):
        try:  # every field read here: a missing one names its line
            e = json.loads(line, parse_float=decimal.Decimal)
            position, stream = e["position"], (e["stream_type"], e["stream_key"])
            digest = hashlib.sha256(bytes.fromhex(e["prev_hash"]) + canonical(e)).hexdigest()
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return f"line {number}: not an exported event ({exc})"
        where = f"position {position} (line {number})"
        whole = whole or (number == 1 and position == 1)  # versions are checked from the start
        if expected is not None and position != expected:
            return f"{where}: expected position {expected}"
        expected = position + 1
        start = previous if previous is not None else ("00" * 32 if position == 1 else None)
        if start is not None and e["prev_hash"] != start:
            return f"{where}: prev_hash is not the hash of the event before it"
        if digest != e.get("hash"):
            return f"{where}: hash does not match its content"
        if whole and e["stream_version"] != versions.get(stream, 0) + 1:
            return f"{where}: stream {stream[0]}/{stream[1]} version {e['stream_version']}"
        versions[stream], previous = e["stream_version"], e["hash"]
    return None if lines else "empty export"


def main() -> int:
    data = sys.stdin.read() if sys.argv[1:] == ["-"] else Path(sys.argv[1]).read_text("utf-8")
    lines = [line for line in data.split("\n") if line.strip()]
    problem = check(lines)
    print(f"FAILED: {problem}" if problem else f"OK: {len(lines)} events, chain intact")
    return 1 if problem else 0


if __name__ == "__main__":
    sys.exit(main())
