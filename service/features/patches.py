"""JSON Patch (RFC 6902) over plain JSON values, for the PATCH routes of a flag, of a strategy
and of an environment's variants. Pure: the operations are applied to a copy of the document,
and any operation that cannot apply is a 400 naming it (`$[i]`), never a partial change.

Unlike the library Unleash uses (fast-json-patch), a path that does not exist is an error for
remove and replace (RFC 6902, 4.2 and 4.3), not a silent no-op, and `test` is an operation.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

import msgspec

from service.errors import ValidationError

if TYPE_CHECKING:
    from collections.abc import Sequence

Pointer = Annotated[
    str, msgspec.Meta(max_length=1000, description="A JSON pointer (RFC 6901), e.g. `/stale`")
]


class Operation(msgspec.Struct, frozen=True, kw_only=True):
    """One operation of a JSON Patch document; `value` for add, replace and test, `from` for
    move and copy."""

    example: ClassVar[dict[str, object]] = {"op": "replace", "path": "/stale", "value": True}

    op: Literal["add", "remove", "replace", "move", "copy", "test"]
    path: Pointer
    value: Any | msgspec.UnsetType = msgspec.UNSET
    source: Pointer | msgspec.UnsetType = msgspec.field(name="from", default=msgspec.UNSET)


Patch = Annotated[
    list[Operation],
    msgspec.Meta(
        max_length=1000,
        description="A JSON Patch document (RFC 6902): operations applied in order, all or none",
        examples=[[{"op": "replace", "path": "/description", "value": "The new checkout"}]],
    ),
]

_INDEX = re.compile(r"0|[1-9][0-9]{0,8}")
_BAD_ESCAPE = re.compile(r"~(?![01])")


def tokens(pointer: str, where: str) -> list[str]:
    """The reference tokens of a JSON pointer (`/a~1b/0` -> `a/b`, `0`)."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise ValidationError(f"A JSON pointer is empty or starts with `/` - at `{where}`")
    parts = pointer[1:].split("/")
    if any(_BAD_ESCAPE.search(part) for part in parts):
        raise ValidationError(f"`~` in a JSON pointer is `~0` or `~1` - at `{where}`")
    return [part.replace("~1", "/").replace("~0", "~") for part in parts]


def apply(document: Any, operations: Sequence[Operation]) -> Any:
    """The document with every operation applied in order (the given one is not changed)."""
    try:
        result = _copy(document)
        for i, operation in enumerate(operations):
            result = _apply_one(result, operation, f"$[{i}]")
    except RecursionError:
        raise ValidationError("The patch's values are nested too deeply") from None
    return result


def _apply_one(document: Any, operation: Operation, where: str) -> Any:  # noqa: C901, PLR0911 - per op
    path = tokens(operation.path, f"{where}.path")
    match operation.op:
        case "add":
            return _add(document, path, _value(operation, where), where)
        case "remove":
            _remove(document, path, where)
            return document
        case "replace":
            value = _value(operation, where)
            if not path:
                return value
            _remove(document, path, where)
            return _add(document, path, value, where)
        case "move":
            source = _source(operation, where)
            if path[: len(source)] == source and len(path) > len(source):
                raise ValidationError(f"A value cannot be moved into itself - at `{where}.path`")
            value = _get(document, source, f"{where}.from")
            if not source:
                return value
            _remove(document, source, f"{where}.from")
            return _add(document, path, value, where)
        case "copy":
            value = _copy(_get(document, _source(operation, where), f"{where}.from"))
            return _add(document, path, value, where)
        case "test":
            if not equal(_get(document, path, f"{where}.path"), _value(operation, where)):
                raise ValidationError(f"The value at `{operation.path}` differs - at `{where}`")
            return document


def _value(operation: Operation, where: str) -> Any:
    if operation.value is msgspec.UNSET:
        raise ValidationError(f"{operation.op} needs a `value` - at `{where}`")
    return _copy(operation.value)  # the request's own value stays as it was sent


def _source(operation: Operation, where: str) -> list[str]:
    if isinstance(operation.source, msgspec.UnsetType):
        raise ValidationError(f"{operation.op} needs a `from` - at `{where}`")
    return tokens(operation.source, f"{where}.from")


def _missing(where: str) -> ValidationError:
    return ValidationError(f"The path does not exist in the document - at `{where}`")


def _index(container: list[Any], token: str, where: str, *, end: bool = False) -> int:
    """An array index: digits without leading zeros, within the array (`end`: or just past it,
    where add inserts; `-` names that place too)."""
    if end and token == "-":
        return len(container)
    if not _INDEX.fullmatch(token) or int(token) > len(container) - (0 if end else 1):
        raise _missing(where)
    return int(token)


def _child(container: Any, token: str, where: str) -> Any:
    if isinstance(container, dict) and token in container:
        return container[token]
    if isinstance(container, list):
        return container[_index(container, token, where)]
    raise _missing(where)


def _get(document: Any, path: list[str], where: str) -> Any:
    for token in path:
        document = _child(document, token, where)
    return document


def _add(document: Any, path: list[str], value: Any, where: str) -> Any:
    if not path:
        return value
    parent = _get(document, path[:-1], f"{where}.path")
    last = path[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, f"{where}.path", end=True), value)
    else:
        raise _missing(f"{where}.path")
    return document


def _remove(document: Any, path: list[str], where: str) -> None:
    if not path:
        raise ValidationError(f"The whole document cannot be removed - at `{where}`")
    parent = _get(document, path[:-1], where)
    last = path[-1]
    if isinstance(parent, dict) and last in parent:
        del parent[last]
    elif isinstance(parent, list):
        del parent[_index(parent, last, where)]
    else:
        raise _missing(where)


def _copy(value: Any) -> Any:
    """A deep copy of a JSON value (so that later operations never change another's value)."""
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def equal(a: Any, b: Any) -> bool:
    """JSON equality (RFC 6902, 4.6): numbers by value, but a boolean is never a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return False
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b
