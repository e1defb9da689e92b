"""Response bodies of /api/admin/tag-types and /api/admin/tags (Unleash's tagTypeSchema,
tagTypesSchema, validateTagTypeSchema, tagsSchema and tagWithVersionSchema), built here and
only here."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from collections.abc import Sequence

    import asyncpg

    from eventlog.events.tags import TagCreated, TagTypeCreated
    from service.tag_types.commands import TagTypeBody


class TagType(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    description: str | None
    icon: str | None
    color: str | None

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> TagType:
        return cls(
            name=row["name"], description=row["description"], icon=row["icon"], color=row["color"]
        )

    @classmethod
    def created(cls, event: TagTypeCreated) -> TagType:
        return cls(
            name=event.name, description=event.description, icon=event.icon, color=event.color
        )


class TagTypeList(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    version: int = 1
    tag_types: list[TagType]


class OneTagType(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    version: int = 1
    tag_type: TagType


class ValidTagType(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The answer of a validation that passed: the tag type as the body gave it."""

    valid: bool = True
    tag_type: TagType

    @classmethod
    def of(cls, body: TagTypeBody) -> ValidTagType:
        return cls(
            tag_type=TagType(
                name=body.name, description=body.description, icon=body.icon, color=body.color
            )
        )


class TagItem(msgspec.Struct, frozen=True, kw_only=True):
    type: str
    value: str


class TagItemList(msgspec.Struct, frozen=True, kw_only=True):
    version: int = 1
    tags: list[TagItem]

    @classmethod
    def from_rows(cls, rows: Sequence[asyncpg.Record]) -> TagItemList:
        return cls(tags=[TagItem(type=r["type"], value=r["value"]) for r in rows])


class OneTag(msgspec.Struct, frozen=True, kw_only=True):
    version: int = 1
    tag: TagItem

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> OneTag:
        return cls(tag=TagItem(type=row["type"], value=row["value"]))

    @classmethod
    def created(cls, event: TagCreated) -> OneTag:
        return cls(tag=TagItem(type=event.tag_type, value=event.value))
