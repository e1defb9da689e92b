"""Event and metadata base Structs, the type registry, and encoding/decoding with upcasters."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any, ClassVar, Literal

import msgspec

ActorKind = Literal["api-token", "user", "service-account", "system"]


class Metadata(msgspec.Struct, frozen=True, kw_only=True):
    """Who caused an event and through which request; never holds a secret."""

    actor_id: str
    actor_name: str
    actor_kind: ActorKind
    request_id: str | None = None
    source: str = "api"


SYSTEM = Metadata(actor_id="system", actor_name="system", actor_kind="system", source="system")


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """A domain event. Subclasses set an explicit, stable `tag=` (the stored type name): it
    must never change once events of that type are stored, whatever the class is renamed to."""

    schema_version: ClassVar[int] = 1

    @classmethod
    def type_name(cls) -> str:
        tag = cls.__struct_config__.tag
        if not isinstance(tag, str):
            raise TypeError(f"{cls.__name__} needs an explicit tag= (its stored type name)")
        return tag


def event_types() -> dict[str, type[Event]]:
    """Every imported Event subclass by its stored type name; a name used twice is an error."""
    found: dict[str, type[Event]] = {}
    pending: list[type[Event]] = list(Event.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        name = cls.type_name()
        if found.get(name, cls) is not cls:
            raise TypeError(f"event type {name!r} is defined twice")
        found[name] = cls
    return found


class RecordedEvent(msgspec.Struct, frozen=True, kw_only=True):
    """An event as stored: envelope plus the decoded domain event."""

    position: int | None  # None until the global section numbers it (inline projections)
    stream_type: str
    stream_key: str
    stream_version: int
    event_id: uuid.UUID
    recorded_at: datetime
    metadata: Metadata
    event: Event


# (type name, stored schema version) -> pure function upgrading the data one version.
Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
UPCASTERS: dict[tuple[str, int], Upcaster] = {}

_encoder = msgspec.json.Encoder()
_metadata_decoder = msgspec.json.Decoder(Metadata)
_generic_decoder = msgspec.json.Decoder(dict[str, Any])
_decoders: dict[str, msgspec.json.Decoder[Any]] = {}
_types: dict[str, type[Event]] = {}


class UnknownEventType(Exception):
    pass


def encode(value: msgspec.Struct) -> bytes:
    return _encoder.encode(value)


def decode_metadata(raw: str | bytes) -> Metadata:
    return _metadata_decoder.decode(raw)


def decode_event(type_name: str, schema_version: int, raw: str | bytes) -> Event:
    """Decode stored event data, upcasting old schema versions first."""
    cls = _types.get(type_name)
    if cls is None:
        _types.update(event_types())
        cls = _types.get(type_name)
    if cls is None:
        raise UnknownEventType(type_name)
    if schema_version != cls.schema_version:
        data = _generic_decoder.decode(raw)
        for version in range(schema_version, cls.schema_version):
            data = UPCASTERS[(type_name, version)](data)
        return msgspec.convert(data, cls)
    decoder = _decoders.get(type_name)
    if decoder is None:
        decoder = _decoders[type_name] = msgspec.json.Decoder(cls)
    event: Event = decoder.decode(raw)
    return event
