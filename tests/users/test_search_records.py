"""The encoded user records a replica remembers for searches (service/users/records.py): a page
answered from them is the page read in one statement, byte for byte, and a person changed or
deleted since is never answered from what was remembered."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.appkeys import POOL
from service.http.answers import json_response
from service.users import queries, records
from service.users.handlers.search import RECORDS, arguments, remembered
from service.users.responses import User, UserList, root_roles
from tests.factories import ADMIN, USERS, create_user
from tests.users.test_search_users import SEARCH, search

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]


async def one_statement(app: web.Application, q: str, limit: int = 100, offset: int = 0) -> bytes:
    """The page as the search read it before records were remembered: one statement."""
    async with app[POOL].acquire() as conn:
        found = await conn.fetch(queries.SEARCH, *arguments(q, offset + limit), offset)
    body = json_response(
        UserList(
            users=[User.from_row(row) for row in found],
            root_roles=root_roles(row["root_role"] for row in found),
        )
    ).body
    assert isinstance(body, bytes)
    return body


async def raw_search(client: Client, q: str, **params: Any) -> bytes:
    resp = await client.get(SEARCH, params={"q": q, **params}, headers=ADMIN)
    assert resp.status == 200, await resp.text()
    return await resp.read()


PEOPLE = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.text("abcéß Ab.-", min_size=1, max_size=12).filter(str.strip),
            "email": st.from_regex(r"[a-c]{1,6}@[a-c]{1,4}\.example", fullmatch=True),
            "rootRole": st.sampled_from([1, 2, 3]),
        }
    ),
    min_size=1,
    max_size=12,
    unique_by=lambda person: person["email"],
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(people=PEOPLE, q=st.sampled_from(["ab", "a.", "bc", "ca", "example", "aß", "b-"]))
async def test_a_page_from_records_is_the_page_of_one_statement(
    client: Client, app: web.Application, people: list[dict[str, Any]], q: str
) -> None:
    for person in people:
        resp = await client.post(USERS, json=person, headers=ADMIN)
        assert resp.status in {201, 409}, await resp.text()  # 409: an e-mail drawn before
    expected = await one_statement(app, q)
    assert await raw_search(client, q) == expected  # records fetched and remembered
    assert await raw_search(client, q) == expected  # answered from them
    for limit, offset in ((3, 1), (1, 0), (2, 5)):
        page = await raw_search(client, q, limit=limit, offset=offset)
        assert page == await one_statement(app, q, limit, offset)


async def test_a_change_to_a_person_is_never_answered_from_what_was_remembered(
    client: Client, app: web.Application
) -> None:
    ann = await create_user(client, {"name": "Rememb Ann", "email": "ann@example.com"})
    bob = await create_user(client, {"name": "Rememb Bob", "email": "bob@example.com"})
    first = await search(client, "rememb")
    assert [u["name"] for u in first["users"]] == ["Rememb Ann", "Rememb Bob"]
    held = app[RECORDS]
    assert len(held) == 2
    resp = await client.put(
        f"{USERS}/{ann['id']}", json={"name": "Rememb Anna", "rootRole": 1}, headers=ADMIN
    )
    assert resp.status == 200, await resp.text()
    after = await search(client, "rememb")
    assert [(u["name"], u["rootRole"]) for u in after["users"]] == [
        ("Rememb Anna", 1),
        ("Rememb Bob", 3),
    ]
    assert [r["id"] for r in after["rootRoles"]] == [1, 3]
    resp = await client.delete(f"{USERS}/{bob['id']}", headers=ADMIN)
    assert resp.status == 200, await resp.text()
    assert [u["name"] for u in (await search(client, "rememb"))["users"]] == ["Rememb Anna"]
    assert await raw_search(client, "rememb") == await one_statement(app, "rememb")


async def test_a_past_state_is_read_whole_and_not_remembered(
    client: Client, app: web.Application
) -> None:
    await create_user(client, {"name": "Pastperson", "email": "past@example.com"})
    async with app[POOL].acquire() as conn:
        position = int(await conn.fetchval("SELECT max(position) FROM events"))
    body = await search(client, "pastpers", at=str(position))
    assert [u["name"] for u in body["users"]] == ["Pastperson"]
    assert len(app[RECORDS]) == 0
    assert [u["name"] for u in (await search(client, "pastpers"))["users"]] == ["Pastperson"]
    assert len(app[RECORDS]) == 1


async def test_a_row_changed_between_the_two_reads_makes_the_page_one_statement(
    client: Client, app: web.Application
) -> None:
    """The page's ids and versions are read first, the rows of records not held second: a row
    whose version moved in between (or that went) is found, and the caller reads the page
    whole."""
    person = await create_user(client, {"name": "Racer", "email": "racer@example.com"})
    async with app[POOL].acquire() as conn:
        version = int(
            await conn.fetchval("SELECT xmin::text::bigint FROM users WHERE id = $1", person["id"])
        )
        fetched = await conn.fetch(queries.USERS_BY_ID, [person["id"]])
        assert records.unchanged({person["id"]: version}, fetched)
        assert not records.unchanged({person["id"]: version - 1}, fetched)  # changed since
        assert not records.unchanged({person["id"]: version, 0: 1}, fetched)  # one went
        page = await remembered(conn, app[RECORDS], "racer", 100, 0)
        assert page is not None
        assert [user["name"] for user in json.loads(bytes(page.users))] == ["Racer"]


def get(held: records.Records, account_id: int, version: int, now: float) -> bytes | None:
    [record] = held.held([account_id], [version], now)
    return record


def test_records_are_used_at_their_version_and_the_least_recently_used_leave() -> None:
    held = records.Records(most=2)
    held.put(1, 10, b"one", 0.0)
    held.put(2, 20, b"two", 0.0)
    assert get(held, 1, 11, 1.0) is None  # another version of person 1
    assert get(held, 1, 10, 1.0) == b"one"  # and 1 is now the most recently used
    held.put(3, 30, b"three", 2.0)
    assert get(held, 2, 20, 2.0) is None
    assert (get(held, 1, 10, 2.0), get(held, 3, 30, 2.0), len(held)) == (b"one", b"three", 2)
    held.put(1, 12, b"one again", 3.0)
    assert (get(held, 1, 10, 3.0), get(held, 1, 12, 3.0)) == (None, b"one again")


def test_a_page_is_looked_up_in_one_pass_in_page_order() -> None:
    held = records.Records(most=3)
    held.put(1, 10, b"one", 0.0)
    held.put(2, 20, b"two", 0.0)
    held.put(3, 30, b"three", 0.0)
    assert held.held([3, 4, 1, 2], [30, 40, 11, 20], 1.0) == [b"three", None, None, b"two"]
    assert records.wanted([3, 4, 1, 2], [30, 40, 11, 20], [b"three", None, None, b"two"]) == {
        4: 40,
        1: 11,
    }
    held.put(5, 50, b"five", 2.0)  # 1, the least recently used (the page skipped it), leaves
    assert held.held([1, 2, 3, 5], [10, 20, 30, 50], 2.0) == [None, b"two", b"three", b"five"]


def test_records_no_search_used_for_a_while_leave() -> None:
    held = records.Records()
    held.put(1, 10, b"one", 0.0)
    held.put(2, 20, b"two", 100.0)
    held.put(3, 30, b"three", 200.0)
    assert get(held, 1, 10, 300.0) == b"one"  # used again at 300
    held.prune(650.0, unused=400.0)  # 2 was last used 550 s before, 3 450 s
    assert len(held) == 1
    assert get(held, 1, 10, 650.0) == b"one"
    held.prune(2000.0, unused=400.0)
    assert len(held) == 0


def test_a_use_within_a_second_of_the_last_is_not_written_again() -> None:
    """Only pruning reads when a record was last used: a record used many times a second is
    stamped once a second (records.TOUCH_SECONDS), and leaves at most that much early."""
    held = records.Records()
    held.put(1, 10, b"one", 0.0)
    assert get(held, 1, 10, 0.5) == b"one"  # within TOUCH_SECONDS: still stamped 0.0
    held.prune(400.2, unused=400.0)
    assert len(held) == 0
    held.put(1, 10, b"one", 0.0)
    assert get(held, 1, 10, 1.5) == b"one"  # stamped 1.5
    held.prune(400.2, unused=400.0)
    assert get(held, 1, 10, 400.2) == b"one"
