"""The proof machinery checked on itself, without the reference: two new services seeded with
the same seed compare equal (every kind, the client API, the SDK's answers); one change on one
of them is found; the seed's plan covers what it promises and is the same for the same seed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from service.app import create_app
from tests import conformance
from tests.factories import ADMIN_TOKEN, seed_database, settings_for
from tests.switchover import seed as seeding
from tests.switchover.compare import Report, Side, compare, render
from tests.switchover.normalise import RULES, Diff, Times, diff, normalise

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.pg import PgServer

FLAGS = 24
CONTEXTS = 60
ENVIRONMENTS = ("development", "production")


@pytest.fixture
async def servers(pg18: PgServer) -> AsyncIterator[list[str]]:
    """Two services on real ports, each on a database of its own; their answers checked
    against the OpenAPI document (tests/conformance.py)."""
    started: list[TestServer] = []
    dsns = [await pg18.new_database() for _ in range(2)]
    try:
        for dsn in dsns:
            await seed_database(dsn)
            app = create_app(settings_for(dsn), dsn)
            conformance.install(app)
            server = TestServer(app, host="127.0.0.1")
            await server.start_server()
            started.append(server)
        yield [str(server.make_url("")).rstrip("/") for server in started]
    finally:
        violations = [v for server in started for v in server.app[conformance.VIOLATIONS]]
        for server in started:
            await server.close()
        for dsn in dsns:
            await pg18.drop_database(dsn)
    assert not violations, violations


async def seeded_sides(urls: list[str]) -> list[Side]:
    sides = []
    for label, url in zip(("one", "two"), urls, strict=True):
        made = await seeding.seed(url, ADMIN_TOKEN, flags=FLAGS, prefix="twin", seed=7)
        assert made.skipped == {}, made.skipped  # flagstore has projects, links, admin tokens
        tokens = {e: made.client_token(e) for e in ENVIRONMENTS}
        sides.append(Side(label, url, ADMIN_TOKEN, tokens))
    return sides


def kind(report: Report, name: str) -> Any:
    (found,) = [k for k in report.kinds if k.kind == name]
    return found


async def test_two_services_seeded_alike_compare_equal(servers: list[str]) -> None:
    one, two = await seeded_sides(servers)
    report = await compare(one, two, contexts=CONTEXTS, sdk_environment="all")
    assert report.ok, render(report, one, two)
    counts = {k.kind: k.entities for k in report.kinds}
    assert all(all(k.served) for k in report.kinds), render(report, one, two)
    assert counts["projects"] == 3  # default and the seed's two
    assert counts["flags"] == FLAGS - len([n for n in range(FLAGS) if n % 11 == 5])
    assert counts["archived"] == 2
    assert counts["users"] == 7
    assert counts["api tokens"] == 1 + 2 * (1 + 2 + 1) + 1  # ours; per environment; admin
    assert counts["segments"] == 8
    for environment in ENVIRONMENTS:
        assert counts[f"client features {environment}"] > FLAGS / 2
    assert [s.environment for s in report.sdk] == list(ENVIRONMENTS)
    for agreement in report.sdk:
        assert agreement.differ == 0
        assert agreement.agree == 2 * CONTEXTS * agreement.flags
        # the contexts are no blanks: flags answer both ways, with several variants
        assert 0 < agreement.enabled < CONTEXTS * agreement.flags
        assert len(agreement.variants) > 3


async def test_a_change_on_one_side_is_found(servers: list[str]) -> None:
    one, two = await seeded_sides(servers)
    flag = "twin-flag-0000"  # a parent: on at 100 % in both environments
    base = f"/api/admin/projects/default/features/{flag}/environments/production"
    async with aiohttp.ClientSession(headers={"Authorization": ADMIN_TOKEN}) as session:
        async with session.post(f"{two.url}{base}/off") as resp:
            assert resp.status == 200
        async with session.get(f"{two.url}/api/admin/user-admin") as resp:
            users = (await resp.json())["users"]
        (nomail,) = [u["id"] for u in users if u.get("username") == "twin-nomail"]
        async with session.delete(f"{two.url}/api/admin/user-admin/{nomail}") as resp:
            assert resp.status == 200
    report = await compare(one, two, contexts=CONTEXTS)
    assert not report.ok
    flags = kind(report, "flags")
    assert list(flags.differing) == [flag]
    assert [(d.path, d.a, d.b) for d in flags.differing[flag]] == [
        ("environments.production.enabled", True, False)
    ]
    assert list(kind(report, "client features production").differing) == [flag]
    assert kind(report, "client features development").ok
    assert kind(report, "users").only_a == ["twin-nomail"]
    (sdk,) = report.sdk
    assert sdk.environment == "production"
    assert sdk.differ > 0
    assert "twin-flag-0000 is_enabled: True != False" in "\n".join(sdk.examples)
    text = render(report, one, two)
    assert "environments.production.enabled: true != false" in text
    assert "result: DIFFERENT" in text


def test_the_plan_is_the_same_for_the_same_seed_and_covers_every_rule() -> None:
    projects = ["default", "p-proj-1", "p-proj-2"]
    plan = seeding.plan(44, "p", 220, projects)
    assert plan == seeding.plan(44, "p", 220, projects)
    assert plan != seeding.plan(45, "p", 220, projects)
    strategies = [b for f in plan.flags for e in f.environments.values() for b, _ in e.strategies]
    constraints = [c for s in strategies for c in s["constraints"]] + [
        c for s in plan.segments for c in s["constraints"]
    ]
    assert {s["name"] for s in strategies} == {
        "default",
        "flexibleRollout",
        "userWithId",
        "remoteAddress",
        "applicationHostname",
        "p-tenant",
    }
    assert {c["operator"] for c in constraints} == {
        "IN",
        "NOT_IN",
        "STR_CONTAINS",
        "STR_STARTS_WITH",
        "STR_ENDS_WITH",
        "NUM_EQ",
        "NUM_GT",
        "NUM_GTE",
        "NUM_LT",
        "NUM_LTE",
        "DATE_AFTER",
        "DATE_BEFORE",
        "SEMVER_EQ",
        "SEMVER_GT",
        "SEMVER_LT",
    }
    assert any(c.get("inverted") for c in constraints)
    assert any(c.get("caseInsensitive") for c in constraints)
    stickiness = {
        s["parameters"]["stickiness"] for s in strategies if s["name"] == "flexibleRollout"
    }
    assert stickiness == {"default", "userId", "sessionId", "random", "p-tier"}
    variants = [v for s in strategies for v in s.get("variants", [])] + [
        v for f in plan.flags for e in f.environments.values() for v in e.variants
    ]
    assert {v["payload"]["type"] for v in variants if "payload" in v} == {
        "string",
        "json",
        "number",
        "csv",
    }
    assert any(v.get("overrides") for v in variants)
    assert {v["weightType"] for v in variants} == {"variable", "fix"}
    assert {f.project for f in plan.flags} == set(projects)
    assert sum(f.stale for f in plan.flags) == 31
    assert sum(f.archived for f in plan.flags) == 18
    assert sum(len(f.parents) for f in plan.flags) == 66
    assert {u["rootRole"] for u in plan.users} == {1, 2, 3}
    assert {t["type"] for t in plan.tokens} == {"client", "frontend", "admin"}


def constrained(created: str, **constraint: Any) -> dict[str, Any]:
    """A flag answer with one strategy of one constraint."""
    return {
        "createdAt": created,
        "environments": [
            {
                "name": "production",
                "strategies": [{"id": created, "constraints": [constraint]}],
            }
        ],
    }


def differences(a: Any, b: Any, times: Times) -> Diff:
    rules = RULES["flags"]
    out = Diff()
    diff(
        normalise(a, rules, times=times, scoped=False),
        normalise(b, rules, times=times, scoped=False),
        rules,
        out,
    )
    return out


def test_normalisation_keeps_what_matters() -> None:
    """Times by presence (creation times to the millisecond when asked), strategy ids apart,
    a constraint's defaults and the order of its values, a one-sided field; but a changed
    time or constraint is a difference."""
    ours = {
        **constrained(
            "2026-12-03T07:14:00.628928Z", contextName="x", operator="IN", values=["b", "a"]
        ),
        "enabled": True,
    }
    theirs = constrained(
        "2026-12-03T07:14:00.628Z",
        contextName="x",
        operator="IN",
        values=["a", "b"],
        inverted=False,
        caseInsensitive=False,
        value=None,
    )
    for times in (Times(), Times(created=True)):
        out = differences(ours, theirs, times)
        assert out.differences == []
        assert out.one_sided == {("enabled", "a")}
    later = {**theirs, "createdAt": "2026-12-03T07:14:01.628Z"}
    assert differences(ours, later, Times()).differences == []
    assert [d.path for d in differences(ours, later, Times(created=True)).differences] == [
        "createdAt"
    ]
    inverted = constrained(
        "2026-12-03T07:14:00.628Z", contextName="x", operator="IN", values=["a", "b"], inverted=True
    )
    assert [(d.pattern, d.a, d.b) for d in differences(ours, inverted, Times()).differences] == [
        ("environments.*.strategies.[].constraints.[].inverted", False, True)
    ]
