"""Re-verify an export without the service or its database: python3 tools/verify_export.py
[--after N] FILE (FILE may be -; N as in `export --after N`). Positions from N + 1, stream versions,
prev_hash and hash (docs/events.md; a key given twice, null). 0 names the last hash, 1 the fault."""

import decimal
import hashlib
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def once(pairs: list[tuple[str, Any]]) -> dict[str, Any] | None:
    """None for a key given twice; a sealed value loses the `value` export adds (privacy.md)."""
    d = dict(pairs) if len(dict(pairs)) == len(pairs) else None
    return {"person": d["person"], "sealed": d["sealed"]} if d and d.keys() == SEALED else d


SEALED = {"person", "sealed", "value"}  # the hash is over the sealed value as stored
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


def check(lines: list[str], after: int) -> str | None:
    versions: dict[tuple[str, str], int] = {}
    previous, expected = "00" * 32 if after == 0 else None, after + 1
    for number, line in enumerate(lines, start=1):
        try:  # every field read here: a missing one names its line
            e = json.loads(line, parse_float=decimal.Decimal, object_pairs_hook=once)
            position, stream = e["position"], (e["stream_type"], e["stream_key"])
            digest = hashlib.sha256(bytes.fromhex(e["prev_hash"]) + canonical(e)).hexdigest()
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return f"line {number}: not an exported event ({exc})"
        where = f"position {position} (line {number})"
        if position != expected:
            return f"{where}: expected position {expected}"
        if previous is not None and e["prev_hash"] != previous:
            return f"{where}: prev_hash is not the hash of the event before it"
        if digest != e.get("hash"):
            return f"{where}: hash does not match its content"
        if after == 0 and e["stream_version"] != versions.get(stream, 0) + 1:
            return f"{where}: stream {stream[0]}/{stream[1]} version {e['stream_version']}"
        versions[stream], previous, expected = e["stream_version"], e["hash"], position + 1
    return None if lines else "empty export"


def main(args: list[str]) -> int:
    after = args[1] if args[:1] == ["--after"] and len(args) > 1 else "0"
    if len(args) != (3 if args[:1] == ["--after"] else 1) or not after.isdigit():
        return print(__doc__, file=sys.stderr) or 2
    try:
        data = sys.stdin.read() if args[-1] == "-" else Path(args[-1]).read_text("utf-8")
    except (OSError, ValueError) as exc:
        return print(f"cannot read {args[-1]}: {exc}", file=sys.stderr) or 2
    lines = [line for line in data.split("\n") if line.strip()]
    last = {} if (problem := check(lines, int(after))) else json.loads(lines[-1])
    done = f"{len(lines)} events, positions {int(after) + 1}..{last.get('position')}"
    print(f"FAILED: {problem}" if problem else f"OK: {done}, last hash {last['hash']}")
    return 1 if problem else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
