"""API tokens, with the secrets Unleash's admin API answers (`GET /api/admin/api-tokens`): each
becomes an `ApiTokenCreated` holding the secret's sha256 and hint as this service's own tokens
are stored (auth.hash_secret, auth.secret_hint), with the source's name, type, environment,
projects, created and expiry times and its last use (`seenAt`, at creation only: later use is
recorded here as requests authenticate, and a source's `seenAt` that moved since is no change to
carry). A token is looked up here by the sha256 of the whole secret,
so an SDK keeps authenticating with the secret it holds, whatever its format
(`default:development.<hex>`, `*:*.<hex>`, one an operator chose). The secret itself is never
stored, logged or reported: tokens are named by their names.

A source token is ours when ours has a token with that secret (the same hash). The expiry the
source changed gets `ApiTokenExpiryChanged`; any other difference (a token made here with the
same secret but another scope, or an expiry the source removed, which no event here sets) is
a conflict unless the import may overwrite it, and then the token is deleted and created again
as the source has it. A token an earlier import brought and the source deleted gets
`ApiTokenDeleted`. A token already expired at the source is not carried (it authenticates
nowhere), nor an admin token whose secret is shorter than this service allows its own chosen
admin secrets (32 characters after `*:*.`); a source that shows only hints of its secrets
(this service as a source) cannot give its tokens, and says so.

Personal access tokens are not carried: Unleash's API shows them only as hints."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import msgspec

from service import auth
from service.api_tokens import domain, queries
from service.api_tokens.commands import CreateApiToken
from service.settings import MIN_ADMIN_SECRET
from service.switchover import changes, origin
from service.switchover.run import Outcome

if TYPE_CHECKING:
    from service.switchover.run import Context
    from service.work import UnitOfWork

# What counts as a change made here to a token an import brought (a deletion ends it).
CHANGES: Final = ("ApiTokenExpiryChanged",)
# An admin secret an operator chose short (Unleash's INIT_ADMIN_API_TOKENS allows any) is held
# to the rule this service's own chosen admin tokens follow (settings.MIN_ADMIN_SECRET).
WEAK_ADMIN: Final = (
    f"not carried: an admin secret of fewer than {MIN_ADMIN_SECRET} characters after its scope "
    "could be guessed from a database dump (tokens are stored as unsalted sha256); make a new "
    "admin token here"
)
# Unleash's older name of a client token's type.
_TYPES: Final = {"backend": "client"}


class SourceToken(msgspec.Struct, frozen=True):
    """A token as Unleash answers it (apiTokenSchema); alias not carried, seenAt only when the
    token is created here."""

    secret: str
    type: str
    tokenName: str | None = None  # noqa: N815 - Unleash's name
    username: str | None = None
    environment: str | None = None
    project: str | None = None
    projects: list[str] | None = None
    expiresAt: datetime | None = None  # noqa: N815
    createdAt: datetime | None = None  # noqa: N815
    seenAt: datetime | None = None  # noqa: N815
    alias: str | None = None


class SourceTokens(msgspec.Struct, frozen=True):
    tokens: list[SourceToken]


class Token(msgspec.Struct, frozen=True):
    """A token in our terms: what the import compares."""

    name: str
    type: str
    environment: str
    projects: list[str]
    expires_at: datetime | None


_LOCK_ALL = """
SELECT id, token_name, type, environment, projects, secret_hash, expires_at
FROM api_tokens ORDER BY id FOR UPDATE
"""


class ApiTokens:
    name = "api tokens"

    async def read(self, ctx: Context) -> list[SourceToken]:
        ctx.progress.phase("reading API tokens", 1)
        found = await ctx.source.get("/api/admin/api-tokens", SourceTokens)
        ctx.progress.done()
        return found.tokens

    async def write(self, ctx: Context, data: list[SourceToken], uow: UnitOfWork) -> Outcome:
        outcome = Outcome(kind=self.name, in_source=len(data))
        ctx.progress.phase("writing API tokens", len(data))
        rows = await uow.conn.fetch(_LOCK_ALL)
        ours = {r["secret_hash"]: r for r in rows}
        marks = await origin.provenance(uow.conn, "api-token", ctx.origin, changes=CHANGES)
        known = await uow.conn.fetchrow(queries.KNOWN_SCOPES)
        assert known is not None  # a SELECT without FROM: always one row
        scopes = set(known["environments"]), set(known["projects"])
        kept: set[int] = set()
        for item in data:
            ctx.progress.advance()
            label = item.tokenName or item.username or "(no name)"
            if item.secret.endswith(auth.HINT_MASK):
                why = "the source shows only a hint of its secret: give its SDKs a new token"
                outcome.skipped.append((label, why))
                continue
            if item.alias:
                outcome.skipped.append((label, "its alias is not carried: the secret is"))
            found = ours.get(auth.hash_secret(item.secret))
            if found is not None:
                kept.add(found["id"])
            try:
                await self._one(ctx, item, label, (found, marks, scopes), uow, outcome)
            except changes.REFUSALS as exc:
                outcome.refused.append((label, changes.reason(exc)))
        await _delete_gone(ctx, kept, rows, marks, uow, outcome)
        outcome.skipped.append(
            ("personal access tokens", "not carried: Unleash shows their secrets only as hints")
        )
        ctx.progress.done()
        return outcome

    async def _one(  # noqa: PLR0913, PLR0917 - the token, ours and what decides
        self,
        ctx: Context,
        item: SourceToken,
        label: str,
        found: tuple[Any, dict[str, origin.Provenance], tuple[set[str], set[str]]],
        uow: UnitOfWork,
        outcome: Outcome,
    ) -> None:
        row, marks, (environments, projects) = found
        scope = domain.token_scope(_command(item, label))
        wanted = Token(label, scope[0], scope[1], scope[2], item.expiresAt)
        if row is None:
            if item.expiresAt is not None and item.expiresAt <= ctx.now:
                outcome.skipped.append((label, "expired at the source: not carried"))
                return
            if scope[0] == "admin" and len(item.secret.partition(".")[2]) < MIN_ADMIN_SECRET:
                outcome.skipped.append((label, WEAK_ADMIN))
                return
            domain.check_scope_exists(scope, environments=environments, projects=projects)
            await _create(ctx, item, scope, uow)
            outcome.created.append(label)
            outcome.events += 1
            return
        current = Token(
            row["token_name"],
            row["type"],
            row["environment"],
            list(row["projects"]),
            row["expires_at"],
        )
        mark = marks.get(str(row["id"]))
        if not changes.to_change(ctx, label, current, wanted, mark, outcome):
            return
        token = (row["id"], row["token_name"])
        if msgspec.structs.replace(current, expires_at=wanted.expires_at) == wanted and (
            wanted.expires_at is not None
        ):
            event = domain.change_expiry(token, wanted.expires_at, ctx.now)
            await uow.append(domain.stream(row["id"]), [event], ctx.metadata)
            outcome.updated.append(label)
            outcome.events += 1
            return
        # No event changes a token's name or scope, or takes its expiry away: it is made anew.
        domain.check_scope_exists(scope, environments=environments, projects=projects)
        deleted = domain.delete_api_token(token)
        await uow.append(domain.stream(row["id"]), [deleted], ctx.metadata)
        await _create(ctx, item, scope, uow)
        outcome.updated.append(label)
        outcome.events += 2


def _command(item: SourceToken, label: str) -> CreateApiToken:
    """The source token as a create request, checked as the API checks one."""
    return msgspec.convert(
        {
            "tokenName": label,
            "type": _TYPES.get(item.type.lower(), item.type),
            "environment": item.environment,
            "projects": item.projects or ([item.project] if item.project else None),
        },
        CreateApiToken,
    )


async def _create(
    ctx: Context,
    item: SourceToken,
    scope: tuple[domain.TokenType, str, list[str]],
    uow: UnitOfWork,
) -> None:
    """The token as `POST /api/admin/api-tokens` issues one, with the source's secret, created
    time and last use (one after ours, the source's clock ahead, is taken as now)."""
    token_id: int = await uow.conn.fetchval(queries.NEXT_TOKEN_ID)
    event = domain.issue_api_token(
        token_id=token_id,
        name=item.tokenName or item.username or "(no name)",
        scope=scope,
        secret_hash=auth.hash_secret(item.secret),
        hint=auth.secret_hint(item.secret),
        now=ctx.now,
        expires_at=item.expiresAt,
    )
    created = min(item.createdAt or ctx.now, ctx.now)
    seen = None if item.seenAt is None else min(item.seenAt, ctx.now)
    event = msgspec.structs.replace(event, created_at=created, seen_at=seen)
    await uow.append(domain.stream(token_id), [event], ctx.metadata, new=True)


async def _delete_gone(  # noqa: PLR0913, PLR0917 - the state a deletion compares
    ctx: Context,
    kept: set[int],
    rows: list[Any],
    marks: dict[str, origin.Provenance],
    uow: UnitOfWork,
    outcome: Outcome,
) -> None:
    """A token an earlier import brought and the source no longer has stops authenticating
    here too; one made here is never touched."""
    for row in rows:
        if row["id"] in kept:
            continue
        name = row["token_name"]
        if not changes.to_delete(ctx, name, marks.get(str(row["id"])), outcome):
            continue
        event = domain.delete_api_token((row["id"], name))
        await uow.append(domain.stream(row["id"]), [event], ctx.metadata)
        outcome.deleted.append(name)
        outcome.events += 1
