"""`python -m service admin-user NAME`: an Admin to sign in to the web UI with, its password
shown once; a taken name or a bad one is refused and writes nothing."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from projections.verify import verify
from service.appkeys import POOL
from service.users import admins, passwords
from tests.harness import run_cli

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.test_utils import TestClient

    Client = TestClient[Any, Any]


def test_generated_passwords_pass_the_strength_rules_and_differ() -> None:
    drawn = {admins.new_password() for _ in range(200)}
    assert len(drawn) == 200
    for password in drawn:
        passwords.check_strength(password)  # raises WeakPassword otherwise


async def test_the_admin_made_signs_in_and_holds_admin(
    client: Client, app: web.Application, dsn: str
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DATA_DIR"} | {"DATABASE_URL": dsn}
    made = run_cli(env, "admin-user", "  Ada ")
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith("created user Ada (id ")
    password = made.stdout.split("password: ", 1)[1].strip()
    assert password not in made.stderr
    signed_in = await client.post(
        "/auth/simple/login", json={"username": "Ada", "password": password}
    )
    assert signed_in.status == 200, await signed_in.text()
    me = await (await client.get("/api/admin/user")).json()
    assert me["user"]["username"] == "Ada"
    assert me["user"]["rootRole"] == 1
    assert [p["permission"] for p in me["permissions"]] == ["ADMIN"]

    again = run_cli(env, "admin-user", "Ada")
    assert (again.returncode, again.stdout) == (1, "")
    assert "User already exists" in again.stderr
    for bad in ("", "   ", "a\tb", "x" * 256):
        refused = run_cli(env, "admin-user", bad)
        assert refused.returncode == 2, bad
        assert "not a username" in refused.stderr
    async with app[POOL].acquire() as conn:
        rows = await conn.fetch(
            "SELECT type, metadata->>'actor_id' AS actor FROM events "
            "WHERE stream_type = 'user' ORDER BY position"
        )
        assert [(r["type"], r["actor"]) for r in rows] == [
            ("UserCreated", "admin-user"),
            ("PasswordChanged", "admin-user"),
            ("UserSignedIn", "user:1"),
        ]
        assert password not in str(await conn.fetch("SELECT data::text FROM events"))
        assert (await verify(conn)).ok
