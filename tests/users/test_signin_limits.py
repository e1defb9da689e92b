"""Sign-in abuse, in process: rate limits per client address and per account name, argon2
work a few at a time, and failed attempts recorded at most once a minute per account."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from aiohttp.test_utils import make_mocked_request

from eventlog import connections
from eventlog.events.users import UserSignInFailed
from service.appkeys import POOL
from service.errors import TooManyRequests
from service.users.domain import SignInFailures, Unrecorded
from service.users.failures import FAILED_SIGN_INS, FailedSignIns
from service.users.limits import RateLimiter, client_address
from service.users.passwords import HASHING, PasswordHashing
from tests.factories import (
    ADMIN,
    LOGIN,
    STRONG,
    USERS,
    create_user,
    error,
    settings_for,
    sign_in_events,
    work,
)

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    from service.settings import Settings

    Client = TestClient[Any, Any]

WRONG = "Wr0ng!Password#1"
RETRY = re.compile(r"try again in (\d+) seconds$")


@pytest.fixture
def settings(dsn: str, request: pytest.FixtureRequest) -> Settings:
    """The service's settings with the test's own (indirect parametrization) on top."""
    chosen: dict[str, int] = getattr(request, "param", {})
    return settings_for(dsn, **chosen)


def limits(**chosen: int) -> pytest.MarkDecorator:
    return pytest.mark.parametrize("settings", [chosen], indirect=True, ids=["settings"])


async def attempt(
    client: Client, username: str, password: str = WRONG, forwarded_for: str | None = None
) -> Any:
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for is not None else {}
    body = {"username": username, "password": password}
    resp = await client.post(LOGIN, json=body, headers=headers)
    client.session.cookie_jar.clear()
    return resp


async def refused(resp: Any, what: str, limit: int) -> int:
    """The 429 of a limit: its message names the limit and the wait, as Retry-After does."""
    message = await error(resp, 429, "TooManyRequests")
    assert message.startswith(f"Too many sign-in attempts {what} (at most {limit} a minute); ")
    match = RETRY.search(message)
    assert match is not None, message
    assert resp.headers["Retry-After"] == match[1]
    return int(match[1])


# --- rate limits over HTTP ------------------------------------------------------------------


@limits(login_rate_limit_per_address=3, login_rate_limit_per_account=100)
async def test_an_address_gets_its_limit_then_429_before_any_work(
    client: Client, app: web.Application
) -> None:
    """X-Forwarded-For is ignored without trusted proxies: a client cannot claim new addresses."""
    user = await create_user(client, {"username": "bob", "password": STRONG})
    for i in range(3):
        resp = await attempt(client, f"name-{i}", forwarded_for=f"10.0.0.{i}")
        await error(resp, 401, "PasswordMismatch")
    computed = app[HASHING].computed
    for i in range(3):
        resp = await attempt(client, "bob", STRONG, forwarded_for=f"10.1.0.{i}")
        wait = await refused(resp, "from this address", 3)
        assert 10 <= wait <= 20  # one attempt more every 20 s (less the attempts' own time)
    assert app[HASHING].computed == computed  # refused before argon2 was asked
    assert await sign_in_events(app, user["id"]) == []


@limits(login_rate_limit_per_address=100, login_rate_limit_per_account=3, trusted_proxy_hops=1)
async def test_an_account_name_gets_its_limit_across_addresses_known_or_not(
    client: Client, app: web.Application
) -> None:
    """The name as typed, stripped and lower-cased; one that exists and one that does not
    are refused alike, and other names still get through."""
    await create_user(client, {"username": "bob", "password": STRONG})
    answers: dict[str, list[tuple[int, str]]] = {}
    for name in ("bob", "nobody"):
        for i, typed in enumerate((name, f" {name.upper()} ", name, name)):
            resp = await attempt(client, typed, forwarded_for=f"192.0.2.{i}, 10.0.0.{i}")
            answers.setdefault(name, []).append((resp.status, (await resp.json())["name"]))
            if resp.status == 429:
                assert 10 <= await refused(resp, "for this account", 3) <= 20
    assert (
        answers["bob"]
        == answers["nobody"]
        == [(401, "PasswordMismatch")] * 3 + [(429, "TooManyRequests")]
    )
    resp = await attempt(client, "carol", forwarded_for="10.0.0.9")
    await error(resp, 401, "PasswordMismatch")


@limits(login_rate_limit_per_address=2, login_rate_limit_per_account=100, trusted_proxy_hops=1)
async def test_behind_a_proxy_the_address_is_the_one_it_appended(client: Client) -> None:
    """Successful sign-ins count too (as in Unleash); what the client wrote to the left of
    the proxy's entry does not make it someone else."""
    await create_user(client, {"username": "bob", "password": STRONG})
    for forged in ("1.1.1.1", "2.2.2.2"):
        resp = await attempt(client, "bob", STRONG, forwarded_for=f"{forged}, 198.51.100.7")
        assert resp.status == 200
    resp = await attempt(client, "bob", STRONG, forwarded_for="3.3.3.3, 198.51.100.7")
    await refused(resp, "from this address", 2)
    resp = await attempt(client, "bob", STRONG, forwarded_for="198.51.100.8")
    assert resp.status == 200


# --- client addresses and the limiter itself ----------------------------------------------


@pytest.mark.parametrize(
    ("hops", "headers", "expected"),
    [
        (0, {"X-Forwarded-For": "203.0.113.5"}, "127.0.0.1"),
        (1, {}, "127.0.0.1"),
        (1, {"X-Forwarded-For": "203.0.113.5, 198.51.100.1"}, "198.51.100.1"),
        (2, {"X-Forwarded-For": "203.0.113.5, 198.51.100.1"}, "203.0.113.5"),
        (3, {"X-Forwarded-For": "203.0.113.5, 198.51.100.1"}, "203.0.113.5"),
        (1, {"X-Forwarded-For": "198.51.100.1:4711"}, "198.51.100.1"),
        (1, {"X-Forwarded-For": "2001:db8:1:2:3:4:5:6"}, "2001:db8:1:2::/64"),
        (1, {"X-Forwarded-For": "[2001:db8:1:2::9]:443"}, "2001:db8:1:2::/64"),
        (1, {"X-Forwarded-For": "::ffff:198.51.100.1"}, "198.51.100.1"),
        (1, {"X-Forwarded-For": "unknown"}, "unknown"),
        (1, {"X-Forwarded-For": "x" * 500}, "x" * 200),
    ],
)
def test_the_client_address(hops: int, headers: dict[str, str], expected: str) -> None:
    request = make_mocked_request("POST", LOGIN, headers=headers).clone(remote="127.0.0.1")
    assert client_address(request, hops) == expected


def test_repeated_forwarded_for_headers_read_as_one_list() -> None:
    request = make_mocked_request(
        "POST",
        LOGIN,
        headers=[("X-Forwarded-For", "203.0.113.5"), ("X-Forwarded-For", "198.51.100.1")],
    )
    assert client_address(request, 2) == "203.0.113.5"


def test_the_limiter_allows_a_burst_then_one_more_per_share_of_the_minute() -> None:
    limiter = RateLimiter(4)  # one more every 15 s
    for _ in range(4):
        assert limiter.wait("a", 100.0) == 0
        limiter.take("a", 100.0)
    assert limiter.wait("a", 100.0) == 15.0
    assert limiter.wait("a", 110.0) == 5.0
    assert limiter.wait("b", 100.0) == 0
    limiter.take("a", 115.0)
    assert limiter.wait("a", 115.0) == 15.0
    assert limiter.wait("a", 175.0) == 0  # a minute without attempts: the whole burst again


def test_the_limiter_remembers_a_bounded_number_of_keys() -> None:
    limiter = RateLimiter(1, max_keys=3)
    for second, key in enumerate("abcd"):
        limiter.take(key, float(second))
    assert len(limiter) == 3
    assert limiter.wait("a", 3.0) == 0  # the least recently used one went
    assert limiter.wait("d", 3.0) == 60.0
    limiter.take("e", 70.0)  # every other bucket is full again by then: all forgotten
    assert len(limiter) == 1


# --- argon2 a few at a time -----------------------------------------------------------------


@limits(password_hash_concurrency=2, login_rate_limit_per_address=100)
async def test_argon2_runs_at_most_the_configured_number_at_once(
    client: Client, app: web.Application
) -> None:
    """Sign-ins (known and unknown names), user creation and password changes share it."""
    user = await create_user(client, {"username": "bob", "password": STRONG})
    hashing = app[HASHING]
    started = hashing.computed
    calls = [attempt(client, name) for name in ("bob", "nobody") * 4]
    calls += [
        client.post(
            USERS,
            json={"username": f"u{i}", "password": STRONG, "rootRole": 3},
            headers=ADMIN,
        )
        for i in range(3)
    ]
    calls.append(
        client.post(
            f"{USERS}/{user['id']}/change-password", json={"password": STRONG}, headers=ADMIN
        )
    )
    statuses = sorted(r.status for r in await asyncio.gather(*calls))
    assert statuses == [200] + [201] * 3 + [401] * 8
    assert hashing.computed - started == 12
    assert hashing.most_running == 2  # reached, never passed


async def test_waiting_for_argon2_is_bounded() -> None:
    hashing = PasswordHashing(1, max_waiting=2)
    results = await asyncio.gather(
        *(hashing.hash(STRONG) for _ in range(4)), return_exceptions=True
    )
    assert [type(r) for r in results[:3]] == [str] * 3
    assert isinstance(results[3], TooManyRequests)
    assert (results[3].status, results[3].retry_after) == (429, 1)
    assert results[3].message == (
        "Too many passwords are being checked at once; try again in a moment"
    )
    assert hashing.most_running == 1


async def test_a_cancelled_check_keeps_its_slot_until_argon2_is_done() -> None:
    hashing = PasswordHashing(1)
    first = asyncio.ensure_future(hashing.verify(None, STRONG))
    await asyncio.sleep(0.01)  # argon2 runs in its worker thread now
    first.cancel()
    assert await hashing.verify(None, STRONG) is False
    assert hashing.most_running == 1
    assert first.cancelled()


# --- failed attempts, at most one event per account per minute --------------------------------


@limits(login_rate_limit_per_address=100, login_rate_limit_per_account=100)
async def test_eleven_wrong_passwords_in_a_minute_are_two_events(
    client: Client, app: web.Application
) -> None:
    user = await create_user(client, {"username": "bob", "password": STRONG})
    url = f"{USERS}/{user['id']}"
    for _ in range(11):
        await error(await attempt(client, "bob"), 401, "PasswordMismatch")
    assert await sign_in_events(app, user["id"]) == [("UserSignInFailed", 1, 1)]
    assert (await (await client.get(url, headers=ADMIN)).json())["loginAttempts"] == 1
    failures = app[FAILED_SIGN_INS]
    assert failures.pending() == 10
    assert await failures.flush(app[POOL]) == 0  # the minute has not passed
    later = datetime.now(UTC) + timedelta(minutes=1)
    assert await failures.flush(app[POOL], now=later) == 1
    assert await sign_in_events(app, user["id"]) == [
        ("UserSignInFailed", 1, 1),
        ("UserSignInFailed", 10, 11),
    ]
    assert (await (await client.get(url, headers=ADMIN)).json())["loginAttempts"] == 11
    assert failures.pending() == 0
    async with app[POOL].acquire() as conn:
        row = await conn.fetchrow(
            "SELECT min((data->>'first_attempted_at')::timestamptz),"
            " max((data->>'attempted_at')::timestamptz) FROM events"
            " WHERE type = 'UserSignInFailed' AND data->>'attempts' = '10'"
        )
    assert row is not None
    assert row[0] < row[1] < later


async def test_failures_still_counted_are_recorded_when_the_service_stops(
    client: Client, app: web.Application, dsn: str
) -> None:
    user = await create_user(client, {"username": "bob", "password": STRONG})
    for _ in range(3):
        await error(await attempt(client, "bob"), 401, "PasswordMismatch")
    await client.close()  # the cleanup contexts run: the last flush, then the pool closes
    conn = await connections.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT (data->>'attempts')::int, (data->>'login_attempts')::int,"
            " metadata->>'actor_id', metadata->>'request_id' FROM events"
            " WHERE type = 'UserSignInFailed' ORDER BY position"
        )
    finally:
        await conn.close()
    actor = f"user:{user['id']}"
    assert [tuple(r[:3]) for r in rows] == [(1, 1, actor), (2, 3, actor)]
    assert rows[0][3] is not None  # recorded by its request
    assert rows[1][3] is None  # recorded by the background task, for two requests


@limits(login_rate_limit_per_address=100, login_rate_limit_per_account=100)
async def test_a_deleted_accounts_counted_failures_are_dropped(
    client: Client, app: web.Application
) -> None:
    user = await create_user(client, {"username": "bob", "password": STRONG})
    for _ in range(2):
        await error(await attempt(client, "bob"), 401, "PasswordMismatch")
    assert (await client.delete(f"{USERS}/{user['id']}", headers=ADMIN)).status == 200
    failures = app[FAILED_SIGN_INS]
    assert await failures.flush(app[POOL], everything=True) == 0
    assert failures.pending() == 0
    assert await sign_in_events(app, user["id"]) == [("UserSignInFailed", 1, 1)]


def test_attempts_of_an_event_that_was_not_stored_are_counted_again() -> None:
    """The transaction failed after the replica had set what it keeps (at COMMIT, say): the
    attempts its UserSignInFailed carried join those counted meanwhile, to be recorded later."""
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    failures = FailedSignIns(work())
    event = UserSignInFailed(
        user_id=7, attempts=3, first_attempted_at=now, attempted_at=now, login_attempts=3
    )

    def commit_fails() -> None:
        with failures.deciding(7) as keep:
            keep(SignInFailures(recorded_at=now), [event])
            raise ConnectionError

    with pytest.raises(ConnectionError):
        commit_fails()
    assert failures.of(7) == SignInFailures(
        unrecorded=Unrecorded(count=3, first_at=now, last_at=now), recorded_at=now
    )
    assert failures.pending() == 3
    with failures.deciding(7) as keep:  # stored: nothing is counted twice
        keep(SignInFailures(recorded_at=now), [event])
    assert failures.pending() == 0
