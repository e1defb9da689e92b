"""Response bodies of the event log routes: Unleash's eventSchema (its field names and, where
Unleash records the same thing, its event type names and `data` shapes) plus our envelope
(`position`, `stream`, `streamVersion`, `hash`, `storedType`). Built here and only here.

`data` and `preData` never hold a secret: no token, session or password hash reaches them
(`_SECRET_KEYS`; tests/audit/test_event_log.py checks every event type).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import msgspec

from eventlog.events.addons import AddonCreated, AddonDeleted, AddonUpdated
from eventlog.events.api_tokens import ApiTokenCreated, ApiTokenDeleted
from eventlog.events.base import Event
from eventlog.events.feature_types import FeatureTypeLifetimeChanged
from eventlog.events.features import (
    DependencyAdded,
    DependencyRemoved,
    EnvironmentVariantsSet,
    FeatureArchived,
    FeatureCloned,
    FeatureCreated,
    FeatureDeleted,
    FeatureEnvironmentDisabled,
    FeatureEnvironmentEnabled,
    FeatureRevived,
    FeatureStaleSet,
    FeatureTagged,
    FeatureUntagged,
    FeatureUpdated,
    SegmentCreated,
    SegmentDeleted,
    SegmentUpdated,
    StrategiesReordered,
    StrategyAdded,
    StrategyData,
    StrategyRemoved,
    StrategyUpdated,
)
from eventlog.events.instance import FrontendApiOriginsSet, MaintenanceModeSet
from eventlog.events.projects import (
    EnvironmentCreated,
    ProjectArchived,
    ProjectCreated,
    ProjectEnvironmentDisabled,
    ProjectEnvironmentEnabled,
)
from eventlog.events.tags import TagCreated, TagDeleted
from eventlog.events.users import (
    PersonalAccessTokenCreated,
    PersonalAccessTokenDeleted,
    ServiceAccountCreated,
    ServiceAccountDeleted,
    ServiceAccountUpdated,
    UserCreated,
    UserDeleted,
    UserRecord,
    UsersDeleted,
    UsersImported,
    UserUpdated,
)
from service.audit.diff import EntityChange, Point
from service.audit.history import Context, Tag, flag_fields

if TYPE_CHECKING:
    import asyncpg

    from eventlog.codec import DomainEvent
    from service.audit.logsearch import LogEntry

# Keys whose values are secrets or stand for one: never shown, at any depth.
_SECRET_KEYS: Final = frozenset({"secret_hash", "password_hash", "session_hash", "token_hash"})
# Maps whose keys are the user's own words (a strategy's parameters): kept as they are.
_VERBATIM: Final = frozenset({"parameters"})
_SNAKE = re.compile(r"_([a-z0-9])")


class LogEvent(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One stored event as the event log routes show it; `id` is its position."""

    id: int
    type: str
    created_by: str
    created_by_user_id: int | None
    created_at: datetime
    data: Any
    pre_data: Any
    tags: list[Tag]
    feature_name: str | None
    project: str | None
    environment: str | None
    position: int
    stream: str
    stream_version: int
    hash: str
    stored_type: str


class EventList(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """GET /api/admin/events."""

    version: int = 1
    events: list[LogEvent]
    total_events: int


class FeatureEventList(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """GET /api/admin/events/:featureName."""

    version: int = 1
    toggle_name: str
    events: list[LogEvent]
    total_events: int


class EventSearchResult(msgspec.Struct, frozen=True, kw_only=True):
    """GET /api/admin/search/events."""

    events: list[LogEvent]
    total: int


class EventCreator(msgspec.Struct, frozen=True, kw_only=True):
    """One of GET /api/admin/event-creators (Unleash's eventCreatorsSchema): an author by
    Unleash's user id, with the account's name, else its username, else its e-mail."""

    id: int
    name: str

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> EventCreator:
        return cls(id=row["id"], name=row["name"])


class AuditDiff(msgspec.Struct, frozen=True, kw_only=True):
    """GET /api/admin/audit/diff: the two states compared, and what differs between them."""

    start: Point = msgspec.field(name="from")
    end: Point = msgspec.field(name="to")
    changes: list[EntityChange]


def log_event(entry: LogEntry, context: Context) -> LogEvent:
    record = entry.recorded
    event = record.event
    assert record.position is not None  # a stored event has its position
    feature = record.stream_key if record.stream_type == "feature" else None
    return LogEvent(
        id=record.position,
        type=entry.kind,
        created_by=record.metadata.actor_name,
        created_by_user_id=entry.actor_user_id,
        created_at=record.recorded_at,
        data=data(event),
        pre_data=pre_data(event, context.before),
        tags=context.tags or [],
        feature_name=feature,
        project=entry.project or context.project,
        environment=environment(event, context.before),
        position=record.position,
        stream=f"{record.stream_type}/{record.stream_key}",
        stream_version=record.stream_version,
        hash=entry.hash,
        stored_type=event.type_name(),
    )


def camel(value: Any) -> Any:
    """Plain JSON of an event or event shape with camelCase keys, secrets left out (and an
    event's stored type name, which `storedType` shows)."""
    if isinstance(value, Event):
        value = msgspec.to_builtins(value)
        del value["type"]
    elif isinstance(value, msgspec.Struct):
        value = msgspec.to_builtins(value)
    if isinstance(value, dict):
        return {
            _SNAKE.sub(lambda m: m[1].upper(), key): item if key in _VERBATIM else camel(item)
            for key, item in value.items()
            if key not in _SECRET_KEYS
        }
    if isinstance(value, list):
        return [camel(item) for item in value]
    return value


def _feature(event: FeatureCreated | FeatureCloned) -> dict[str, Any]:
    """Unleash's feature-created data: the flag as it was created."""
    return {
        "name": event.name,
        "description": event.description,
        "type": event.feature_type,
        "project": event.project,
        "stale": False,
        "createdAt": camel(event).get("createdAt"),
        "lastSeenAt": None,
        "impressionData": event.impression_data,
        "archived": False,
    }


def _deleted_feature(event: FeatureDeleted) -> dict[str, Any]:
    """Unleash's feature-deleted preData: the flag as it was, with when it was archived."""
    shown = camel(event)
    return {
        "name": event.name,
        "type": event.feature_type,
        "stale": event.stale,
        "project": event.project,
        "archived": True,
        "createdAt": shown["createdAt"],
        "lastSeenAt": None,
        "description": event.description,
        "impressionData": event.impression_data,
        "archivedAt": shown["archivedAt"],
    }


def _cloned(event: FeatureCloned) -> dict[str, Any]:
    copied = camel(event)
    return _feature(event) | {
        "clonedFrom": {
            "name": event.source,
            "project": event.source_project,
            "position": event.source_position,
        },
        "environments": copied["environments"],
        "dependencies": [
            {"feature": d.parent, "enabled": d.enabled, "variants": d.variants}
            for d in event.dependencies
        ],
        "tags": [{"type": t.tag_type, "value": t.value} for t in event.tags],
    }


def _strategy(strategy: StrategyData) -> dict[str, Any]:
    shown: dict[str, Any] = camel(strategy)
    return shown


def _dependency(event: DependencyAdded) -> dict[str, Any]:
    shown: dict[str, Any] = {"feature": event.parent, "enabled": event.enabled}
    if event.variants:  # Unleash leaves out an empty list
        shown["variants"] = event.variants
    return shown


Account = (
    UserCreated
    | UserUpdated
    | UserDeleted
    | UserRecord
    | ServiceAccountCreated
    | ServiceAccountUpdated
    | ServiceAccountDeleted
)


def _account(record: Account) -> dict[str, Any]:
    """A person or service account as Unleash's user events show one: the fields the record
    has, of id, name, email, username and rootRole."""
    match record:
        case UserCreated() | UserRecord():
            return {
                "id": record.user_id,
                "name": record.name,
                "email": record.email,
                "username": record.username,
                "rootRole": record.root_role,
            }
        case UserUpdated():
            return {
                "id": record.user_id,
                "name": record.name,
                "email": record.email,
                "rootRole": record.root_role,
            }
        case UserDeleted():
            return {
                "id": record.user_id,
                "name": record.name,
                "email": record.email,
                "username": record.username,
            }
        case ServiceAccountCreated():
            return {
                "id": record.account_id,
                "name": record.name,
                "username": record.username,
                "rootRole": record.root_role,
            }
        case ServiceAccountUpdated():
            return {"id": record.account_id, "name": record.name, "rootRole": record.root_role}
        case ServiceAccountDeleted():
            return {"id": record.account_id, "name": record.name, "username": record.username}


def _api_token(event: ApiTokenCreated) -> dict[str, Any]:
    return {
        "tokenName": event.token_name,
        "environment": event.environment,
        "projects": event.projects,
        "type": event.token_type,
        "username": event.token_name,
        "alias": None,
        "project": event.projects[0] if len(event.projects) == 1 else None,
        "createdAt": camel(event)["createdAt"],
        "expiresAt": camel(event).get("expiresAt"),
    }


def _pat(event: PersonalAccessTokenCreated) -> dict[str, Any]:
    return {
        "id": event.token_id,
        "userId": event.user_id,
        "description": event.description,
        "createdAt": camel(event)["createdAt"],
        "expiresAt": camel(event)["expiresAt"],
    }


def _addon(event: AddonCreated | AddonUpdated) -> dict[str, Any]:
    """An integration as Unleash's addon-config events show it: without its parameters."""
    shown = {
        "id": event.addon_id,
        "description": event.description,
        "enabled": event.enabled,
        "events": event.events,
        "projects": event.projects,
        "environments": event.environments,
    }
    if isinstance(event, AddonCreated):
        shown = {"provider": event.provider} | shown | {"createdAt": camel(event)["createdAt"]}
    return shown


def data(event: DomainEvent) -> Any:  # noqa: C901, PLR0911, PLR0912 - a shape per event type
    """What happened, in Unleash's shape where Unleash records it; null where Unleash's data
    is null (archive, stale, on/off: the type and the envelope say it all)."""
    match event:
        case FeatureCreated():
            return _feature(event)
        case FeatureCloned():
            return _cloned(event)
        case (
            FeatureArchived()
            | FeatureRevived()
            | FeatureDeleted()
            | FeatureStaleSet()
            | FeatureEnvironmentEnabled()
            | FeatureEnvironmentDisabled()
            | StrategyRemoved()
            | FeatureUntagged()
            | ProjectArchived()
            | ProjectEnvironmentEnabled()
            | ProjectEnvironmentDisabled()
            | SegmentDeleted()
            | ApiTokenDeleted()
            | UserDeleted()
            | ServiceAccountDeleted()
            | PersonalAccessTokenDeleted()
        ):
            return None
        case StrategyAdded(strategy=strategy) | StrategyUpdated(strategy=strategy):
            return _strategy(strategy)
        case EnvironmentVariantsSet(variants=variants):
            return {"variants": camel(variants)}
        case FeatureTagged(tag_type=tag_type, value=value):
            return {"type": tag_type, "value": value}
        case DependencyAdded():
            return _dependency(event)
        case DependencyRemoved(parent=parent):
            return {"feature": parent}
        case SegmentCreated() | SegmentUpdated():
            shown = camel(event)
            return {"id": shown.pop("segmentId")} | shown
        case ProjectCreated():
            shown = camel(event)
            return {"id": shown.pop("projectId")} | shown
        case EnvironmentCreated():
            shown = camel(event)
            return shown | {"type": event.environment_type}
        case ApiTokenCreated():
            return _api_token(event)
        case UserCreated() | UserUpdated() | ServiceAccountCreated() | ServiceAccountUpdated():
            return _account(event)
        case PersonalAccessTokenCreated():
            return _pat(event)
        case UsersDeleted():
            return {
                "users": [u.user_id for u in event.users],
                "inactiveDays": event.inactive_days,
                "deletedAt": camel(event)["deletedAt"],
            }
        case UsersImported():
            return camel(event)
        case (
            TagCreated(tag_type=tag_type, value=value) | TagDeleted(tag_type=tag_type, value=value)
        ):
            return {"type": tag_type, "value": value}
        case FeatureTypeLifetimeChanged(feature_type_id=type_id, lifetime_days=days):
            return {"id": type_id, "lifetimeDays": days}
        case FeatureUpdated():
            return flag_fields(event)
        case MaintenanceModeSet(enabled=enabled):  # Unleash's setting, with its id
            return {"id": "maintenance.mode", "enabled": enabled}
        case FrontendApiOriginsSet(origins=origins):
            return {"id": "unleash.frontend", "frontendApiOrigins": origins}
        case AddonCreated() | AddonUpdated():
            return _addon(event)
        case AddonDeleted():
            return None
    # Ours, with no Unleash counterpart: the stored data, camelCase, secrets left out.
    return camel(event)


def pre_data(event: DomainEvent, before: Any) -> Any:  # noqa: C901, PLR0911 - one per shape
    """What the event changed or removed, as it was just before (Unleash's preData)."""
    match event:
        case FeatureUntagged(tag_type=tag_type, value=value):
            return {"type": tag_type, "value": value}
        case UsersDeleted(users=users):
            return {"users": [_account(u) for u in users]}
        case FeatureDeleted():
            return _deleted_feature(event)
    match before:
        case None:
            return None
        case StrategyData():
            return _strategy(before)
        case ApiTokenCreated():
            return _api_token(before)
        case PersonalAccessTokenCreated():
            return _pat(before)
        case SegmentCreated() | SegmentUpdated():
            return data(before)
        case AddonCreated() | AddonUpdated():
            return _addon(before)
        case (
            UserCreated()
            | UserRecord()
            | UserDeleted()
            | ServiceAccountCreated()
            | ServiceAccountDeleted()
        ):
            return _account(before)
    return camel(before)


def environment(event: DomainEvent, before: Any) -> str | None:
    """The environment an event is about, where it is about one."""
    match event:
        case (
            StrategyAdded(environment=name)
            | StrategyUpdated(environment=name)
            | StrategyRemoved(environment=name)
            | FeatureEnvironmentEnabled(environment=name)
            | FeatureEnvironmentDisabled(environment=name)
            | EnvironmentVariantsSet(environment=name)
            | ProjectEnvironmentEnabled(environment=name)
            | ProjectEnvironmentDisabled(environment=name)
            | ApiTokenCreated(environment=name)
            | EnvironmentCreated(name=name)
            | StrategiesReordered(environment=name)
        ):
            return name
        case ApiTokenDeleted() if isinstance(before, ApiTokenCreated):
            return before.environment
    return None
