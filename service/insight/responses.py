"""Response bodies of project insight (Unleash's projectDoraMetricsSchema,
healthReportSchema and projectInsightsSchema), built here and only here."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Final

import msgspec

from service.projects.responses import (
    FeatureNaming,
    FeatureTypeCount,
    OverviewEnvironment,
    ProjectStats,
    health,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    import asyncpg

DAY: Final = 86_400.0  # seconds


class LeadTime(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A flag's time from its creation to its first enabling in a production environment, in
    days (fractions of a day included: exact, where Unleash counts whole days)."""

    name: str
    time_to_production: float


class Dora(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    features: list[LeadTime]
    project_average: float

    @classmethod
    def from_rows(cls, rows: Sequence[asyncpg.Record]) -> Dora:
        times = [
            LeadTime(
                name=r["name"],
                time_to_production=max(0.0, (r["enabled_at"] - r["created_at"]).total_seconds())
                / DAY,
            )
            for r in rows
        ]
        average = sum(t.time_to_production for t in times) / len(times) if times else 0.0
        return cls(features=times, project_average=average)


class HealthFlag(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    name: str
    description: str | None
    type: str
    project: str
    stale: bool
    potentially_stale: bool
    created_at: datetime
    last_seen_at: datetime | None
    impression_data: bool

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> HealthFlag:
        return cls(
            name=row["name"],
            description=row["description"],
            type=row["type"],
            project=row["project"],
            stale=row["stale"],
            potentially_stale=row["potentially_stale"],
            created_at=row["created_at"],
            last_seen_at=row["last_seen_at"],
            impression_data=row["impression_data"],
        )


class Counts(msgspec.Struct, frozen=True, kw_only=True):
    """Unleash's counts: active = not stale (potentially stale ones included)."""

    active: int
    potentially_stale: int
    stale: int
    rating: int

    @classmethod
    def of(cls, flags: Sequence[HealthFlag]) -> Counts:
        stale = sum(f.stale for f in flags)
        potentially = sum(f.potentially_stale for f in flags)
        return cls(
            active=len(flags) - stale,
            potentially_stale=potentially,
            stale=stale,
            rating=health(len(flags), stale, potentially),
        )


class HealthReport(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """GET /api/admin/projects/:id/health-report."""

    stats: ProjectStats
    name: str
    description: str | None
    mode: str = "open"
    feature_limit: int | None = None
    feature_naming: FeatureNaming = msgspec.field(default_factory=FeatureNaming)
    default_stickiness: str = "default"
    health: int
    favorite: bool
    updated_at: datetime | None
    created_at: datetime
    environments: list[OverviewEnvironment]
    features: list[HealthFlag]
    members: int = 0
    version: int = 1
    potentially_stale_count: int
    active_count: int
    stale_count: int


class InsightHealth(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    active_count: int
    potentially_stale_count: int
    stale_count: int
    rating: int


class Members(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """No project has members of its own here: roles are root roles."""

    current_members: int = 0
    change: int = 0


class ProjectInsights(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """GET /api/admin/projects/:id/insights."""

    stats: ProjectStats
    feature_type_counts: list[FeatureTypeCount]
    health: InsightHealth
    lead_time: Dora
    members: Members = msgspec.field(default_factory=Members)
