"""Request bodies of the client API's reports (POST /api/client/register, /api/client/metrics),
validated as Unleash validates them (its clientApplicationSchema and clientMetricsSchema, then
its Joi schemas), with limits Unleash leaves out. Unknown fields are ignored, as Unleash strips
them: `connectionId`, and `impactMetrics`, which is not stored here.

Each Struct's `example` is what the official Node SDK sends (service/openapi.py shows it).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, ClassVar, Final

import msgspec

# Unleash keeps names, versions and ids in varchar(255) columns; its OpenAPI document limits
# sdkFlavor to 256 characters and sdkFlavorVersion to 32.
MAX_TEXT: Final = 255
# A bucket's flags and a flag's variants; a 1 MiB body holds fewer anyway
# (service/http/requests.py).
MAX_TOGGLES: Final = 10_000
MAX_VARIANTS: Final = 1_000
MAX_STRATEGIES: Final = 1_000
# The largest count an SDK can keep exactly (JavaScript's Number.MAX_SAFE_INTEGER); the
# hourly sums stay within bigint by saturating (service/telemetry/queries.py).
MAX_COUNT: Final = 2**53 - 1
# Milliseconds since 1970 of 0001-01-01 and 9999-12-31T23:59:59.999Z: what a datetime holds.
_FIRST_MS: Final = -62_135_596_800_000
_LAST_MS: Final = 253_402_300_799_999

Text = Annotated[str, msgspec.Meta(max_length=MAX_TEXT)]
AppName = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TEXT)]
Count = Annotated[int, msgspec.Meta(ge=0, le=MAX_COUNT)]
# An RFC 3339 time with its offset (Unleash's dateSchema: format date-time), or milliseconds
# since 1970, as Joi reads a number (Unleash's own tests send Date.now()).
Instant = (
    Annotated[datetime, msgspec.Meta(tz=True, description="An RFC 3339 time with its offset")]
    | Annotated[
        int,
        msgspec.Meta(
            ge=_FIRST_MS,
            le=_LAST_MS,
            description="Milliseconds since 1970-01-01T00:00:00Z",
        ),
    ]
)


def instant(value: datetime | int) -> datetime:
    """An Instant as a UTC datetime."""
    if isinstance(value, int):
        return datetime.fromtimestamp(value / 1000, UTC)
    return value.astimezone(UTC)


class _Sdk(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What both reports say of the SDK (each optional; Node sends yggdrasilVersion null)."""

    app_name: AppName
    instance_id: Text | None = None  # absent, null or "": "default", as in Unleash
    sdk_version: Text | None = None
    sdk_flavor: Annotated[str, msgspec.Meta(max_length=256)] | None = None
    sdk_flavor_version: Annotated[str, msgspec.Meta(max_length=32)] | None = None
    platform_name: Text | None = None
    platform_version: Text | None = None
    yggdrasil_version: Text | None = None
    spec_version: Text | None = None

    @property
    def instance(self) -> str:
        return self.instance_id or "default"


class RegisterClientApplication(_Sdk, frozen=True, kw_only=True):
    """An SDK starting (Unleash's clientApplicationSchema): appName, strategies, started and
    interval are required."""

    example: ClassVar[dict[str, object]] = {
        "appName": "checkout-service",
        "instanceId": "checkout-7d9f-1",
        "sdkVersion": "unleash-node-sdk:6.12.1",
        "strategies": ["default", "flexibleRollout"],
        "started": "2026-11-25T04:18:04.511Z",
        "interval": 60000,
        "connectionId": "6c0bd5d2-1c5e-4a1f-8b0e-2f1e0f3f6b1a",
        "platformName": "node",
        "platformVersion": "20.20.2",
        "yggdrasilVersion": None,
        "specVersion": "5.2.0",
    }

    strategies: Annotated[list[Text], msgspec.Meta(max_length=MAX_STRATEGIES)]
    started: Instant
    interval: Annotated[float, msgspec.Meta(ge=0, le=MAX_COUNT)]


class ToggleCounts(msgspec.Struct, frozen=True, kw_only=True):
    """How often a flag was evaluated to enabled (yes) and disabled (no), and how often each
    variant was returned; other fields are ignored (an entry without yes and no counts 0)."""

    yes: Count = 0
    no: Count = 0
    variants: Annotated[dict[Text, Count], msgspec.Meta(max_length=MAX_VARIANTS)] | None = None


class Bucket(msgspec.Struct, frozen=True, kw_only=True):
    """The window the counts were taken in; they count in the UTC hour of its stop."""

    start: Instant
    stop: Instant
    toggles: Annotated[dict[Text, ToggleCounts], msgspec.Meta(max_length=MAX_TOGGLES)]


class RegisterClientMetrics(_Sdk, frozen=True, kw_only=True):
    """An SDK's evaluations since its last report (Unleash's clientMetricsSchema): appName is
    required; the bucket may be absent or null (a report of impact metrics only)."""

    example: ClassVar[dict[str, object]] = {
        "appName": "checkout-service",
        "instanceId": "checkout-7d9f-1",
        "connectionId": "6c0bd5d2-1c5e-4a1f-8b0e-2f1e0f3f6b1a",
        "bucket": {
            "start": "2026-11-25T04:18:04.511Z",
            "stop": "2026-11-25T04:19:04.526Z",
            "toggles": {
                "new-checkout": {"yes": 25, "no": 42, "variants": {"blue": 6, "green": 19}},
                "dark-mode": {"yes": 0, "no": 100, "variants": {}},
            },
        },
        "platformName": "node",
        "platformVersion": "20.20.2",
        "yggdrasilVersion": None,
        "specVersion": "5.2.0",
    }

    bucket: Bucket | None = None
