"""What changed between two states of the read models, entity by entity: created, deleted, or
changed, with each field before and after. Computed from the two states' rows (never from
the events in between), grouped into entities by projections/entities.py. Pure."""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple

import msgspec

from service.errors import ValidationError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from projections.entities import Part
    from projections.writes import Table

Row = dict[str, Any]
HIDDEN: Final = "[hidden]"  # what a secret column shows, before and after alike
# The order entities are listed in; within a kind, by id.
KINDS: Final = (
    "environment",
    "project",
    "segment",
    "strategy-type",
    "context-field",
    "flag",
    "user",
    "service-account",
    "api-token",
    "tag-type",
    "feature-type",
    "setting",
    "application",
    "invite-link",
    "addon",
)
_SNAKE = re.compile(r"_([a-z0-9])")
_json = msgspec.json.Decoder()


class Point(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A state's place in the log: the last event in it (0: none), and when it was recorded."""

    position: int
    recorded_at: datetime | None


class FieldChange(msgspec.Struct, frozen=True, kw_only=True):
    field: str
    before: Any
    after: Any


class EntityChange(msgspec.Struct, frozen=True, kw_only=True):
    entity: str
    id: str
    change: Literal["created", "deleted", "changed"]
    fields: list[FieldChange]


# The streams that are one entity's history: stream type -> entity kind.
STREAM_ENTITIES: Final = {
    "feature": "flag",
    "project": "project",
    "environment": "environment",
    "segment": "segment",
    "strategy": "strategy-type",
    "context-field": "context-field",
    "user": "user",
    "service-account": "service-account",
    "api-token": "api-token",
}


def entity_of_stream(stream: str) -> tuple[str, str]:
    """`feature/checkout` -> ("flag", "checkout"); a batch's stream names no one entity."""
    stream_type, _, key = stream.partition("/")
    kind = STREAM_ENTITIES.get(stream_type)
    if kind is None or not key:
        raise ValidationError(
            f"stream must be one entity's: {', '.join(f'{t}/<key>' for t in STREAM_ENTITIES)} "
            "- at `stream`"
        )
    return kind, key


class Entity:
    """One entity's rows that differ, as the diff gathers them."""

    def __init__(self) -> None:
        self.own: tuple[Row | None, Row | None] | None = None
        self.fields: list[FieldChange] = []
        self.project: str | None = None  # a flag's


def camel(name: str) -> str:
    return _SNAKE.sub(lambda m: m[1].upper(), name)


class Reading(NamedTuple):
    """How to read rows: what each table's rows are part of (projections/entities.py), each
    table's key, the values of columns no write set, the columns holding JSON."""

    parts: dict[str, Part | None]
    keys: dict[str, tuple[str, ...]]
    defaults: dict[str, dict[str, Any]]
    json_columns: set[tuple[str, str]]

    @classmethod
    def of(
        cls,
        parts: dict[str, Part | None],
        tables: Iterable[Table],
        defaults: dict[str, dict[str, Any]],
        json_columns: set[tuple[str, str]],
    ) -> Reading:
        return cls(parts, {t.name: t.key for t in tables}, defaults, json_columns)


def diff(
    before: dict[tuple[str, Any], Row | None],
    rows: dict[str, dict[Any, Row]],
    reading: Reading,
    *,
    only: tuple[str, str] | None = None,
    project: str | None = None,
) -> list[EntityChange]:
    """`before`: each row that the later state's making touched, as the earlier state had it
    (None: absent); `rows`: the later state. `only` keeps one entity (kind, id); `project` the
    project and its flags."""
    entities: dict[tuple[str, str], Entity] = {}
    for (name, key), was in before.items():
        part = reading.parts[name]
        old, new = _filled(was, reading, name), _filled(rows[name].get(key), reading, name)
        if part is None or old == new:
            continue
        row = new if new is not None else old
        assert row is not None
        owner = row[part.owner]
        kind = _kind(part, owner, before, rows)
        entity = entities.setdefault((kind, str(owner)), Entity())
        if kind == "flag":
            entity.project = _flag_project(str(owner), before, rows)
        if part.part is None:
            entity.own = (old, new)
        entity.fields += _fields(name, part, reading, old, new)
    found = [
        EntityChange(entity=kind, id=ident, change=_change(e), fields=sorted_fields(e.fields))
        for (kind, ident), e in entities.items()
        if (only is None or (kind, ident) == only)
        and (project is None or (kind, ident) == ("project", project) or e.project == project)
    ]
    return sorted(found, key=lambda c: (KINDS.index(c.entity), _natural(c.id)))


def sorted_fields(fields: list[FieldChange]) -> list[FieldChange]:
    return sorted(fields, key=lambda f: f.field)


def _natural(ident: str) -> tuple[int, int | str]:
    """Numeric ids in number order, names in text order."""
    return (0, int(ident)) if ident.isdigit() else (1, ident)


def _change(entity: Entity) -> Literal["created", "deleted", "changed"]:
    if entity.own is not None:
        old, new = entity.own
        if old is None:
            return "created"
        if new is None:
            return "deleted"
    return "changed"


def _kind(
    part: Part, owner: Any, before: dict[tuple[str, Any], Row | None], rows: dict[str, Any]
) -> str:
    """An account is a user or a service account, as its row says (in either state)."""
    if part.kind != "account":
        return part.kind
    account = rows["users"].get(owner) or before.get(("users", owner)) or {}
    return "service-account" if account.get("account_type") == "Service Account" else "user"


def _flag_project(
    name: str, before: dict[tuple[str, Any], Row | None], rows: dict[str, Any]
) -> str | None:
    flag = rows["features"].get(name) or before.get(("features", name)) or {}
    project = flag.get("project")
    return project if isinstance(project, str) else None


def _filled(row: Row | None, reading: Reading, table: str) -> Row | None:
    return None if row is None else {**reading.defaults[table], **row}


def _fields(
    table: str, part: Part, reading: Reading, old: Row | None, new: Row | None
) -> list[FieldChange]:
    """Each column that differs, named `column`, or `part.name.column` for a part's rows."""
    key, json_columns = reading.keys[table], reading.json_columns
    row = new if new is not None else old
    assert row is not None
    prefix = ""
    if part.part is not None:
        named = [str(row[c]) for c in key if c != part.owner]
        prefix = ".".join([part.part, *(["/".join(named)] if named else [])]) + "."
    skipped = {part.owner, *key}
    columns = sorted({*(old or {}), *(new or {})} - skipped)
    there = FieldChange(
        field=prefix[:-1],
        before=True if old is not None else None,
        after=True if new is not None else None,
    )
    if not columns:  # a part's row that is all key (a project's environment): there, or not
        return [there] if part.part is not None else []
    changes = []
    for column in columns:
        was, now = (
            _value(table, column, old, part, json_columns),
            _value(table, column, new, part, json_columns),
        )
        secret = column in part.secret
        differs = (old or {}).get(column) != (new or {}).get(column)
        if differs or (not secret and was != now):
            changes.append(FieldChange(field=prefix + camel(column), before=was, after=now))
    if not changes and part.part is not None and (old is None) != (new is None):
        # A part's row whose columns are all null (a project's environment without a default
        # strategy) came or went: that it is there, or not, is the change.
        return [there]
    return changes


def _value(
    table: str, column: str, row: Row | None, part: Part, json_columns: set[tuple[str, str]]
) -> Any:
    if row is None or row.get(column) is None:
        return None
    value = row[column]
    if column in part.secret:
        return HIDDEN
    if (table, column) in json_columns and isinstance(value, str):
        return _json.decode(value)
    return msgspec.to_builtins(value)
