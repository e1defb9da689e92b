from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tests.conftest import ADMIN

if TYPE_CHECKING:
    from aiohttp.test_utils import TestClient


async def test_health(client: TestClient[Any, Any]) -> None:
    resp = await client.get("/health")
    assert resp.status == 200
    assert await resp.json() == {"health": "GOOD"}
    resp = await client.get("/api/admin/api-tokens", headers=ADMIN)
    assert resp.status == 200
    body = await resp.json()
    assert [t["tokenName"] for t in body["tokens"]] == ["admin"]
