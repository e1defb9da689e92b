"""Which of Unleash 6.10.1's admin operations we answer (issue 43, point 4).

Unleash's list is data kept beside this test (unleash_admin_operations.txt: its OpenAPI
document's operations, nothing else). Ours is our OpenAPI document, made from the route table
as /docs/openapi.json serves it. Every Unleash operation we lack must be named below with its
reason, and nothing named there may be one we answer: the list is exactly what is missing.
`python -m tools.operations <document> --missing` prints the same comparison for any document.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from service import openapi
from service.app import ROUTES, VERSION
from tools.operations import operations

THEIRS = Path(__file__).with_name("unleash_admin_operations.txt")

# (METHOD, path with parameters as {}) -> why we do not answer it.
OUT_OF_SCOPE: dict[tuple[str, str], str] = {
    ("DELETE", "/api/admin/user-admin/scim-users"): (
        "SCIM provisioning is Enterprise-only in Unleash: the open-source server answers it "
        "only to say so, and there is no SCIM here to clean up after"
    ),
}


def _theirs() -> set[tuple[str, str]]:
    paths: dict[str, dict[str, object]] = {}
    for line in THEIRS.read_text().splitlines():
        if line and not line.startswith("#"):
            method, path = line.split(" ")
            paths.setdefault(path, {})[method.lower()] = {}
    return operations({"paths": paths})


def _ours() -> set[tuple[str, str]]:
    document = msgspec.json.decode(msgspec.json.encode(openapi.document(ROUTES, VERSION)))
    return operations(document)


def test_unleash_s_list_is_the_whole_document() -> None:
    # 6.10.1 documents 190 admin operations; a truncated data file would hide what we lack.
    assert len(_theirs()) == 190


def test_every_missing_operation_is_named_with_its_reason() -> None:
    missing = _theirs() - _ours()
    unexplained = sorted(missing - OUT_OF_SCOPE.keys(), key=lambda op: (op[1], op[0]))
    assert unexplained == [], "Unleash operations we lack, with no reason given:\n" + "\n".join(
        f"  {method} {path}" for method, path in unexplained
    )


def test_nothing_named_missing_is_answered() -> None:
    answered = sorted(OUT_OF_SCOPE.keys() & _ours())
    assert answered == [], f"named as missing but answered (take them off the list): {answered}"


def test_each_reason_is_said() -> None:
    assert all(reason.strip() for reason in OUT_OF_SCOPE.values())
    assert OUT_OF_SCOPE.keys() <= _theirs(), "a named operation Unleash does not document"
