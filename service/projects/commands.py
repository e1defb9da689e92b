"""Request bodies of the project and environment routes.

Each Struct's `example` is the request body the OpenAPI document shows (service/openapi.py).
"""

from __future__ import annotations

from typing import Annotated, ClassVar

import msgspec

from service.names import Name

Text = Annotated[str, msgspec.Meta(max_length=1000)]
Label = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]


class CreateProject(msgspec.Struct, frozen=True, kw_only=True):
    example: ClassVar[dict[str, object]] = {
        "id": "checkout",
        "name": "Checkout",
        "description": "The checkout team's flags",
    }
    id: Name
    name: Label
    description: Text | None = None


SortOrder = Annotated[int, msgspec.Meta(ge=-1_000_000, le=1_000_000)]


class CreateEnvironment(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    example: ClassVar[dict[str, object]] = {
        "name": "staging",
        "type": "test",
        "sortOrder": 5,
    }
    name: Name
    type: Label
    sort_order: SortOrder | None = None


class UpdateEnvironment(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What the UI's edit form of an environment saves (its name cannot change)."""

    example: ClassVar[dict[str, object]] = {"type": "test", "sortOrder": 5}
    type: Label
    sort_order: SortOrder | None = None


class EnableEnvironment(msgspec.Struct, frozen=True, kw_only=True):
    example: ClassVar[dict[str, object]] = {"environment": "development"}
    environment: str


SortOrders = Annotated[
    dict[Annotated[str, msgspec.Meta(max_length=100)], SortOrder],
    msgspec.Meta(
        max_length=1000,
        description="Environments and their new sortOrder (names that exist nowhere are"
        " ignored, as in Unleash)",
        examples=[{"development": 1, "production": 2}],
    ),
]
