"""The client API's model: every flag that is not archived, with all its environments, and the
segments, as SDKs are given them. Loaded from the read models and kept current by the feed
(service/client/feed.py); immutable: a change makes a new model that shares what did not
change. What one token with one query sees (`Scope`) is cut from it here, without I/O."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec

from service.client.responses import (
    Constraint,
    Dependency,
    Feature,
    Features,
    Meta,
    Query,
    Segment,
    Strategy,
    StrategyVariant,
    Variant,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    import asyncpg

VERSION = 2

_constraints = msgspec.json.Decoder(list[Constraint])
_strategy_variants = msgspec.json.Decoder(list[StrategyVariant])
_variants = msgspec.json.Decoder(list[Variant])
_parameters = msgspec.json.Decoder(dict[str, str])
_names = msgspec.json.Decoder(list[str])
_encoder = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class Environment:
    enabled: bool = False
    variants: tuple[Variant, ...] = ()
    strategies: tuple[Strategy, ...] = ()  # in order: sortOrder, then id


@dataclass(frozen=True, slots=True)
class Flag:
    name: str
    project: str
    type: str
    description: str | None
    stale: bool
    impression_data: bool
    environments: Mapping[str, Environment]
    tags: frozenset[tuple[str, str]]
    dependencies: tuple[Dependency, ...]
    # The flag as one environment's SDKs see it, made once per flag and environment.
    _seen: dict[tuple[str, bool], Feature] = field(default_factory=dict, compare=False)

    def feature(self, environment: str, *, available: bool = True) -> Feature:
        """In an environment its project does not have (any more), a flag is off, with no
        strategies or variants (Unleash deletes its environment's rows when a project drops
        an environment)."""
        found = self._seen.get((environment, available))
        if found is None:
            env = self.environments.get(environment, _OFF) if available else _OFF
            found = self._seen[environment, available] = Feature(
                name=self.name,
                type=self.type,
                description=self.description,
                enabled=env.enabled,
                stale=self.stale,
                impression_data=self.impression_data,
                project=self.project,
                strategies=list(env.strategies),
                variants=list(env.variants),
                dependencies=list(self.dependencies),
            )
        return found


_OFF = Environment()


@dataclass(frozen=True, slots=True)
class Scope:
    """What one request may see and asked for: the token's environment and projects (None:
    all), narrowed by the query's `project`, `namePrefix` and `tag` filters."""

    environment: str
    projects: frozenset[str] | None = None
    name_prefix: str | None = None
    tags: frozenset[tuple[str, str]] | None = None
    inline_segments: bool = False

    def shows(self, flag: Flag) -> bool:
        return (
            (self.projects is None or flag.project in self.projects)
            and (self.name_prefix is None or flag.name.startswith(self.name_prefix))
            and (self.tags is None or not self.tags.isdisjoint(flag.tags))
        )

    def query(self) -> Query:
        return Query(
            environment=self.environment,
            project=None if self.projects is None else sorted(self.projects),
            name_prefix=self.name_prefix,
            tag=None if self.tags is None else [list(t) for t in sorted(self.tags)],
            inline_segment_constraints=self.inline_segments,
        )

    def hash(self) -> str:
        return _query_hash(self)


@functools.lru_cache(maxsize=1024)  # every request's ETag names its scope's hash
def _query_hash(scope: Scope) -> str:
    return hashlib.sha256(_encoder.encode(scope.query())).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Model:
    """`head`: the log position the model is read up to; `revision`: the position of the last
    event that changed what SDKs see (ETags and streaming event ids are made from it)."""

    head: int
    revision: int
    flags: Mapping[str, Flag]  # by name, in name order
    segments: Mapping[int, Segment]  # by id, in id order
    # Each project's environments: a flag is off in the others.
    project_environments: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def visible(self, scope: Scope) -> list[Flag]:
        return [flag for flag in self.flags.values() if scope.shows(flag)]

    def feature(self, flag: Flag, scope: Scope) -> Feature:
        """The flag as the scope's SDKs evaluate it; segments inlined into the constraints of
        each strategy for SDKs that do not declare segment support."""
        available = scope.environment in self.project_environments.get(flag.project, ())
        feature = flag.feature(scope.environment, available=available)
        if not scope.inline_segments:
            return feature
        strategies = [
            msgspec.structs.replace(
                s,
                constraints=[
                    *s.constraints,
                    *(c for i in s.segments or () for c in self._constraints_of(i)),
                ],
                segments=None,
            )
            for s in feature.strategies
        ]
        return msgspec.structs.replace(feature, strategies=strategies)

    def _constraints_of(self, segment_id: int) -> list[Constraint]:
        segment = self.segments.get(segment_id)
        return [] if segment is None else segment.constraints

    def etag(self, scope: Scope, name: str | None = None) -> str:
        """Of the whole list, or of one flag (`name`)."""
        if name is not None:
            return f'"{scope.hash()}:{self.revision}:{name}"'
        return f'"{scope.hash()}:{self.revision}:v1"'

    def used_segments(self, features: Iterable[Feature]) -> list[Segment]:
        """The segments these flags' strategies use (Unleash sends every segment that any
        strategy uses; a token here learns only of those its own flags use)."""
        used = {i for f in features for s in f.strategies for i in s.segments or ()}
        return [segment for i, segment in self.segments.items() if i in used]

    def features(self, scope: Scope) -> Features:
        etag = self.etag(scope)
        features = [self.feature(flag, scope) for flag in self.visible(scope)]
        return Features(
            version=VERSION,
            features=features,
            query=scope.query(),
            meta=Meta(revision_id=self.revision, etag=etag, query_hash=scope.hash()),
            segments=None if scope.inline_segments else self.used_segments(features),
        )


EMPTY = Model(head=-1, revision=0, flags={}, segments={})


# --- made from read-model rows ---------------------------------------------------------------


@dataclass(slots=True)
class Rows:
    """What the read models hold for some flags (or all of them), and the segments."""

    features: Sequence[asyncpg.Record]
    environments: Sequence[asyncpg.Record]
    strategies: Sequence[asyncpg.Record]
    tags: Sequence[asyncpg.Record]
    dependencies: Sequence[asyncpg.Record]
    segments: Sequence[asyncpg.Record]
    project_environments: Sequence[asyncpg.Record] = ()


def flags_from(rows: Rows) -> dict[str, Flag]:
    """The flags these rows describe, each whole."""
    strategies: dict[tuple[str, str], list[tuple[int, str, Strategy]]] = {}
    for r in rows.strategies:
        strategies.setdefault((r["feature_name"], r["environment"]), []).append(
            (
                r["sort_order"],
                r["id"],
                Strategy(
                    name=r["name"],
                    constraints=_constraints.decode(r["constraints"]),
                    parameters=_parameters.decode(r["parameters"]),
                    variants=_strategy_variants.decode(r["variants"]),
                    sort_order=r["sort_order"],
                    segments=sorted(r["segments"]),
                ),
            )
        )
    switches = {(r["feature_name"], r["environment"]): r for r in rows.environments}
    environments: dict[str, dict[str, Environment]] = {}
    for key in switches.keys() | strategies.keys():
        switch = switches.get(key)
        environments.setdefault(key[0], {})[key[1]] = Environment(
            enabled=bool(switch and switch["enabled"]),
            variants=tuple(_variants.decode(switch["variants"])) if switch else (),
            strategies=tuple(s for _, _, s in sorted(strategies.get(key, ()), key=_order)),
        )
    tags: dict[str, set[tuple[str, str]]] = {}
    for r in rows.tags:
        tags.setdefault(r["feature_name"], set()).add((r["type"], r["value"]))
    dependencies: dict[str, list[Dependency]] = {}
    for r in rows.dependencies:
        dependencies.setdefault(r["child"], []).append(
            Dependency(
                feature=r["parent"],
                enabled=r["enabled"],
                variants=_names.decode(r["variants"]) if r["enabled"] else None,
            )
        )
    return {
        r["name"]: Flag(
            name=r["name"],
            project=r["project"],
            type=r["type"],
            description=r["description"],
            stale=r["stale"],
            impression_data=r["impression_data"],
            environments=environments.get(r["name"], {}),
            tags=frozenset(tags.get(r["name"], ())),
            dependencies=tuple(dependencies.get(r["name"], ())),
        )
        for r in rows.features
    }


def _order(item: tuple[int, str, Strategy]) -> tuple[int, str]:
    return item[0], item[1]


def project_environments_from(rows: Iterable[asyncpg.Record]) -> dict[str, frozenset[str]]:
    found: dict[str, set[str]] = {}
    for r in rows:
        found.setdefault(r["project_id"], set()).add(r["environment"])
    return {project: frozenset(envs) for project, envs in found.items()}


def segments_from(rows: Iterable[asyncpg.Record]) -> dict[int, Segment]:
    return {
        r["id"]: Segment(
            id=r["id"], name=r["name"], constraints=_constraints.decode(r["constraints"])
        )
        for r in rows
    }


def updated(
    model: Model,
    head: int,
    revision: int,
    flags: Mapping[str, Flag | None],
    segments: Mapping[int, Segment] | None,
) -> Model:
    """The model with these flags replaced (None: gone, archived) and, when given, the
    segments, read up to `head`, changed last at `revision`."""
    merged = dict(model.flags)
    for name, flag in flags.items():
        if flag is None:
            merged.pop(name, None)
        else:
            merged[name] = flag
    return Model(
        head=head,
        revision=revision,
        flags=dict(sorted(merged.items())),
        segments=model.segments if segments is None else segments,
        project_environments=model.project_environments,
    )
