"""Read models `tag_types` and `tags`: the tag types, and every tag that exists as a value of
one, created on its own (TagCreated) or by being put on a flag; a tag stays when no flag
carries it any more (as in Unleash), and goes when it is deleted (TagDeleted) or with its type."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventlog.events.features import FeatureCloned, FeatureTagged
from eventlog.events.tags import (
    TagCreated,
    TagDeleted,
    TagTypeCreated,
    TagTypeDeleted,
    TagTypeUpdated,
)
from projections.base import Projection
from projections.writes import Delete, Insert, Table, Update, Write

if TYPE_CHECKING:
    from eventlog.codec import RecordedEvent

TAG_TYPES = Table("tag_types", ("name",))
TAGS = Table("tags", ("type", "value"))


def _tag(tag_type: str, value: str) -> Insert:
    return Insert(TAGS, {"type": tag_type, "value": value})


def writes(recorded: RecordedEvent) -> list[Write]:  # noqa: PLR0911 - a case per type
    match recorded.event:
        case TagTypeCreated() as e:
            row = {
                "name": e.name,
                "description": e.description,
                "icon": e.icon,
                "color": e.color,
                "created_at": e.created_at,
            }
            return [Insert(TAG_TYPES, row)]
        case TagTypeUpdated() as e:
            changed = {"description": e.description, "icon": e.icon, "color": e.color}
            return [Update(TAG_TYPES, {"name": e.name}, changed)]
        case TagTypeDeleted() as e:
            return [Delete(TAGS, {"type": e.name}), Delete(TAG_TYPES, {"name": e.name})]
        case TagCreated() as e:
            return [_tag(e.tag_type, e.value)]
        case TagDeleted() as e:
            return [Delete(TAGS, {"type": e.tag_type, "value": e.value})]
        case FeatureTagged() as e:
            return [_tag(e.tag_type, e.value)]
        case FeatureCloned() as e:
            return [_tag(t.tag_type, t.value) for t in e.tags]
        case _:
            return []


PROJECTION = Projection(
    name="tag_types",
    mode="inline",
    tables=(TAG_TYPES, TAGS),
    writes=writes,
    handles=frozenset(
        {
            FeatureCloned,
            FeatureTagged,
            TagCreated,
            TagDeleted,
            TagTypeCreated,
            TagTypeDeleted,
            TagTypeUpdated,
        }
    ),
)
