"""The flag table's query parameters read into a Search (pure: no I/O), by Unleash's rules for
`GET /api/admin/search/features` (docs/behavior.md, "The flag table"): each filter is
`OPERATOR:value,value,...`, with the operators its field takes. Anything that does not parse is
a 400 naming the parameter, never a filter silently dropped and never a 500."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final, NamedTuple

from service.errors import ValidationError

if TYPE_CHECKING:
    from collections.abc import Callable

# Operators of fields that take one value of a few (Unleash's IS... family).
IS_OPERATORS: Final = ("IS", "IS_NOT", "IS_ANY_OF", "IS_NONE_OF")
# Operators of fields a flag has several of (tags, segments).
INCLUDE_OPERATORS: Final = (
    "INCLUDE",
    "DO_NOT_INCLUDE",
    "INCLUDE_ALL_OF",
    "INCLUDE_ANY_OF",
    "EXCLUDE_IF_ANY_OF",
    "EXCLUDE_ALL",
)
DATE_OPERATORS: Final = ("IS_BEFORE", "IS_ON_OR_AFTER")
NEGATIVE: Final = frozenset({"IS_NOT", "IS_NONE_OF", "DO_NOT_INCLUDE", "EXCLUDE_IF_ANY_OF"})

STATES: Final = ("active", "stale", "potentially-stale")
STAGES: Final = ("initial", "pre-live", "live", "completed", "archived")
SORTS: Final = ("name", "type", "stale", "project", "createdAt", "lastSeenAt")
DEFAULT_LIMIT: Final = 50
MAX_LIMIT: Final = 100
MAX_VALUES: Final = 100  # values of one filter, terms of the text query
MAX_VALUE_LENGTH: Final = 200  # characters of one value (names are at most 100)
INT32: Final = 2**31
_DATE: Final = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class Condition(NamedTuple):
    """A filter: the field, its operator (one of the field's) and its values (at least one,
    each once, in the order given)."""

    field: str
    operator: str
    values: tuple[str, ...]

    @property
    def negated(self) -> bool:
        return self.operator in NEGATIVE


class Search(NamedTuple):
    """What a request of the flag table asks for."""

    terms: tuple[str, ...] = ()  # each a case-insensitive substring of name or description
    conditions: tuple[Condition, ...] = ()
    status: tuple[tuple[str, bool], ...] = ()  # (environment, enabled): any of them
    archived: bool = False  # archived flags only; else active ones only
    created_before: datetime | None = None
    created_from: datetime | None = None
    seen_before: datetime | None = None
    seen_from: datetime | None = None
    favorites_first: bool = False
    sort_by: str = "createdAt"  # one of SORTS, or "environment"
    sort_environment: str | None = None  # sort_by "environment": which one
    descending: bool = False
    offset: int = 0
    limit: int = DEFAULT_LIMIT


def _fail(name: str, why: str) -> ValidationError:
    return ValidationError(f"{why} - at `{name}`")


def _checked_text(name: str, value: str) -> str:
    if "\x00" in value:
        raise _fail(name, f"{name} may not contain the NUL character")
    if len(value) > MAX_VALUE_LENGTH:
        raise _fail(name, f"each value of {name} has at most {MAX_VALUE_LENGTH} characters")
    return value


def split_values(name: str, raw: str) -> tuple[str, ...]:
    """Comma-separated values, trimmed; empty ones left out; each once."""
    values = tuple(dict.fromkeys(v.strip() for v in raw.split(",") if v.strip()))
    if len(values) > MAX_VALUES:
        raise _fail(name, f"{name} takes at most {MAX_VALUES} values")
    return tuple(_checked_text(name, v) for v in values)


def operator_filter(name: str, raw: str, operators: tuple[str, ...]) -> Condition | None:
    """`OPERATOR:values` with one of `operators`; None when no value follows the operator
    (the UI's filter with every value removed: no condition, as Unleash)."""
    operator, colon, rest = raw.partition(":")
    if not colon or operator not in operators:
        raise _fail(
            name,
            f"{name} must be OPERATOR:value[,value...] with an operator of {', '.join(operators)}",
        )
    values = split_values(name, rest)
    return Condition(name, operator, values) if values else None


def _each(name: str, condition: Condition, check: Callable[[str], bool], what: str) -> None:
    for value in condition.values:
        if not check(value):
            raise _fail(name, f"{name}: {value!r} is not {what}")


def _user_id(value: str) -> bool:
    digits = value.removeprefix("-")
    return digits.isascii() and digits.isdigit() and -INT32 <= int(value) < INT32


def tag_pair(value: str) -> tuple[str, str]:
    """A tag as the filter names it: `type:value` (the value may hold further colons)."""
    tag_type, _, tag_value = value.partition(":")
    return tag_type.strip(), tag_value.strip()


def _tag(value: str) -> bool:
    tag_type, tag_value = tag_pair(value)
    return bool(tag_type) and bool(tag_value)


def date_bound(name: str, raw: str) -> tuple[str, datetime] | None:
    """`IS_BEFORE:yyyy-mm-dd` or `IS_ON_OR_AFTER:yyyy-mm-dd`: the operator and the start of
    that day (UTC); None for an empty parameter."""
    if not raw:
        return None
    condition = operator_filter(name, raw, DATE_OPERATORS)
    if condition is None:
        return None
    if len(condition.values) != 1 or not _DATE.match(condition.values[0]):
        raise _fail(name, f"{name} must be {'|'.join(DATE_OPERATORS)}:yyyy-mm-dd")
    try:
        day = datetime.strptime(condition.values[0], "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise _fail(name, f"{name}: {condition.values[0]} is no date") from None
    return condition.operator, day


def status_pair(raw: str) -> tuple[str, bool]:
    """`environment:enabled` or `environment:disabled`."""
    environment, colon, state = raw.rpartition(":")
    if not colon or not environment or state not in ("enabled", "disabled"):
        raise _fail("status", "each status must be environment:enabled or environment:disabled")
    return _checked_text("status", environment), state == "enabled"


def flag(name: str, raw: str | None) -> bool:
    if raw in (None, "", "false"):
        return False
    if raw == "true":
        return True
    raise _fail(name, f"{name} must be true or false")


def archived(raw: str | None) -> bool:
    """`IS:true` (archived flags only) or `IS:false` (active ones, also when absent)."""
    if raw in (None, "", "IS:false", "false"):
        return False
    if raw in ("IS:true", "true"):
        return True
    raise _fail("archived", "archived must be IS:true or IS:false")


def sort(raw: str | None, order: str | None) -> tuple[str, str | None, bool]:
    """(sort_by, environment, descending). A sortBy that names no column sorts by creation,
    as in Unleash (the UI sends the names of columns that have no order of their own)."""
    if order not in (None, "", "asc", "desc"):
        raise _fail("sortOrder", "sortOrder must be asc or desc")
    descending = order == "desc"
    if raw is not None and raw.startswith("environment:"):
        environment = _checked_text("sortBy", raw.removeprefix("environment:"))
        return "environment", environment, descending
    return (raw if raw in SORTS else "createdAt"), None, descending


# Each operator filter: its parameter, operators and the check of its values.
_FILTERS: Final[dict[str, tuple[tuple[str, ...], Callable[[str], bool] | None, str]]] = {
    "project": (IS_OPERATORS, None, ""),
    "type": (IS_OPERATORS, None, ""),
    "createdBy": (IS_OPERATORS, _user_id, "a user id"),
    "state": (IS_OPERATORS, STATES.__contains__, "one of " + ", ".join(STATES)),
    "lifecycle": (IS_OPERATORS, STAGES.__contains__, "one of " + ", ".join(STAGES)),
    "tag": (INCLUDE_OPERATORS, _tag, "a tag as type:value"),
    "segment": (INCLUDE_OPERATORS, None, ""),
}
FILTER_NAMES: Final = tuple(_FILTERS)


def conditions(raw: dict[str, str | None]) -> tuple[Condition, ...]:
    """The operator filters given (their raw values by parameter name)."""
    out = []
    for name, (operators, check, what) in _FILTERS.items():
        value = raw.get(name)
        if value in (None, ""):
            continue
        assert value is not None
        condition = operator_filter(name, value, operators)
        if condition is None:
            continue
        if check is not None:
            _each(name, condition, check, what)
        out.append(condition)
    return tuple(out)


def terms(raw: str | None) -> tuple[str, ...]:
    return split_values("query", raw or "")
