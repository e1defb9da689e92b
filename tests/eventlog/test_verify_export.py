"""tools/verify_export.py re-verifies an export without the database: an intact export
passes; a changed byte, a deleted line, swapped lines, a cut file are found at the first bad
position. Its jsonb text rule is checked against PostgreSQL itself."""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import os
import subprocess
import sys
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service import cli
from tests import ROOT
from tests.bench.biglog import generate
from tests.factories import append, noted
from tests.harness import run_cli

if TYPE_CHECKING:
    from pathlib import Path

    from eventlog.connections import Conn

TOOL = ROOT / "tools" / "verify_export.py"
# The tool is a script an auditor runs alone, not a package of ours: load it from its file.
_spec = importlib.util.spec_from_file_location("verify_export", TOOL)
assert _spec is not None
assert _spec.loader is not None
_tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_tool)
text = _tool.text
HOSTILE = 'quote " backslash \\ tab \t newline \n bell \x07 del \x7f é 東京 🚀 \u2028'


def run(lines: list[str], *args: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, str(TOOL), *args, "-"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, done.stdout.strip()


async def exported(conn: Conn) -> list[str]:
    await generate(conn, 300, seed=7)
    await append(conn, [noted(1, HOSTILE), noted(2, "x" * 3000)])
    out = io.StringIO()
    await cli.export(conn, out)
    return out.getvalue().split("\n")[:-1]  # not splitlines(): U+2028 is no line end here


async def test_an_intact_export_passes_and_each_tampering_names_its_first_bad_position(
    conn: Conn,
) -> None:
    lines = await exported(conn)
    count = len(lines)
    last = json.loads(lines[-1])["hash"]
    assert run(lines) == (0, f"OK: {count} events, positions 1..{count}, last hash {last}")
    # An export made with --after N says so: it starts at N + 1, its first prev_hash trusted.
    assert run(lines[100:], "--after", "100") == (
        0,
        f"OK: {count - 100} events, positions 101..{count}, last hash {last}",
    )
    # Without it, a file whose first events are gone is found out.
    assert run(lines[1:]) == (1, "FAILED: position 2 (line 1): expected position 1")
    assert run(lines[100:], "--after", "99") == (
        1,
        "FAILED: position 101 (line 1): expected position 100",
    )
    # A cut end passes (the events there are intact) but the last position and hash say
    # where it ends: compare them with the log's (GET /api/admin/events: the newest `hash`).
    assert run(lines[:-5])[1].endswith(f"..{count - 5}, last hash {json.loads(lines[-6])['hash']}")
    # A key given twice: PostgreSQL would keep the last, so the bytes would hide a change.
    twice = lines.copy()
    twice[3] = lines[3].replace('"metadata":{', '"metadata":{"source": "forged", ', 1)
    assert twice[3] != lines[3]
    assert run(twice)[0] == 1

    changed = lines.copy()  # one byte of one event's data: the hostile text's "quote"
    at = next(i for i, line in enumerate(lines) if "quote" in line)
    changed[at] = lines[at].replace("quote", "quotf", 1)
    assert run(changed) == (
        1,
        f"FAILED: position {at + 1} (line {at + 1}): hash does not match its content",
    )

    assert run(lines[:40] + lines[41:]) == (
        1,
        "FAILED: position 42 (line 41): expected position 41",
    )
    swapped = [*lines[:60], lines[61], lines[60], *lines[62:]]
    assert run(swapped) == (1, "FAILED: position 62 (line 61): expected position 61")
    code, out = run([*lines[:-1], lines[-1][:-20]])
    assert code == 1
    assert out.startswith(f"FAILED: line {count}: not an exported event")
    assert run([]) == (1, "FAILED: empty export")
    assert run(["{not json"])[1].startswith("FAILED: line 1: not an exported event")


def test_bad_usage_says_how_to_use_it(tmp_path: Path) -> None:
    for args in ([], ["--after"], ["--after", "x", "f"], ["a", "b"], [str(tmp_path / "none")]):
        done = subprocess.run(
            [sys.executable, str(TOOL), *args], capture_output=True, text=True, check=False
        )
        assert done.returncode == 2, args
        assert "Traceback" not in done.stderr
        assert ("Re-verify an export" in done.stderr) or ("cannot read" in done.stderr)


async def test_changed_metadata_or_time_is_found(conn: Conn) -> None:
    lines = await exported(conn)
    metadata = lines.copy()
    metadata[5] = lines[5].replace('"actor_id": "', '"actor_id": "x', 1)
    assert metadata[5] != lines[5]
    assert run(metadata) == (1, "FAILED: position 6 (line 6): hash does not match its content")
    shifted = lines.copy()  # the same instant written one hour off
    shifted[9] = lines[9].replace("+00:00", "+01:00", 1)
    assert shifted[9] != lines[9]
    assert run(shifted) == (1, "FAILED: position 10 (line 10): hash does not match its content")


def test_the_tool_is_short_and_uses_only_the_standard_library() -> None:
    source = TOOL.read_text()
    assert len(source.splitlines()) < 90  # an auditor reads it whole
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (
            node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")]
        )
    }
    assert imported <= set(sys.stdlib_module_names)


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.text(
                st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=6
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)


def _plain(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


async def test_numbers_keep_the_digits_postgresql_prints(conn: Conn) -> None:
    printed = await conn.fetchval(
        "SELECT '[1.50, 1e3, -0, 0.000, -2.5e-3, 123456789012345678901234567890]'::jsonb::text"
    )
    assert text(json.loads(printed, parse_float=Decimal)) == printed


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=JSON)
async def test_text_is_what_postgresql_prints_for_jsonb(conn: Conn, value: Any) -> None:
    printed = await conn.fetchval("SELECT $1::jsonb::text", _plain(value))
    assert text(json.loads(printed, parse_float=Decimal)) == printed


async def test_an_export_file_is_its_owners_alone(conn: Conn, dsn: str, tmp_path: Path) -> None:
    """It holds the hashes of tokens, sessions and passwords that the events hold (the chain
    covers them): mode 0600, even where a file readable by others was before; and it verifies."""
    await generate(conn, 200, seed=8)
    target = tmp_path / "export.ndjson"
    target.write_text("old")
    target.chmod(0o644)
    env = {k: v for k, v in os.environ.items() if k != "DATA_DIR"} | {"DATABASE_URL": dsn}
    done = run_cli(env, "export", "-o", str(target))
    assert done.returncode == 0, done.stderr
    assert target.stat().st_mode & 0o777 == 0o600
    checked = subprocess.run(
        [sys.executable, str(TOOL), str(target)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0
    assert checked.stdout.startswith("OK: ")
