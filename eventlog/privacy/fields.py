"""Where a stored Struct keeps personal data, from its declarations
(eventlog.events.base.Personal): which fields to seal for whom, and the nested Structs to look
into. Pure: no keys, no I/O."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import msgspec
from msgspec import inspect

from eventlog.events.base import Declared


class Plan(NamedTuple):
    """A Struct's personal fields (with its declaration) and its fields holding Structs (or
    lists of them) that have some, with their plans."""

    cls: type[Declared]
    nested: tuple[tuple[str, Plan], ...]


def _struct_of(kind: inspect.Type) -> type[Declared] | None:
    """The Struct a field holds (itself, in a list, or optional), if any."""
    if isinstance(kind, inspect.StructType) and issubclass(kind.cls, Declared):
        return kind.cls
    if isinstance(kind, inspect.ListType):
        return _struct_of(kind.item_type)
    if isinstance(kind, inspect.UnionType):
        for member in kind.types:
            if (inner := _struct_of(member)) is not None:
                return inner
    return None


@functools.cache
def plan(cls: type[Declared]) -> Plan | None:
    """None when neither the Struct nor any Struct inside it has personal fields."""
    info = inspect.type_info(cls)
    assert isinstance(info, inspect.StructType)
    nested = []
    for field in info.fields:
        inner = _struct_of(field.type)
        inner_plan = None if inner is None else plan(inner)
        if inner_plan is not None:
            nested.append((field.encode_name, inner_plan))
    if cls.personal is None and not nested:
        return None
    return Plan(cls, tuple(nested))


def person_of(owner: object) -> int | None:
    """A person's id from an owner field: an int, or `user:<id>` (an actor)."""
    if isinstance(owner, int):
        return owner
    if isinstance(owner, str) and owner.startswith("user:") and owner[5:].isdigit():
        return int(owner[5:])
    return None


def owner_in(data: dict[str, Any], cls: type[Declared]) -> int | None:
    """The person whose data the fields of this (plain, as JSON values) Struct are, if any."""
    personal = cls.personal
    if personal is None:
        return None
    if personal.when is not None and data.get(personal.when[0]) != personal.when[1]:
        return None
    return person_of(data.get(personal.owner))


def text_fields(cls: type[msgspec.Struct]) -> dict[str, inspect.Type]:
    """A Struct's fields that hold text: str, or str inside a list, dict or union."""
    info = inspect.type_info(cls)
    assert isinstance(info, inspect.StructType)
    return {f.name: f.type for f in info.fields if _has_text(f.type)}


def _has_text(kind: inspect.Type) -> bool:
    if isinstance(kind, inspect.StrType):
        return True
    if isinstance(kind, inspect.UnionType):
        return any(_has_text(t) for t in kind.types)
    if isinstance(kind, (inspect.ListType, inspect.SetType, inspect.FrozenSetType)):
        return _has_text(kind.item_type)
    if isinstance(kind, inspect.VarTupleType):
        return _has_text(kind.item_type)
    if isinstance(kind, inspect.DictType):
        return _has_text(kind.key_type) or _has_text(kind.value_type)
    return False


def structs_in(*roots: Any) -> list[type[msgspec.Struct]]:
    """Every Struct class reachable from some types (a union of events, say), each once."""
    found: dict[type[msgspec.Struct], None] = {}

    def walk(kind: inspect.Type) -> None:
        if isinstance(kind, inspect.StructType):
            if kind.cls in found:
                return
            found[kind.cls] = None
            for field in kind.fields:
                walk(field.type)
        elif isinstance(kind, inspect.UnionType):
            for member in kind.types:
                walk(member)
        elif isinstance(
            kind,
            (inspect.ListType, inspect.SetType, inspect.FrozenSetType, inspect.VarTupleType),
        ):
            walk(kind.item_type)
        elif isinstance(kind, inspect.DictType):
            walk(kind.key_type)
            walk(kind.value_type)

    for root in roots:
        walk(inspect.type_info(root))
    return list(found)
