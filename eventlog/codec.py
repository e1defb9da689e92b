"""The stored-event contract as one type: every event type in one tagged union, read by one
decoder (older versions upcast first) and written by one encoder."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, TypeAlias, get_args

import msgspec

from eventlog.events import features, users
from eventlog.events.addons import AddonCreated, AddonDeleted, AddonUpdated
from eventlog.events.api_tokens import (
    ApiTokenCreated,
    ApiTokenDeleted,
    ApiTokenExpiryChanged,
    ApiTokensSeen,
)
from eventlog.events.applications import (
    ApplicationCreated,
    ApplicationDeleted,
    ApplicationUpdated,
)
from eventlog.events.base import Declared, Event, Metadata, Upcasters
from eventlog.events.context_fields import (
    ContextFieldCreated,
    ContextFieldDeleted,
    ContextFieldUpdated,
)
from eventlog.events.favorites import (
    FeatureFavorited,
    FeatureUnfavorited,
    ProjectFavorited,
    ProjectUnfavorited,
)
from eventlog.events.feature_types import FeatureTypeDefined, FeatureTypeLifetimeChanged
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
    StrategyRemoved,
    StrategyUpdated,
)
from eventlog.events.flag_extras import (
    FeatureCompleted,
    FeatureLinkAdded,
    FeatureLinkRemoved,
    FeatureLinkUpdated,
    FeatureUncompleted,
)
from eventlog.events.instance import FrontendApiOriginsSet, MaintenanceModeSet
from eventlog.events.invites import InviteLinkCreated, InviteLinkUpdated, InviteLinkUsed
from eventlog.events.preferences import FeedbackRecorded, SplashSeen
from eventlog.events.privacy import PersonalDataErased
from eventlog.events.projects import (
    DefaultStrategySet,
    EnvironmentCreated,
    EnvironmentSortOrderSet,
    EnvironmentSwitched,
    EnvironmentUpdated,
    ProjectArchived,
    ProjectCreated,
    ProjectEnvironmentDisabled,
    ProjectEnvironmentEnabled,
)
from eventlog.events.strategy_definitions import (
    StrategyDefinitionCreated,
    StrategyDefinitionDeleted,
    StrategyDefinitionDeprecated,
    StrategyDefinitionReactivated,
    StrategyDefinitionUpdated,
)
from eventlog.events.tags import (
    TagCreated,
    TagDeleted,
    TagTypeCreated,
    TagTypeDeleted,
    TagTypeUpdated,
)
from eventlog.events.users import (
    PasswordChanged,
    PasswordResetRequested,
    PersonalAccessTokenCreated,
    PersonalAccessTokenDeleted,
    PersonalAccessTokensSeen,
    ServiceAccountCreated,
    ServiceAccountDeleted,
    ServiceAccountUpdated,
    UserCreated,
    UserDeleted,
    UsersDeleted,
    UserSignedIn,
    UserSignedOut,
    UserSignInFailed,
    UsersImported,
    UserUpdated,
)
from eventlog.privacy import seal

if TYPE_CHECKING:
    from collections.abc import Mapping

    from eventlog.privacy.crypto import DataKey

DomainEvent: TypeAlias = (
    ApiTokenCreated
    | ApiTokenDeleted
    | EnvironmentCreated
    | ProjectCreated
    | ProjectArchived
    | ProjectEnvironmentEnabled
    | ProjectEnvironmentDisabled
    | EnvironmentSwitched
    | EnvironmentSortOrderSet
    | EnvironmentUpdated
    | DefaultStrategySet
    | FeatureCreated
    | FeatureArchived
    | FeatureRevived
    | FeatureStaleSet
    | StrategyAdded
    | StrategyUpdated
    | StrategyRemoved
    | FeatureEnvironmentEnabled
    | FeatureEnvironmentDisabled
    | EnvironmentVariantsSet
    | FeatureTagged
    | FeatureUntagged
    | DependencyAdded
    | DependencyRemoved
    | FeatureCloned
    | SegmentCreated
    | SegmentUpdated
    | SegmentDeleted
    | UserCreated
    | UserUpdated
    | UserDeleted
    | PasswordChanged
    | PasswordResetRequested
    | UserSignedIn
    | UserSignInFailed
    | UserSignedOut
    | UsersDeleted
    | UsersImported
    | ServiceAccountCreated
    | ServiceAccountUpdated
    | ServiceAccountDeleted
    | PersonalAccessTokenCreated
    | PersonalAccessTokenDeleted
    | PersonalAccessTokensSeen
    | PersonalDataErased
    | TagTypeCreated
    | TagTypeUpdated
    | TagTypeDeleted
    | TagCreated
    | TagDeleted
    | FeatureTypeDefined
    | FeatureTypeLifetimeChanged
    | StrategyDefinitionCreated
    | StrategyDefinitionUpdated
    | StrategyDefinitionDeprecated
    | StrategyDefinitionReactivated
    | StrategyDefinitionDeleted
    | ContextFieldCreated
    | ContextFieldUpdated
    | ContextFieldDeleted
    | FeatureFavorited
    | FeatureUnfavorited
    | ProjectFavorited
    | ProjectUnfavorited
    | FeatureUpdated
    | StrategiesReordered
    | FeatureDeleted
    | SplashSeen
    | FeedbackRecorded
    | FeatureLinkAdded
    | FeatureLinkUpdated
    | FeatureLinkRemoved
    | FeatureCompleted
    | FeatureUncompleted
    | ApiTokenExpiryChanged
    | ApiTokensSeen
    | InviteLinkCreated
    | InviteLinkUpdated
    | InviteLinkUsed
    | MaintenanceModeSet
    | FrontendApiOriginsSet
    | ApplicationCreated
    | ApplicationUpdated
    | ApplicationDeleted
    | AddonCreated
    | AddonUpdated
    | AddonDeleted
)

EVENT_TYPES: Final[dict[str, type[Event]]] = {cls.type_name(): cls for cls in get_args(DomainEvent)}
UPCASTERS: Final[Upcasters] = {**features.UPCASTERS, **users.UPCASTERS}


class UnknownEventType(Exception):
    pass


class RecordedEvent(msgspec.Struct, frozen=True, kw_only=True):
    """An event as stored: the envelope and the decoded domain event."""

    position: int | None  # None until the global section numbers it (inline projections)
    stream_type: str
    stream_key: str
    stream_version: int
    event_id: uuid.UUID
    recorded_at: datetime
    metadata: Metadata
    event: DomainEvent


# Stand-ins for what a reader did not decode: a rebuild of projections that never read the
# event or the metadata skips them (eventlog.Reading; projections.base.Projection.reads_*,
# which tests hold true). Never appended, never shown.
UNREAD_EVENT: Final[DomainEvent] = SegmentDeleted(segment_id=0, name="(not read)")
UNREAD_METADATA: Final = Metadata(
    actor_id="(not read)", actor_name="(not read)", actor_kind="(not read)", source="(not read)"
)

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(DomainEvent)
_metadata_decoder = msgspec.json.Decoder(Metadata)
_plain_decoder = msgspec.json.Decoder(dict[str, Any])


def encode(value: msgspec.Struct) -> bytes:
    return _encoder.encode(value)


def encode_stored(value: Declared, keys: Mapping[int, DataKey | None]) -> str:
    """An event's data or metadata as stored: personal values sealed with `keys` (which holds
    a key, or None once erased, for each of `seal.owners(value)`)."""
    if not keys:  # nobody's data in it
        return _encoder.encode(value).decode()
    return _encoder.encode(seal.sealed_form(value, keys)).decode()


class _StoredMetadata(msgspec.Struct, frozen=True, kw_only=True):
    """Metadata as stored: a person's name sealed (msgspec tells a string from an object)."""

    actor_id: str
    actor_name: str | seal.Sealed
    actor_kind: str
    request_id: str | None = None
    source: str = "api"


_stored_metadata_decoder = msgspec.json.Decoder(_StoredMetadata)


def decode_metadata(raw: str, keys: seal.Opener | None = None) -> Metadata:
    if not seal.holds_sealed(raw):
        return _metadata_decoder.decode(raw)
    stored = _stored_metadata_decoder.decode(raw)
    name = stored.actor_name
    return Metadata(
        actor_id=stored.actor_id,
        actor_name=(
            name if isinstance(name, str) else (keys or seal.NO_KEYS).open(name.person, name.sealed)
        ),
        actor_kind=stored.actor_kind,
        request_id=stored.request_id,
        source=stored.source,
    )


def decode(
    type_name: str, schema_version: int, raw: str, keys: seal.Opener | None = None
) -> DomainEvent:
    """Stored data of an event (the `type` and `schema_version` columns say what it is); its
    sealed values opened with `keys`."""
    cls = EVENT_TYPES.get(type_name)
    if cls is None:
        raise UnknownEventType(type_name)
    event: DomainEvent
    sealed = seal.holds_sealed(raw)
    if schema_version == cls.schema_version and not sealed:
        event = _decoder.decode(raw)
    else:
        data = _plain_decoder.decode(raw)
        if sealed:
            # (a hit may be a mere key named "sealed": keys are needed only to open one)
            data = seal.opened(data, cls, keys or seal.NO_KEYS)
        for version in range(schema_version, cls.schema_version):
            data = UPCASTERS[(type_name, version)](data)
        event = msgspec.convert(data, cls)  # type: ignore[assignment] # cls is one of them
    if type(event) is not cls:
        raise msgspec.ValidationError(f"the data of a {type_name} event says {event.type_name()}")
    return event
