"""Which of Unleash's documented admin operations flagstore answers: `.venv/bin/python -m
tools.operations UNLEASH_OPENAPI [--missing]`.

UNLEASH_OPENAPI is Unleash's OpenAPI document, a file or a URL (the reference serves it at
http://127.0.0.1:4242/docs/openapi.json). Ours comes from the route table, so no server runs.
Paths are compared with their parameters' names erased (`{featureName}` and `{name}` are the
same operation). Prints the count, and with --missing the operations we lack.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import urllib.request
from pathlib import Path

import msgspec

from service import openapi
from service.app import ROUTES, VERSION

METHODS = frozenset({"get", "post", "put", "patch", "delete"})
_PARAMETER = re.compile(r"\{[^}]*\}")


def operations(document: dict[str, object], prefix: str = "/api/admin") -> set[tuple[str, str]]:
    """The document's (METHOD, path) pairs under `prefix`, parameters named `{}`."""
    paths = document.get("paths")
    assert isinstance(paths, dict)
    return {
        (method.upper(), _PARAMETER.sub("{}", path))
        for path, methods in paths.items()
        if path.startswith(prefix)
        for method in methods
        if method in METHODS
    }


def _load(source: str) -> dict[str, object]:
    if source.startswith(("http://", "https://")):
        with urllib.request.urlopen(source, timeout=30) as answer:  # noqa: S310 - a URL given by hand
            loaded = json.load(answer)
    else:
        loaded = json.loads(Path(source).read_text())
    assert isinstance(loaded, dict)
    return loaded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("unleash", help="Unleash's OpenAPI document: a file or a URL")
    parser.add_argument("--missing", action="store_true", help="list the operations we lack")
    args = parser.parse_args(argv)
    theirs = operations(_load(args.unleash))
    ours = operations(msgspec.json.decode(msgspec.json.encode(openapi.document(ROUTES, VERSION))))
    answered = theirs & ours
    print(f"{len(answered)} of the {len(theirs)} admin operations Unleash documents")
    if args.missing:
        for method, path in sorted(theirs - ours, key=lambda op: (op[1], op[0])):
            print(f"  {method:6} {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
