"""People: the source's users (`GET /api/admin/user-admin`) with name, e-mail, username, root
role (mapped by its name: Unleash's Admin, Editor and Viewer are ours), created and seen times.
New ones are written as `import-users` writes them (`UsersImported`, up to 1,000 a batch, with
the source's id in `source_id`), so their names and e-mails are sealed like every person's;
`ctx.ids["user"]` maps the source's ids to ours.

A source user is ours when an earlier import of this source brought that source id, else when
ours has the e-mail (any case) or the username. A person ours has and the source changed gets
`UserUpdated` (name, e-mail, root role: the username does not change here, so a changed one is
reported and kept); one an earlier import brought and the source no longer has gets
`UserDeleted`. A person made here with other content is a conflict unless `--prefer-source`;
with the same content the two are one person, nothing is written.

The account `python -m service admin-user` makes (the way in to a new installation) counts as
installed, like the first start's entities: while nobody but this import changed it, the
source may set its name, e-mail and root role. A switch therefore does not stop on the source's
`admin` when a person ran `admin-user admin` first: the account takes the source's content and
keeps the password it has. An import never deletes it (it is not the source's), whatever the
source does with its `admin`.

`seenAt` is carried when a person is created and not after: a sign-in at the source is no change
a person makes here, and this service's `seenAt` follows the sign-ins here once people use it.
A re-run over a source whose people only signed in appends nothing.

Unleash exports no password hashes: each person this run creates, who can sign in (everyone
has an e-mail or a username), gets a reset link (`PasswordResetRequested`, its token known by
its sha256 only, as `POST /api/admin/user-admin/reset-password` makes one; it holds as long).
The links go to `ctx.notes["reset links"]` for the command's report or its `--links` file, never
to a log. A person matched or updated keeps the password they have and gets no link."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import msgspec

from eventlog import reads
from eventlog.events.users import (
    ImportedUser,
    PasswordResetRequested,
    UserDeleted,
    UserUpdated,
)
from service import auth
from service.switchover import changes, origin
from service.switchover.run import Outcome
from service.users import admins, domain, importer
from service.users.commands import ImportLine
from service.users.domain import Account
from service.work import NewStream

if TYPE_CHECKING:
    from service.switchover.run import Context
    from service.work import UnitOfWork

DEFAULT_PUBLIC_URL: Final = "http://127.0.0.1:4242"
LINKS: Final = "reset links"  # the key of ctx.notes: (who, link) of each new person
# What counts as a change made here to a person's account that an import brought: what the
# import itself writes. Sign-ins, passwords and reset links change none of it.
CHANGES: Final = ("UserUpdated",)
# Who makes the accounts of an installation: `admin-user`'s account counts as installed.
INSTALLERS: Final = (admins.BY_COMMAND.actor_id,)


class SourceUser(msgspec.Struct, frozen=True):
    """A user as Unleash answers it (userSchema); image, invite link and counters not carried."""

    id: int
    name: str | None = None
    email: str | None = None
    username: str | None = None
    rootRole: int | None = None  # noqa: N815 - Unleash's name
    createdAt: datetime | None = None  # noqa: N815
    seenAt: datetime | None = None  # noqa: N815
    accountType: str | None = None  # noqa: N815
    isAPI: bool = False  # noqa: N815


class SourceRole(msgspec.Struct, frozen=True):
    id: int
    name: str


class SourceUsers(msgspec.Struct, frozen=True):
    users: list[SourceUser]
    rootRoles: list[SourceRole] = []  # noqa: N815


class Person(msgspec.Struct, frozen=True):
    """A person in our terms: what the import compares."""

    name: str | None
    username: str | None
    email: str | None
    root_role: int


class Read(NamedTuple):
    users: list[SourceUser]
    roles: dict[int, str]  # the source's root roles: id -> name


_LOCK_ALL = """
SELECT id, account_type, name, username, email, root_role, login_attempts
FROM users ORDER BY id FOR UPDATE
"""


class Users:
    name = "users"

    def __init__(self, public_url: str = DEFAULT_PUBLIC_URL, *, renew_links: bool = False) -> None:
        self.public_url = public_url.rstrip("/")
        self.renew_links = renew_links

    async def read(self, ctx: Context) -> Read:
        ctx.progress.phase("reading users", 1)
        found = await ctx.source.get("/api/admin/user-admin", SourceUsers)
        ctx.progress.done()
        people = [u for u in found.users if not u.isAPI and u.accountType in {None, domain.USER}]
        return Read(sorted(people, key=lambda u: u.id), {r.id: r.name for r in found.rootRoles})

    async def write(self, ctx: Context, data: Read, uow: UnitOfWork) -> Outcome:
        outcome = Outcome(kind=self.name, in_source=len(data.users))
        ctx.progress.phase("writing users", len(data.users))
        accounts = {r["id"]: Account(**dict(r)) for r in await uow.conn.fetch(_LOCK_ALL)}
        people = {i: a for i, a in accounts.items() if a.account_type == domain.USER}
        marks = await reads.people_origins(uow.conn, ctx.origin, CHANGES, INSTALLERS)
        pairs = _pairs(data.users, people, marks)
        emails = {a.email.lower(): i for i, a in accounts.items() if a.email}
        ids: dict[Any, int] = ctx.ids.setdefault("user", {})
        fresh: list[ImportedUser] = []
        for item in data.users:
            ctx.progress.advance()
            label = _label(item)
            try:
                wanted = _checked(item, data.roles, ctx)
            except changes.REFUSALS as exc:
                outcome.refused.append((label, changes.reason(exc)))
                continue
            ours_id = pairs.get(item.id)
            if ours_id is None:
                fresh.append(wanted)
                continue
            ids[item.id] = ours_id
            await _update(ctx, label, people[ours_id], wanted, (emails, marks), uow, outcome)
        await _delete_gone(ctx, set(pairs.values()), people, marks, uow, outcome)
        if not outcome.problems:
            links = await self._create(ctx, fresh, uow, outcome)
            if self.renew_links:
                links += await self._renew(ctx, pairs, people, marks, uow, outcome)
            ctx.notes.setdefault(LINKS, []).extend(links)
        ctx.progress.done()
        return outcome

    async def _create(
        self, ctx: Context, fresh: list[ImportedUser], uow: UnitOfWork, outcome: Outcome
    ) -> list[tuple[str, str]]:
        """The new people in batches, each with a reset link; (who, link) of each."""
        created = await importer.append_new(
            uow, fresh, source=ctx.source.url, metadata=ctx.metadata
        )
        outcome.events += -(-len(created) // importer.BATCH)
        ids: dict[Any, int] = ctx.ids.setdefault("user", {})
        links: list[tuple[str, str]] = []
        streams: list[NewStream] = []
        for user in created:
            ids[user.source_id] = user.user_id
            who = user.username or user.email or str(user.user_id)
            outcome.created.append(who)
            account = Account(
                id=user.user_id,
                account_type=domain.USER,
                name=user.name,
                username=user.username,
                email=user.email,
                root_role=user.root_role,
                login_attempts=0,
            )
            event, link = self._link(ctx, account)
            # An imported person's own stream begins with the link (the batch is another).
            streams.append(NewStream(domain.user_stream(user.user_id), [event], ctx.metadata))
            links.append((who, link))
        for start in range(0, len(streams), importer.BATCH):
            await uow.append_new(streams[start : start + importer.BATCH])
        outcome.events += len(streams)
        # Those that matched no person here but a service account's username, or another
        # source user's e-mail or username (the source compares e-mails case by case).
        made = {user.source_id for user in created}
        for user in fresh:
            if user.source_id not in made:
                why = "its e-mail or username is another account's here: not created"
                outcome.skipped.append((user.username or user.email or "", why))
        return links

    def _link(self, ctx: Context, account: Account) -> tuple[PasswordResetRequested, str]:
        """A reset link for the person: the event (the token's sha256) and the link itself."""
        token = auth.new_secret()
        event = domain.request_password_reset(
            account, token_hash=auth.hash_secret(token), now=ctx.now
        )
        return event, f"{self.public_url}/reset-password?token={token}"

    async def _renew(  # noqa: PLR0913, PLR0917 - the people and what decides
        self,
        ctx: Context,
        pairs: dict[int, int],
        people: dict[int, Account],
        marks: dict[int, reads.PersonOrigin],
        uow: UnitOfWork,
        outcome: Outcome,
    ) -> list[tuple[str, str]]:
        """`--renew-links`: a new link for each person an earlier import of this source
        brought who has no password here yet (a link holds a day; a cut-over may take
        longer). A newer link replaces the one before."""
        imported = sorted(
            i for i in pairs.values() if (m := marks.get(i)) is not None and m.batch_at
        )
        with_password = {r["user_id"] for r in await uow.conn.fetch(_WITH_PASSWORD, imported)}
        links: list[tuple[str, str]] = []
        for user_id in imported:
            if user_id in with_password:
                continue
            account = people[user_id]
            event, link = self._link(ctx, account)
            await uow.append(domain.user_stream(user_id), [event], ctx.metadata)
            outcome.events += 1
            links.append((account.username or account.email or str(user_id), link))
        return links


_WITH_PASSWORD = "SELECT user_id FROM user_passwords WHERE user_id = ANY($1::bigint[])"


def _label(item: SourceUser) -> str:
    return item.username or item.email or item.name or f"id {item.id}"


def _checked(item: SourceUser, roles: dict[int, str], ctx: Context) -> ImportedUser:
    """The source user as `import-users` checks a line; times after ours (the source's clock
    ahead of ours) are taken as now."""
    role: int | str = 3 if item.rootRole is None else roles.get(item.rootRole, item.rootRole)
    line = msgspec.convert(
        {
            "email": item.email,
            "username": item.username,
            "name": item.name,
            "rootRole": role,
            "createdAt": None if item.createdAt is None else min(item.createdAt, ctx.now),
            "seenAt": None if item.seenAt is None else min(item.seenAt, ctx.now),
        },
        ImportLine,
    )
    return importer.checked_user(line, ctx.now, source_id=item.id)


def _pairs(
    data: list[SourceUser], people: dict[int, Account], marks: dict[int, reads.PersonOrigin]
) -> dict[int, int]:
    """Source id -> our id of the source users ours has: by the source id an earlier import of
    this source recorded, else by e-mail (any case), else by username."""
    by_source = {
        m.source_id: user_id
        for user_id, m in marks.items()
        if m.source_id is not None and user_id in people
    }
    emails = {a.email.lower(): i for i, a in people.items() if a.email}
    usernames = {a.username: i for i, a in people.items() if a.username}
    pairs: dict[int, int] = {}
    taken: set[int] = set()
    for s in data:
        found = by_source.get(s.id)
        if found is None and s.email and s.email.strip().lower() in emails:
            found = emails[s.email.strip().lower()]
        if found is None and s.username and s.username.strip() in usernames:
            found = usernames[s.username.strip()]
        if found is not None and found not in taken:
            pairs[s.id] = found
            taken.add(found)
    return pairs


def provenance(mark: reads.PersonOrigin | None) -> origin.Provenance | None:
    """A person's provenance as every kind's decisions read it: imported when a batch or an
    event of this source brought or changed the account, changed here when an event of
    another counted after the last of this source, pristine when the installation made it."""
    if mark is None:
        return None
    last = max((p for p in (mark.batch_at, mark.marked_at) if p is not None), default=None)
    changed = mark.other_at is not None and (last is None or mark.other_at > last)
    return origin.Provenance(
        imported=last is not None,
        changed_here=last is not None and changed,
        pristine=mark.installed and mark.other_at is None,
    )


async def _update(  # noqa: PLR0913, PLR0917 - the person, ours and what decides
    ctx: Context,
    label: str,
    current: Account,
    wanted: ImportedUser,
    found: tuple[dict[str, int], dict[int, reads.PersonOrigin]],
    uow: UnitOfWork,
    outcome: Outcome,
) -> None:
    """A person ours has: the same, changed (name, e-mail, root role), or a conflict. The
    username is content too (a person made here under another one is a conflict), but no event
    changes it: one the import may overwrite keeps ours, and the report says so."""
    emails, marks = found
    here = Person(current.name, current.username, current.email, current.root_role)
    username = wanted.username or current.username  # a source without one: ours stands
    there = Person(wanted.name, username, wanted.email, wanted.root_role)
    if not changes.to_change(ctx, label, here, there, provenance(marks.get(current.id)), outcome):
        return
    if there.username != here.username:
        why = f"username {current.username!r} here: a username does not change here"
        outcome.skipped.append((label, why))
        there = msgspec.structs.replace(there, username=here.username)
        if there == here:
            return
    holder = emails.get(there.email or "", current.id)
    if holder != current.id:
        outcome.refused.append((label, f"the e-mail {there.email} is another account's here"))
        return
    event = UserUpdated(
        user_id=current.id, name=there.name, email=there.email, root_role=there.root_role
    )
    await uow.append(domain.user_stream(current.id), [event], ctx.metadata)
    emails.pop(current.email or "", None)
    if there.email:
        emails[there.email] = current.id
    outcome.updated.append(label)
    outcome.events += 1


async def _delete_gone(  # noqa: PLR0913, PLR0917 - the state a deletion compares
    ctx: Context,
    kept: set[int],
    people: dict[int, Account],
    marks: dict[int, reads.PersonOrigin],
    uow: UnitOfWork,
    outcome: Outcome,
) -> None:
    """What an earlier import brought and the source no longer has is deleted, as an admin
    deletes a user; what was made here (the installation's account too) is never touched."""
    for user_id in sorted(set(people) - kept):
        account, mark = people[user_id], marks.get(user_id)
        label = account.username or account.email or f"id {user_id}"
        if mark is None or mark.installed:
            continue
        if not changes.to_delete(ctx, label, provenance(mark), outcome):
            continue
        event: UserDeleted = domain.delete_user(user_id, account)
        await uow.append(domain.user_stream(user_id), [event], ctx.metadata)
        outcome.deleted.append(label)
        outcome.events += 1
