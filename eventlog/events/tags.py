"""Stored events of tag types (stream `tag-type/<name>`): the types themselves and the tags
created as values of one, before any flag carries them."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from eventlog.events.base import Event


class TagTypeCreated(Event, frozen=True, kw_only=True, tag="TagTypeCreated"):
    """A tag type exists; flags may carry tags of it. `simple` is created at the first start."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "description", "icon", "color")

    name: str
    description: str | None
    icon: str | None
    color: str | None
    created_at: datetime


class TagTypeUpdated(Event, frozen=True, kw_only=True, tag="TagTypeUpdated"):
    """The tag type's description, icon and color, as they are from now on (all three, the
    ones the request left out as they were)."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "description", "icon", "color")

    name: str
    description: str | None
    icon: str | None
    color: str | None


class TagTypeDeleted(Event, frozen=True, kw_only=True, tag="TagTypeDeleted"):
    """The tag type is gone, with every tag of it. The flags that carried one were untagged
    first, each by a FeatureUntagged of its own stream in the same transaction."""

    not_personal: ClassVar[tuple[str, ...]] = ("name",)

    name: str


class TagDeleted(Event, frozen=True, kw_only=True, tag="TagDeleted"):
    """The tag (a value of the type of this stream) is gone. The flags that carried it were
    untagged first, each by a FeatureUntagged of its own stream in the same transaction."""

    not_personal: ClassVar[tuple[str, ...]] = ("tag_type", "value")

    tag_type: str
    value: str


class TagCreated(Event, frozen=True, kw_only=True, tag="TagCreated"):
    """A tag (a value of the type of this stream) exists, ready to be put on flags."""

    not_personal: ClassVar[tuple[str, ...]] = ("tag_type", "value")

    tag_type: str
    value: str
    created_at: datetime
