"""Unleash's client format (clientFeaturesSchema, and the delta events of its streaming): what
SDKs evaluate. Fields an SDK does not need when empty are left out, as Unleash does (a
variant's payload, a constraint's single value); strategy ids never go out (old Go SDKs break
on them).

The parts of a flag (Constraint .. Feature, Segment) are kept for the process's life in the
client model, tens of thousands of them: `gc=False` keeps them out of the cyclic collector's
passes (they are frozen trees made from decoded JSON: no cycle can go through them)."""

from __future__ import annotations

import msgspec


class Constraint(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True, gc=False
):
    context_name: str
    operator: str
    case_insensitive: bool
    inverted: bool
    values: list[str]
    value: str | None = None


class Payload(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    type: str
    value: str


class StrategyVariant(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    rename="camel",
    omit_defaults=True,
    gc=False,
):
    name: str
    weight: int
    weight_type: str
    stickiness: str
    payload: Payload | None = None


class Override(msgspec.Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    context_name: str
    values: list[str]


class Variant(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True, gc=False
):
    name: str
    weight: int
    weight_type: str
    stickiness: str
    payload: Payload | None = None
    overrides: list[Override]


class Strategy(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True, gc=False
):
    """`segments`: the ids of the segments it needs (left out when they are inlined into
    `constraints`, for SDKs that do not declare segment support)."""

    name: str
    constraints: list[Constraint]
    parameters: dict[str, str]
    variants: list[StrategyVariant]
    sort_order: int
    segments: list[int] | None = None


class Dependency(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """A parent flag: `enabled` false means the parent must be off; `variants` (only with
    enabled) the parent variants of which one must be picked."""

    feature: str
    enabled: bool
    variants: list[str] | None = None


class Feature(msgspec.Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    name: str
    type: str
    description: str | None
    enabled: bool
    stale: bool
    impression_data: bool
    project: str
    strategies: list[Strategy]
    variants: list[Variant]
    dependencies: list[Dependency]


class Segment(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    id: int
    name: str
    constraints: list[Constraint]


class Query(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """The query the answer is for: the token's scope with the request's filters."""

    environment: str
    project: list[str] | None = None
    name_prefix: str | None = None
    tag: list[list[str]] | None = None
    inline_segment_constraints: bool = False


class Meta(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """`revisionId`: the log position of the last change the client API shows."""

    revision_id: int
    etag: str
    query_hash: str


class Features(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """GET /api/client/features. `segments` is left out when they are inlined."""

    version: int
    features: list[Feature]
    query: Query
    meta: Meta
    segments: list[Segment] | None = None


# --- streaming: Unleash's delta events ---------------------------------------------------------


class Hydration(msgspec.Struct, frozen=True, kw_only=True, rename="camel", tag="hydration"):
    event_id: int
    features: list[Feature]
    segments: list[Segment]


class FeatureUpdated(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", tag="feature-updated"
):
    event_id: int
    feature: Feature


class FeatureRemoved(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", tag="feature-removed"
):
    event_id: int
    feature_name: str
    project: str


class SegmentUpdated(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", tag="segment-updated"
):
    event_id: int
    segment: Segment


class SegmentRemoved(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", tag="segment-removed"
):
    event_id: int
    segment_id: int


DeltaEvent = Hydration | FeatureUpdated | FeatureRemoved | SegmentUpdated | SegmentRemoved


class Delta(msgspec.Struct, frozen=True, kw_only=True):
    """The data of an `unleash-connected` or `unleash-updated` server-sent event."""

    events: list[DeltaEvent]
