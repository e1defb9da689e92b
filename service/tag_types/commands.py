"""Request bodies of /api/admin/tag-types and /api/admin/tags, with the API's limits. Unknown
fields are ignored, never honoured (Unleash refuses them; docs/behavior.md, "Request bodies")."""

from __future__ import annotations

from typing import Annotated, ClassVar

import msgspec

from service.names import TAG_VALUE_LENGTH

NAME_LENGTH = (2, 50)
_CHARACTERS = r"[A-Za-z0-9\-_.!~*'()]"

# A tag type's name: validated again after decoding (domain.validate_tag_type_name), with the
# messages of the naming rule; the JSON Schema tells the OpenAPI document the same.
TagTypeName = Annotated[
    str,
    msgspec.Meta(
        description="2 to 50 characters: letters, digits and - _ . ! ~ * ' ( ), not `..`",
        extra_json_schema={
            "minLength": NAME_LENGTH[0],
            "maxLength": NAME_LENGTH[1],
            "pattern": f"^{_CHARACTERS}+$",
            "not": {"enum": [".."]},
        },
    ),
]
Description = Annotated[str, msgspec.Meta(max_length=1000)]
Icon = Annotated[str, msgspec.Meta(max_length=255)]
Color = Annotated[str, msgspec.Meta(pattern="^#[0-9A-Fa-f]{6}$", examples=["#FFFFFF"])]


class TagTypeBody(msgspec.Struct, frozen=True, kw_only=True):
    """POST /api/admin/tag-types and its validate (Unleash's tagTypeSchema)."""

    example: ClassVar[dict[str, object]] = {
        "name": "team",
        "description": "The team that owns the flag",
        "icon": None,
        "color": "#1A7F37",
    }

    name: TagTypeName
    description: Description | None = None
    icon: Icon | None = None
    color: Color | None = None


class UpdateTagType(msgspec.Struct, frozen=True, kw_only=True):
    """PUT /api/admin/tag-types/:name (Unleash's updateTagTypeSchema): a field left out keeps
    its value, null clears it (as Unleash's update does)."""

    example: ClassVar[dict[str, object]] = {"description": "Who owns the flag"}

    description: Description | msgspec.UnsetType | None = msgspec.UNSET
    icon: Icon | msgspec.UnsetType | None = msgspec.UNSET
    color: Color | msgspec.UnsetType | None = msgspec.UNSET


class CreateTag(msgspec.Struct, frozen=True, kw_only=True):
    """POST /api/admin/tags (Unleash's createTagSchema): a value of an existing tag type."""

    example: ClassVar[dict[str, object]] = {"type": "simple", "value": "team-checkout"}

    type: TagTypeName
    value: Annotated[
        str,
        msgspec.Meta(
            description="Trimmed, then 2 to 50 characters",
            extra_json_schema={"minLength": TAG_VALUE_LENGTH[0], "maxLength": TAG_VALUE_LENGTH[1]},
        ),
    ]
