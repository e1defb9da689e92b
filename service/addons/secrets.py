"""Integrations' secrets: each integration has its own data key (table `addon_keys`, wrapped by
the master key like a person's key), which seals its secret parameters in its events and read
model. Deleting the integration deletes the key: what the log holds of its secrets is then
unreadable, everywhere (docs/integrations.md, "Secrets"). The only SQL on `addon_keys`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventlog.privacy import crypto, master
from eventlog.privacy.crypto import DataKey, SealError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from eventlog.connections import Conn
    from eventlog.privacy.keys import Masters
    from service.addons.domain import Seal

INSERT_KEY = "INSERT INTO addon_keys (addon_id, master_id, wrapped) VALUES ($1, $2, $3)"
SELECT_KEY = "SELECT master_id, wrapped FROM addon_keys WHERE addon_id = $1"
DELETE_KEY = "DELETE FROM addon_keys WHERE addon_id = $1"
NOT_WRAPPED_BY = """
SELECT addon_id, master_id, wrapped FROM addon_keys WHERE master_id <> $1
ORDER BY addon_id LIMIT $2 FOR UPDATE
"""
REWRAP = "UPDATE addon_keys SET master_id = $2, wrapped = $3 WHERE addon_id = $1"

# Keys are wrapped under a context of their own, so that no wrapped key of an integration
# could pass for a person's (whose context is their id).
_OFFSET = -(2**62)


def _context(addon_id: int) -> int:
    return _OFFSET - addon_id


async def new_key(conn: Conn, addon_id: int) -> DataKey:
    """A new integration's key, stored wrapped in the caller's transaction."""
    masters = master.masters()
    raw = crypto.new_data_key()
    wrapped = masters.current.wrap(_context(addon_id), raw)
    await conn.execute(INSERT_KEY, addon_id, masters.current.id, wrapped)
    return DataKey(raw)


async def key_of(conn: Conn, addon_id: int) -> DataKey | None:
    row = await conn.fetchrow(SELECT_KEY, addon_id)
    if row is None:
        return None
    return master.masters().unwrap(_context(addon_id), row["master_id"], bytes(row["wrapped"]))


async def destroy(conn: Conn, addon_id: int) -> None:
    await conn.execute(DELETE_KEY, addon_id)


def sealer(key: DataKey, addon_id: int) -> Seal:
    """Seals a parameter's value bound to its integration and name (deterministic)."""

    def seal(name: str, value: str) -> str:
        return key.seal(_context(addon_id), f"{name}\x00{value}")

    return seal


def opened(key: DataKey | None, addon_id: int, sealed: Mapping[str, str]) -> dict[str, str]:
    """The secrets in plain text; none without a key (the integration was deleted)."""
    if key is None:
        return {}
    plain: dict[str, str] = {}
    for name, text in sealed.items():
        found, _, value = key.open(_context(addon_id), text).partition("\x00")
        if found != name:
            raise SealError(f"a secret of integration {addon_id} was moved to another name")
        plain[name] = value
    return plain


async def rewrap(conn: Conn, masters: Masters, batch: int = 1000) -> int:
    """Wrap up to `batch` integration keys wrapped by an older master key with the current one
    (in the caller's transaction); how many."""
    rows = await conn.fetch(NOT_WRAPPED_BY, masters.current.id, batch)
    for row in rows:
        context = _context(row["addon_id"])
        old = masters.by_id.get(row["master_id"])
        if old is None:
            raise SealError(
                f"the key of integration {row['addon_id']} is wrapped by master key "
                f"{row['master_id']}: give it in PII_PREVIOUS_MASTER_KEYS"
            )
        raw = old.unwrap_bytes(context, bytes(row["wrapped"]))
        await conn.execute(
            REWRAP, row["addon_id"], masters.current.id, masters.current.wrap(context, raw)
        )
    return len(rows)
