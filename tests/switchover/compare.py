"""Compares two servers that speak Unleash's admin API, entity by entity, through every admin
read route both serve; then their client API and the official Python SDK's answers.

`python -m tests.switchover.compare --a URL --a-token T --b URL --b-token T [--prefix P]
[--client-token ENV=SECRET ...] [--contexts N] [--created-times]` (or `await compare(...)`).
It prints a table (kind, entities, equal, differing, only on A, only on B), the first
differences of each kind and the fields that differ most, and exits 1 when anything differs.

What is read, per kind (the key that pairs A's entity with B's in brackets):
projects [id] `GET /api/admin/projects`; project [id] `GET /api/admin/projects/:p`; project
overview [id] `.../:p/overview`; project environments [id] `GET
/api/admin/environments/project/:p`; environments [name]; context fields [name]; strategies
[name]; tag types [name]; feature types [id]; segments [name]; segment strategies [segment
name] `GET /api/admin/segments/:id/strategies`; project flags [name] `GET
/api/admin/projects/:p/features`; flags [name] `GET /api/admin/projects/:p/features/:f
?variantEnvironments=true` (as the UI asks); archived [name] `GET
/api/admin/archive/features/:p`; tags [type:value]; flag tags [name] `GET
/api/admin/features/:f/tags`; dependencies [name] (a flag's parents and children, `GET
.../features/:f/parents` and `.../parent-variants`, and each project's `GET
.../:p/dependencies`); users [e-mail, else username] and root roles [id] `GET
/api/admin/user-admin`; api tokens [name|type|environment|projects]; client features [env
name] `GET /api/client/features` with a client token of each side. A route one side does not
serve (404 or 405 on the list itself) makes its kind "not served", not a difference.

Normalisation, applied to both sides alike before comparing (normalise.py holds the rules per
kind, as data):
1. Ids the servers assign are dropped: users', segments', strategies', links', tokens', the
   creators' and collaborators' (`createdBy.id`, `collaborators.users[].id`), and `imageUrl`
   (a gravatar of an id or e-mail). Entities are paired by name instead (segments too: a
   strategy's segment ids become the segments' names, on each side with its own ids).
2. Times a server sets itself (createdAt, updatedAt, lastSeenAt, seenAt, enteredStageAt,
   archivedAt, lastUpdatedAt, lastReportedFlagUsage, lastLogin, changedAt) are compared as set
   or not set; with `--created-times` (after an import, which keeps them) `createdAt` is
   compared to the millisecond, whatever the servers' precision and zone notation.
3. Lists whose order means nothing are sorted by their items' names (tags, a strategy's
   segments, a constraint's values, dependencies, children, collaborators, token projects,
   segment strategies); lists of named things (a flag's environments, a project's
   environments and flags) are compared as maps from the name. The order of strategies and
   of variants is kept: it is what SDKs evaluate. The client API's dependencies are a set
   (Unleash 6.10.1 repeats one per strategy of the child).
4. A field one side lacks is no difference when the other side's value is empty (null, false,
   an empty list, object or string; not 0), or when the kind lists it as shown by one server
   only and not shown by the UI, or shown from another route compared here (e.g. flagstore's
   `favorite`, `potentiallyStale`, a flag's `tags` (compared as flag tags), an environment's
   `hasStrategies`, `variantCount`, a client strategy's `sortOrder`); these are printed as
   "one-sided fields". A constraint's `inverted`, `caseInsensitive`, `values` and `value`,
   when left out, mean false, false, [] and null.
5. API tokens: only what precedes the secret's `.` (its projects and environment) is compared:
   flagstore keeps only hashes and shows a masked hint, Unleash shows the secret. Tokens that
   share name, type, environment and projects are numbered (`#2`) in the order listed. A
   side's `skip_token_ids` (proof.py: the new server's own admin token) are left out.
6. A project overview's `stats` (activity in the last 30 days; the deprecated `GET
   /api/admin/projects/:p`'s too) and `onboardingStatus.feature` (the first flag created)
   are dropped: an import or a seed makes its own history, in its
   own order.
7. With `--prefix` (two servers seeded independently, one of them shared), only entities
   whose name starts with the prefix are compared, besides the built-in ones (the default
   project, environments, built-in context fields, strategies and tag type, feature types,
   root roles); counts over the whole server (project health, feature counts, token and flag
   counts of environments, context fields' usage) are then dropped.
8. `GET /api/client/features`: the answer's `version`, `query` and `meta` (revision ids)
   are dropped; the features keyed by name, the segments by name. A client token a server
   refuses makes its status the answer compared (and no SDK is asked).
9. Where the two servers' rules differ by design (docs/behavior.md), not by a defect:
   - a flag's `lifecycle` is dropped: flagstore derives the stage from the flag's switches
     ("A flag's lifecycle"), Unleash 6.10.1 from the metrics SDKs report, which an import
     does not carry (metrics history is not carried over: docs/migrating.md), so an imported
     flag that is switched on is `pre-live` or `live` here and `initial` there until an SDK
     reports it;
   - a segment's strategies (`GET /api/admin/segments/:id/strategies`) leave out those of
     archived flags, on each side by its own archive: flagstore lists them since they keep the
     segment from being deleted ("Segment names and usage"), Unleash leaves them out;
   - a flag's deprecated flag-level `variants` are compared by their names: Unleash 6.10.1
     merges every environment's variants over the rows of a view read in no fixed order, a
     later row's variant of a name replacing an earlier one's, so which environment's variant
     it shows, and in which order, is PostgreSQL's row order (the environments' variants,
     compared in full, are what SDKs and the UI read); flagstore merges them in display order;
   - a project's `health` and `updatedAt` (projects, project, project overview) are dropped:
     Unleash stores the health, and sets `updatedAt`, by a job that runs about every hour
     (its project health service), so a freshly seeded reference shows 100 and its own time;
     flagstore computes the health when read;
   - the creation time of what each server makes at its installation (the `default` project,
     the built-in context fields) is that install's, not carried: dropped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import aiohttp

from tests.switchover import answers
from tests.switchover.normalise import RULES, Diff, Difference, Times, diff, normalise

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping

CONCURRENCY = 16
EXAMPLES = 3  # differing entities shown per kind
LINES = 6  # differences shown per entity
BUILT_IN_CONTEXT = frozenset(
    {"appName", "currentTime", "environment", "sessionId", "userId", "remoteAddress"}
)
CLIENT_SPEC = "6.1.0"  # what UnleashClient 6.9.1 sends
NOT_SERVED = frozenset({404, 405})


class ReadError(Exception):
    """A read the comparison needs failed."""


@dataclass
class Side:
    """A server: its URL, an admin token, and client tokens per environment."""

    label: str
    url: str
    token: str
    client_tokens: dict[str, str] = field(default_factory=dict)
    # Tokens of this server left out (by id): the admin token a proof made on a new server
    # before importing into it, to read it with.
    skip_token_ids: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Scope:
    prefix: str | None = None

    @property
    def scoped(self) -> bool:
        return self.prefix is not None

    def keep(self, name: str | None, *, built_in: bool = False) -> bool:
        return self.prefix is None or built_in or (name or "").startswith(self.prefix)


class Reader:
    """GETs of one server, a bounded number at a time."""

    def __init__(self, session: aiohttp.ClientSession, side: Side) -> None:
        self.session = session
        self.side = side
        self.gate = asyncio.Semaphore(CONCURRENCY)

    async def answer(
        self, path: str, *, token: str | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        sent = {"Authorization": token or self.side.token, **(headers or {})}
        async with (
            self.gate,
            self.session.get(self.side.url.rstrip("/") + path, headers=sent) as resp,
        ):
            raw = await resp.read()
            try:
                return resp.status, json.loads(raw) if raw else None
            except ValueError:
                return resp.status, raw.decode(errors="replace")[:200]

    async def get(self, path: str, **kwargs: Any) -> Any:
        status, body = await self.answer(path, **kwargs)
        if status != 200:
            raise ReadError(f"{self.side.label} GET {path}: {status} {body!r}"[:400])
        return body

    async def optional(self, path: str, **kwargs: Any) -> tuple[bool, Any]:
        """(served, body) of a route that lists or describes what the server has: 404 or
        405 says it does not serve the route."""
        status, body = await self.answer(path, **kwargs)
        if status in NOT_SERVED:
            return False, body
        return True, self._body(status, body)

    async def entity(self, path: str, **kwargs: Any) -> Any:
        """One entity's answer, whatever its status (a 404 is compared like any answer)."""
        return self._body(*await self.answer(path, **kwargs))

    @staticmethod
    def _body(status: int, body: Any) -> Any:
        if status == 200:
            return body
        return {"status": status, "name": body.get("name") if isinstance(body, dict) else body}


Entities = dict[str, Any]
Item = dict[str, Any]


@dataclass
class Collected:
    """One server's answers, per kind: key -> entity (before normalisation); None where the
    server does not serve the kind's route."""

    kinds: dict[str, Entities | None] = field(default_factory=dict)
    client: dict[str, Any] = field(default_factory=dict)  # environment -> client features
    context_fields: list[Item] = field(default_factory=list)
    segment_ids: dict[int, str] = field(default_factory=dict)
    projects: list[str] = field(default_factory=list)
    flags: dict[str, str] = field(default_factory=dict)  # name -> project


async def _gather(jobs: Mapping[str, Awaitable[Any]]) -> dict[str, Any]:
    values = await asyncio.gather(*jobs.values())
    return dict(zip(jobs, values, strict=True))


def _segments_by_name(segment_ids: dict[int, str], strategy: Item) -> None:
    if isinstance(strategy.get("segments"), list):
        strategy["segments"] = [segment_ids.get(s, f"<segment {s}>") for s in strategy["segments"]]


def _flag(body: Any, segment_ids: dict[int, str]) -> Any:
    if isinstance(body, dict):
        for environment in body.get("environments") or []:
            for strategy in environment.get("strategies") or []:
                _segments_by_name(segment_ids, strategy)
    return body


def _token_key(token: Item) -> str:
    projects = ",".join(sorted(token.get("projects") or [token.get("project", "")]))
    return f"{token.get('tokenName')}|{token.get('type')}|{token.get('environment')}|{projects}"


def _token(token: Item) -> Item:
    """Only the secret's visible part, its projects and environment (rule 5)."""
    secret = str(token.get("secret", ""))
    return {**token, "secret": secret.partition(".")[0] + ".<secret>"}


def _user_key(user: Item) -> str:
    return str(user.get("email") or user.get("username") or user.get("name"))


def _same(item: Item) -> Item:
    return item


@dataclass(frozen=True)
class Listing:
    """A list route: the field of its answer holding the items (None: the answer is the
    list), the key naming an item, what a scoped comparison keeps, how an item is shaped."""

    kind: str
    path: str
    items: str | None
    key: Callable[[Item], str]
    keep: Callable[[Scope, Item], bool] = lambda scope, item: True
    shape: Callable[[Item], Item] = _same


LISTINGS = (
    Listing("environments", "/api/admin/environments", "environments", lambda e: e["name"]),
    Listing(
        "context fields",
        "/api/admin/context",
        None,
        lambda c: c["name"],
        lambda scope, c: scope.keep(c["name"], built_in=c["name"] in BUILT_IN_CONTEXT),
    ),
    Listing(
        "strategies",
        "/api/admin/strategies",
        "strategies",
        lambda s: s["name"],
        lambda scope, s: scope.keep(s["name"], built_in=s.get("editable") is False),
    ),
    Listing(
        "tag types",
        "/api/admin/tag-types",
        "tagTypes",
        lambda t: t["name"],
        lambda scope, t: scope.keep(t["name"], built_in=t["name"] == "simple"),
    ),
    Listing("feature types", "/api/admin/feature-types", "types", lambda t: t["id"]),
    Listing(
        "segments",
        "/api/admin/segments",
        "segments",
        lambda s: s["name"],
        lambda scope, s: scope.keep(s["name"]),
    ),
    Listing(
        "tags",
        "/api/admin/tags",
        "tags",
        lambda t: f"{t['type']}:{t.get('value')}",
        lambda scope, t: scope.keep(t["type"]) or scope.keep(t.get("value")),
    ),
    Listing(
        "users",
        "/api/admin/user-admin",
        "users",
        _user_key,
        lambda scope, u: scope.keep(_user_key(u)),
    ),
    Listing("root roles", "/api/admin/user-admin", "rootRoles", lambda r: str(r["id"])),
    Listing(
        "api tokens",
        "/api/admin/api-tokens",
        "tokens",
        _token_key,
        lambda scope, t: scope.keep(t.get("tokenName")),
        _token,
    ),
)
# A project's own routes: kind -> path under /api/admin.
PROJECT_ROUTES = {
    "project": "/api/admin/projects/{p}",
    "project overview": "/api/admin/projects/{p}/overview",
    "project environments": "/api/admin/environments/project/{p}",
    "project flags": "/api/admin/projects/{p}/features",
    "archived": "/api/admin/archive/features/{p}",
    "project dependencies": "/api/admin/projects/{p}/dependencies",
}


def _keyed(listing: Listing, scope: Scope, items: list[Item]) -> Entities:
    """Items by key; a key two items share (two tokens of one name and scope) gets `#2`..."""
    made: Entities = {}
    for item in items:
        if not listing.keep(scope, item):
            continue
        key, n = listing.key(item), 1
        while (key if n == 1 else f"{key}#{n}") in made:
            n += 1
        made[key if n == 1 else f"{key}#{n}"] = listing.shape(item)
    return made


async def _listings(r: Reader, scope: Scope, got: Collected) -> None:
    paths = sorted({listing.path for listing in LISTINGS})
    answered = await _gather({path: r.optional(path) for path in paths})
    for listing in LISTINGS:
        served, body = answered[listing.path]
        raw = body if listing.items is None else (body or {}).get(listing.items, [])
        items = [i for i in raw if isinstance(i, dict)] if served and isinstance(raw, list) else []
        if listing.kind == "context fields":
            got.context_fields = items
        if listing.kind == "segments":
            got.segment_ids = {int(i["id"]): i["name"] for i in items if "id" in i}
        if listing.kind == "api tokens":
            items = [i for i in items if i.get("id") not in r.side.skip_token_ids]
        got.kinds[listing.kind] = _keyed(listing, scope, items) if served else None


def _scoped_features(body: Any, scope: Scope) -> Any:
    if isinstance(body, dict) and isinstance(body.get("features"), list):
        return {**body, "features": [f for f in body["features"] if scope.keep(f.get("name"))]}
    return body


async def _projects(r: Reader, scope: Scope, got: Collected) -> None:
    served, body = await r.optional("/api/admin/projects")
    if not served:
        raise ReadError(f"{r.side.label}: GET /api/admin/projects is not served")
    projects = [p for p in (body or {}).get("projects", []) if isinstance(p, dict)]
    kept = [p for p in projects if scope.keep(p["id"], built_in=p["id"] == "default")]
    got.projects = [p["id"] for p in kept]
    got.kinds["projects"] = {p["id"]: p for p in kept}
    reads = {
        f"{kind}\n{p}": r.optional(path.format(p=p))
        for kind, path in PROJECT_ROUTES.items()
        for p in got.projects
    }
    answered = await _gather(reads)
    for kind in PROJECT_ROUTES:
        parts = {p: answered[f"{kind}\n{p}"] for p in got.projects}
        if not all(served for served, _ in parts.values()):
            got.kinds[kind] = None
            continue
        bodies = {p: body for p, (_, body) in parts.items()}
        if kind in {"project flags", "archived"}:
            got.kinds[kind] = {
                f["name"]: f
                for p in got.projects
                for f in _scoped_features(bodies[p], scope).get("features", [])
            }
            if kind == "project flags":
                got.flags = {
                    f["name"]: p
                    for p in got.projects
                    for f in _scoped_features(bodies[p], scope)["features"]
                }
        else:
            got.kinds[kind] = {p: _scoped_features(b, scope) for p, b in bodies.items()}


async def _flags(r: Reader, scope: Scope, got: Collected) -> None:
    """Each flag as the UI reads it, its tags, and its parents and children."""

    def base(name: str) -> str:
        return f"/api/admin/projects/{got.flags[name]}/features/{name}"

    details, tags = await asyncio.gather(
        _gather({name: r.entity(f"{base(name)}?variantEnvironments=true") for name in got.flags}),
        _gather({name: r.entity(f"/api/admin/features/{name}/tags") for name in got.flags}),
    )
    got.kinds["flags"] = {name: _flag(body, got.segment_ids) for name, body in details.items()}
    got.kinds["flag tags"] = tags
    related = [
        name
        for name, flag in details.items()
        if isinstance(flag, dict) and (flag.get("dependencies") or flag.get("children"))
    ]
    parents, variants = await asyncio.gather(
        _gather({name: r.entity(f"{base(name)}/parents") for name in related}),
        _gather({name: r.entity(f"{base(name)}/parent-variants") for name in related}),
    )
    dependencies: Entities = {}
    for name in related:
        flag = details[name]
        possible = parents[name]
        dependencies[name] = {
            "dependencies": flag.get("dependencies"),
            "children": flag.get("children"),
            "parents": [p for p in possible if scope.keep(p)]
            if isinstance(possible, list)
            else possible,
            "parentVariants": variants[name] if flag.get("children") else None,
        }
    for p, has in (got.kinds.pop("project dependencies", None) or {}).items():
        dependencies[f"project {p}"] = has
    got.kinds["dependencies"] = dependencies


async def collect(r: Reader, scope: Scope) -> Collected:
    """Every kind, as this server answers it."""
    got = Collected()
    await asyncio.gather(_projects(r, scope, got), _listings(r, scope, got))
    await _flags(r, scope, got)
    segments = got.kinds.get("segments")
    if segments is not None:
        ids = {name: i for i, name in got.segment_ids.items()}
        usage = {name: r.entity(f"/api/admin/segments/{ids[name]}/strategies") for name in segments}
        archived = set(got.kinds.get("archived") or {})
        got.kinds["segment strategies"] = {
            name: _active_strategies(body, archived)
            for name, body in (await _gather(usage)).items()
        }
    _install_times(got)
    for environment, token in r.side.client_tokens.items():
        status, body = await r.answer(
            "/api/client/features", token=token, headers={"Unleash-Client-Spec": CLIENT_SPEC}
        )
        kind = f"client features {environment}"
        if status == 200 and isinstance(body, dict):
            got.client[environment] = body
            got.kinds[kind] = _client(body, scope)
        else:  # the token does not work here: that is the answer compared
            got.kinds[kind] = {"(the answer)": Reader._body(status, body)}
    return got


# What each server makes at its installation: its creation time is the install's (rule 9).
INSTALLED = {
    "projects": frozenset({"default"}),
    "project": frozenset({"default"}),
    "project overview": frozenset({"default"}),
    "context fields": BUILT_IN_CONTEXT,
}


def _install_times(got: Collected) -> None:
    for kind, keys in INSTALLED.items():
        for key in keys:
            entity = (got.kinds.get(kind) or {}).get(key)
            if isinstance(entity, dict):
                entity.pop("createdAt", None)


def _active_strategies(body: Any, archived: set[str]) -> Any:
    """A segment's strategies without those of archived flags (rule 9)."""
    if isinstance(body, dict) and isinstance(body.get("strategies"), list):
        kept = [s for s in body["strategies"] if s.get("featureName") not in archived]
        return {**body, "strategies": kept}
    return body


def _client(body: dict[str, Any], scope: Scope) -> Entities:
    segment_ids = {int(s["id"]): s.get("name", str(s["id"])) for s in body.get("segments") or []}
    made: Entities = {}
    for feature in body.get("features") or []:
        if not scope.keep(feature.get("name")):
            continue
        for strategy in feature.get("strategies") or []:
            _segments_by_name(segment_ids, strategy)
        made[feature["name"]] = feature
    for segment in body.get("segments") or []:
        name = segment.get("name") or segment_ids.get(int(segment["id"]))
        if scope.keep(name):
            made[f"segment {name}"] = {k: v for k, v in segment.items() if k != "id"}
    return made


# --- comparing ---------------------------------------------------------------------------------


@dataclass
class KindResult:
    kind: str
    served: tuple[bool, bool]
    equal: int = 0
    differing: dict[str, list[Difference]] = field(default_factory=dict)
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    one_sided: set[tuple[str, str]] = field(default_factory=set)
    count_a: int = 0
    count_b: int = 0

    @property
    def entities(self) -> int:
        return self.equal + len(self.differing) + len(self.only_a) + len(self.only_b)

    @property
    def ok(self) -> bool:
        return not (self.differing or self.only_a or self.only_b)


def compare_kind(
    kind: str, a: Entities | None, b: Entities | None, *, times: Times, scoped: bool
) -> KindResult:
    result = KindResult(kind, (a is not None, b is not None))
    if a is None or b is None:
        return result
    rules = RULES["client features" if kind.startswith("client features ") else kind]
    result.count_a, result.count_b = len(a), len(b)
    for key in sorted(set(a) | set(b)):
        if key not in b:
            result.only_a.append(key)
            continue
        if key not in a:
            result.only_b.append(key)
            continue
        out = Diff()
        diff(
            normalise(a[key], rules, times=times, scoped=scoped),
            normalise(b[key], rules, times=times, scoped=scoped),
            rules,
            out,
        )
        result.one_sided |= out.one_sided
        if out.differences:
            result.differing[key] = out.differences
        else:
            result.equal += 1
    return result


@dataclass
class Report:
    kinds: list[KindResult]
    sdk: list[answers.Agreement] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(k.ok for k in self.kinds) and all(s.ok for s in self.sdk)


async def compare(
    a: Side,
    b: Side,
    *,
    prefix: str | None = None,
    times: Times = Times(),  # noqa: B008 - frozen
    contexts: int = 1000,
    seed: int = 44,
    sdk_environment: str | None = None,
    session: aiohttp.ClientSession | None = None,
) -> Report:
    """Both servers read and compared kind by kind; then the SDKs, when `contexts` > 0, asked
    about every flag in `sdk_environment` ("all": each environment both sides have a client
    token for; by default production, else the first of them)."""
    scope = Scope(prefix)
    own = session is None
    session = session or aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120))
    try:
        got_a, got_b = await asyncio.gather(
            collect(Reader(session, a), scope), collect(Reader(session, b), scope)
        )
    finally:
        if own:
            await session.close()
    kinds = [
        compare_kind(
            kind, got_a.kinds.get(kind), got_b.kinds.get(kind), times=times, scoped=scope.scoped
        )
        for kind in dict.fromkeys([*got_a.kinds, *got_b.kinds])
    ]
    report = Report(kinds)
    both = sorted(set(a.client_tokens) & set(b.client_tokens))
    chosen = (
        both
        if sdk_environment == "all"
        else [e for e in both if e == (sdk_environment or _default_environment(both))]
    )
    for environment in chosen if contexts > 0 else []:
        if environment not in got_a.client or environment not in got_b.client:
            failed = answers.Agreement(environment, 0, contexts)
            failed.error = "a client token does not work on both: no SDK asked"
            report.sdk.append(failed)
            continue
        vocab = answers.vocabulary(got_a.client[environment], got_a.context_fields)
        listed = {
            f["name"] for got in (got_a, got_b) for f in got.client[environment].get("features", [])
        }
        names = [n for n in sorted(listed) if scope.keep(n)] + ["compare-no-such-flag"]
        asked = answers.contexts(vocab, contexts, seed, environment)
        report.sdk.append(
            await asyncio.to_thread(
                answers.agreement,
                (a.url, a.client_tokens[environment]),
                (b.url, b.client_tokens[environment]),
                environment,
                flags=names,
                asked=asked,
            )
        )
    return report


def _default_environment(environments: list[str]) -> str | None:
    if "production" in environments:
        return "production"
    return environments[0] if environments else None


# --- printing ----------------------------------------------------------------------------------


def table(rows: list[list[str]]) -> str:
    widths = [max(len(row[n]) for row in rows) for n in range(len(rows[0]))]
    lines = []
    for i, row in enumerate(rows):
        lines.append(
            "  ".join(
                cell.ljust(w) if n == 0 else cell.rjust(w)
                for n, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _rows(report: Report, a: Side, b: Side) -> list[list[str]]:
    rows = [["kind", "entities", "equal", "differing", f"only {a.label}", f"only {b.label}"]]
    for k in report.kinds:
        if all(k.served):
            rows.append(
                [
                    k.kind,
                    *map(
                        str, (k.entities, k.equal, len(k.differing), len(k.only_a), len(k.only_b))
                    ),
                ]
            )
        else:
            who = " and ".join(
                s.label for s, served in zip((a, b), k.served, strict=True) if not served
            )
            rows.append([k.kind, f"not served by {who}", "", "", "", ""])
    return rows


def _kind_details(k: KindResult, a: Side, b: Side) -> list[str]:
    out = [f"\n{k.kind}:"]
    patterns = Counter(d.pattern or "(the answer)" for ds in k.differing.values() for d in ds)
    if patterns:
        common = ", ".join(f"{p} ({n})" for p, n in patterns.most_common(8))
        out.append(f"  fields that differ (entities): {common}")
    for key, differences in list(k.differing.items())[:EXAMPLES]:
        out.append(f"  {key}:")
        out += [f"    {d.line()}" for d in differences[:LINES]]
        if len(differences) > LINES:
            out.append(f"    ... {len(differences) - LINES} more")
    for side, keys in ((a.label, k.only_a), (b.label, k.only_b)):
        if keys:
            shown = ", ".join(keys[:8]) + (f", ... ({len(keys)})" if len(keys) > 8 else "")
            out.append(f"  only on {side}: {shown}")
    return out


def _sdk_lines(s: answers.Agreement) -> list[str]:
    if s.error:
        return [f"\nSDK, {s.environment}: {s.error}"]
    total = s.agree + s.differ
    out = [
        (
            f"\nSDK, {s.environment}: {s.flags} flags x {s.contexts} contexts x 2 questions:"
            f" {s.agree} of {total} answers agree, {s.differ} differ"
            f" (is_enabled true {s.enabled} times of {total // 2}, {len(s.variants)} variants)"
        )
    ]
    return out + [f"  {e}"[:300] for e in s.examples]


def render(report: Report, a: Side, b: Side) -> str:
    out = [f"A = {a.label} {a.url}   B = {b.label} {b.url}", table(_rows(report, a, b))]
    for k in report.kinds:
        if not k.ok:
            out += _kind_details(k, a, b)
    one_sided = sorted({(k.kind, p, s) for k in report.kinds for p, s in k.one_sided})
    if one_sided:
        out.append("\none-sided fields (shown by one server only; not compared):")
        out += [
            f"  {kind}: {path} (only {a.label if s == 'a' else b.label})"
            for kind, path, s in one_sided
        ]
    for s in report.sdk:
        out += _sdk_lines(s)
    out.append("\nresult: " + ("EQUAL" if report.ok else "DIFFERENT"))
    return "\n".join(out)


def _tokens(values: list[str]) -> dict[str, str]:
    made = {}
    for value in values:
        environment, sep, secret = value.partition("=")
        if not sep:
            raise SystemExit(f"--client-token {value!r}: ENV=SECRET")
        made[environment] = secret
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.switchover.compare", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--a", required=True, help="the first server (e.g. the reference)")
    parser.add_argument("--a-token", required=True)
    parser.add_argument("--b", required=True, help="the second server")
    parser.add_argument("--b-token", required=True)
    parser.add_argument("--a-label", default="A")
    parser.add_argument("--b-label", default="B")
    parser.add_argument("--prefix", help="compare only what has this prefix (and built-ins)")
    parser.add_argument("--client-token", action="append", default=[], help="ENV=SECRET, on both")
    parser.add_argument("--a-client-token", action="append", default=[], help="ENV=SECRET, A's")
    parser.add_argument("--b-client-token", action="append", default=[], help="ENV=SECRET, B's")
    parser.add_argument("--contexts", type=int, default=1000, help="SDK contexts (0: no SDK)")
    parser.add_argument("--seed", type=int, default=44)
    parser.add_argument(
        "--sdk-environment", help="the SDKs' environment, or 'all' (default: production)"
    )
    parser.add_argument("--created-times", action="store_true", help="createdAt to the ms")
    args = parser.parse_args(argv)
    both = _tokens(args.client_token)
    a = Side(args.a_label, args.a, args.a_token, {**both, **_tokens(args.a_client_token)})
    b = Side(args.b_label, args.b, args.b_token, {**both, **_tokens(args.b_client_token)})
    try:
        report = asyncio.run(
            compare(
                a,
                b,
                prefix=args.prefix,
                times=Times(created=args.created_times),
                contexts=args.contexts,
                seed=args.seed,
                sdk_environment=args.sdk_environment,
            )
        )
    except (ReadError, aiohttp.ClientError, RuntimeError) as error:
        sys.stderr.write(f"compare: {error}\n")
        return 2
    sys.stdout.write(render(report, a, b) + "\n")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
