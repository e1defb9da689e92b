"""The request body of POST /api/frontend, with its limits: the context (Unleash's
frontendApiFeaturesPostSchema). What browser SDKs send to register and to report metrics is
what server SDKs send (service/telemetry/commands.py).

A context is evaluated against every flag of the token's scope, so its size is bounded: at
most MAX_PROPERTIES properties, names of MAX_NAME characters, values of MAX_VALUE.
"""

from __future__ import annotations

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
