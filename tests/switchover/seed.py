"""Fills a server that speaks Unleash's admin API with a rich, deterministic data set, through
that API only (requests Unleash 6.10.1 documents), so the same seed fills the reference and
flagstore alike.

`python -m tests.switchover.seed --url URL --token ADMIN_TOKEN [--flags N] [--prefix P]
[--seed S]` (or `await seed(...)`). Every name it creates starts with the prefix, so a shared
server is never disturbed and several runs live side by side. The same seed, prefix and flag
count make the same requests in the same order (`plan()` is pure); what the server cannot do
is detected and skipped, and said so in the result:

- projects: two of its own besides `default` (`POST /api/admin/projects`: Enterprise, absent
  from the open-source reference, which has only `default`);
- the environments development and production, enabled in each project it uses;
- context fields (legal values with and without descriptions, one for custom stickiness), a
  custom strategy type used by some flags and one deprecated, tag types, segments (one
  without constraints);
- flags of every type over the projects: every built-in strategy (default, flexibleRollout
  with each stickiness, groupId and rollout, userWithId, remoteAddress, applicationHostname)
  and the custom one, titles, disabled strategies, every constraint operator (inverted and
  case-insensitive ones too), segments, strategy variants and environment variants with
  overrides and string, json, number and csv payloads, switches on and off, tags, parents
  and children (with parent variants), stale flags, archived flags, links where the server
  has them;
- users of each root role (Admin 1, Editor 2, Viewer 3; one without e-mail) and API tokens of
  each type (client per environment, for all projects and per project; frontend; admin where
  allowed: the reference refuses admin tokens).

Rollouts whose stickiness is `random` are 0 % or 100 % and have no variants (Unleash's engine
picks their variants at random too), so evaluating them gives one answer (compare.py asks two
servers the same questions and counts differing answers).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
from dataclasses import dataclass, field
from typing import Any

import aiohttp

DEFAULT_FLAGS = 220
DEFAULT_SEED = 44
DEFAULT_PREFIX = "seed"
ENVIRONMENTS = ("development", "production")
FLAG_TYPES = ("release", "experiment", "operational", "kill-switch", "permission")
CONCURRENCY = 8
PREFIX = re.compile(r"[a-z][a-z0-9-]{0,23}")
# Statuses that say "this server has no such route or will not do it" (an optional feature).
ABSENT = frozenset({400, 401, 403, 404, 405, 501})
# What a server may lack (the open-source reference lacks all three): the seed detects each,
# or leaves it out when asked.
OPTIONAL = frozenset({"projects", "links", "admin-tokens"})

REGIONS = ("eu", "us", "asia", "africa")
TIERS = ("gold", "silver", "bronze")
USERS = tuple(f"user-{n}" for n in range(1, 41))
APPS = ("shop", "legacy", "admin-ui", "batch")
IPS = ("10.0.0.1", "10.0.0.2", "192.168.1.0/24", "172.16.5.5")
HOSTS = ("web-1", "web-2", "worker-1")
TENANTS = ("acme", "globex", "initech", "umbrella")


class SeedError(Exception):
    """The server refused a request the seed needs (not one of the optional features)."""


@dataclass(frozen=True)
class Names:
    """Every name the seed gives, from its prefix."""

    prefix: str

    def project(self, n: int) -> str:
        return f"{self.prefix}-proj-{n}"

    def flag(self, n: int) -> str:
        return f"{self.prefix}-flag-{n:04d}"

    def field(self, what: str) -> str:
        return f"{self.prefix}-{what}"

    @property
    def strategy(self) -> str:
        return f"{self.prefix}-tenant"

    @property
    def old_strategy(self) -> str:
        return f"{self.prefix}-retired"

    def tag_type(self, what: str) -> str:
        return f"{self.prefix}-{what}"

    def segment(self, n: int) -> str:
        return f"{self.prefix}-segment-{n}"


# --- the plan: pure, from (seed, prefix, flags, projects) ---------------------------------------


@dataclass
class EnvPlan:
    enabled: bool
    strategies: list[tuple[dict[str, Any], list[int]]]  # body, indices into Plan.segments
    variants: list[dict[str, Any]]


@dataclass
class FlagPlan:
    name: str
    project: str
    body: dict[str, Any]
    environments: dict[str, EnvPlan]
    tags: list[dict[str, str]]
    parents: list[dict[str, Any]] = field(default_factory=list)
    link: dict[str, str] | None = None
    stale: bool = False
    archived: bool = False


@dataclass
class Plan:
    prefix: str
    projects: list[dict[str, str]]
    context_fields: list[dict[str, Any]]
    strategies: list[dict[str, Any]]
    deprecated: list[str]
    tag_types: list[dict[str, Any]]
    segments: list[dict[str, Any]]
    flags: list[FlagPlan]
    users: list[dict[str, Any]]
    tokens: list[dict[str, Any]]


def project_bodies(prefix: str) -> list[dict[str, str]]:
    names = Names(prefix)
    return [
        {"id": names.project(n), "name": f"{prefix} {what}", "description": f"The {what} team"}
        for n, what in ((1, "web"), (2, "mobile"))
    ]


def context_fields(names: Names) -> list[dict[str, Any]]:
    return [
        {
            "name": names.field("region"),
            "description": "Where the user is",
            "stickiness": False,
            "legalValues": [
                {"value": "eu", "description": "Europe"},
                {"value": "us", "description": "United States"},
                {"value": "asia"},
                {"value": "africa"},
            ],
        },
        {
            "name": names.field("tier"),
            "description": "The plan the customer pays for",
            "stickiness": True,
            "legalValues": [{"value": t} for t in TIERS],
        },
        {"name": names.field("email"), "description": "The user's e-mail", "stickiness": False},
        {"name": names.field("age"), "stickiness": False},
        {"name": names.field("signup"), "description": "When the user signed up"},
        {"name": names.field("version"), "description": "The app's version", "sortOrder": 7},
    ]


def strategy_types(names: Names) -> list[dict[str, Any]]:
    return [
        {
            "name": names.strategy,
            "title": "Tenants",
            "description": "On for the listed tenants",
            "parameters": [
                {"name": "tenants", "type": "list", "description": "Tenant ids", "required": True},
                {"name": "share", "type": "percentage", "required": False},
                {"name": "beta", "type": "boolean", "description": "Beta tenants only"},
                {"name": "note", "type": "string"},
                {"name": "limit", "type": "number", "required": False},
            ],
        },
        {
            "name": names.old_strategy,
            "description": "Replaced by the tenants strategy",
            "parameters": [{"name": "ids", "type": "list"}],
        },
    ]


def tag_types(names: Names) -> list[dict[str, Any]]:
    return [
        {"name": names.tag_type("team"), "description": "The owning team", "icon": "people"},
        {"name": names.tag_type("area"), "description": "The product area"},
    ]


class Constraints:
    """Constraints over every operator, taken in turn (so that any 17 in a row cover them
    all), with values the context fields allow."""

    def __init__(self, names: Names, rng: random.Random) -> None:
        self.names = names
        self.rng = rng
        self.turn = 0

    def next(self) -> dict[str, Any]:
        kinds = [
            self._in_region,
            self._not_in_region,
            self._str("STR_CONTAINS"),
            self._num("NUM_EQ"),
            self._date("DATE_AFTER"),
            self._semver("SEMVER_EQ"),
            self._in_users,
            self._str("STR_STARTS_WITH"),
            self._num("NUM_GT"),
            self._date("DATE_BEFORE"),
            self._semver("SEMVER_GT"),
            self._in_tier,
            self._str("STR_ENDS_WITH"),
            self._num("NUM_GTE"),
            self._semver("SEMVER_LT"),
            self._num("NUM_LT"),
            self._apps,
            self._num("NUM_LTE"),
        ]
        made: dict[str, Any] = kinds[self.turn % len(kinds)]()
        self.turn += 1
        if self.turn % 4 == 0:
            made["inverted"] = True
        return made

    def _pick(self, values: tuple[str, ...], most: int) -> list[str]:
        return sorted(self.rng.sample(values, self.rng.randint(1, most)))

    def _in_region(self) -> dict[str, Any]:
        return {
            "contextName": self.names.field("region"),
            "operator": "IN",
            "values": self._pick(REGIONS, 2),
        }

    def _not_in_region(self) -> dict[str, Any]:
        return {
            "contextName": self.names.field("region"),
            "operator": "NOT_IN",
            "values": self._pick(REGIONS, 1),
        }

    def _in_tier(self) -> dict[str, Any]:
        return {
            "contextName": self.names.field("tier"),
            "operator": "IN",
            "values": self._pick(TIERS, 2),
        }

    def _in_users(self) -> dict[str, Any]:
        return {"contextName": "userId", "operator": "IN", "values": self._pick(USERS, 12)}

    def _apps(self) -> dict[str, Any]:
        operator = self.rng.choice(("IN", "NOT_IN"))
        return {"contextName": "appName", "operator": operator, "values": self._pick(APPS, 2)}

    def _str(self, operator: str) -> Any:
        def make() -> dict[str, Any]:
            pieces = {
                "STR_CONTAINS": ("@example", "admin", "QA"),
                "STR_STARTS_WITH": ("user-1", "Admin", "ops"),
                "STR_ENDS_WITH": ("@example.com", ".ORG", "@test.io"),
            }[operator]
            return {
                "contextName": self.names.field("email"),
                "operator": operator,
                "values": self._pick(pieces, 2),
                "caseInsensitive": self.turn % 2 == 0,
            }

        return make

    def _num(self, operator: str) -> Any:
        def make() -> dict[str, Any]:
            value = (
                str(self.rng.randint(18, 80)) if self.turn % 3 else f"{self.rng.randint(18, 80)}.5"
            )
            return {"contextName": self.names.field("age"), "operator": operator, "value": value}

        return make

    def _date(self, operator: str) -> Any:
        def make() -> dict[str, Any]:
            name = "currentTime" if self.turn % 2 else self.names.field("signup")
            month, day = self.rng.randint(1, 12), self.rng.randint(1, 28)
            value = (
                f"{self.rng.choice((2024, 2025, 2026, 2027))}-{month:02d}-{day:02d}T12:00:00.000Z"
            )
            return {"contextName": name, "operator": operator, "value": value}

        return make

    def _semver(self, operator: str) -> Any:
        def make() -> dict[str, Any]:
            major, minor, patch = (
                self.rng.randint(1, 3),
                self.rng.randint(0, 9),
                self.rng.randint(0, 9),
            )
            value = f"{major}.{minor}.{patch}" + ("-beta.1" if self.turn % 5 == 0 else "")
            return {
                "contextName": self.names.field("version"),
                "operator": operator,
                "value": value,
            }

        return make


def segments(names: Names, constraints: Constraints, rng: random.Random) -> list[dict[str, Any]]:
    made = [
        {"name": names.segment(0), "description": "Everyone (no constraints)", "constraints": []}
    ]
    for n in range(1, 8):
        body: dict[str, Any] = {
            "name": names.segment(n),
            "constraints": [constraints.next() for _ in range(rng.randint(1, 3))],
        }
        if n % 2:
            body["description"] = f"Segment {n} of the seed"
        made.append(body)
    return made


def weights(variants: list[dict[str, Any]]) -> None:
    """Variable weights as Unleash spreads them: what the fixed ones leave, evenly, the
    remainder to the first ones (so the servers keep the weights they are given)."""
    variable = [v for v in variants if v["weightType"] == "variable"]
    left = 1000 - sum(v["weight"] for v in variants if v["weightType"] == "fix")
    for n, variant in enumerate(variable):
        variant["weight"] = left // len(variable) + (1 if n < left % len(variable) else 0)


def payload(rng: random.Random, n: int) -> dict[str, str] | None:
    kind = ("string", "json", "number", "csv", None)[n % 5]
    if kind is None:
        return None
    value = {
        "string": f"text-{rng.randint(1, 999)}",
        "json": json.dumps({"colour": rng.choice(("red", "blue")), "size": rng.randint(1, 9)}),
        "number": str(rng.randint(1, 100)),
        "csv": "a,b,c",
    }[kind]
    return {"type": kind, "value": value}


def strategy_variants(names: Names, rng: random.Random, flag: str) -> list[dict[str, Any]]:
    count = rng.randint(1, 3)
    stickiness = rng.choice(("default", "userId", names.field("tier")))
    chosen = ["v1", "v2", "v3"][:count]
    rng.shuffle(chosen)  # not in the order of their names: Unleash sorts them so
    made: list[dict[str, Any]] = []
    for name in chosen:
        variant: dict[str, Any] = {
            "name": name,
            "weight": 0,
            "weightType": "variable",
            "stickiness": stickiness,
        }
        if (body := payload(rng, rng.randint(0, 4))) is not None:
            variant["payload"] = body
        made.append(variant)
    if count == 3 and flag.endswith(("0", "5")):
        made[0]["weightType"] = "fix"
        made[0]["weight"] = 200
    weights(made)
    return made


def environment_variants(names: Names, rng: random.Random) -> list[dict[str, Any]]:
    stickiness = rng.choice(("default", "userId", "sessionId", names.field("tier")))
    made: list[dict[str, Any]] = []
    for n, name in enumerate(rng.sample(("red", "green", "blue", "gold"), rng.randint(2, 3))):
        variant: dict[str, Any] = {
            "name": name,
            "weight": 0,
            "weightType": "variable",
            "stickiness": stickiness,
        }
        if (body := payload(rng, n + rng.randint(0, 4))) is not None:
            variant["payload"] = body
        if n == 0:
            variant["overrides"] = [{"contextName": "userId", "values": list(USERS[:2])}]
        elif n == 1 and rng.random() < 0.5:
            variant["overrides"] = [
                {"contextName": names.field("region"), "values": ["asia"]},
                {"contextName": "userId", "values": [USERS[5]]},
            ]
        made.append(variant)
    if len(made) == 3 and rng.random() < 0.4:
        made[2]["weightType"] = "fix"
        made[2]["weight"] = 100
    weights(made)
    return made


def one_strategy(
    names: Names, rng: random.Random, constraints: Constraints, flag: str, kind: int
) -> tuple[dict[str, Any], list[int]]:
    """The strategy of turn `kind` (0-5: the five built-in ones and the custom one), with
    constraints, segments, variants, a title or disabled now and then."""
    body: dict[str, Any]
    match kind % 6:
        case 0:
            body = {"name": "default", "parameters": {}}
        case 1:
            stickiness = rng.choice(
                ("default", "userId", "sessionId", "random", names.field("tier"))
            )
            rollout = (
                rng.choice(("0", "100")) if stickiness == "random" else str(rng.randint(0, 100))
            )
            group = flag if rng.random() < 0.8 else f"{names.prefix}-group"
            body = {
                "name": "flexibleRollout",
                "parameters": {"rollout": rollout, "stickiness": stickiness, "groupId": group},
            }
            if rng.random() < 0.6 and stickiness != "random":  # random: its variants too
                body["variants"] = strategy_variants(names, rng, flag)
        case 2:
            body = {"name": "userWithId", "parameters": {"userIds": ",".join(rng.sample(USERS, 5))}}
        case 3:
            body = {"name": "remoteAddress", "parameters": {"IPs": ",".join(rng.sample(IPS, 2))}}
        case 4:
            body = {"name": "applicationHostname", "parameters": {"hostNames": ",".join(HOSTS[:2])}}
        case _:
            body = {
                "name": names.strategy,
                "parameters": {
                    "tenants": ",".join(rng.sample(TENANTS, 2)),
                    "share": str(rng.randint(0, 100)),
                    "beta": rng.choice(("true", "false")),
                    "note": "seeded",
                    "limit": str(rng.randint(1, 9)),
                },
            }
    body["constraints"] = [constraints.next() for _ in range(rng.choice((0, 0, 1, 1, 2, 3)))]
    if rng.random() < 0.3:
        body["title"] = f"{body['name']} for {flag[-4:]}"
    if rng.random() < 0.08:
        body["disabled"] = True
    chosen = sorted(rng.sample(range(8), rng.choice((0, 0, 0, 1, 2))))
    return body, chosen


def _flag_body(name: str, n: int) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "type": FLAG_TYPES[n % len(FLAG_TYPES)]}
    if n % 3:
        body["description"] = f"Flag {n} of the seed"
    if n % 6 == 1:
        body["impressionData"] = True
    return body


def _flag_environments(
    names: Names, rng: random.Random, constraints: Constraints, name: str, n: int
) -> dict[str, EnvPlan]:
    parent = n % 10 == 0  # its variants are what children may ask for
    made = {}
    for e, environment in enumerate(ENVIRONMENTS):
        kinds = (
            [1]
            if parent
            else [(n + e) % 6] + [rng.randint(0, 5) for _ in range(rng.choice((0, 0, 1, 2)))]
        )
        strategies = [one_strategy(names, rng, constraints, name, k) for k in kinds]
        if parent:
            first = strategies[0][0]
            first["parameters"].update(rollout="100", stickiness="default")
            first["variants"] = strategy_variants(names, rng, name)
            first.pop("disabled", None)
        if n % 13 == 7 and e == 0:  # switched on with no strategy: the server adds one
            strategies = []
        variants = environment_variants(names, rng) if n % 4 == 2 else []
        made[environment] = EnvPlan(
            enabled=(n + e) % 3 != 2, strategies=strategies, variants=variants
        )
    return made


def _tags(names: Names, n: int) -> list[dict[str, str]]:
    tags = []
    if n % 2 == 0:
        tags.append({"type": "simple", "value": f"{names.prefix}-s{n % 5}"})
    if n % 3 == 0:
        tags.append(
            {"type": names.tag_type("team"), "value": ("checkout", "search", "growth")[n // 3 % 3]}
        )
    if n % 5 == 1:
        tags.append({"type": names.tag_type("area"), "value": f"area-{n % 4}"})
    return tags


def _family(names: Names, plan: FlagPlan, n: int) -> None:
    """A block of ten flags: the first is the parent of the next three (on; with its variant
    v1; off), and the block shares a project."""
    parent = names.flag(n // 10 * 10)
    match n % 10:
        case 1:
            plan.parents.append({"feature": parent})
        case 2:
            plan.parents.append({"feature": parent, "enabled": True, "variants": ["v1"]})
        case 3:
            plan.parents.append({"feature": parent, "enabled": False})
        case _:
            pass


def flag_plans(
    names: Names, rng: random.Random, constraints: Constraints, count: int, projects: list[str]
) -> list[FlagPlan]:
    flags = []
    for n in range(count):
        name = names.flag(n)
        plan = FlagPlan(
            name=name,
            project=projects[n // 10 % len(projects)],
            body=_flag_body(name, n),
            environments=_flag_environments(names, rng, constraints, name, n),
            tags=_tags(names, n),
            stale=n % 7 == 3,
            archived=n % 11 == 5 and n % 10 != 0,
        )
        _family(names, plan, n)
        if n % 9 == 4:
            plan.link = {"url": f"https://example.com/issues/{n}", "title": f"Issue {n}"}
        elif n % 18 == 8:
            plan.link = {"url": f"https://example.com/docs/{n}"}
        flags.append(plan)
    return flags


def users(names: Names) -> list[dict[str, Any]]:
    made = []
    for role, title in ((1, "Admin"), (2, "Editor"), (3, "Viewer")):
        for n in (1, 2):
            handle = f"{names.prefix}-{title.lower()}-{n}"
            body: dict[str, Any] = {
                "name": f"{names.prefix} {title} {n}",
                "email": f"{handle}@example.com",
                "rootRole": role,
                "sendEmail": False,
            }
            if n == 2:
                body["username"] = handle
            made.append(body)
    made.append(
        {"username": f"{names.prefix}-nomail", "name": "No Mail", "rootRole": 3, "sendEmail": False}
    )
    return made


def tokens(names: Names, projects: list[str]) -> list[dict[str, Any]]:
    made: list[dict[str, Any]] = []
    for environment in ENVIRONMENTS:
        made.append(
            {
                "tokenName": f"{names.prefix}-client-{environment}",
                "type": "client",
                "environment": environment,
                "projects": ["*"],
            }
        )
        made += [
            {
                "tokenName": f"{names.prefix}-client-{environment}-{p}",
                "type": "client",
                "environment": environment,
                "projects": [p],
            }
            for p in projects
            if p != "default"
        ]
        made.append(
            {
                "tokenName": f"{names.prefix}-frontend-{environment}",
                "type": "frontend",
                "environment": environment,
                "projects": ["*"],
            }
        )
    made.append({"tokenName": f"{names.prefix}-admin", "type": "admin"})
    return made


def plan(seed: int, prefix: str, flags: int, projects: list[str]) -> Plan:
    """Everything the seed sends, in order: the same arguments give the same plan."""
    rng = random.Random(f"{seed}:{flags}")
    names = Names(prefix)
    constraints = Constraints(names, rng)
    return Plan(
        prefix=prefix,
        projects=project_bodies(prefix),
        context_fields=context_fields(names),
        strategies=strategy_types(names),
        deprecated=[names.old_strategy],
        tag_types=tag_types(names),
        segments=segments(names, constraints, rng),
        flags=flag_plans(names, rng, constraints, flags, projects),
        users=users(names),
        tokens=tokens(names, projects),
    )


# --- applying it ------------------------------------------------------------------------------


@dataclass
class Seeded:
    """What a run made, what it skipped (and why), and the secrets of the tokens it made."""

    url: str
    prefix: str
    seed: int
    version: str
    projects: list[str]
    environments: list[str]
    flags: list[str]
    archived: list[str]
    counts: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)  # tokenName -> secret

    def client_token(self, environment: str) -> str:
        return self.tokens[f"{self.prefix}-client-{environment}"]

    def summary(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "prefix": self.prefix,
            "seed": self.seed,
            "version": self.version,
            "projects": self.projects,
            "environments": self.environments,
            "counts": self.counts,
            "skipped": self.skipped,
            "tokens": self.tokens,
        }


class Api:
    """Admin API calls with one token; a status outside `ok` is a SeedError naming the call."""

    def __init__(self, session: aiohttp.ClientSession, url: str, token: str) -> None:
        self.session = session
        self.url = url.rstrip("/")
        self.headers = {"Authorization": token}

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        ok: frozenset[int] = frozenset({200, 201, 202, 204}),
    ) -> tuple[int, Any]:
        async with self.session.request(
            method, self.url + path, json=body, headers=self.headers
        ) as resp:
            raw = await resp.read()
            try:
                answer = json.loads(raw) if raw else None
            except ValueError:
                answer = raw.decode(errors="replace")
            if resp.status not in ok:
                raise SeedError(f"{method} {path}: {resp.status} {answer!r} (sent {body!r})")
            return resp.status, answer

    async def get(self, path: str) -> Any:
        return (await self.call("GET", path))[1]


def _count(seeded: Seeded, kind: str, n: int = 1) -> None:
    seeded.counts[kind] = seeded.counts.get(kind, 0) + n


async def _projects(api: Api, plan_projects: list[dict[str, str]], seeded: Seeded) -> list[str]:
    existing = {p["id"] for p in (await api.get("/api/admin/projects"))["projects"]}
    made = ["default"]
    for body in plan_projects:
        if body["id"] in existing:
            made.append(body["id"])
            continue
        status, _ = await api.call(
            "POST", "/api/admin/projects", body, ok=frozenset({200, 201}) | ABSENT
        )
        if status in ABSENT:
            seeded.skipped["projects"] = (
                f"POST /api/admin/projects answers {status}: only `default`"
            )
            break
        _count(seeded, "projects")
        made.append(body["id"])
    return made


async def _environments(api: Api, projects: list[str]) -> list[str]:
    listed = (await api.get("/api/admin/environments"))["environments"]
    present = [e["name"] for e in listed if e["name"] in ENVIRONMENTS]
    missing = set(ENVIRONMENTS) - set(present)
    if missing:
        raise SeedError(f"the server has no environment {sorted(missing)}")
    for project in projects:
        enabled = {
            e["environment"]
            for e in (await api.get(f"/api/admin/projects/{project}/overview"))["environments"]
        }
        for environment in ENVIRONMENTS:
            if environment not in enabled:
                await api.call(
                    "POST",
                    f"/api/admin/projects/{project}/environments",
                    {"environment": environment},
                )
    return list(ENVIRONMENTS)


async def _definitions(api: Api, made: Plan, seeded: Seeded) -> list[int]:
    for body in made.context_fields:
        await api.call("POST", "/api/admin/context", body)
        _count(seeded, "context fields")
    for body in made.strategies:
        await api.call("POST", "/api/admin/strategies", body)
        _count(seeded, "strategy types")
    for name in made.deprecated:
        await api.call("POST", f"/api/admin/strategies/{name}/deprecate")
    for body in made.tag_types:
        await api.call("POST", "/api/admin/tag-types", body)
        _count(seeded, "tag types")
    ids = []
    for body in made.segments:
        _, answer = await api.call("POST", "/api/admin/segments", body)
        ids.append(int(answer["id"]))
        _count(seeded, "segments")
    return ids


async def _flag(api: Api, flag: FlagPlan, segment_ids: list[int], seeded: Seeded) -> None:
    base = f"/api/admin/projects/{flag.project}/features"
    await api.call("POST", base, flag.body)
    for tag in flag.tags:
        await api.call("POST", f"/api/admin/features/{flag.name}/tags", tag)
        _count(seeded, "tags")
    for environment, env in flag.environments.items():
        path = f"{base}/{flag.name}/environments/{environment}"
        for body, chosen in env.strategies:
            sent = {**body, "segments": [segment_ids[i] for i in chosen]} if chosen else body
            await api.call("POST", f"{path}/strategies", sent)
            _count(seeded, "strategies")
        if env.variants:  # Unleash refuses PUT .../environments/:e/variants on a new flag
            batch = {"variants": env.variants, "environments": [environment]}
            await api.call("PUT", f"{base}/{flag.name}/variants-batch", batch)
            _count(seeded, "environment variants", len(env.variants))
        if env.enabled:
            await api.call("POST", f"{path}/on")
    _count(seeded, "flags")


async def _links(api: Api, flags: list[FlagPlan], seeded: Seeded) -> None:
    linked = [f for f in flags if f.link is not None]
    for flag in linked:
        path = f"/api/admin/projects/{flag.project}/features/{flag.name}/link"
        status, _ = await api.call("POST", path, flag.link, ok=frozenset({200, 201, 204}) | ABSENT)
        if status in ABSENT:
            seeded.skipped["links"] = f"POST .../features/:f/link answers {status}"
            return
        _count(seeded, "links")


async def _lifecycle(api: Api, flags: list[FlagPlan], seeded: Seeded) -> None:
    for project in sorted({f.project for f in flags}):
        mine = [f for f in flags if f.project == project]
        stale = [f.name for f in mine if f.stale]
        if stale:
            await api.call(
                "POST", f"/api/admin/projects/{project}/stale", {"features": stale, "stale": True}
            )
            _count(seeded, "stale", len(stale))
        archived = [f.name for f in mine if f.archived]
        if archived:
            await api.call("POST", f"/api/admin/projects/{project}/archive", {"features": archived})
            _count(seeded, "archived", len(archived))


async def _people(api: Api, made: Plan, seeded: Seeded, *, admin_tokens: bool) -> None:
    for body in made.users:
        await api.call("POST", "/api/admin/user-admin", body)
        _count(seeded, "users")
    for body in made.tokens:
        if body["type"] == "admin" and not admin_tokens:
            seeded.skipped["admin tokens"] = "skipped as asked"
            continue
        status, answer = await api.call(
            "POST", "/api/admin/api-tokens", body, ok=frozenset({200, 201}) | ABSENT
        )
        if status in ABSENT:
            message = answer.get("message") if isinstance(answer, dict) else answer
            seeded.skipped[f"{body['type']} tokens"] = (
                f"POST /api/admin/api-tokens answers {status}: {message}"
            )
            continue
        seeded.tokens[body["tokenName"]] = answer["secret"]
        _count(seeded, f"{body['type']} tokens")


async def _bounded(limit: int, jobs: list[Any]) -> None:
    gate = asyncio.Semaphore(limit)

    async def run(job: Any) -> None:
        async with gate:
            await job

    await asyncio.gather(*(run(job) for job in jobs))


async def seed(
    url: str,
    token: str,
    *,
    flags: int = DEFAULT_FLAGS,
    prefix: str = DEFAULT_PREFIX,
    seed: int = DEFAULT_SEED,
    skip: frozenset[str] = frozenset(),
    session: aiohttp.ClientSession | None = None,
) -> Seeded:
    """Fills the server at `url` (see the module's text); raises SeedError on a refusal.
    `skip` leaves out optional kinds (OPTIONAL), e.g. to seed flagstore as the open-source
    reference can be seeded."""
    if unknown := skip - OPTIONAL:
        raise SeedError(f"skip {sorted(unknown)}: only {sorted(OPTIONAL)} are optional")
    if not PREFIX.fullmatch(prefix):
        raise SeedError(f"prefix {prefix!r}: lower-case letters, digits and '-', at most 24")
    own = session is None
    session = session or aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60))
    try:
        api = Api(session, url, token)
        version = str((await api.get("/api/admin/ui-config")).get("version", "?"))
        seeded = Seeded(url, prefix, seed, version, [], [], [], [])
        if "projects" in skip:
            seeded.projects = ["default"]
            seeded.skipped["projects"] = "skipped as asked"
        else:
            seeded.projects = await _projects(api, project_bodies(prefix), seeded)
        made = plan(seed, prefix, flags, seeded.projects)
        seeded.environments = await _environments(api, seeded.projects)
        segment_ids = await _definitions(api, made, seeded)
        await _bounded(CONCURRENCY, [_flag(api, f, segment_ids, seeded) for f in made.flags])
        for flag in made.flags:
            for parent in flag.parents:
                path = f"/api/admin/projects/{flag.project}/features/{flag.name}/dependencies"
                await api.call("POST", path, parent)
                _count(seeded, "dependencies")
        if "links" in skip:
            seeded.skipped["links"] = "skipped as asked"
        else:
            await _links(api, made.flags, seeded)
        await _lifecycle(api, made.flags, seeded)
        await _people(api, made, seeded, admin_tokens="admin-tokens" not in skip)
        seeded.flags = [f.name for f in made.flags]
        seeded.archived = [f.name for f in made.flags if f.archived]
        return seeded
    finally:
        if own:
            await session.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.switchover.seed", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:4243")
    parser.add_argument("--token", required=True, help="an admin API token")
    parser.add_argument("--flags", type=int, default=DEFAULT_FLAGS)
    parser.add_argument("--prefix", default=DEFAULT_PREFIX)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=sorted(OPTIONAL),
        help="leave out an optional kind (repeatable): seed flagstore as the reference allows",
    )
    args = parser.parse_args(argv)
    try:
        seeded = asyncio.run(
            seed(
                args.url,
                args.token,
                flags=args.flags,
                prefix=args.prefix,
                seed=args.seed,
                skip=frozenset(args.skip),
            )
        )
    except (SeedError, aiohttp.ClientError) as error:
        sys.stderr.write(f"seed: {error}\n")
        return 1
    sys.stdout.write(json.dumps(seeded.summary(), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
