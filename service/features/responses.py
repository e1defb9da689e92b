"""Response bodies of the flag, strategy, tag and segment routes (Unleash's featureSchema and
the schemas in it), built here and only here from read-model rows.

jsonb columns (constraints, variants) hold camelCase JSON (projections/shapes.py), which these
Structs read as it is.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

import msgspec

from eventlog.events.features import FeatureCloned, FeatureCreated
from service.avatars import image_url

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import asyncpg

    from eventlog.events.features import StrategyData
    from eventlog.events.projects import DefaultStrategyData


class Constraint(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    context_name: str
    operator: str
    case_insensitive: bool
    inverted: bool
    values: list[str]
    value: str | None


class Payload(msgspec.Struct, frozen=True, kw_only=True):
    type: str
    value: str


class StrategyVariant(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    name: str
    weight: int
    weight_type: str
    stickiness: str
    payload: Payload | None


class Override(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    context_name: str
    values: list[str]


class Variant(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    name: str
    weight: int
    weight_type: str
    stickiness: str
    payload: Payload | None
    overrides: list[Override]


E = TypeVar("E")

_constraints = msgspec.json.Decoder(list[Constraint])
_strategy_variants = msgspec.json.Decoder(list[StrategyVariant])
_variants = msgspec.json.Decoder(list[Variant])
_parameters = msgspec.json.Decoder(dict[str, str])
_names = msgspec.json.Decoder(list[str])


class Strategy(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    id: str
    name: str
    title: str | None
    disabled: bool
    feature_name: str
    sort_order: int
    segments: list[int]
    constraints: list[Constraint]
    variants: list[StrategyVariant]
    parameters: dict[str, str]

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> Strategy:
        """A row of `feature_strategies` (id, feature_name, name, title, disabled, sort_order,
        segments, constraints, variants, parameters)."""
        return cls(
            id=str(row["id"]),
            name=row["name"],
            title=row["title"],
            disabled=row["disabled"],
            feature_name=row["feature_name"],
            sort_order=row["sort_order"],
            segments=list(row["segments"]),
            constraints=_constraints.decode(row["constraints"]),
            variants=_strategy_variants.decode(row["variants"]),
            parameters=_parameters.decode(row["parameters"]),
        )

    @classmethod
    def copied(cls, feature: str, strategy: StrategyData) -> Strategy:
        """A strategy of a clone, from its event."""
        return cls(
            id=strategy.id,
            name=strategy.name,
            title=strategy.title,
            disabled=strategy.disabled,
            feature_name=feature,
            sort_order=strategy.sort_order,
            segments=list(strategy.segments),
            constraints=_as(strategy.constraints, list[Constraint]),
            variants=_as(strategy.variants, list[StrategyVariant]),
            parameters=dict(strategy.parameters),
        )


def _as(value: object, shape: type[E]) -> E:
    """An event's nested values as the response's shapes (same field names)."""
    return msgspec.convert(value, shape, from_attributes=True)


class FeatureEnvironment(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    name: str
    feature_name: str
    environment: str
    type: str
    enabled: bool
    sort_order: int
    variant_count: int
    strategies: list[Strategy]
    variants: list[Variant]
    last_seen_at: datetime | None = None
    yes: int = 0  # SDKs' evaluations there in the last hour: true
    no: int = 0  # and false
    has_strategies: bool
    has_enabled_strategies: bool

    @classmethod
    def build(  # noqa: PLR0913 - the parts of an environment entry
        cls,
        feature: str,
        *,
        name: str,
        environment_type: str,
        sort_order: int,
        enabled: bool = False,
        strategies: Sequence[Strategy] = (),
        variants: Sequence[Variant] = (),
        last_seen_at: datetime | None = None,
        yes: int = 0,
        no: int = 0,
    ) -> FeatureEnvironment:
        return cls(
            name=name,
            feature_name=feature,
            environment=name,
            type=environment_type,
            enabled=enabled,
            sort_order=sort_order,
            variant_count=len(variants),
            strategies=list(strategies),
            variants=list(variants),
            last_seen_at=last_seen_at,
            yes=yes,
            no=no,
            has_strategies=bool(strategies),
            has_enabled_strategies=any(not s.disabled for s in strategies),
        )


class Tag(msgspec.Struct, frozen=True, kw_only=True):
    value: str
    type: str


class ParentDependency(msgspec.Struct, frozen=True, kw_only=True):
    feature: str
    enabled: bool
    variants: list[str]


class Lifecycle(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A lifecycle stage the flag reached (Unleash's featureLifecycleSchema item): `status`,
    kept or discarded, only in `completed`."""

    stage: str
    status: str | msgspec.UnsetType = msgspec.UNSET
    entered_stage_at: datetime


def stages(row: asyncpg.Record, times: Mapping[tuple[str, int], datetime]) -> list[Lifecycle]:
    """The stages the flag reached since it was (last) created or revived, in their order, from
    what queries.LIFECYCLE_TIMES reads (initial_at to lifecycle_archived_at) and the log's
    times of its enablings (queries.lifecycle_times)."""
    reached = [Lifecycle(stage="initial", entered_stage_at=row["initial_at"])]
    for stage, column in (("pre-live", "pre_live_version"), ("live", "live_version")):
        if (version := row[column]) is not None:
            reached.append(Lifecycle(stage=stage, entered_stage_at=times[row["name"], version]))
    if row["completed_at"] is not None:
        reached.append(
            Lifecycle(
                stage="completed",
                status=row["completed_status"],
                entered_stage_at=row["completed_at"],
            )
        )
    if row["lifecycle_archived_at"] is not None:
        reached.append(Lifecycle(stage="archived", entered_stage_at=row["lifecycle_archived_at"]))
    return reached


class LifecycleCount(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """GET /api/admin/lifecycle/count: how many flags are at each stage now."""

    initial: int
    pre_live: int
    live: int
    completed: int
    archived: int

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> LifecycleCount:
        return cls(
            initial=row["initial"],
            pre_live=row["pre_live"],
            live=row["live"],
            completed=row["completed"],
            archived=row["archived"],
        )


class Collaborator(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Someone who changed a flag, as Unleash shows them: its user id (-42 an API token, -1337
    the system), the name, username or e-mail of an account (or the token's name), the
    account's default avatar."""

    id: int
    name: str
    image_url: str

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> Collaborator:
        """A row of queries.COLLABORATORS_OF."""
        user_id = row["user_id"]
        return cls(
            id=user_id,
            name=row["name"],
            image_url=image_url(row["email"], row["username"], user_id),
        )


class Collaborators(msgspec.Struct, frozen=True, kw_only=True):
    users: list[Collaborator]  # latest change first


class FeatureLink(msgspec.Struct, frozen=True, kw_only=True):
    """A link of a flag (Unleash's featureLinkSchema), in the order they were added."""

    id: str
    url: str
    title: str | None

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> FeatureLink:
        return cls(id=row["id"], url=row["url"], title=row["title"])


def _people(
    rows: Sequence[asyncpg.Record],
) -> tuple[Collaborator | msgspec.UnsetType, Collaborators]:
    """The flag's creator (left out when unknown, as in Unleash) and its collaborators."""
    users = [Collaborator.from_row(r) for r in rows]
    creator = next((u for u, r in zip(users, rows, strict=True) if r["created"]), msgspec.UNSET)
    return creator, Collaborators(users=users)


class Feature(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A flag (Unleash's featureSchema), as create, clone and GET answer it."""

    name: str
    type: str
    description: str | None
    project: str
    enabled: bool
    stale: bool
    potentially_stale: bool = False  # docs/behavior.md, "Potentially stale flags"
    favorite: bool = False
    impression_data: bool
    archived: bool
    created_at: datetime
    created_by: Collaborator | msgspec.UnsetType = msgspec.UNSET
    archived_at: datetime | None
    last_seen_at: datetime | None = None
    environments: list[FeatureEnvironment]
    variants: list[Variant] = []  # deprecated in Unleash: see flag_variants
    strategies: list[Strategy] = []  # deprecated in Unleash; always empty
    tags: list[Tag]
    children: list[str]
    dependencies: list[ParentDependency]
    lifecycle: Lifecycle
    collaborators: Collaborators
    links: list[FeatureLink] = []

    @classmethod
    def created(
        cls,
        event: FeatureCreated | FeatureCloned,
        environments: asyncpg.Record,
        collaborators: Sequence[asyncpg.Record],
        tags: Sequence[Tag] = (),
    ) -> Feature:
        """A new flag, from its event (what the inline projection has just written, without
        reading it back), the environments of its project (`names`, `types`, `sort_orders`
        arrays in display order), its creator's collaborator row and the tags it was created
        with: disabled everywhere, at lifecycle `initial`, no children (nobody can depend on a
        name that was free)."""
        cloned = event if isinstance(event, FeatureCloned) else None
        copied = {e.environment: e for e in cloned.environments} if cloned else {}
        creator, people = _people(collaborators)
        built = [
            FeatureEnvironment.build(
                event.name,
                name=name,
                environment_type=env_type,
                sort_order=sort_order,
                strategies=[
                    Strategy.copied(event.name, s)
                    for s in (copied[name].strategies if name in copied else [])
                ],
                variants=_as(copied[name].variants if name in copied else [], list[Variant]),
            )
            for name, env_type, sort_order in zip(
                environments["names"],
                environments["types"],
                environments["sort_orders"],
                strict=True,
            )
        ]
        return cls(
            name=event.name,
            type=event.feature_type,
            description=event.description,
            project=event.project,
            enabled=False,
            stale=False,
            impression_data=event.impression_data,
            archived=False,
            created_at=event.created_at,
            created_by=creator,
            archived_at=None,
            environments=built,
            variants=flag_variants(built),
            tags=[Tag(value=t.value, type=t.tag_type) for t in cloned.tags]
            if cloned
            else list(tags),
            children=[],
            dependencies=[
                ParentDependency(feature=d.parent, enabled=d.enabled, variants=d.variants)
                for d in (cloned.dependencies if cloned else [])
            ],
            lifecycle=Lifecycle(stage="initial", entered_stage_at=event.created_at),
            collaborators=people,
        )

    @classmethod
    def from_rows(  # noqa: PLR0913, PLR0917 - the parts of FeatureRows, in its order
        cls,
        row: asyncpg.Record,
        environments: Sequence[asyncpg.Record],
        strategies: Sequence[asyncpg.Record],
        collaborators: Sequence[asyncpg.Record],
        links: Sequence[asyncpg.Record] = (),
        times: Mapping[tuple[str, int], datetime] | None = None,
    ) -> Feature:
        """A `features` row with its tags, parents and children (arrays), when an SDK last
        reported it (in any environment) and its lifecycle's times, the rows of its project's
        environments (with the flag's switch, variants and last report there) and its
        strategies, both in display order, its collaborators, latest first, and its links."""
        name = row["name"]
        creator, people = _people(collaborators)
        by_environment: dict[str, list[Strategy]] = {}
        for strategy in strategies:
            by_environment.setdefault(strategy["environment"], []).append(
                Strategy.from_row(strategy)
            )
        built = [
            FeatureEnvironment.build(
                name,
                name=e["name"],
                environment_type=e["type"],
                sort_order=e["sort_order"],
                enabled=e["enabled"],
                strategies=by_environment.get(e["name"], []),
                variants=_variants.decode(e["variants"]),
                last_seen_at=e["last_seen_at"],
                yes=e["yes"],
                no=e["no"],
            )
            for e in environments
        ]
        return cls(
            name=name,
            type=row["type"],
            description=row["description"],
            project=row["project"],
            enabled=any(e.enabled for e in built),
            stale=row["stale"],
            potentially_stale=row["potentially_stale"],
            impression_data=row["impression_data"],
            archived=row["archived_at"] is not None,
            created_at=row["created_at"],
            created_by=creator,
            archived_at=row["archived_at"],
            last_seen_at=row["last_seen_at"],
            environments=built,
            variants=flag_variants(built),
            tags=[
                Tag(value=value, type=tag_type)
                for tag_type, value in zip(row["tag_types"], row["tag_values"], strict=True)
            ],
            children=list(row["children"]),
            dependencies=[
                ParentDependency(feature=parent, enabled=enabled, variants=_names.decode(variants))
                for parent, enabled, variants in zip(
                    row["parents"], row["parents_enabled"], row["parents_variants"], strict=True
                )
            ],
            lifecycle=stages(row, times or {})[-1],
            collaborators=people,
            links=[FeatureLink.from_row(link) for link in links],
        )


def flag_variants(environments: Sequence[FeatureEnvironment]) -> list[Variant]:
    """A flag's deprecated top-level `variants`, as Unleash 6.10.1 shows them beside the
    environments' (its UI and old clients read them): every environment's variants, in display
    order, one a name; a name keeps its first place and takes the last environment's variant."""
    merged: dict[str, Variant] = {}
    for environment in environments:
        for variant in environment.variants:
            merged[variant.name] = variant
    return list(merged.values())


class FeatureList(msgspec.Struct, frozen=True, kw_only=True):
    version: int = 1
    features: list[Feature]


class FlagTag(msgspec.Struct, frozen=True, kw_only=True):
    """A tag of a flag as its tags' routes show it: with its type's colour (None: none)."""

    value: str
    type: str
    color: str | None


class TagList(msgspec.Struct, frozen=True, kw_only=True):
    version: int = 1
    tags: list[FlagTag]

    @classmethod
    def from_rows(cls, rows: Sequence[asyncpg.Record]) -> TagList:
        return cls(tags=[FlagTag(value=r["value"], type=r["type"], color=r["color"]) for r in rows])


class VariantList(msgspec.Struct, frozen=True, kw_only=True):
    version: int = 1
    variants: list[Variant]

    @classmethod
    def from_column(cls, variants: str) -> VariantList:
        return cls(variants=_variants.decode(variants))


class SegmentStrategy(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A strategy that uses a segment (Unleash's segmentStrategiesSchema item)."""

    id: str
    project_id: str
    feature_name: str
    strategy_name: str
    environment: str

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> SegmentStrategy:
        return cls(
            id=row["id"],
            project_id=row["project"],
            feature_name=row["feature_name"],
            strategy_name=row["name"],
            environment=row["environment"],
        )


class SegmentStrategies(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Unleash's segmentStrategiesSchema. Change requests are Unleash Enterprise's: that list is
    always empty, and present, since Unleash's UI offers to delete a segment only when both
    lists are empty."""

    strategies: list[SegmentStrategy]
    change_request_strategies: list[SegmentStrategy] = msgspec.field(default_factory=list)


class Segment(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    id: int
    name: str
    description: str | None
    constraints: list[Constraint]
    created_at: datetime
    project: str | None = None
    # The list's: how many active flags, and their projects, use it (as Unleash's list says).
    used_in_features: int | msgspec.UnsetType = msgspec.UNSET
    used_in_projects: int | msgspec.UnsetType = msgspec.UNSET

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> Segment:
        return cls(
            id=row["id"],
            name=row["name"],
            description=row["description"],
            constraints=_constraints.decode(row["constraints"]),
            created_at=row["created_at"],
        )


class SegmentList(msgspec.Struct, frozen=True, kw_only=True):
    segments: list[Segment]


class ArchivedEnvironment(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """An environment an SDK reported an archived flag in."""

    name: str
    last_seen_at: datetime
    enabled: bool


class ArchivedFeature(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """An archived flag (Unleash's archivedFeatureSchema, its fields in its order)."""

    name: str
    description: str | None
    type: str
    project: str
    stale: bool
    created_at: datetime
    impression_data: bool
    last_seen_at: datetime | None
    archived_at: datetime
    environments: list[ArchivedEnvironment]

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> ArchivedFeature:
        """A row of ARCHIVED_FEATURES: the flag, and three arrays of the environments an SDK
        reported it in (names, times, switches) in name order."""
        return cls(
            name=row["name"],
            description=row["description"],
            type=row["type"],
            project=row["project"],
            stale=row["stale"],
            created_at=row["created_at"],
            impression_data=row["impression_data"],
            last_seen_at=row["last_seen_at"],
            archived_at=row["archived_at"],
            environments=[
                ArchivedEnvironment(name=name, last_seen_at=seen_at, enabled=enabled)
                for name, seen_at, enabled in zip(
                    row["seen_in"], row["seen_at"], row["seen_enabled"], strict=True
                )
            ],
        )


class ArchivedFeatureList(msgspec.Struct, frozen=True, kw_only=True):
    """GET /api/admin/archive/features[/:projectId] (Unleash's archivedFeaturesSchema)."""

    version: int = 2
    features: list[ArchivedFeature]


class ArchiveCheck(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What archiving these flags would do (Unleash's validateArchiveFeaturesSchema): the flags
    that other flags outside the list depend on (the archive refuses them), and whether any
    dependency of or on them goes with the archive."""

    parents_with_child_features: list[str]
    has_deleted_dependencies: bool


class DefaultStrategy(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A project environment's default strategy (Unleash's createFeatureStrategySchema)."""

    name: str
    title: str | None
    disabled: bool
    constraints: list[Constraint]
    parameters: dict[str, str]
    variants: list[StrategyVariant]
    segments: list[int]

    @classmethod
    def of(cls, data: DefaultStrategyData) -> DefaultStrategy:
        return _as(data, DefaultStrategy)


class FeatureEnvironmentDetail(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """GET .../features/:name/environments/:environment (Unleash's featureEnvironmentSchema):
    the flag in one environment of its project."""

    name: str
    environment: str
    type: str
    enabled: bool
    sort_order: int
    strategies: list[Strategy]
    variants: list[Variant]
    last_seen_at: datetime | None

    @classmethod
    def of(cls, environment: FeatureEnvironment) -> FeatureEnvironmentDetail:
        return cls(
            name=environment.feature_name,
            environment=environment.environment,
            type=environment.type,
            enabled=environment.enabled,
            sort_order=environment.sort_order,
            strategies=environment.strategies,
            variants=environment.variants,
            last_seen_at=environment.last_seen_at,
        )
