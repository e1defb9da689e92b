"""Stored events of feature types (stream `feature-type/<id>`): the built-in types, recorded
at the first start, and changes of their expected lifetime."""

from __future__ import annotations

from typing import ClassVar

from eventlog.events.base import Event


class FeatureTypeDefined(Event, frozen=True, kw_only=True, tag="FeatureTypeDefined"):
    """A feature type exists (flags are created with one of them), with its display name,
    its place in lists and its expected lifetime in days (None: flags of it never become
    potentially stale)."""

    not_personal: ClassVar[tuple[str, ...]] = ("feature_type_id", "name", "description")

    feature_type_id: str
    name: str
    description: str
    lifetime_days: int | None
    sort_order: int


class FeatureTypeLifetimeChanged(
    Event, frozen=True, kw_only=True, tag="FeatureTypeLifetimeChanged"
):
    """The type's expected lifetime in days from now on (None: never potentially stale)."""

    not_personal: ClassVar[tuple[str, ...]] = ("feature_type_id",)

    feature_type_id: str
    lifetime_days: int | None
