"""Request bodies of the frontend API, with its limits: the context of POST /api/frontend
(Unleash's frontendApiFeaturesPostSchema), and what browser SDKs send to register and to
report metrics (Unleash's frontendApiClientSchema and clientMetricsSchema).

A context is evaluated against every flag of the token's scope, so its size is bounded: at
most MAX_PROPERTIES properties, names of MAX_NAME characters, values of MAX_VALUE.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, ClassVar, Final

import msgspec

MAX_NAME: Final = 100  # characters of a context field's name
MAX_VALUE: Final = 1_000  # characters of a context field's value
MAX_PROPERTIES: Final = 100  # properties of one context (besides its root fields)
# The root fields of Unleash's context; any other field of a context is a property.
ROOT_FIELDS: Final = (
    "appName",
    "environment",
    "userId",
    "sessionId",
    "remoteAddress",
    "currentTime",
)

FieldName = Annotated[str, msgspec.Meta(max_length=MAX_NAME)]
FieldValue = Annotated[str, msgspec.Meta(max_length=MAX_VALUE)]
Properties = Annotated[dict[FieldName, FieldValue], msgspec.Meta(max_length=MAX_PROPERTIES)]
# The root fields, `properties`, and other fields (properties too, as Unleash moves them).
ContextFields = Annotated[
    dict[FieldName, FieldValue | Properties | None],
    msgspec.Meta(max_length=MAX_PROPERTIES + len(ROOT_FIELDS) + 1),
]


class EvaluateContext(msgspec.Struct, frozen=True, kw_only=True):
    """The Unleash context: appName, environment, userId, sessionId, remoteAddress and
    currentTime (strings; null or empty: absent), `properties` (an object of strings), and any
    other field as a property. Without a body, the empty context."""

    example: ClassVar[dict[str, object]] = {
        "context": {
            "appName": "web",
            "userId": "user-17",
            "sessionId": "b65e7b23",
            "properties": {"region": "eu"},
        }
    }
    context: ContextFields | None = None


Text = Annotated[str, msgspec.Meta(max_length=10_000)]
Count = Annotated[int, msgspec.Meta(ge=0)]
# An instant as Unleash's dateSchema takes it: an RFC 3339 time, or a UNIX timestamp.
Instant = datetime | int


class RegisterFrontendClient(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    example: ClassVar[dict[str, object]] = {
        "appName": "web",
        "instanceId": "browser-1",
        "sdkVersion": "unleash-client-js:3.7.0",
        "interval": 15000,
        "started": "2026-11-25T10:00:00Z",
        "strategies": ["default"],
    }
    app_name: Text
    instance_id: Text | None = None
    sdk_version: Text | None = None
    environment: Text | None = None  # deprecated: the token says which
    interval: Annotated[float, msgspec.Meta(ge=0)]
    started: Instant
    strategies: Annotated[list[Text], msgspec.Meta(max_length=1_000)]


class FrontendToggleCounts(msgspec.Struct, frozen=True, kw_only=True):
    yes: Annotated[float, msgspec.Meta(ge=0)] = 0
    no: Count = 0
    variants: Annotated[dict[Text, Count], msgspec.Meta(max_length=1_000)] | None = None


class FrontendBucket(msgspec.Struct, frozen=True, kw_only=True):
    start: Instant
    stop: Instant
    toggles: Annotated[dict[Text, FrontendToggleCounts], msgspec.Meta(max_length=10_000)]


class FrontendMetrics(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    example: ClassVar[dict[str, object]] = {
        "appName": "web",
        "instanceId": "browser-1",
        "bucket": {
            "start": "2026-11-25T10:00:00Z",
            "stop": "2026-11-25T10:01:00Z",
            "toggles": {"new-checkout": {"yes": 3, "no": 1, "variants": {"red": 2}}},
        },
    }
    app_name: Text
    instance_id: Text | None = None
    environment: Text | None = None  # deprecated: the token says which
    sdk_version: Text | None = None
    platform_name: Text | None = None
    platform_version: Text | None = None
    yggdrasil_version: Text | None = None
    spec_version: Text | None = None
    bucket: FrontendBucket
