"""Response bodies of the flag table (Unleash's searchFeaturesSchema and the
featureSearchResponseSchema of each flag in it), built here and only here from rows."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Final

import msgspec

from service.avatars import image_url
from service.features.responses import Lifecycle, Tag, stages

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import asyncpg

# Unleash's names for its two users that are no person.
_NAMED: Final = {-42: "Unleash Admin Token User", -1337: "Unleash System"}


class SearchEnvironment(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    name: str
    enabled: bool
    type: str
    sort_order: int
    variant_count: int
    last_seen_at: datetime | None
    has_strategies: bool
    has_enabled_strategies: bool
    yes: int  # evaluations to true in the last hour
    no: int
    change_request_ids: list[int] = []  # no change requests in the open-source edition

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> SearchEnvironment:
        return cls(
            name=row["name"],
            enabled=row["enabled"],
            type=row["type"],
            sort_order=row["sort_order"],
            variant_count=row["variant_count"],
            last_seen_at=row["last_seen_at"],
            has_strategies=row["has_strategies"],
            has_enabled_strategies=row["has_enabled_strategies"],
            yes=row["yes"],
            no=row["no"],
        )


class CreatedBy(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    id: int
    name: str
    image_url: str

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> CreatedBy:
        """The creator as their account names them now; `unknown` (id 0) when the flag's
        creator is not known or their account is gone, as Unleash shows it."""
        user_id = row["creator_id"]
        name = _NAMED.get(user_id) if user_id is not None else None
        email, username = row["creator_email"], row["creator_username"]
        name = name or row["creator_name"] or username or email
        if name is None:
            return cls(id=0, name="unknown", image_url=image_url(None, "unknown", 0))
        return cls(id=user_id, name=name, image_url=image_url(email, username or name, user_id))


class SearchedFeature(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    type: str
    description: str | None
    project: str
    favorite: bool
    name: str
    created_at: datetime
    stale: bool
    potentially_stale: bool
    archived_at: datetime | None
    impression_data: bool
    last_seen_at: datetime | None
    dependency_type: str | None
    environments: list[SearchEnvironment]
    segments: list[str]
    created_by: CreatedBy
    lifecycle: Lifecycle
    tags: list[Tag]

    @classmethod
    def from_rows(
        cls,
        row: asyncpg.Record,
        environments: Sequence[asyncpg.Record],
        times: Mapping[tuple[str, int], datetime],
    ) -> SearchedFeature:
        """A row of PAGE_ROWS, its rows of PAGE_ENVIRONMENTS and the log's times of the
        enablings its lifecycle names (service/features/queries.lifecycle_times)."""
        return cls(
            type=row["type"],
            description=row["description"],
            project=row["project"],
            favorite=row["favorite"],
            name=row["name"],
            created_at=row["created_at"],
            stale=row["stale"],
            potentially_stale=row["potentially_stale"],
            archived_at=row["archived_at"],
            impression_data=row["impression_data"],
            last_seen_at=row["last_seen_at"],
            dependency_type=row["dependency"],
            environments=[SearchEnvironment.from_row(e) for e in environments],
            segments=list(row["segments"]),
            created_by=CreatedBy.from_row(row),
            lifecycle=stages(row, times)[-1],
            tags=[
                Tag(value=value, type=tag_type)
                for tag_type, value in zip(row["tag_types"], row["tag_values"], strict=True)
            ],
        )


class SearchResult(msgspec.Struct, frozen=True, kw_only=True):
    features: list[SearchedFeature]
    total: int
