"""Response bodies of the project and environment routes, built from read-model rows."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    import asyncpg


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


class ProjectList(msgspec.Struct, frozen=True, kw_only=True):
    version: int = 1
    projects: list[Project]


class Environment(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    name: str
    type: str
    sort_order: int
    enabled: bool = True
    protected: bool = False
    project_count: int

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> Environment:
        return cls(
            name=row["name"],
            type=row["type"],
            sort_order=row["sort_order"],
            project_count=row["project_count"],
        )


class EnvironmentList(msgspec.Struct, frozen=True, kw_only=True):
    version: int = 1
    environments: list[Environment]
