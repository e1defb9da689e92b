"""Request bodies of the flag, strategy, tag, dependency, clone and segment routes, with the
API's limits. Unknown fields are ignored, never honoured.

Each Struct's `example` is the request body the OpenAPI document shows (service/openapi.py).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import msgspec

from service.names import Name

FeatureType = Literal["experiment", "kill-switch", "release", "operational", "permission"]
Description = Annotated[str, msgspec.Meta(max_length=10_000)]


class CreateFeature(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    example: ClassVar[dict[str, object]] = {
        "name": "new-checkout",
        "type": "release",
        "description": "The new checkout page",
        "impressionData": False,
    }
    name: Name
    type: FeatureType = "release"
    description: Description | None = None
    impression_data: bool = False
    tags: Annotated[list[TagBody], msgspec.Meta(max_length=100)] = []


FeatureNames = Annotated[list[str], msgspec.Meta(min_length=1, max_length=1000)]


class BatchFeatures(msgspec.Struct, frozen=True, kw_only=True):
    """Unleash's batchFeaturesSchema: the flags a project's archive, revive, delete or archive
    check is about (each name once counts; repeats are ignored)."""

    example: ClassVar[dict[str, object]] = {"features": ["old-checkout"]}
    features: FeatureNames


class BulkToggle(msgspec.Struct, frozen=True, kw_only=True):
    """Unleash's bulkToggleFeaturesSchema: the flags to switch on or off in one environment
    (none: nothing happens; repeats are ignored)."""

    example: ClassVar[dict[str, object]] = {"features": ["new-checkout"]}
    features: Annotated[list[str], msgspec.Meta(max_length=1000)]


class MarkStale(msgspec.Struct, frozen=True, kw_only=True):
    """Unleash's batchStaleSchema: the flags, and whether they are stale from now on."""

    example: ClassVar[dict[str, object]] = {
        "features": ["new-checkout"],
        "stale": True,
    }

    features: Annotated[list[str], msgspec.Meta(max_length=1000)]
    stale: bool


Operator = Literal[
    "NOT_IN",
    "IN",
    "STR_ENDS_WITH",
    "STR_STARTS_WITH",
    "STR_CONTAINS",
    "NUM_EQ",
    "NUM_GT",
    "NUM_GTE",
    "NUM_LT",
    "NUM_LTE",
    "DATE_AFTER",
    "DATE_BEFORE",
    "SEMVER_EQ",
    "SEMVER_GT",
    "SEMVER_LT",
]
Short = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
Value = Annotated[str, msgspec.Meta(max_length=1000)]
Weight = Annotated[int, msgspec.Meta(ge=0, le=1000)]
SortOrder = Annotated[int, msgspec.Meta(ge=-1_000_000, le=1_000_000)]
SegmentId = Annotated[int, msgspec.Meta(ge=1, le=2_147_483_647)]


class Constraint(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    example: ClassVar[dict[str, object]] = {
        "contextName": "appVersion",
        "operator": "SEMVER_GT",
        "value": "2.1.0",
    }
    context_name: Short
    operator: Operator
    case_insensitive: bool = False
    inverted: bool = False
    values: Annotated[list[Value], msgspec.Meta(max_length=1000)] = []
    value: Value | None = None


class Payload(msgspec.Struct, frozen=True, kw_only=True):
    type: Literal["json", "csv", "string", "number"]
    value: Annotated[str, msgspec.Meta(max_length=100_000)]


class StrategyVariant(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    name: Short
    weight: Weight
    weight_type: Literal["variable", "fix"]
    stickiness: Short
    payload: Payload | None = None


class Override(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    context_name: Short
    values: Annotated[list[Value], msgspec.Meta(max_length=1000)]


class Variant(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    name: Short
    weight: Weight = 0
    weight_type: Literal["variable", "fix"] = "variable"
    stickiness: Short = "default"
    payload: Payload | None = None
    overrides: Annotated[list[Override], msgspec.Meta(max_length=100)] = []


class StrategySegments(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """POST /api/admin/segments/strategies (Unleash's updateFeatureStrategySegmentsSchema):
    the segments a strategy uses from now on, all of them."""

    example: ClassVar[dict[str, object]] = {
        "projectId": "default",
        "strategyId": "15d1e20b-6310-4e17-a0c2-9fb84de3053a",
        "environmentId": "development",
        "segmentIds": [1],
    }

    project_id: Short
    strategy_id: Short
    environment_id: Short
    segment_ids: Annotated[list[SegmentId], msgspec.Meta(max_length=100)]


class StrategyBody(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """POST and PUT of a strategy: PUT replaces the whole strategy, as in Unleash."""

    example: ClassVar[dict[str, object]] = {
        "name": "flexibleRollout",
        "parameters": {"rollout": "50", "stickiness": "default", "groupId": "new-checkout"},
        "constraints": [{"contextName": "userId", "operator": "IN", "values": ["1", "2"]}],
    }

    name: Short
    title: Annotated[str, msgspec.Meta(max_length=1000)] | None = None
    disabled: bool | None = False
    sort_order: SortOrder | None = None
    constraints: Annotated[list[Constraint], msgspec.Meta(max_length=100)] = []
    parameters: dict[Short, Value] = {}
    variants: Annotated[list[StrategyVariant], msgspec.Meta(max_length=100)] = []
    segments: Annotated[list[SegmentId], msgspec.Meta(max_length=100)] = []


Variants = Annotated[
    list[Variant],
    msgspec.Meta(
        max_length=100,
        examples=[
            [
                {"name": "blue", "weight": 500, "weightType": "variable", "stickiness": "default"},
                {"name": "green", "weight": 500, "weightType": "variable", "stickiness": "default"},
            ]
        ],
    ),
]


class TagBody(msgspec.Struct, frozen=True, kw_only=True):
    example: ClassVar[dict[str, object]] = {
        "type": "simple",
        "value": "team-checkout",
    }
    type: Short = "simple"
    value: Annotated[
        str,
        msgspec.Meta(
            description="Trimmed, then 2 to 50 characters",
            extra_json_schema={"minLength": 2, "maxLength": 50},
        ),
    ]


class DependencyBody(msgspec.Struct, frozen=True, kw_only=True):
    example: ClassVar[dict[str, object]] = {
        "feature": "payments-v2",
        "enabled": True,
    }
    feature: Short
    enabled: bool = True
    variants: Annotated[list[Short], msgspec.Meta(max_length=100)] = []


class CloneFeature(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    example: ClassVar[dict[str, object]] = {
        "name": "new-checkout-copy",
        "replaceGroupId": True,
    }
    name: Name
    replace_group_id: bool = True


class SegmentName(msgspec.Struct, frozen=True, kw_only=True):
    """POST /api/admin/segments/validate: a name to check before a segment takes it (Unleash's
    nameSchema), under the rule a segment's name follows."""

    example: ClassVar[dict[str, object]] = {"name": "beta-users"}

    name: Short


class SegmentBody(msgspec.Struct, frozen=True, kw_only=True):
    """POST and PUT of a segment: PUT replaces the whole segment."""

    example: ClassVar[dict[str, object]] = {
        "name": "beta-users",
        "description": "Who tries what is new",
        "constraints": [{"contextName": "userId", "operator": "IN", "values": ["1", "2"]}],
    }

    name: Short
    description: Annotated[str, msgspec.Meta(max_length=1000)] | None = None
    constraints: Annotated[list[Constraint], msgspec.Meta(max_length=100)]


# --- the flag's page (issue 42) ---------------------------------------------------------------


class ValidateFeatureName(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Unleash's validateFeatureSchema: is this name free and valid? (`projectId` is read by
    Unleash Enterprise for a project's naming pattern, which the open-source edition has not.)"""

    example: ClassVar[dict[str, object]] = {"name": "new-checkout", "projectId": "default"}
    name: Annotated[str, msgspec.Meta(max_length=1000)]
    project_id: Short | None = None


class StrategySortOrder(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    id: Short
    sort_order: SortOrder


SortOrders = Annotated[
    list[StrategySortOrder],
    msgspec.Meta(
        max_length=1000,
        description="Strategies of the flag in the environment and their new sort orders",
        examples=[[{"id": "9c40958a-daac-400e-98fb-3bb438567008", "sortOrder": 1}]],
    ),
]


class VariantsBatch(msgspec.Struct, frozen=True, kw_only=True):
    """Unleash's pushVariantsSchema: the same variants for several environments."""

    example: ClassVar[dict[str, object]] = {
        "variants": [{"name": "blue", "weight": 1000, "weightType": "variable"}],
        "environments": ["development", "production"],
    }
    variants: Variants
    environments: Annotated[list[Short], msgspec.Meta(max_length=100)]


class UpdateTags(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Unleash's updateTagsSchema: tags to put on the flag and tags to take off it."""

    example: ClassVar[dict[str, object]] = {
        "addedTags": [{"type": "simple", "value": "team-checkout"}],
        "removedTags": [{"type": "simple", "value": "team-cart"}],
    }
    added_tags: Annotated[list[TagBody], msgspec.Meta(max_length=100)]
    removed_tags: Annotated[list[TagBody], msgspec.Meta(max_length=100)]


class BulkTags(msgspec.Struct, frozen=True, kw_only=True):
    """Unleash's tagsBulkAddSchema: the same tag changes for several flags of one project (the
    project's flag table, its bulk action)."""

    example: ClassVar[dict[str, object]] = {
        "features": ["checkout-redesign", "dark-mode"],
        "tags": {"addedTags": [{"type": "simple", "value": "team-checkout"}], "removedTags": []},
    }
    features: Annotated[
        list[Annotated[str, msgspec.Meta(min_length=1, max_length=100)]],
        msgspec.Meta(max_length=1000),
    ]
    tags: UpdateTags


class UpdateFeature(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Unleash's updateFeatureSchema (`PUT` of a flag): the flag's editable fields as a whole;
    one left out takes its default, as in Unleash. `archived: true` archives the flag."""

    example: ClassVar[dict[str, object]] = {
        "description": "The new checkout page",
        "type": "release",
        "stale": False,
        "impressionData": False,
    }
    # The flag's own name may be given (the UI sends the whole flag); another is refused.
    name: str | msgspec.UnsetType = msgspec.UNSET
    description: Description | None = None
    type: FeatureType = "release"
    stale: bool = False
    archived: bool = False
    impression_data: bool = False


LinkText = Annotated[str, msgspec.Meta(max_length=10_000)]


class LinkBody(msgspec.Struct, frozen=True, kw_only=True):
    """Unleash's featureLinkSchema as a request: a link of a flag (http or https)."""

    example: ClassVar[dict[str, object]] = {
        "url": "https://github.com/acme/checkout/pull/42",
        "title": "The pull request",
    }
    url: Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)]
    title: LinkText | None = None


class CompleteFeature(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Unleash's featureLifecycleCompletedSchema: whether the feature was kept or discarded,
    and optionally what was kept (a variant's name)."""

    example: ClassVar[dict[str, object]] = {"status": "kept", "statusValue": "blue"}
    status: Literal["kept", "discarded"]
    status_value: Annotated[str, msgspec.Meta(max_length=1000)] | None = None
