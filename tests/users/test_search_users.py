"""Searching users (docs/behavior.md, search users)."""

from __future__ import annotations

import json
import random
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.appkeys import POOL
from service.users import queries as queries_module
from service.users.handlers import search as search_module
from service.users.importer import import_users
from tests import factories
from tests.factories import (
    ADMIN,
    ROOT_ROLES,
    USERS,
    api_token,
    create_user,
    error,
    make_account,
    work,
)

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]

SEARCH = f"{USERS}/search"


async def search(
    client: Client, q: str | None, headers: dict[str, str] = ADMIN, **params: Any
) -> Any:
    query = ({"q": q} if q is not None else {}) | {k: str(v) for k, v in params.items()}
    resp = await client.get(SEARCH, params=query, headers=headers)
    assert resp.status == 200, await resp.text()
    return await resp.json()


def names(body: dict[str, Any]) -> list[str]:
    return [u.get("name") or u.get("username") or u["email"] for u in body["users"]]


@pytest.mark.parametrize("q", [None, "", "a", " a ", "  "])
async def test_a_short_query_finds_nobody(client: Client, q: str | None) -> None:
    await create_user(client, {"name": "aa", "email": "a@example.com"})
    assert await search(client, q) == {"users": [], "rootRoles": ROOT_ROLES}


async def test_matches_name_username_and_email_in_any_case(client: Client) -> None:
    await create_user(client, {"name": "Ann Smith", "email": "ann@example.com", "rootRole": 2})
    await create_user(client, {"username": "SMITHY", "rootRole": 3})
    await create_user(client, {"name": "Bob", "email": "bob.smith@example.org", "rootRole": 3})
    await create_user(client, {"name": "Carl", "email": "carl@example.com"})
    body = await search(client, "sMiTh")
    assert sorted(names(body)) == ["Ann Smith", "Bob", "SMITHY"]
    assert body["rootRoles"] == [ROOT_ROLES[1], ROOT_ROLES[2]]
    user = body["users"][0]
    assert user["accountType"] == "User"
    assert "rootRole" in user


async def test_exact_then_prefix_then_the_rest_ties_by_name_then_id(client: Client) -> None:
    for body in (
        {"name": "zed", "email": "xsam@example.com"},
        {"name": "sammy", "email": "a1@example.com"},
        {"name": "sam", "email": "a2@example.com"},
        {"name": "Alice", "username": "Sam"},
        {"name": "Absam", "email": "a3@example.com"},
        {"name": "Sam2", "email": "a4@example.com"},
    ):
        await create_user(client, body)
    body = await search(client, "sam")
    assert names(body) == ["Alice", "sam", "Sam2", "sammy", "Absam", "zed"]


async def test_wildcards_are_literal(client: Client) -> None:
    await create_user(client, {"name": "100% sure", "email": "p@example.com"})
    await create_user(client, {"name": "1000 sure", "email": "q@example.com"})
    await create_user(client, {"name": "snake_case", "email": "r@example.com"})
    await create_user(client, {"name": "snakeXcase", "email": "s@example.com"})
    await create_user(client, {"name": "back\\slash", "email": "t@example.com"})
    await create_user(client, {"name": "backslash", "email": "u@example.com"})
    assert names(await search(client, "0%")) == ["100% sure"]
    assert names(await search(client, "e_c")) == ["snake_case"]
    assert names(await search(client, "k\\s")) == ["back\\slash"]
    assert names(await search(client, "%%")) == []


async def test_unicode_and_case(client: Client) -> None:
    await create_user(client, {"name": "Élodie Ünal", "email": "elodie@example.com"})
    await create_user(client, {"name": "名前テスト", "email": "jp@example.com"})
    assert names(await search(client, "éLOD")) == ["Élodie Ünal"]
    assert names(await search(client, "üNA")) == ["Élodie Ünal"]
    assert names(await search(client, "前テ")) == ["名前テスト"]


@pytest.mark.parametrize(
    ("name", "queries"),
    [
        # Python's lower() turns a final sigma into ς and İ into i + a dot; PostgreSQL does not
        ("ΣΊΣΥΦΟΣ Ὀδυσσεύς", ["ΣΊΣΥΦΟΣ", "ΣΊΣΥΦΟΣ Ὀδυσσεύς", "σίσυφοσ", "ΣΊΣ", "ΟΣ Ὀ"]),
        ("İstanbul Iğd\u0131r", ["İstanbul", "İSTANBUL", "istanbul", "İst", "İs"]),
    ],
)
async def test_the_name_as_written_finds_itself(
    client: Client, name: str, queries: list[str]
) -> None:
    await create_user(client, {"name": name, "email": "odysseus@example.com"})
    for q in queries:
        assert names(await search(client, q)) == [name], q


async def test_only_regular_active_users(client: Client, app: web.Application) -> None:
    await create_user(client, {"name": "findme person", "email": "p1@example.com"})
    gone = await create_user(client, {"name": "findme gone", "email": "p2@example.com"})
    await client.delete(f"{USERS}/{gone['id']}", headers=ADMIN)
    await make_account(app, service=True, username="findme-machine")
    assert names(await search(client, "findme")) == ["findme person"]


async def test_limit_and_offset(client: Client, app: web.Application) -> None:
    async with app[POOL].acquire() as conn:
        for i in range(12):
            await factories.account(conn, username=f"pager-{i:02d}")
    everyone = [u["id"] for u in (await search(client, "pager"))["users"]]
    assert len(everyone) == 12
    page = await search(client, "pager", limit=5, offset=5)
    assert [u["id"] for u in page["users"]] == everyone[5:10]
    assert len((await search(client, "pager", limit=5000))["users"]) == 12  # capped at 1,000
    for bad in ({"limit": "0"}, {"limit": "x"}, {"offset": "-1"}, {"limit": "1e3"}):
        resp = await client.get(SEARCH, params={"q": "pager", **bad}, headers=ADMIN)
        await error(resp, 400, "ValidationError")


@pytest.mark.parametrize("name", ["q", "limit", "offset"])
async def test_a_parameter_given_twice_is_a_400_naming_it(client: Client, name: str) -> None:
    await create_user(client, {"name": "twice", "email": "t@example.com"})
    query = [("q", "twice"), (name, "5" if name != "q" else "tw")]
    if name != "q":
        query.append((name, "6"))
    resp = await client.get(SEARCH, params=query, headers=ADMIN)
    message = await error(resp, 400, "ValidationError")
    assert message == f"{name} may be given only once - at `{name}`"


async def test_any_admin_api_principal_may_search(client: Client, app: web.Application) -> None:
    await create_user(client, {"name": "visible", "email": "v@example.com"})
    for role in (1, 2, 3):
        account = await make_account(app, role=role)
        assert names(await search(client, "visib", headers=account.headers)) == ["visible"]
    for token_type in ("client", "frontend"):
        headers = {"Authorization": (await api_token(client, token_type, name="t"))["secret"]}
        await error(
            await client.get(SEARCH, params={"q": "vis"}, headers=headers), 403, "NoAccessError"
        )
    await error(await client.get(SEARCH, params={"q": "vis"}), 401, "AuthenticationRequired")


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(q=st.text(st.characters(codec="utf-8"), max_size=30))
async def test_any_query_is_answered(client: Client, q: str) -> None:
    resp = await client.get(SEARCH, params={"q": q}, headers=ADMIN)
    assert resp.status == 200
    body = await resp.json()
    assert set(body) == {"users", "rootRoles"}


async def test_pages_agree_whether_the_first_names_fill_them_or_not(
    client: Client, app: web.Application
) -> None:
    """Searches are answered from the first 500 people by name when those fill the page, else
    from the indexes: both must give the order docs/behavior.md, search users, asks for."""
    async with app[POOL].acquire() as conn:
        for i in range(520):  # early in the alphabet: the first 500 people by name
            await factories.account(conn, username=f"aa-{i:03d}-{'match' if i % 3 else 'x'}")
        for i in range(30):  # late: beyond them
            await factories.account(conn, username=f"zz-{i:03d}-match")
        await factories.account(conn, username="match")
        await factories.account(conn, username="match-first")
    everyone = [u["username"] for u in (await search(client, "match", limit=1000))["users"]]
    contains = sorted(n for n in everyone if n not in {"match", "match-first"})
    assert everyone == ["match", "match-first", *contains]
    assert len(contains) == 346 + 30
    for limit, offset in ((10, 0), (50, 3), (100, 300), (30, 360)):
        page = await search(client, "match", limit=limit, offset=offset)
        assert [u["username"] for u in page["users"]] == everyone[offset : offset + limit]
    late = [u["username"] for u in (await search(client, "zz-0"))["users"]]
    assert late == [f"zz-{i:03d}-match" for i in range(30)]


def expected_ids(people: list[dict[str, Any]], q: str) -> list[int]:
    """docs/behavior.md, search users, written out plainly: the reference the service must
    agree with."""
    needle = q.strip().lower()
    ranked = []
    for person in people:
        fields = [f.lower() for f in (person["name"], person["username"], person["email"]) if f]
        if needle in fields:
            tier = 0
        elif any(f.startswith(needle) for f in fields):
            tier = 1
        elif any(needle in f for f in fields):
            tier = 2
        else:
            continue
        name = person["name"]
        ranked.append((tier, name is None, name or "", person["id"]))
    return [r[3] for r in sorted(ranked)]


def crowd(rng: random.Random, count: int) -> list[str]:
    """People whose names, usernames and e-mails share letters, so every tier is crowded."""

    def word() -> str:
        return "".join(rng.choice("abc") for _ in range(rng.randint(2, 5)))

    lines = []
    for i in range(count):
        line: dict[str, Any] = {"email": f"{word()}.{i}@{rng.choice(['ab', 'cab'])}.io"}
        if rng.random() < 0.8:
            line["name"] = f"{word()} {word()}" if rng.random() < 0.5 else word()
        if rng.random() < 0.4:
            line["username"] = f"{word()}{i}"
        lines.append(json.dumps(line))
    return lines


def short_head(monkeypatch: pytest.MonkeyPatch, head: int) -> None:
    """The first `head` people walked, and the sizes that decide what follows in proportion (as
    before sql/0018: the shares from a sample past 20 x head people, of 2 x head), so that a
    few hundred people take every way."""
    monkeypatch.setattr(search_module, "HEAD", head)
    monkeypatch.setattr(search_module, "SMALL", 20 * head)
    monkeypatch.setattr(search_module, "SAMPLED", 2 * head)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    q=st.text("abc. ", min_size=2, max_size=6),
    limit=st.integers(1, 40),
    offset=st.integers(0, 60),
    head=st.sampled_from([3, 25, 1000]),
    match_cost=st.sampled_from([0, 1, 1000]),
    probe=st.sampled_from([0, 2, 1000]),
    small=st.sampled_from([0, 60, 10**6]),
)
async def test_every_way_of_finding_gives_the_defined_order(  # noqa: PLR0917 - drawn inputs
    client: Client,
    app: web.Application,
    monkeypatch: pytest.MonkeyPatch,
    q: str,
    limit: int,
    offset: int,
    head: int,
    match_cost: int,
    probe: int,
    small: int,
) -> None:
    """Whichever way the service takes (prefixes sorted or read in name order, the first
    people by name, a sample, a longer walk, the trigram indexes; set small here so 300 people
    take them all), the page is the definition's."""
    async with app[POOL].acquire() as conn:
        if not await conn.fetchval("SELECT count(*) FROM users WHERE email LIKE '%.io'"):
            await import_users(work(), conn, crowd(random.Random(5), 300), source="crowd")
            await factories.account(conn, service=True, username="abcab-machine")
        people = [
            dict(r)
            for r in await conn.fetch(
                "SELECT id, name, username, email FROM users WHERE account_type = 'User'"
            )
        ]
    monkeypatch.setattr(search_module, "HEAD", head)
    monkeypatch.setattr(search_module, "SMALL", small)  # 0: the shares from a sample
    monkeypatch.setattr(search_module, "SAMPLED", 2 * head)
    monkeypatch.setattr(search_module, "MATCH_COST", match_cost)
    monkeypatch.setattr(search_module, "PROBE", probe)
    want = expected_ids(people, q)
    if len(q.strip()) < 2:  # too short (docs/behavior.md, search users)
        want = []
    body = await search(client, q, limit=limit, offset=offset)
    assert [u["id"] for u in body["users"]] == want[offset : offset + limit]


@pytest.mark.parametrize("q", ["", "v", "vi"])
async def test_a_position_beyond_the_log_is_a_400_whatever_the_query(
    client: Client, q: str
) -> None:
    """A short query reads `?at=` before it answers: a position past the log's end is a 400
    for it as for a longer one, not a 200."""
    resp = await client.get(SEARCH, params={"q": q, "at": "999999999"}, headers=ADMIN)
    message = await error(resp, 400, "ValidationError")
    assert "beyond the log's end" in message


@pytest.mark.usefixtures("client")  # the app started: its pool
async def test_every_way_agrees_on_every_short_query(
    app: web.Application, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every query of two and three characters over the crowd's letters, under every setting
    that picks a different way (prefixes sorted or read in name order, a walk that starts where
    the first people end, a sample, the trigram indexes), straight against the search function:
    the ids must be the definition's, none twice."""
    async with app[POOL].acquire() as conn:
        await import_users(work(), conn, crowd(random.Random(11), 240), source="crowd")
        await factories.account(conn, username="ab")  # an exact match among broad prefixes
        await conn.execute("ANALYZE users")  # a size the choices can go by
        people = [
            dict(r)
            for r in await conn.fetch(
                "SELECT id, name, username, email FROM users WHERE account_type = 'User'"
            )
        ]
        letters = "abc."
        queries = [a + b for a in letters for b in letters]
        queries += [a + b + c for a in "abc" for b in letters for c in "abc"]
        wrong = []
        for head, probe, match_cost, walk_most in (
            (1, 0, 1000, 0),
            (2, 1, 0, 10**6),
            (3, 2, 1000, 10**6),
            (5, 1000, 1, 0),
            (7, 0, 0, 10**6),
            (25, 2, 1000, 50),
        ):
            short_head(monkeypatch, head)
            monkeypatch.setattr(search_module, "WALK_MOST", walk_most)
            monkeypatch.setattr(search_module, "PROBE", probe)
            monkeypatch.setattr(search_module, "MATCH_COST", match_cost)
            for q in queries:
                rows = await conn.fetch(queries_module.SEARCH, *search_module.arguments(q, 50), 0)
                got = [r["id"] for r in rows]
                if got != expected_ids(people, q)[:50]:
                    wrong.append((head, probe, match_cost, q))
    assert wrong == []


PUNCTUATED = [  # names, usernames and e-mails with punctuation in runs, letters beyond ASCII
    {"name": "Ann -- Bell", "email": "ann.bell@x-y.io"},
    {"name": "Zoë Ǆurić", "username": "zoe.dz", "email": "z+dz@corp.example.com"},
    {"name": "x ǂ y", "email": "x@y.io"},
    {"name": "Sean O'Brien", "username": "o'brien", "email": "sean_obrien@ex.io"},
    {"name": "Ann Bell", "username": "ann-bell", "email": "ab@bell.io"},
    {"email": "only.mail+tag@a.b.io"},
    {"name": "n t", "email": "nt@t.io"},
]


@pytest.mark.usefixtures("client")  # the app started: its pool
@pytest.mark.parametrize(
    "q",
    [
        "n -",
        "n - b",
        "-- b",
        "n -- b",
        "ann bell",
        "n b",
        "nn.b",
        "ǂ y",
        "x ǂ",
        "ǂ",
        "ë ǆ",
        "ǆur",
        "o'b",
        "'br",
        "n o",
        "_ob",
        "b+c",
        "z+d",
        "@x-",
        "x-y",
        "y.io",
        ".io",
        "l@b",
        "y+t",
        "ly.m",
        "n t",
        "t@t",
        "a.b.",
        "ail+t",
    ],
)
async def test_the_trigram_indexes_find_across_punctuation(
    app: web.Application, monkeypatch: pytest.MonkeyPatch, q: str
) -> None:
    """The third tier from the trigram index (forced: the first person by name only, and the
    index said to cost nothing), on columns that join each field's words with one letter
    (sql/0017; one index on both since sql/0020): a query across runs of punctuation, spaces,
    letters beyond ASCII, the joining letter itself, with a space or not, finds what the
    definition finds."""
    async with app[POOL].acquire() as conn:
        await import_users(work(), conn, [json.dumps(p) for p in PUNCTUATED], source="punctuated")
        await import_users(work(), conn, crowd(random.Random(3), 60), source="crowd")
        people = [
            dict(r)
            for r in await conn.fetch(
                "SELECT id, name, username, email FROM users WHERE account_type = 'User'"
            )
        ]
        short_head(monkeypatch, 1)
        monkeypatch.setattr(search_module, "MATCH_COST", 0)
        rows = await conn.fetch(queries_module.SEARCH, *search_module.arguments(q, 50), 0)
    assert [r["id"] for r in rows] == expected_ids(people, q)[:50]


@pytest.mark.usefixtures("client")  # the app started: its pool
async def test_a_large_table_whose_first_people_match_little_walks_on_past_them(
    app: web.Application, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first people by name hold no match and the sample holds many: the walk goes on
    past them, never asking for a negative LIMIT (which answers 500)."""
    lines = [json.dumps({"name": f"Aaron First {i:04d}"}) for i in range(300)]
    lines += [
        json.dumps({"name": f"Zed Crowd {i:05d}", "email": f"zc.{i:05d}@qmail.example"})
        for i in range(4_300)
    ]
    async with app[POOL].acquire() as conn:
        await import_users(work(), conn, lines, source="crowd")
        await conn.execute("ANALYZE users")  # the size the walk goes by: over SMALL
        people = [
            dict(r)
            for r in await conn.fetch(
                "SELECT id, name, username, email FROM users WHERE account_type = 'User'"
            )
        ]
        short_head(monkeypatch, 200)
        for q, limit in (("crowd", 10), ("crowd", 100), ("owd 0", 10), ("l.ex", 10)):
            rows = await conn.fetch(queries_module.SEARCH, *search_module.arguments(q, limit), 0)
            assert [r["id"] for r in rows] == expected_ids(people, q)[:limit], (q, limit)


@pytest.mark.parametrize("q", ["a\ud7ff", "a\U0010ffff", "\U0010ffff\U0010ffff"])
async def test_a_query_ending_in_the_last_characters_is_answered(client: Client, q: str) -> None:
    """No successor can be made for U+D7FF or U+10FFFF (the prefix range has no end): such a
    two-character query is answered, not divided by zero."""
    await create_user(client, {"name": "a\U0010ffffb", "email": "max@example.com"})
    body = await search(client, q)
    assert [u["email"] for u in body["users"]] == (
        ["max@example.com"] if q == "a\U0010ffff" else []
    )


@pytest.mark.usefixtures("client")  # the app started: its pool
async def test_one_trigram_index_and_one_search_function(app: web.Application) -> None:
    """sql/0020 reads the joined names and e-mails through one trigram index (two before) and
    replaces the function of nine arguments in place, which the previous release calls too;
    sql/0021 drops sql/0017's of seven, which no running release calls, and its indexes."""
    async with app[POOL].acquire() as conn:
        functions = await conn.fetch(
            "SELECT pg_get_function_identity_arguments(p.oid) AS args FROM pg_proc p "
            "WHERE p.proname = 'search_user_ids' AND p.pronamespace = 'public'::regnamespace"
        )
        indexes = await conn.fetch(
            "SELECT indexname, indexdef FROM pg_indexes "
            "WHERE schemaname = 'readmodel' AND tablename = 'users' AND indexdef LIKE '%gin_trgm%'"
        )
    assert [f["args"].count(",") + 1 for f in functions] == [9]
    assert [i["indexname"] for i in indexes] == ["users_search_joined_trgm"]
    assert "search_people || ' '::text) || search_mail" in indexes[0]["indexdef"]
