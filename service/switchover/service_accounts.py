"""Service accounts (`GET /api/admin/service-account`): Unleash Enterprise's, and this service's;
Unleash's open-source edition answers the path 404 (or 403), and the kind then reports that the
source has none. Each account is written as a person would write it here
(`ServiceAccountCreated` with the source's created time, `ServiceAccountUpdated` for a name or
root role the source changed, `ServiceAccountDeleted` for one an earlier import brought and the
source dropped); `ctx.ids["service account"]` maps the source's ids to ours.

A source account is ours when ours has a service account with its username. An account made
here with other content is a conflict unless `--prefer-source`; a username a person holds here
is refused (one name, two kinds of account). The accounts' tokens are not carried: the source
shows their secrets as hints only, so each machine needs a new token made here."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import msgspec

from eventlog.events.users import ServiceAccountUpdated
from service.switchover import changes, origin
from service.switchover.run import Outcome
from service.switchover.source import SourceError
from service.users import domain
from service.users.commands import CreateServiceAccount
from service.users.domain import Account
from service.users.queries import NEXT_USER_ID

if TYPE_CHECKING:
    from service.switchover.run import Context
    from service.work import UnitOfWork

PATH: Final = "/api/admin/service-account"
# What counts as a change made here to an account an import brought.
CHANGES: Final = ("ServiceAccountUpdated",)
ABSENT: Final = (403, 404)  # how a source without service accounts answers their path


class SourceAccount(msgspec.Struct, frozen=True):
    """A service account as Unleash answers it; image and counters not carried."""

    id: int
    username: str
    name: str | None = None
    rootRole: int | None = None  # noqa: N815 - Unleash's name
    createdAt: datetime | None = None  # noqa: N815


class SourceRole(msgspec.Struct, frozen=True):
    id: int
    name: str


class SourceAccounts(msgspec.Struct, frozen=True):
    serviceAccounts: list[SourceAccount]  # noqa: N815
    rootRoles: list[SourceRole] = []  # noqa: N815


class Shape(msgspec.Struct, frozen=True):
    """A service account in our terms: what the import compares."""

    name: str | None
    root_role: int


class Read(NamedTuple):
    accounts: list[SourceAccount] | None  # None: the source has no service accounts
    roles: dict[int, str]
    why: str = ""


_LOCK_ALL = """
SELECT id, account_type, name, username, email, root_role, login_attempts
FROM users ORDER BY id FOR UPDATE
"""


class ServiceAccounts:
    name = "service accounts"

    async def read(self, ctx: Context) -> Read:
        ctx.progress.phase("reading service accounts", 1)
        try:
            found = await ctx.source.get(PATH, SourceAccounts)
        except SourceError as exc:
            if exc.status not in ABSENT:
                raise
            why = f"the source has none: {PATH} answered {exc.status} (Unleash Enterprise's)"
            return Read(None, {}, why)
        finally:
            ctx.progress.done()
        accounts = sorted(found.serviceAccounts, key=lambda a: a.id)
        return Read(accounts, {r.id: r.name for r in found.rootRoles})

    async def write(self, ctx: Context, data: Read, uow: UnitOfWork) -> Outcome:
        if data.accounts is None:
            return Outcome(kind=self.name, skipped=[("service accounts", data.why)])
        outcome = Outcome(kind=self.name, in_source=len(data.accounts))
        ctx.progress.phase("writing service accounts", len(data.accounts))
        accounts = {r["id"]: Account(**dict(r)) for r in await uow.conn.fetch(_LOCK_ALL)}
        by_username = {a.username: a for a in accounts.values() if a.username}
        marks = await origin.provenance(uow.conn, "service-account", ctx.origin, changes=CHANGES)
        ids: dict[Any, int] = ctx.ids.setdefault("service account", {})
        kept: set[int] = set()
        for item in data.accounts:
            ctx.progress.advance()
            try:
                found = await self._one(ctx, item, data.roles, by_username, marks, uow, outcome)
            except changes.REFUSALS as exc:
                outcome.refused.append((item.username, changes.reason(exc)))
                continue
            if found is not None:
                ids[item.id] = found
                kept.add(found)
        if data.accounts:
            outcome.skipped.append(
                ("their tokens", "not carried: the source shows their secrets only as hints")
            )
        for account in accounts.values():
            if account.account_type != domain.SERVICE_ACCOUNT or account.id in kept:
                continue
            label = account.username or f"id {account.id}"
            if changes.to_delete(ctx, label, marks.get(str(account.id)), outcome):
                event = domain.delete_service_account(account.id, account)
                stream = domain.account_stream(domain.SERVICE_ACCOUNT, account.id)
                await uow.append(stream, [event], ctx.metadata)
                outcome.deleted.append(label)
                outcome.events += 1
        ctx.progress.done()
        return outcome

    async def _one(  # noqa: PLR0913, PLR0917 - the account, ours and what decides
        self,
        ctx: Context,
        item: SourceAccount,
        roles: dict[int, str],
        by_username: dict[str, Account],
        marks: dict[str, origin.Provenance],
        uow: UnitOfWork,
        outcome: Outcome,
    ) -> int | None:
        """Our id of the account, None when it is not here (refused)."""
        role: int | str = 3 if item.rootRole is None else roles.get(item.rootRole, item.rootRole)
        cmd = msgspec.convert(
            {"username": item.username, "name": item.name, "rootRole": role},
            CreateServiceAccount,
        )
        current = by_username.get(item.username.strip())
        if current is None:
            account_id: int = await uow.conn.fetchval(NEXT_USER_ID)
            now = min(item.createdAt or ctx.now, ctx.now)
            created = domain.create_service_account(
                cmd, account_id=account_id, username_taken=False, now=now
            )
            stream = domain.account_stream(domain.SERVICE_ACCOUNT, account_id)
            await uow.append(stream, [created], ctx.metadata, new=True)
            outcome.created.append(item.username)
            outcome.events += 1
            return account_id
        if current.account_type != domain.SERVICE_ACCOUNT:
            outcome.refused.append((item.username, "a person has this username here"))
            return None
        wanted = Shape(domain.clean_text(cmd.name, "$.name"), domain.root_role_id(cmd.root_role))
        here = Shape(current.name, current.root_role)
        mark = marks.get(str(current.id))
        if not changes.to_change(ctx, item.username, here, wanted, mark, outcome):
            return current.id
        event = ServiceAccountUpdated(
            account_id=current.id, name=wanted.name, root_role=wanted.root_role
        )
        stream = domain.account_stream(domain.SERVICE_ACCOUNT, current.id)
        await uow.append(stream, [event], ctx.metadata)
        outcome.updated.append(item.username)
        outcome.events += 1
        return current.id
