"""Stored events of favourites: a person marks a flag (on the flag's stream, `feature/<name>`)
or a project (on the project's stream, `project/<id>`) as a favourite, or no longer.

A favourite holds a user id beside a flag's or a project's name: ids are not personal data
(docs/privacy.md, "What is personal"), so nothing here is sealed. The events sit on the flag's
and the project's streams, not on a stream of the person's: the flag's and the project's event
logs show them (as Unleash's do), and a person's deletion leaves nothing of theirs but the id.
"""

from __future__ import annotations

from typing import ClassVar

from eventlog.events.base import Event


class FeatureFavorited(Event, frozen=True, kw_only=True, tag="FeatureFavorited"):
    """A person (`user_id`) marked the flag as one of their favourites."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project")

    name: str
    project: str
    user_id: int


class FeatureUnfavorited(Event, frozen=True, kw_only=True, tag="FeatureUnfavorited"):
    """The flag is no longer one of that person's favourites."""

    not_personal: ClassVar[tuple[str, ...]] = ("name", "project")

    name: str
    project: str
    user_id: int


class ProjectFavorited(Event, frozen=True, kw_only=True, tag="ProjectFavorited"):
    """A person (`user_id`) marked the project as one of their favourites."""

    not_personal: ClassVar[tuple[str, ...]] = ("project_id",)

    project_id: str
    user_id: int


class ProjectUnfavorited(Event, frozen=True, kw_only=True, tag="ProjectUnfavorited"):
    """The project is no longer one of that person's favourites."""

    not_personal: ClassVar[tuple[str, ...]] = ("project_id",)

    project_id: str
    user_id: int
