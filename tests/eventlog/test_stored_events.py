"""The stored-event contract: a frozen sample of the log (tests/stored_events, one document per
event type and version, exactly as the events table holds it) always decodes and projects; the
event Structs carry no request limits and one naming convention; every event type round-trips.

When this fails after a change to an event Struct, the change is incompatible with what is
stored: add a version instead (docs/events.md, "Evolving an event"). Never edit a sample.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec
import msgspec.inspect as mi
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog import codec
from eventlog.codec import EVENT_TYPES, RecordedEvent
from eventlog.events.features import FeatureCloned, StrategyAdded
from eventlog.events.users import UsersDeleted
from eventlog.privacy import master
from eventlog.privacy.keys import Keyring
from projections import writes
from projections.registry import ALL
from tests import ROOT
from tests.factories import recorded
from tests.strategies import fields, for_type, walk

if TYPE_CHECKING:
    from eventlog.connections import Conn

SAMPLES = ROOT / "tests" / "stored_events"
SAMPLE_NAME = re.compile(r"^(\w+)\.v(\d+)\.json$")
SNAKE_CASE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


def samples() -> dict[tuple[str, int], str]:
    """(type, version) -> the stored `data` text of every event sample."""
    found = {}
    for path in sorted(SAMPLES.glob("*.json")):
        match = SAMPLE_NAME.match(path.name)
        if match and match[1] != "metadata":
            found[(match[1], int(match[2]))] = path.read_text().rstrip("\n")
    return found


SAMPLED = samples()
METADATA = (SAMPLES / "metadata.v1.json").read_text().rstrip("\n")


def test_every_event_type_and_version_has_exactly_one_sample() -> None:
    expected = {
        (name, version)
        for name, cls in EVENT_TYPES.items()
        for version in range(1, cls.schema_version + 1)
    }
    assert set(SAMPLED) == expected
    names = {p.name for p in SAMPLES.iterdir()}
    expected_names = {f"{n}.v{v}.json" for n, v in expected} | {"metadata.v1.json", "sealed"}
    assert names == expected_names


def test_every_older_version_has_its_upcaster() -> None:
    expected = {
        (name, version)
        for name, cls in EVENT_TYPES.items()
        for version in range(1, cls.schema_version)
    }
    assert set(codec.UPCASTERS) == expected


def _subset(stored: Any, decoded: Any, where: str = "$") -> list[str]:
    """Where the decoded event disagrees with what is stored (extra keys with defaults, added
    since the sample was written, are fine)."""
    if isinstance(stored, dict):
        if not isinstance(decoded, dict):
            return [where]
        return [
            problem
            for key, value in stored.items()
            for problem in (
                [f"{where}.{key} is lost"]
                if key not in decoded
                else _subset(value, decoded[key], f"{where}.{key}")
            )
        ]
    if isinstance(stored, list):
        if not isinstance(decoded, list) or len(stored) != len(decoded):
            return [where]
        return [
            p
            for i, (s, d) in enumerate(zip(stored, decoded, strict=True))
            for p in _subset(s, d, f"{where}[{i}]")
        ]
    return [] if stored == decoded else [f"{where}: stored {stored!r}, decoded {decoded!r}"]


@pytest.mark.parametrize(("name", "version"), sorted(SAMPLED))
def test_each_sample_decodes_and_a_current_one_keeps_every_field(name: str, version: int) -> None:
    event = codec.decode(name, version, SAMPLED[(name, version)])
    assert event.type_name() == name
    if version == EVENT_TYPES[name].schema_version:
        stored = msgspec.json.decode(SAMPLED[(name, version)])
        assert _subset(stored, msgspec.to_builtins(event)) == []


@pytest.mark.parametrize(
    ("name", "version"), sorted(k for k in SAMPLED if k[1] < EVENT_TYPES[k[0]].schema_version)
)
def test_an_older_sample_upcasts_to_the_event_of_its_newer_sample(name: str, version: int) -> None:
    """Each newer sample was frozen from the older one (tools/freeze_samples.py): both must
    decode to the same event, so the upcaster is exact."""
    older = codec.decode(name, version, SAMPLED[(name, version)])
    newer = codec.decode(name, version + 1, SAMPLED[(name, version + 1)])
    assert older == newer


def test_the_stored_metadata_decodes() -> None:
    metadata = codec.decode_metadata(METADATA)
    assert metadata.actor_kind == "user"
    assert metadata.request_id


def _recorded(event: codec.DomainEvent, position: int) -> RecordedEvent:
    return recorded(
        event,
        position,
        stream=("sample", event.type_name()),
        version=1,
        at=datetime(2026, 11, 23, 12, 0, tzinfo=UTC),
        metadata=codec.decode_metadata(METADATA),
    )


async def test_every_sample_projects_into_the_read_models(conn: Conn) -> None:
    """Each sample alone through every projection (inline and async), in a transaction rolled
    back after it: a stored event whatever its version must always rebuild the read models."""
    for position, ((name, version), data) in enumerate(sorted(SAMPLED.items()), start=1):
        recorded = _recorded(codec.decode(name, version, data), position)
        tx = conn.transaction()
        await tx.start()
        try:
            for projection in ALL:
                await writes.execute(conn, projection.writes(recorded))
        except Exception as exc:
            pytest.fail(f"{name} v{version} does not project: {exc!r}")
        finally:
            await tx.rollback()


@pytest.mark.parametrize("version", [1, 2])
async def test_values_beyond_todays_api_limits_stay_readable(conn: Conn, version: int) -> None:
    """A 5,000-character constraint value (the API takes 1,000) and a copy of 2,000
    strategies (the API takes 100 per environment... and a flag rarely has 20)."""
    added = codec.decode("StrategyAdded", version, SAMPLED[("StrategyAdded", version)])
    cloned = codec.decode("FeatureCloned", version, SAMPLED[("FeatureCloned", version)])
    assert isinstance(added, StrategyAdded)
    assert isinstance(cloned, FeatureCloned)
    assert len(added.strategy.constraints[0].values[0]) == 5000
    assert sum(len(e.strategies) for e in cloned.environments) == 2000
    longest = await _project_and_read(
        conn,
        added,
        "SELECT max(length(c ->> 'values')) FROM feature_strategies,"
        " jsonb_array_elements(constraints) c WHERE feature_name = 'huge'",
    )
    copied = await _project_and_read(
        conn, cloned, "SELECT count(*) FROM feature_strategies WHERE feature_name = 'huge-copy'"
    )
    assert longest > 5000
    assert copied == 2000


async def _project_and_read(conn: Conn, event: codec.DomainEvent, query: str) -> Any:
    tx = conn.transaction()
    await tx.start()
    try:
        for projection in ALL:
            await writes.execute(conn, projection.writes(_recorded(event, 1)))
        return await conn.fetchval(query)
    finally:
        await tx.rollback()


@pytest.mark.parametrize("name", sorted(EVENT_TYPES))
def test_event_structs_carry_no_request_limits_and_one_naming_convention(name: str) -> None:
    """What was stored must always decode: no lengths, ranges, patterns or enumerations; and
    every stored field, nested ones too, is named in snake_case (its Python name)."""
    info = mi.type_info(EVENT_TYPES[name])
    for nested in walk(info):
        assert not isinstance(nested, (mi.LiteralType, mi.EnumType)), (name, nested)
        limits = {
            k: getattr(nested, k)
            for k in ("min_length", "max_length", "pattern", "gt", "ge", "lt", "le", "multiple_of")
            if getattr(nested, k, None) is not None
        }
        assert limits == {}, (name, nested)
    for struct, field in fields(info):
        assert field.encode_name == field.name, (name, struct, field.name)
        assert SNAKE_CASE.match(field.name), (name, struct, field.name)


@pytest.mark.parametrize("name", sorted(EVENT_TYPES))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_every_event_type_round_trips(name: str, data: st.DataObject) -> None:
    cls = EVENT_TYPES[name]
    event = data.draw(for_type(cls))
    stored = codec.encode(event).decode()
    assert codec.decode(name, cls.schema_version, stored) == event


SEALED = json.loads((SAMPLES / "sealed" / "users.v1.json").read_text())


def _sealed_keyring(*, erased: frozenset[int] = frozenset()) -> Keyring:
    """The sample's keys, wrapped by the tests' master key (tests/conftest.py)."""
    masters = master.masters()
    assert SEALED["master_key_id"] == masters.current.id
    rows: dict[int, tuple[str | None, bytes | None]] = {
        int(p): (masters.current.id, bytes.fromhex(w))
        for p, w in SEALED["keys"].items()
        if int(p) not in erased
    }
    return Keyring(masters, rows, complete=True)


def test_sealed_samples_open_with_their_keys_and_read_erased_without() -> None:
    """Events stored with sealed personal values (0.2 on) decode to what was appended; with a
    person's key destroyed, that person's values read "[erased]" and nothing else changes."""
    keyring = _sealed_keyring()
    for sample in SEALED["events"]:
        event = codec.decode(sample["type"], sample["schema_version"], sample["data"], keyring)
        assert msgspec.to_builtins(event) == sample["plain"]
        assert codec.decode_metadata(sample["metadata"], keyring).actor_name == "Grace Hopper"
    erased = _sealed_keyring(erased=frozenset({8}))
    deleted = SEALED["events"][1]
    event = codec.decode(deleted["type"], deleted["schema_version"], deleted["data"], erased)
    assert isinstance(event, UsersDeleted)
    assert [(u.name, u.username, u.email) for u in event.users] == [
        ("[erased]", "[erased]", "[erased]"),
        (None, "bob", None),
    ]
