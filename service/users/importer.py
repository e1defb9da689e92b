"""`python -m service import-users FILE`: users from another installation, as JSON Lines."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TextIO

import msgspec

from eventlog.events.base import Metadata
from eventlog.events.users import ImportedUser
from service.errors import AppError, NameExists
from service.users import domain
from service.users.commands import ImportLine

if TYPE_CHECKING:
    from collections.abc import Iterable

    from eventlog.connections import Conn
    from service.work import UnitOfWork, Work

BATCH = 1000
ATTEMPTS = 3  # of a batch whose e-mails or usernames were taken meanwhile
IMPORTER = Metadata(
    actor_id="import-users", actor_name="import-users", actor_kind="system", source="import"
)
ARGON2_PREFIX = "$argon2"


_decoder = msgspec.json.Decoder(ImportLine)

EXISTING = """
SELECT lower(email) AS email, username FROM users
WHERE lower(email) = ANY($1::text[]) OR username = ANY($2::text[])
"""
NEW_IDS = "SELECT nextval('user_ids') FROM generate_series(1, $1)"


@dataclass
class ImportReport:
    imported: int = 0
    skipped: int = 0  # already there (same e-mail or username), or repeated in the file
    batches_refused: int = 0
    bad_lines: list[tuple[int, str]] = field(default_factory=list)


def parse_line(raw: bytes, now: datetime) -> ImportedUser:
    """One line, checked as the API checks a new user; user_id is filled in later."""
    try:
        line = _decoder.decode(raw)
    except msgspec.ValidationError as exc:
        raise AppError(str(exc)) from None
    except msgspec.DecodeError as exc:
        raise AppError(f"Malformed JSON: {exc}") from None
    return checked_user(line, now)


def checked_user(line: ImportLine, now: datetime, source_id: int | None = None) -> ImportedUser:
    """A user from elsewhere, checked as the API checks a new user; user_id is filled in
    later. `source_id`: the user's id at the source, when it has one."""
    email = domain.clean_email(line.email)
    username = domain.clean_text(line.username, "$.username")
    if email is None and username is None:
        raise AppError("You must specify username or email")
    created = line.created_at or now
    if created > now or (line.seen_at is not None and line.seen_at > now):
        raise AppError("createdAt and seenAt may not be in the future")
    if line.password_hash is not None and not line.password_hash.startswith(ARGON2_PREFIX):
        raise AppError("passwordHash must be an argon2 hash (PHC string, `$argon2id$...`)")
    return ImportedUser(
        user_id=0,
        name=domain.clean_text(line.name, "$.name"),
        username=username,
        email=email,
        root_role=domain.root_role_id(line.root_role),
        created_at=created.astimezone(UTC),
        seen_at=line.seen_at.astimezone(UTC) if line.seen_at else None,
        password_hash=line.password_hash,
        source_id=source_id,
    )


async def import_users(
    work: Work, conn: Conn, lines: TextIO | Iterable[str], *, source: str
) -> ImportReport:
    """Batches of up to 1,000 lines, one `UsersImported` event each; a batch with a bad line
    is reported (line numbers) and writes nothing; users already there are skipped."""
    report = ImportReport()
    batch: list[tuple[int, str]] = []
    for number, text in enumerate(lines, start=1):
        if number == 1:
            text = text.removeprefix("\ufeff")  # noqa: PLW2901 - a byte order mark (Windows tools)
        if text.strip():
            batch.append((number, text))
        if len(batch) == BATCH:
            await _import_batch(work, conn, batch, source, report)
            batch = []
    if batch:
        await _import_batch(work, conn, batch, source, report)
    if report.imported:
        # At once rather than when autovacuum comes by: statistics (search plans depend on how
        # many users a pattern matches) and the visibility map (search walks indexes that hold
        # what it compares; without the map every entry would be checked against its row).
        await conn.execute(
            "ANALYZE users" if conn.is_in_transaction() else "VACUUM (ANALYZE) users"
        )
    return report


async def _import_batch(
    work: Work, conn: Conn, batch: list[tuple[int, str]], source: str, report: ImportReport
) -> None:
    now = datetime.now(UTC)
    users: list[ImportedUser] = []
    bad: list[tuple[int, str]] = []
    for number, text in batch:
        try:
            users.append(parse_line(text.encode("utf-8", "surrogateescape"), now))
        except AppError as exc:
            bad.append((number, exc.message))
    if bad:
        report.bad_lines.extend(bad)
        report.batches_refused += 1
        return
    # Users created meanwhile (through the API) may take an e-mail or username between the
    # check and the append: the batch then writes nothing and is checked again.
    for _ in range(ATTEMPTS):
        try:
            imported = await _append_batch(work, conn, users, source)
        except NameExists:
            continue
        report.imported += imported
        report.skipped += len(users) - imported
        return
    report.bad_lines.append((batch[0][0], "users were created with these names meanwhile"))
    report.batches_refused += 1


async def _append_batch(work: Work, conn: Conn, users: list[ImportedUser], source: str) -> int:
    """One transaction: the batch's users that are not there yet, as one event; how many."""
    async with work.begin(conn) as uow:
        return len(await append_new(uow, users, source=source, metadata=IMPORTER))


async def append_new(
    uow: UnitOfWork, users: list[ImportedUser], *, source: str, metadata: Metadata
) -> list[ImportedUser]:
    """The users that are not there yet (by e-mail or username), given ids and appended in
    the unit of work as `UsersImported` events of up to BATCH users each; those appended."""
    existing = await uow.conn.fetch(
        EXISTING,
        [u.email for u in users if u.email],
        [u.username for u in users if u.username],
    )
    fresh = domain.new_users(
        users,
        taken_emails={r["email"] for r in existing if r["email"]},
        taken_usernames={r["username"] for r in existing if r["username"]},
    )
    if not fresh:
        return []
    ids = [r[0] for r in await uow.conn.fetch(NEW_IDS, len(fresh))]
    appended: list[ImportedUser] = []
    for start in range(0, len(fresh), BATCH):
        event = domain.import_users(
            fresh[start : start + BATCH], ids=ids[start : start + BATCH], source=source
        )
        await uow.append(("user-batch", str(uuid.uuid4())), [event], metadata, new=True)
        appended.extend(event.users)
    return appended
