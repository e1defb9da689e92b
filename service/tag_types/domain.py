"""Tag types and tags: pure decisions, no I/O (docs/behavior.md, "Tag types and tags")."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import msgspec

from eventlog.events.features import FeatureUntagged
from eventlog.events.tags import (
    TagCreated,
    TagDeleted,
    TagTypeCreated,
    TagTypeDeleted,
    TagTypeUpdated,
)
from service import names
from service.errors import NameExists, NotFound, ValidationError
from service.names import validate_name
from service.tag_types.commands import NAME_LENGTH

if TYPE_CHECKING:
    from datetime import datetime

    from service.tag_types.commands import CreateTag, TagTypeBody, UpdateTagType


def stream(name: str) -> tuple[str, str]:
    return ("tag-type", name)


def simple(now: datetime) -> TagTypeCreated:
    """Unleash's built-in tag type, which a new install has (service/bootstrap.py)."""
    return TagTypeCreated(
        name="simple",
        description="Used to simplify filtering of features",
        icon="#",
        color="#FFFFFF",
        created_at=now,
    )


def tag_value(body_value: str) -> str:
    return names.tag_value(body_value)


def tag_type_missing(name: str) -> NotFound:
    return NotFound(f"Could not find tag type {name}")


RESERVED = "validate"  # the path /api/admin/tag-types/validate is the validation


def validate_tag_type_name(name: str, path: str = "$.name") -> str:
    """2..50 URL-safe characters (Unleash's isUrlFriendly, min 2, max 50), not `validate`."""
    low, high = NAME_LENGTH
    if not low <= len(name) <= high:
        raise ValidationError(f"Tag type name must be {low} to {high} characters - at `{path}`")
    if name == RESERVED:
        raise ValidationError(f"Tag type name {RESERVED} is reserved - at `{path}`")
    return validate_name(name, path, "Tag type name")


def validate_tag_type(body: TagTypeBody, *, exists: bool) -> None:
    """POST /api/admin/tag-types/validate: the body would create a tag type."""
    validate_tag_type_name(body.name)
    if exists:
        raise NameExists(f"There already exists a tag type with the name {body.name}")


def create_tag_type(body: TagTypeBody, *, exists: bool, now: datetime) -> TagTypeCreated:
    validate_tag_type(body, exists=exists)
    return TagTypeCreated(
        name=body.name,
        description=body.description,
        icon=body.icon,
        color=body.color,
        created_at=now,
    )


class TagTypeState(NamedTuple):
    """A tag type's changeable fields as they are."""

    description: str | None
    icon: str | None
    color: str | None


def update_tag_type(
    name: str, body: UpdateTagType, current: TagTypeState | None
) -> TagTypeUpdated | None:
    """`current`: None when there is no such tag type (unlike Unleash, which answers 200 and
    records an update of nothing). None: nothing changes, and nothing is recorded."""
    if current is None:
        raise tag_type_missing(name)
    wanted = TagTypeState(
        description=current.description if body.description is msgspec.UNSET else body.description,
        icon=current.icon if body.icon is msgspec.UNSET else body.icon,
        color=current.color if body.color is msgspec.UNSET else body.color,
    )
    if wanted == current:
        return None
    return TagTypeUpdated(name=name, **wanted._asdict())


class Tagged(NamedTuple):
    """A tag of the type being deleted on a flag (archived ones too)."""

    feature: str
    project: str
    value: str


def delete_tag_type(
    name: str, *, exists: bool, tagged: list[Tagged]
) -> tuple[list[FeatureUntagged], TagTypeDeleted]:
    """As in Unleash, deleting a tag type takes its tags off every flag: here each flag's
    untagging is an event of the flag's stream, then the type's deletion."""
    if not exists:
        raise tag_type_missing(name)
    untagged = [
        FeatureUntagged(name=t.feature, tag_type=name, value=t.value, project=t.project)
        for t in tagged
    ]
    return untagged, TagTypeDeleted(name=name)


def tag_missing(tag_type: str, value: str) -> NotFound:
    return NotFound(f"No tag with type: [{tag_type}] and value [{value}]")  # Unleash's words


def delete_tag(
    tag_type: str, value: str, *, exists: bool, tagged: list[Tagged]
) -> tuple[list[FeatureUntagged], TagDeleted]:
    """As in Unleash, deleting a tag takes it off every flag: each flag's untagging an event of
    the flag's stream, then the tag's deletion. Unlike Unleash (200, and a `tag-deleted` of
    nothing), a tag that does not exist is a 404 and records nothing."""
    if not exists:
        raise tag_missing(tag_type, value)
    untagged = [
        FeatureUntagged(name=t.feature, tag_type=tag_type, value=value, project=t.project)
        for t in tagged
    ]
    return untagged, TagDeleted(tag_type=tag_type, value=value)


def create_tag(
    body: CreateTag, *, type_exists: bool, tag_exists: bool, now: datetime
) -> TagCreated:
    """POST /api/admin/tags: the value (trimmed, 2..50), a tag type that exists (unlike Unleash,
    whose answer is a 500 for an unknown type), a tag not there yet."""
    value = names.tag_value(body.value)
    if not type_exists:
        raise ValidationError(f"Tag type {body.type} does not exist - at `$.type`")
    if tag_exists:
        raise NameExists(f"The tag {body.type}:{value} already exists")
    return TagCreated(tag_type=body.type, value=value, created_at=now)
