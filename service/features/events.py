"""Events of the feature stream (`feature/<name>`)."""

from __future__ import annotations

from datetime import datetime

from service.events import Event


class FeatureCreated(Event, frozen=True, kw_only=True, tag="FeatureCreated"):
    """A flag was created in a project; it starts disabled everywhere, lifecycle `initial`."""

    name: str
    project: str
    feature_type: str
    description: str | None
    impression_data: bool
    created_at: datetime


class FeatureArchived(Event, frozen=True, kw_only=True, tag="FeatureArchived"):
    """The flag was archived; its name stays taken."""

    name: str
    project: str
    archived_at: datetime


class FeatureRevived(Event, frozen=True, kw_only=True, tag="FeatureRevived"):
    """The flag was brought back from the archive, at the lifecycle stage given."""

    name: str
    project: str
    revived_at: datetime
    lifecycle_stage: str
