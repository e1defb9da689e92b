"""Response bodies of the applications routes (Unleash's applicationsSchema, applicationSchema,
applicationOverviewSchema, applicationEnvironmentInstancesSchema, outdatedSdksSchema and
projectApplicationsSchema), built here and only here."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import msgspec

from service.applications.domain import is_outdated

if TYPE_CHECKING:
    from collections.abc import Sequence

    import asyncpg

# Who Unleash says created an application an SDK registered.
SYSTEM_USER: Final = "unleash_system_user"
_usage = msgspec.json.Decoder()


class ApplicationUsage(msgspec.Struct, frozen=True, kw_only=True):
    """The projects (of the SDK tokens; `*`: every one) and environments it runs in."""

    project: str
    environments: list[str]


class ApplicationSummary(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    app_name: str
    created_at: datetime
    updated_at: datetime | None
    description: str | None
    strategies: list[str]
    created_by: str | None
    url: str | None
    color: str | None
    icon: str | None
    usage: list[ApplicationUsage]

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> ApplicationSummary:
        return cls(
            app_name=row["app_name"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            description=row["description"],
            strategies=list(row["strategies"]),
            created_by=SYSTEM_USER if row["reported"] else None,
            url=row["url"],
            color=row["color"],
            icon=row["icon"],
            usage=[ApplicationUsage(**u) for u in _usage.decode(row["usage"])],
        )


class ApplicationList(msgspec.Struct, frozen=True, kw_only=True):
    applications: list[ApplicationSummary]
    total: int

    @classmethod
    def from_rows(cls, rows: Sequence[asyncpg.Record], total: int) -> ApplicationList:
        return cls(applications=[ApplicationSummary.from_row(r) for r in rows], total=total)


class Instance(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    app_name: str
    instance_id: str
    sdk_version: str | None
    client_ip: str | None = None  # not stored (docs/behavior.md, "Applications")
    last_seen: datetime
    created_at: datetime
    environment: str


class Links(msgspec.Struct, frozen=True, kw_only=True):
    self: str


class Application(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One application: `strategies` each a strategy type as GET /api/admin/strategies/:name
    shows it, or `{name, notFound: true}`; `seenToggles` each flag it reported, likewise."""

    app_name: str
    created_at: datetime
    description: str | None
    url: str | None
    color: str | None
    icon: str | None
    strategies: list[dict[str, Any]]
    instances: list[Instance]
    seen_toggles: list[dict[str, Any]]
    links: Links

    @classmethod
    def of(
        cls,
        row: asyncpg.Record,
        strategies: list[dict[str, Any]],
        instances: Sequence[asyncpg.Record],
        flags: Sequence[asyncpg.Record],
    ) -> Application:
        name = row["app_name"]
        return cls(
            app_name=name,
            created_at=row["created_at"],
            description=row["description"],
            url=row["url"],
            color=row["color"],
            icon=row["icon"],
            strategies=strategies,
            instances=[
                Instance(
                    app_name=name,
                    instance_id=i["instance_id"],
                    sdk_version=i["sdk_version"],
                    last_seen=i["last_seen"],
                    created_at=i["first_seen"],
                    environment=i["environment"],
                )
                for i in instances
            ],
            seen_toggles=[_seen_flag(f) for f in flags],
            links=Links(self=f"/api/applications/{name}"),
        )


def _seen_flag(row: asyncpg.Record) -> dict[str, Any]:
    if not row["found"]:
        return {"name": row["feature_name"], "notFound": True}
    return {
        "name": row["feature_name"],
        "description": row["description"],
        "type": row["type"],
        "project": row["project"],
        "stale": row["stale"],
        "createdAt": row["created_at"],
        "lastSeenAt": row["last_seen_at"],
        "impressionData": row["impression_data"],
        "archived": row["archived"],
    }


class EnvironmentIssues(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    missing_features: list[str]
    outdated_sdks: list[str]


class ApplicationEnvironment(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    name: str
    instance_count: int
    sdks: list[str]
    frontend_sdks: list[str]
    backend_sdks: list[str]
    last_seen: datetime | None
    issues: EnvironmentIssues

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> ApplicationEnvironment:
        sdks = list(row["sdks"])
        return cls(
            name=row["environment"],
            instance_count=row["instance_count"],
            sdks=sdks,
            frontend_sdks=[],
            backend_sdks=sdks,  # every instance registered through the client API
            last_seen=row["last_seen"],
            issues=EnvironmentIssues(
                missing_features=[], outdated_sdks=[s for s in sdks if is_outdated(s)]
            ),
        )


class OverviewIssues(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    missing_strategies: list[str]


class ApplicationOverview(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    projects: list[str]
    feature_count: int
    environments: list[ApplicationEnvironment]
    issues: OverviewIssues


class EnvironmentInstance(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    instance_id: str
    client_ip: str | None = None
    sdk_version: str | None
    last_seen: datetime


class EnvironmentInstances(msgspec.Struct, frozen=True, kw_only=True):
    instances: list[EnvironmentInstance]

    @classmethod
    def from_rows(cls, rows: Sequence[asyncpg.Record]) -> EnvironmentInstances:
        return cls(
            instances=[
                EnvironmentInstance(
                    instance_id=r["instance_id"],
                    sdk_version=r["sdk_version"],
                    last_seen=r["last_seen"],
                )
                for r in rows
            ]
        )


class OutdatedSdk(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    sdk_version: str
    applications: list[str]


class OutdatedSdks(msgspec.Struct, frozen=True, kw_only=True):
    sdks: list[OutdatedSdk]

    @classmethod
    def from_rows(cls, rows: Sequence[asyncpg.Record]) -> OutdatedSdks:
        return cls(
            sdks=[
                OutdatedSdk(sdk_version=r["sdk_version"], applications=list(r["applications"]))
                for r in rows
                if is_outdated(r["sdk_version"])
            ]
        )


class ProjectSdk(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    versions: list[str]


class ProjectApplication(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    environments: list[str]
    instances: list[str]
    sdks: list[ProjectSdk]

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> ProjectApplication:
        versions: dict[str, list[str]] = {}
        for sdk in row["sdks"]:
            name, _, version = sdk.partition(":")
            versions.setdefault(name, []).append(version)
        return cls(
            name=row["app_name"],
            environments=list(row["environments"]),
            instances=list(row["instances"]),
            sdks=[ProjectSdk(name=n, versions=v) for n, v in sorted(versions.items())],
        )


class ProjectApplications(msgspec.Struct, frozen=True, kw_only=True):
    applications: list[ProjectApplication]
    total: int

    @classmethod
    def from_rows(cls, rows: Sequence[asyncpg.Record], total: int) -> ProjectApplications:
        return cls(applications=[ProjectApplication.from_row(r) for r in rows], total=total)
