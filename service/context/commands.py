"""Request bodies of the context field routes, with the API's limits. Unknown fields are
ignored, never honoured.

Each Struct's `example` is the request body the OpenAPI document shows (service/openapi.py).
"""

from __future__ import annotations

from typing import Annotated, ClassVar

import msgspec

from service.names import Name

Description = Annotated[str, msgspec.Meta(max_length=250)]  # Unleash's limit
SortOrder = Annotated[int, msgspec.Meta(ge=-1_000_000, le=1_000_000)]


class LegalValue(msgspec.Struct, frozen=True, kw_only=True):
    value: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
    description: Annotated[str, msgspec.Meta(max_length=1000)] | None = None


MAX_LEGAL_VALUES = 1000
LegalValues = Annotated[list[LegalValue], msgspec.Meta(max_length=MAX_LEGAL_VALUES)]
EXAMPLE_VALUES: list[dict[str, object]] = [
    {"value": "gold", "description": "Paid yearly"},
    {"value": "silver"},
]


class OneLegalValue(LegalValue, frozen=True, kw_only=True):
    """POST /api/admin/context/{name}/legal-values: added, or its description replaced."""

    example: ClassVar[dict[str, object]] = {"value": "gold", "description": "Paid yearly"}


class FieldName(msgspec.Struct, frozen=True, kw_only=True):
    """POST /api/admin/context/validate: whether a field of that name could be created."""

    example: ClassVar[dict[str, object]] = {"name": "subscriptionTier"}
    name: Name


class CreateField(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    example: ClassVar[dict[str, object]] = {
        "name": "subscriptionTier",
        "description": "The customer's plan",
        "legalValues": EXAMPLE_VALUES,
        "stickiness": False,
        "sortOrder": 10,
    }

    name: Name
    description: Description | None = None
    legal_values: LegalValues = []
    stickiness: bool = False
    sort_order: SortOrder = 0


class UpdateField(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """PUT: legal values and stickiness as given (left out: none, false), as in Unleash; a
    description or sort order left out (or null) is kept. The path names the field: a `name`
    in the body is ignored."""

    example: ClassVar[dict[str, object]] = {
        "description": "The customer's plan",
        "legalValues": EXAMPLE_VALUES,
        "stickiness": True,
    }

    description: Description | None = None
    legal_values: LegalValues = []
    stickiness: bool = False
    sort_order: SortOrder | None = None
