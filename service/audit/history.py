"""What a stream held just before each of some of its events (Unleash's `preData`) and a flag's
tags just after: a fold of the stream's earlier events. Pure; `queries` loads what it folds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, NamedTuple

import msgspec

from eventlog.events.addons import AddonCreated, AddonDeleted, AddonUpdated
from eventlog.events.api_tokens import ApiTokenCreated, ApiTokenDeleted
from eventlog.events.context_fields import (
    ContextFieldCreated,
    ContextFieldDeleted,
    ContextFieldUpdated,
)
from eventlog.events.features import (
    EnvironmentVariantsSet,
    FeatureCloned,
    FeatureCreated,
    FeatureTagged,
    FeatureUntagged,
    FeatureUpdated,
    SegmentCreated,
    SegmentDeleted,
    SegmentUpdated,
    StrategyAdded,
    StrategyData,
    StrategyRemoved,
    StrategyUpdated,
    Variant,
)
from eventlog.events.strategy_definitions import (
    StrategyDefinitionCreated,
    StrategyDefinitionDeleted,
    StrategyDefinitionUpdated,
)
from eventlog.events.users import (
    PersonalAccessTokenCreated,
    PersonalAccessTokenDeleted,
    ServiceAccountCreated,
    ServiceAccountDeleted,
    ServiceAccountUpdated,
    UserCreated,
    UserDeleted,
    UserRecord,
    UserUpdated,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from eventlog.codec import DomainEvent
    from service.audit.logsearch import LogEntry

# The events each kind of stream is folded from (what a preData or the tags depend on).
FOLDED: Final[dict[str, tuple[str, ...]]] = {
    "feature": tuple(
        t.type_name()
        for t in (
            FeatureCreated,
            FeatureCloned,
            StrategyAdded,
            StrategyUpdated,
            StrategyRemoved,
            EnvironmentVariantsSet,
            FeatureTagged,
            FeatureUntagged,
            FeatureUpdated,
        )
    ),
    "segment": (SegmentCreated.type_name(), SegmentUpdated.type_name()),
    "user": (
        UserCreated.type_name(),
        UserUpdated.type_name(),
        PersonalAccessTokenCreated.type_name(),
    ),
    "service-account": (
        ServiceAccountCreated.type_name(),
        ServiceAccountUpdated.type_name(),
        PersonalAccessTokenCreated.type_name(),
    ),
    "api-token": (ApiTokenCreated.type_name(),),
    # A built-in type's or field's stream starts with no record: its first change has none.
    "strategy": (StrategyDefinitionCreated.type_name(), StrategyDefinitionUpdated.type_name()),
    "context-field": (ContextFieldCreated.type_name(), ContextFieldUpdated.type_name()),
    "addon": (AddonCreated.type_name(), AddonUpdated.type_name()),
}
# Events whose preData is what their stream held before them.
NEEDS_BEFORE: Final = (
    AddonUpdated,
    AddonDeleted,
    StrategyUpdated,
    StrategyRemoved,
    EnvironmentVariantsSet,
    SegmentUpdated,
    SegmentDeleted,
    UserUpdated,
    UserDeleted,
    ServiceAccountUpdated,
    ServiceAccountDeleted,
    ApiTokenDeleted,
    PersonalAccessTokenDeleted,
    StrategyDefinitionUpdated,
    StrategyDefinitionDeleted,
    ContextFieldUpdated,
    ContextFieldDeleted,
    FeatureUpdated,
)


def flag_fields(event: FeatureCreated | FeatureCloned | FeatureUpdated) -> dict[str, Any]:
    """A flag's fields that FeatureUpdated changes, as Unleash's feature-metadata-updated
    shows them (its data, and its preData: the same of the state before)."""
    return {
        "name": event.name,
        "project": event.project,
        "description": event.description,
        "type": event.feature_type,
        "impressionData": event.impression_data,
    }


class Tag(msgspec.Struct, frozen=True, kw_only=True):
    value: str
    type: str


class Context(NamedTuple):
    """What an event's stream said around it: the state its preData shows, the flag's tags
    once it was applied, and the flag's project (tag events recorded before projects were)."""

    before: Any = None
    tags: list[Tag] | None = None
    project: str | None = None


class _Stream:
    """One stream's state, as far as the fold has come."""

    def __init__(self) -> None:
        self.project: str | None = None
        self.fields: dict[str, Any] | None = None  # a flag's, as flag_fields shows them
        self.tags: dict[tuple[str, str], None] = {}
        self.strategies: dict[str, StrategyData] = {}
        self.variants: dict[str, list[Variant]] = {}
        self.entity: Any = None  # segment, account or API token: the last record of it
        self.tokens: dict[int, PersonalAccessTokenCreated] = {}

    def before(self, event: DomainEvent) -> Any:  # noqa: PLR0911 - one answer per type
        match event:
            case StrategyUpdated(strategy=strategy):
                return self.strategies.get(strategy.id)
            case StrategyRemoved(strategy_id=strategy_id):
                return self.strategies.get(strategy_id)
            case EnvironmentVariantsSet(environment=environment):
                return {"variants": self.variants.get(environment, [])}
            case PersonalAccessTokenDeleted(token_id=token_id):
                return self.tokens.get(token_id)
            case FeatureUpdated():
                return self.fields
            case UserDeleted() | ServiceAccountDeleted() if self.entity is None:
                return event  # its own record, the account's last one, is all there is
            case _ if isinstance(event, NEEDS_BEFORE):
                return self.entity
        return None

    def apply(self, event: DomainEvent) -> None:  # noqa: C901, PLR0912 - one per folded type
        match event:
            case FeatureCreated(project=project):
                # A create starts the stream anew: it may follow a deleted namesake's events.
                self._start(project)
                self.fields = flag_fields(event)
            case FeatureUpdated():
                self.fields = flag_fields(event)
            case FeatureCloned():
                self._start(event.project)
                self.fields = flag_fields(event)
                self.tags = {(t.tag_type, t.value): None for t in event.tags}
                for env in event.environments:
                    self.strategies |= {s.id: s for s in env.strategies}
                    self.variants[env.environment] = env.variants
            case StrategyAdded(strategy=strategy) | StrategyUpdated(strategy=strategy):
                self.strategies[strategy.id] = strategy
            case StrategyRemoved(strategy_id=strategy_id):
                self.strategies.pop(strategy_id, None)
            case EnvironmentVariantsSet(environment=environment, variants=variants):
                self.variants[environment] = variants
            case FeatureTagged(tag_type=tag_type, value=value):
                self.tags[(tag_type, value)] = None
            case FeatureUntagged(tag_type=tag_type, value=value):
                self.tags.pop((tag_type, value), None)
            case PersonalAccessTokenCreated(token_id=token_id):
                self.tokens[token_id] = event
            case UserUpdated() | ServiceAccountUpdated() if self.entity is not None:
                self.entity = msgspec.structs.replace(
                    self.entity, name=event.name, root_role=event.root_role
                )
                if isinstance(event, UserUpdated):
                    self.entity = msgspec.structs.replace(self.entity, email=event.email)
            case (
                SegmentCreated()
                | SegmentUpdated()
                | UserCreated()
                | ServiceAccountCreated()
                | ApiTokenCreated()
                | StrategyDefinitionCreated()
                | StrategyDefinitionUpdated()
                | ContextFieldCreated()
                | ContextFieldUpdated()
                | AddonCreated()
                | AddonUpdated()
            ):
                self.entity = event

    def _start(self, project: str) -> None:
        self.project = project
        self.tags, self.strategies, self.variants = {}, {}, {}

    def sorted_tags(self) -> list[Tag]:
        return [Tag(value=value, type=kind) for kind, value in sorted(self.tags)]


def streams_to_fold(page: Iterable[LogEntry]) -> dict[tuple[str, str], int]:
    """The streams a page needs folded, each up to the last version the page shows: every
    flag's (its tags), and the stream of every event whose preData is an earlier state."""
    upto: dict[tuple[str, str], int] = {}
    for entry in page:
        record = entry.recorded
        if record.stream_type == "feature" or isinstance(record.event, NEEDS_BEFORE):
            stream = (record.stream_type, record.stream_key)
            upto[stream] = max(upto.get(stream, 0), record.stream_version)
    return upto


def fold(
    page: Iterable[LogEntry],
    history: Iterable[LogEntry],
    imported: dict[int, UserRecord] | None = None,
) -> dict[int, Context]:
    """The context of each page event, by position. `history`: the folded types of the page's
    streams up to the page (`streams_to_fold`), in any order; `imported`: accounts that came
    in through `import-users` (their stream has no UserCreated), by id."""
    wanted = {e.recorded.position: e for e in page}
    merged = {e.recorded.position: e for e in history} | wanted
    streams: dict[tuple[str, str], _Stream] = {}
    found: dict[int, Context] = {}
    for position in sorted(p for p in merged if p is not None):
        record = merged[position].recorded
        key = (record.stream_type, record.stream_key)
        stream = streams.get(key)
        if stream is None:
            stream = streams[key] = _Stream()
            if record.stream_type == "user" and imported:
                stream.entity = imported.get(int(record.stream_key))
        before = stream.before(record.event)
        stream.apply(record.event)
        if position in wanted:
            found[position] = (
                Context(before=before, tags=stream.sorted_tags(), project=stream.project)
                if record.stream_type == "feature"
                else Context(before=before)
            )
    return found
