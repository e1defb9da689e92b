"""Response bodies of the project and environment routes, built from read-model rows."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import msgspec

from eventlog.events.projects import DefaultStrategyData
from service.features.responses import Tag
from service.projects.domain import PROTECTED_ENVIRONMENT

if TYPE_CHECKING:
    import asyncpg

    from service.features.responses import Feature


class Project(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    id: str
    name: str
    description: str | None
    created_at: datetime
    archived_at: datetime | None
    feature_count: int
    mode: str = "open"

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> Project:
        return cls(
            id=row["id"],
            name=row["name"],
            description=row["description"],
            created_at=row["created_at"],
            archived_at=row["archived_at"],
            feature_count=row["feature_count"],
        )


class ProjectEnvironment(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    environment: str
    type: str
    sort_order: int


class ProjectDetail(Project, frozen=True, kw_only=True):
    environments: list[ProjectEnvironment]

    @classmethod
    def from_rows(cls, row: asyncpg.Record, environments: list[asyncpg.Record]) -> ProjectDetail:
        return cls(
            **msgspec.structs.asdict(Project.from_row(row)),
            environments=[
                ProjectEnvironment(
                    environment=e["name"], type=e["type"], sort_order=e["sort_order"]
                )
                for e in environments
            ],
        )


class EnvironmentDetail(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Unleash's environmentSchema. Only `default` is protected, as in Unleash (a new install
    here has no such environment; an import from Unleash brings it), and the open-source
    edition has no change requests (requiredApprovals null)."""

    name: str
    type: str
    sort_order: int
    enabled: bool
    protected: bool = False
    required_approvals: int | None = None

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> EnvironmentDetail:
        return cls(
            name=row["name"],
            type=row["type"],
            sort_order=row["sort_order"],
            enabled=row["enabled"],
            protected=row["name"] == PROTECTED_ENVIRONMENT,
        )


class Environment(EnvironmentDetail, frozen=True, kw_only=True):
    project_count: int
    api_token_count: int = 0
    enabled_toggle_count: int = 0

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> Environment:
        return cls(
            name=row["name"],
            type=row["type"],
            sort_order=row["sort_order"],
            enabled=row["enabled"],
            protected=row["name"] == PROTECTED_ENVIRONMENT,
            project_count=row["project_count"],
            api_token_count=row.get("api_token_count", 0),
            enabled_toggle_count=row.get("enabled_toggle_count", 0),
        )


class EnvironmentList(msgspec.Struct, frozen=True, kw_only=True):
    version: int = 1
    environments: list[Environment]


class ProjectEnvironmentInfo(EnvironmentDetail, frozen=True, kw_only=True):
    """Unleash's projectEnvironmentSchema as GET /api/admin/environments/project/:id gives it."""

    project_api_token_count: int
    project_enabled_toggle_count: int
    visible: bool

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> ProjectEnvironmentInfo:
        return cls(
            name=row["name"],
            type=row["type"],
            sort_order=row["sort_order"],
            enabled=row["enabled"],
            protected=row["name"] == PROTECTED_ENVIRONMENT,
            project_api_token_count=row["project_api_token_count"],
            project_enabled_toggle_count=row["project_enabled_toggle_count"],
            visible=row["visible"],
        )


class ProjectEnvironmentList(msgspec.Struct, frozen=True, kw_only=True):
    version: int = 1
    environments: list[ProjectEnvironmentInfo]


# --- the projects list, a project's overview and status, as Unleash's UI reads them ---------


def health(active_flags: int, stale_flags: int, potentially_stale_flags: int) -> int:
    """Unleash's health rating of a set of active flags: 100 less the share of stale ones and
    the share of potentially stale ones (percent, rounded); 100 without flags."""
    if not active_flags:
        return 100
    # Half up, as JavaScript's Math.round (Python's round() halves to even).
    return int(
        100 - 100 * stale_flags / active_flags - 100 * potentially_stale_flags / active_flags + 0.5
    )


class ProjectOwner(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Unleash's owner when a project has no owners (the open-source edition has none)."""

    owner_type: str = "system"


SYSTEM_OWNERS: list[ProjectOwner] = [ProjectOwner()]


class ProjectSummary(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A project as the projects list shows it (Unleash's projectSchema)."""

    name: str
    id: str
    description: str | None
    health: int
    feature_count: int
    member_count: int = 0  # no project has members of its own: roles are root roles
    created_at: datetime
    archived_at: datetime | None
    mode: str = "open"
    last_reported_flag_usage: datetime | None
    last_updated_at: datetime | None
    owners: list[ProjectOwner]
    favorite: bool

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> ProjectSummary:
        """A row of PROJECTS_FOR_UI."""
        return cls(
            name=row["name"],
            id=row["id"],
            description=row["description"],
            health=health(row["feature_count"], row["stale_flags"], row["potentially_stale_flags"]),
            feature_count=row["feature_count"],
            created_at=row["created_at"],
            archived_at=row["archived_at"],
            last_reported_flag_usage=row["last_reported_flag_usage"],
            last_updated_at=row["last_updated_at"],
            owners=SYSTEM_OWNERS,
            favorite=row["favorite"],
        )


class ProjectSummaryList(msgspec.Struct, frozen=True, kw_only=True):
    version: int = 1
    projects: list[ProjectSummary]


class ProjectStats(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The last 30 days (current window) beside the 30 before (past window)."""

    avg_time_to_prod_current_window: float = 0
    created_current_window: int
    created_past_window: int
    archived_current_window: int
    archived_past_window: int
    project_activity_current_window: int
    project_activity_past_window: int
    project_members_added_current_window: int = 0


class FeatureNaming(msgspec.Struct, frozen=True, kw_only=True):
    pattern: str | None = None
    example: str | None = None
    description: str | None = None


class OnboardingStatus(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`onboarding-started` (no flag yet), `first-flag-created` (with that flag) or
    `onboarded` (an SDK reported one of its flags)."""

    status: str
    feature: str | None = None

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> OnboardingStatus:
        if row["onboarded"]:
            return cls(status="onboarded")
        if row["first_flag"] is None:
            return cls(status="onboarding-started")
        return cls(status="first-flag-created", feature=row["first_flag"])


class DefaultConstraint(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    context_name: str
    operator: str
    case_insensitive: bool
    inverted: bool
    values: list[str]
    value: str | None


class DefaultPayload(msgspec.Struct, frozen=True, kw_only=True):
    type: str
    value: str


class DefaultVariant(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    name: str
    weight: int
    weight_type: str
    stickiness: str
    payload: DefaultPayload | None


class EnvironmentDefaultStrategy(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A project environment's default strategy, as its route answered it."""

    name: str
    title: str | None
    disabled: bool
    constraints: list[DefaultConstraint]
    parameters: dict[str, str]
    variants: list[DefaultVariant]
    segments: list[int]


_default_strategy = msgspec.json.Decoder(DefaultStrategyData)


class OverviewEnvironment(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """An environment of the project; `defaultStrategy` only once one was set (as Unleash)."""

    environment: str
    default_strategy: EnvironmentDefaultStrategy | msgspec.UnsetType = msgspec.UNSET

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> OverviewEnvironment:
        stored = row["default_strategy"]
        if stored is None:
            return cls(environment=row["name"])
        strategy = msgspec.convert(
            _default_strategy.decode(stored), EnvironmentDefaultStrategy, from_attributes=True
        )
        return cls(environment=row["name"], default_strategy=strategy)


class FeatureTypeCount(msgspec.Struct, frozen=True, kw_only=True):
    type: str
    count: int


class ProjectOverview(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """GET /api/admin/projects/:projectId/overview (Unleash's projectOverviewSchema)."""

    stats: ProjectStats
    name: str
    description: str | None
    mode: str = "open"
    feature_limit: int | None = None
    feature_naming: FeatureNaming = msgspec.field(default_factory=FeatureNaming)
    default_stickiness: str = "default"
    health: int
    favorite: bool
    updated_at: datetime | None = None
    archived_at: datetime | None
    created_at: datetime
    onboarding_status: OnboardingStatus
    environments: list[OverviewEnvironment]
    feature_type_counts: list[FeatureTypeCount]
    members: int = 0
    version: int = 1


class ProjectResources(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    members: int = 0
    api_tokens: int
    segments: int = 0  # segments are global here: none is a project's own


class ActivityCount(msgspec.Struct, frozen=True, kw_only=True):
    date: str  # yyyy-mm-dd, a UTC day
    count: int


class CurrentHealth(msgspec.Struct, frozen=True, kw_only=True):
    current: int


class StageSummary(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    # The days flags stayed in the stage before the next: null, as no stage's history is
    # kept yet (the read model holds each flag's current stage only).
    average_days: float | None = None
    current_flags: int


class ArchivedSummary(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    current_flags: int
    last30_days: int = msgspec.field(name="last30Days")


class LifecycleSummary(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    initial: StageSummary
    pre_live: StageSummary
    live: StageSummary
    completed: StageSummary
    archived: ArchivedSummary

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> LifecycleSummary:
        return cls(
            initial=StageSummary(current_flags=row["initial"]),
            pre_live=StageSummary(current_flags=row["pre_live"]),
            live=StageSummary(current_flags=row["live"]),
            completed=StageSummary(current_flags=row["completed"]),
            archived=ArchivedSummary(
                current_flags=row["archived"], last30_days=row["archived_30_days"]
            ),
        )


class StaleFlags(msgspec.Struct, frozen=True, kw_only=True):
    total: int


class ProjectStatus(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """GET /api/admin/projects/:projectId/status (Unleash's projectStatusSchema)."""

    resources: ProjectResources
    activity_count_by_date: list[ActivityCount]
    health: CurrentHealth
    lifecycle_summary: LifecycleSummary
    stale_flags: StaleFlags


class FlagCreator(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    name: str


class OverviewFlagEnvironment(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    name: str
    enabled: bool
    type: str
    sort_order: int
    variant_count: int
    last_seen_at: datetime | None
    has_strategies: bool
    has_enabled_strategies: bool


class OverviewFlag(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A flag as Unleash's deprecated project overview lists it (its featureSchema, as its
    getFeatureOverview fills it)."""

    type: str
    description: str | None
    name: str
    created_at: datetime
    stale: bool
    impression_data: bool
    last_seen_at: datetime | None
    environments: list[OverviewFlagEnvironment]
    tags: list[Tag] | msgspec.UnsetType = msgspec.UNSET  # only when it has some, as Unleash

    @classmethod
    def of(cls, flag: Feature) -> OverviewFlag:
        return cls(
            type=flag.type,
            description=flag.description,
            name=flag.name,
            created_at=flag.created_at,
            stale=flag.stale,
            impression_data=flag.impression_data,
            last_seen_at=flag.last_seen_at,
            environments=[
                OverviewFlagEnvironment(
                    name=e.name,
                    enabled=e.enabled,
                    type=e.type,
                    sort_order=e.sort_order,
                    variant_count=e.variant_count,
                    last_seen_at=e.last_seen_at,
                    has_strategies=e.has_strategies,
                    has_enabled_strategies=e.has_enabled_strategies,
                )
                for e in flag.environments
            ],
            tags=list(flag.tags) or msgspec.UNSET,
        )


class DeprecatedProjectOverview(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """GET /api/admin/projects/:projectId (Unleash's deprecatedProjectOverviewSchema): the
    overview's fields with the project's active flags; `updatedAt` is when Unleash's health
    job last ran, which has no counterpart here (null)."""

    stats: ProjectStats
    name: str
    description: str | None
    mode: str = "open"
    feature_limit: int | None = None
    feature_naming: FeatureNaming = msgspec.field(default_factory=FeatureNaming)
    default_stickiness: str = "default"
    health: int
    favorite: bool
    updated_at: datetime | None = None
    created_at: datetime
    environments: list[OverviewEnvironment]
    features: list[OverviewFlag]
    members: int = 0
    version: int = 1
