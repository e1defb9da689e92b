"""The only SQL on the key table (`personal_keys`, migration 0014): data keys made for writing,
loaded for reading (as of the reader's snapshot), destroyed, scheduled for destruction, and
re-wrapped under a new master key."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, NamedTuple

from eventlog.errors import ConfigError
from eventlog.privacy import crypto
from eventlog.privacy.crypto import PLACEHOLDER, DataKey, MasterKey, SealError

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable
    from datetime import datetime

    from eventlog.connections import Conn

SELECT_KEYS = """
SELECT person_id, master_key_id, wrapped FROM personal_keys WHERE person_id = ANY($1::bigint[])
"""
SELECT_ALL_KEYS = (
    "SELECT person_id, master_key_id, wrapped FROM personal_keys WHERE wrapped IS NOT NULL"
)
INSERT_KEYS = """
INSERT INTO personal_keys (person_id, master_key_id, wrapped)
SELECT * FROM unnest($1::bigint[], $2::text[], $3::bytea[])
ON CONFLICT (person_id) DO NOTHING
RETURNING person_id
"""
# Destroy the keys of those not erased yet, and leave a tombstone for those without a row (so
# that nothing is ever sealed for them): the persons erased now, and whether each had a key.
# One statement (its parts touch different rows: a row that exists is never inserted).
DESTROY = """
WITH old AS (
    SELECT person_id, wrapped IS NOT NULL AS had_key FROM personal_keys
    WHERE person_id = ANY($1::bigint[]) AND erased_at IS NULL
    FOR UPDATE
), destroyed AS (
    UPDATE personal_keys k SET wrapped = NULL, master_key_id = NULL, erased_at = $2
    FROM old WHERE k.person_id = old.person_id
    RETURNING k.person_id, old.had_key
), tombstones AS (
    INSERT INTO personal_keys (person_id, erased_at)
    SELECT unnest($1::bigint[]), $2
    ON CONFLICT (person_id) DO NOTHING
    RETURNING person_id, false AS had_key
)
SELECT person_id, had_key FROM destroyed
UNION ALL
SELECT person_id, had_key FROM tombstones
"""
SCHEDULE = """
INSERT INTO personal_keys AS k (person_id, erase_after)
SELECT unnest($1::bigint[]), $2
ON CONFLICT (person_id) DO UPDATE SET erase_after = least(k.erase_after, excluded.erase_after)
WHERE k.erased_at IS NULL
"""
DUE = """
SELECT person_id FROM personal_keys
WHERE erased_at IS NULL AND erase_after <= $1
ORDER BY erase_after, person_id LIMIT $2
FOR UPDATE SKIP LOCKED
"""
STATUS = """
SELECT person_id, wrapped IS NOT NULL AS has_key, created_at, erase_after, erased_at
FROM personal_keys WHERE person_id = $1
"""
MASTER_KEY_IDS = """
SELECT master_key_id, count(*) AS keys FROM personal_keys
WHERE master_key_id IS NOT NULL GROUP BY master_key_id
"""
NOT_WRAPPED_BY = """
SELECT person_id, master_key_id, wrapped FROM personal_keys
WHERE master_key_id IS NOT NULL AND master_key_id <> $1
ORDER BY person_id LIMIT $2
FOR UPDATE
"""
REWRAP = """
UPDATE personal_keys SET master_key_id = $2, wrapped = w.wrapped
FROM unnest($1::bigint[], $3::bytea[]) AS w(person_id, wrapped)
WHERE personal_keys.person_id = w.person_id
"""


class Masters:
    """The master key that wraps new keys (`current`) and those still accepted for unwrapping
    (PII_PREVIOUS_MASTER_KEYS, during a rotation), by fingerprint."""

    def __init__(self, current: MasterKey, previous: Iterable[MasterKey] = ()) -> None:
        self.current = current
        self.by_id = {key.id: key for key in previous}
        self.by_id[current.id] = current

    def unwrap(self, person: int, master_key_id: str, wrapped: bytes) -> DataKey:
        master = self.by_id.get(master_key_id)
        if master is None:
            raise SealError(
                f"the data key of person {person} is wrapped by master key {master_key_id}, "
                "which is not PII_MASTER_KEY nor one of PII_PREVIOUS_MASTER_KEYS"
            )
        return master.unwrap(person, wrapped)


_MISSING: Final = object()


class Keyring:
    """Data keys as one reader saw them: a person without one (erased, or never sealed)
    reads `"[erased]"`. With `complete`, every key there was is here (a whole-log reader);
    otherwise opening a person it was not given is a bug, not an erasure."""

    def __init__(
        self,
        masters: Masters,
        rows: dict[int, tuple[str | None, bytes | None]],
        *,
        complete: bool,
    ) -> None:
        self._masters = masters
        self._rows = rows
        self._keys: dict[int, DataKey | None] = {}
        # Sealing is deterministic (crypto.DataKey): a reader opens each distinct value once.
        self._opened: dict[tuple[int, str], str] = {}
        self.complete = complete

    def key(self, person: int) -> DataKey | None:
        key = self._keys.get(person, _MISSING)
        if key is _MISSING:
            row = self._rows.get(person)
            if row is None and not self.complete:
                raise RuntimeError(f"person {person}'s key was not loaded for this read")
            key = None
            if row is not None and row[0] is not None and row[1] is not None:
                key = self._masters.unwrap(person, row[0], row[1])
            self._keys[person] = key
        assert key is None or isinstance(key, DataKey)
        return key

    def open(self, person: int, sealed: str) -> str:
        opened = self._opened.get((person, sealed))
        if opened is None:
            key = self.key(person)
            opened = PLACEHOLDER if key is None else key.open(person, sealed)
            self._opened[person, sealed] = opened
        return opened


async def for_reading(conn: Conn, masters: Masters, persons: Collection[int]) -> Keyring:
    """The keys of these persons, in the caller's snapshot (an erased key is not there)."""
    rows = await _rows(conn, persons) if persons else {}
    return Keyring(masters, rows, complete=False)


async def all_for_reading(conn: Conn, masters: Masters) -> Keyring:
    """Every key there is, in the caller's snapshot (unwrapped when first used)."""
    rows: dict[int, tuple[str | None, bytes | None]] = {
        r["person_id"]: (r["master_key_id"], bytes(r["wrapped"]))
        for r in await conn.fetch(SELECT_ALL_KEYS)
    }
    return Keyring(masters, rows, complete=True)


async def _rows(conn: Conn, persons: Collection[int]) -> dict[int, tuple[str | None, bytes | None]]:
    found: dict[int, tuple[str | None, bytes | None]] = dict.fromkeys(persons, (None, None))
    for r in await conn.fetch(SELECT_KEYS, list(persons)):
        wrapped = r["wrapped"]
        found[r["person_id"]] = (r["master_key_id"], None if wrapped is None else bytes(wrapped))
    return found


async def for_writing(
    conn: Conn, masters: Masters, persons: Collection[int]
) -> dict[int, DataKey | None]:
    """Each person's key, made (in the caller's transaction) for those without a row yet;
    None for a person whose row has no key (erased, or to be erased and never sealed), whose
    values are then written as the placeholder."""
    rows = {r["person_id"]: r for r in await conn.fetch(SELECT_KEYS, list(persons))}
    keys: dict[int, DataKey | None] = {}
    for person, r in rows.items():
        wrapped = r["wrapped"]
        keys[person] = (
            None if wrapped is None else masters.unwrap(person, r["master_key_id"], bytes(wrapped))
        )
    fresh = {p: crypto.new_data_key() for p in persons if p not in rows}
    if fresh:
        made = await conn.fetch(
            INSERT_KEYS,
            list(fresh),
            [masters.current.id] * len(fresh),
            [masters.current.wrap(p, k) for p, k in fresh.items()],
        )
        for r in made:
            keys[r["person_id"]] = DataKey(fresh[r["person_id"]])
        if len(made) < len(fresh):  # made meanwhile by another transaction (this one waited)
            for r in await conn.fetch(SELECT_KEYS, [p for p in fresh if p not in keys]):
                wrapped = r["wrapped"]
                keys[r["person_id"]] = (
                    None
                    if wrapped is None
                    else masters.unwrap(r["person_id"], r["master_key_id"], bytes(wrapped))
                )
    return {p: keys.get(p) for p in persons}


class Erased(NamedTuple):
    person_id: int
    had_key: bool


async def destroy(conn: Conn, persons: Collection[int], now: datetime) -> list[Erased]:
    """Destroy these persons' keys (a tombstone for those without a row); the persons erased
    now, not those erased before (so erasing twice records it once)."""
    if not persons:
        return []
    rows = await conn.fetch(DESTROY, sorted(set(persons)), now)
    return sorted(Erased(r["person_id"], r["had_key"]) for r in rows)


async def schedule(conn: Conn, persons: Collection[int], due: datetime) -> None:
    """Erase these persons when due (the earlier time, if one was set already)."""
    if persons:
        await conn.execute(SCHEDULE, sorted(set(persons)), due)


async def due(conn: Conn, now: datetime, limit: int) -> list[int]:
    """Persons whose erasure is due, locked (other replicas skip them)."""
    return [r["person_id"] for r in await conn.fetch(DUE, now, limit)]


class Status(NamedTuple):
    has_key: bool
    created_at: datetime
    erase_after: datetime | None
    erased_at: datetime | None


async def status(conn: Conn, person: int) -> Status | None:
    r = await conn.fetchrow(STATUS, person)
    if r is None:
        return None
    return Status(r["has_key"], r["created_at"], r["erase_after"], r["erased_at"])


DEAD_ROWS = """
SELECT coalesce(n_dead_tup, 0) FROM pg_stat_user_tables WHERE relid = 'personal_keys'::regclass
"""


async def dead_rows(conn: Conn) -> int:
    """Old versions of key rows (a destroyed key among them) that the table's file still holds,
    as PostgreSQL's statistics last counted them (they lag by a moment)."""
    return int(await conn.fetchval(DEAD_ROWS) or 0)


async def compact(conn: Conn) -> None:
    """Rewrite the key table without its old row versions: PostgreSQL does not overwrite a dead
    row's bytes, and an erased person's wrapped key is one. Waits for no lock: a long reader
    (a replay) would otherwise hold every writer behind the rewrite's exclusive lock."""
    await conn.execute("SET lock_timeout = '200ms'")
    try:
        await conn.execute("VACUUM FULL personal_keys")
    finally:
        await conn.execute("RESET lock_timeout")


async def check_masters(conn: Conn, masters: Masters) -> None:
    """ConfigError when some stored key is wrapped by a master key that is not given (the
    wrong PII_MASTER_KEY, or a rotation's old key left out): better than failing every read."""
    if await conn.fetchval("SELECT to_regclass('personal_keys')") is None:
        return  # not migrated yet
    unknown = sorted(set(await master_key_ids(conn)) - set(masters.by_id))
    if unknown:
        raise ConfigError(
            f"the master key given (PII_MASTER_KEY, PII_MASTER_KEY_FILE, or with the embedded "
            f"database DATA_DIR/pii-master-key) is not the key that wrapped the stored "
            f"personal-data keys (they "
            f"are wrapped by master key {', '.join(unknown)}; this one is "
            f"{masters.current.id}). Give that key, or name it in PII_PREVIOUS_MASTER_KEYS "
            "during a rotation (docs/privacy.md)"
        )


async def master_key_ids(conn: Conn) -> dict[str, int]:
    """The master keys the stored keys are wrapped by, with how many each."""
    return {r["master_key_id"]: r["keys"] for r in await conn.fetch(MASTER_KEY_IDS)}


async def rewrap(conn: Conn, masters: Masters, batch: int = 1000) -> int:
    """Wrap up to `batch` keys wrapped by an older master key with the current one (in the
    caller's transaction); how many."""
    rows = await conn.fetch(NOT_WRAPPED_BY, masters.current.id, batch)
    if not rows:
        return 0
    persons = [r["person_id"] for r in rows]
    wrapped = []
    for r in rows:
        old = masters.by_id.get(r["master_key_id"])
        if old is None:
            raise SealError(
                f"the data key of person {r['person_id']} is wrapped by master key "
                f"{r['master_key_id']}: give it in PII_PREVIOUS_MASTER_KEYS"
            )
        key = old.unwrap_bytes(r["person_id"], bytes(r["wrapped"]))
        wrapped.append(masters.current.wrap(r["person_id"], key))
    await conn.execute(REWRAP, persons, masters.current.id, wrapped)
    return len(rows)
