"""Request bodies of the strategy type routes, with the API's limits. Unknown fields are
ignored, never honoured (`editable` and `deprecated`, which Unleash's schema lists, included:
a new type is editable and active).

Each Struct's `example` is the request body the OpenAPI document shows (service/openapi.py).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import msgspec

from service.names import Name

ParameterType = Literal["string", "percentage", "list", "number", "boolean"]
Short = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
Text = Annotated[str, msgspec.Meta(max_length=10_000)]
Title = Annotated[str, msgspec.Meta(max_length=1000)]


class Parameter(msgspec.Struct, frozen=True, kw_only=True):
    """A parameter a flag's strategy of the type takes; `description` "" and `required` false
    when left out (as Unleash's built-in types show theirs)."""

    name: Short
    type: ParameterType
    description: Annotated[str, msgspec.Meta(max_length=1000)] | None = None
    required: bool | None = None


Parameters = Annotated[list[Parameter], msgspec.Meta(max_length=100)]

EXAMPLE_PARAMETERS: list[dict[str, object]] = [
    {
        "name": "regions",
        "type": "list",
        "description": "Where the feature is on",
        "required": True,
    }
]


class CreateStrategyType(msgspec.Struct, frozen=True, kw_only=True):
    example: ClassVar[dict[str, object]] = {
        "name": "by-region",
        "title": "By region",
        "description": "On in the regions listed",
        "parameters": EXAMPLE_PARAMETERS,
    }

    name: Name
    title: Title | None = None
    description: Text | None = None
    parameters: Parameters


class UpdateStrategyType(msgspec.Struct, frozen=True, kw_only=True):
    """PUT replaces the parameters; `title` and `description` left out (or null) are kept, as
    in Unleash. The path names the type: a `name` in the body is ignored."""

    example: ClassVar[dict[str, object]] = {
        "description": "On in the regions listed",
        "parameters": EXAMPLE_PARAMETERS,
    }

    title: Title | None = None
    description: Text | None = None
    parameters: Parameters
