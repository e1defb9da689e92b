"""Hypothesis strategies built from msgspec type information: any value a Struct can hold."""

from __future__ import annotations

from datetime import UTC
from typing import Any

import msgspec
import msgspec.inspect as mi
from hypothesis import strategies as st

INT64 = 2**63


def for_type(tp: Any) -> st.SearchStrategy[Any]:
    """Values of a type as msgspec sees it: Structs, str, int, float, bool, None, lists, dicts,
    datetimes (aware, UTC), unions of these."""
    return _strategy(mi.type_info(tp))


def _strategy(info: mi.Type) -> st.SearchStrategy[Any]:  # noqa: C901, PLR0911 - one case per kind
    match info:
        case mi.StructType(cls=cls, fields=fields):
            return st.builds(cls, **{f.name: _strategy(f.type) for f in fields})
        case mi.StrType():
            return st.text(max_size=20)
        case mi.IntType():
            return st.integers(min_value=-INT64, max_value=INT64 - 1)
        case mi.FloatType():  # finite: JSON has no NaN or infinity
            return st.floats(allow_nan=False, allow_infinity=False)
        case mi.BoolType():
            return st.booleans()
        case mi.NoneType():
            return st.none()
        case mi.DateTimeType():
            return st.datetimes(timezones=st.just(UTC))
        case mi.ListType(item_type=item):
            return st.lists(_strategy(item), max_size=3)
        case mi.DictType(key_type=key, value_type=value):
            return st.dictionaries(_strategy(key), _strategy(value), max_size=3)
        case mi.UnionType(types=types):
            return st.one_of(*(_strategy(t) for t in types))
    raise TypeError(f"no strategy for {info!r}")


def walk(info: mi.Type) -> list[mi.Type]:
    """Every type nested in info (info first): what a field's value can be made of."""
    found = [info]
    match info:
        case mi.StructType(fields=fields):
            for field in fields:
                found += walk(field.type)
        case mi.ListType(item_type=item):
            found += walk(item)
        case mi.DictType(key_type=key, value_type=value):
            found += walk(key) + walk(value)
        case mi.UnionType(types=types):
            for t in types:
                found += walk(t)
    return found


def fields(info: mi.Type) -> list[tuple[str, msgspec.inspect.Field]]:
    """Every field of every Struct nested in info, with the Struct's name."""
    return [
        (t.cls.__name__, f) for t in walk(info) if isinstance(t, mi.StructType) for f in t.fields
    ]
