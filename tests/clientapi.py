"""Flags worth evaluating, made through the admin API, and client or frontend tokens: what the
client API's tests and the SDK tests share."""

from __future__ import annotations

from typing import Any

from tests.factories import ADMIN, api_token, flag, ok

PROJECT = "/api/admin/projects/default"
SPEC = {"Unleash-Client-Spec": "5.2.0"}  # the client specification the SDKs say they follow


def auth(secret: str, **headers: str) -> dict[str, str]:
    return {"Authorization": secret, **headers}


def env_path(flag: str, environment: str = "development") -> str:
    return f"{PROJECT}/features/{flag}/environments/{environment}"


async def token(
    client: Any,
    kind: str = "client",
    environment: str = "development",
    projects: list[str] | None = None,
) -> str:
    name = f"{kind}-{environment}"
    made = await api_token(
        client, kind, name=name, environment=environment, projects=projects or ["*"]
    )
    return str(made["secret"])


async def strategy(
    client: Any, name: str, body: dict[str, Any], environment: str = "development"
) -> dict[str, Any]:
    path = f"{env_path(name, environment)}/strategies"
    return dict(await ok(await client.post(path, json=body, headers=ADMIN)))


async def switch(client: Any, name: str, on: bool = True, environment: str = "development") -> None:
    path = f"{env_path(name, environment)}/{'on' if on else 'off'}"
    await ok(await client.post(path, headers=ADMIN))


async def segment(client: Any, name: str, constraints: list[dict[str, Any]]) -> int:
    body = {"name": name, "constraints": constraints}
    return int((await ok(await client.post("/api/admin/segments", json=body, headers=ADMIN)))["id"])


ROLLOUT_ID = "checkout"


async def rich_flags(client: Any) -> dict[str, Any]:
    """A gradual rollout with constraints, a segment and strategy variants; environment
    variants; a parent and a dependent child; a disabled flag; a tagged flag."""
    beta = await segment(
        client, "beta", [{"contextName": "region", "operator": "IN", "values": ["eu", "us"]}]
    )
    await flag(client, "parent")
    await strategy(client, "parent", {"name": "default"})
    await switch(client, "parent")
    await flag(client, "checkout", description="the new checkout", impressionData=True)
    await strategy(
        client,
        "checkout",
        {
            "name": "flexibleRollout",
            "parameters": {"rollout": "50", "stickiness": "userId", "groupId": ROLLOUT_ID},
            "constraints": [
                {"contextName": "appName", "operator": "NOT_IN", "values": ["legacy"]},
            ],
            "segments": [beta],
            "variants": [
                {
                    "name": "red",
                    "weight": 500,
                    "weightType": "variable",
                    "stickiness": "userId",
                    "payload": {"type": "string", "value": "r"},
                },
                {"name": "blue", "weight": 500, "weightType": "variable", "stickiness": "userId"},
            ],
        },
    )
    await strategy(
        client,
        "checkout",
        {"name": "userWithId", "parameters": {"userIds": "vip-1,vip-2"}},
    )
    await switch(client, "checkout")
    dep = {"feature": "parent", "enabled": True}
    await ok(
        await client.post(f"{PROJECT}/features/checkout/dependencies", json=dep, headers=ADMIN)
    )
    await flag(client, "banner")
    await strategy(client, "banner", {"name": "default"})
    await ok(
        await client.put(
            f"{env_path('banner')}/variants",
            json=[
                {
                    "name": "wide",
                    "weight": 700,
                    "weightType": "variable",
                    "stickiness": "default",
                    "payload": {"type": "json", "value": '{"w": 1}'},
                },
                {
                    "name": "narrow",
                    "weight": 300,
                    "weightType": "variable",
                    "stickiness": "default",
                },
            ],
            headers=ADMIN,
        )
    )
    await switch(client, "banner")
    await flag(client, "dormant")  # on nowhere
    await flag(client, "tagged")
    tag = {"type": "simple", "value": "team-a"}
    await ok(
        await client.post("/api/admin/features/tagged/tags", json=tag, headers=ADMIN), 200, 201
    )
    return {"segment": beta}
