"""Feature flags: pure decisions, no I/O."""

from __future__ import annotations

import math
import re
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar, get_args

import msgspec

from service.errors import NameExists, NotFound, ValidationError
from service.features.commands import Operator, StrategyVariant, Variant
from service.features.events import (
    DependencyAdded,
    FeatureArchived,
    FeatureCreated,
    FeatureRevived,
    StrategyData,
)
from service.names import validate_name

if TYPE_CHECKING:
    from collections.abc import Sequence

    from service.features.commands import (
        Constraint,
        CreateFeature,
        DependencyBody,
        StrategyBody,
    )

V = TypeVar("V", StrategyVariant, Variant)

FLAG_EXISTS = "A flag with that name already exists"
ARCHIVED_FLAG_EXISTS = "An archived flag with that name already exists"


def stream(name: str) -> tuple[str, str]:
    return ("feature", name)


def project_missing(project_id: str) -> NotFound:
    return NotFound(f"Project {project_id} does not exist")


def create_feature(
    cmd: CreateFeature, project_id: str, *, existing_archived: bool | None, now: datetime
) -> FeatureCreated:
    """existing_archived: None when the name is free, else whether the holder is archived."""
    validate_name(cmd.name)
    if existing_archived is not None:
        raise NameExists(ARCHIVED_FLAG_EXISTS if existing_archived else FLAG_EXISTS)
    return FeatureCreated(
        name=cmd.name,
        project=project_id,
        feature_type=cmd.type,
        description=cmd.description or None,  # an empty description is stored as null
        impression_data=cmd.impression_data,
        created_at=now,
    )


def archive_feature(
    name: str, project_id: str, *, archived: bool | None, now: datetime
) -> FeatureArchived:
    """archived: None when no such flag is in the project."""
    if archived is None or archived:
        raise NotFound(f"Could not find an active flag named {name} in project {project_id}")
    return FeatureArchived(name=name, project=project_id, archived_at=now)


def revive_features(
    names: list[str], project_id: str, *, archived_here: set[str], now: datetime
) -> list[FeatureRevived]:
    """All or nothing: every name must be an archived flag of this project."""
    unique = list(dict.fromkeys(names))
    missing = [n for n in unique if n not in archived_here]
    if missing:
        raise NotFound(f"No archived flag named {', '.join(missing[:10])} in project {project_id}")
    return [
        FeatureRevived(name=n, project=project_id, revived_at=now, lifecycle_stage="initial")
        for n in unique
    ]


# --- strategies, switches, variants -------------------------------------------------------

# Operators that compare against one `value`; the rest take a `values` list.
_SINGLE_VALUE = frozenset(
    op for op in get_args(Operator) if op.startswith(("NUM_", "DATE_", "SEMVER_"))
)
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$"
)
TOTAL_WEIGHT = 1000


def spread_weights(variants: Sequence[V], path: str) -> list[V]:
    """Fixed variants keep their weight; variable ones share the rest so all total 1000."""
    if not variants:
        return []
    fixed = sum(v.weight for v in variants if v.weight_type == "fix")
    variable = [i for i, v in enumerate(variants) if v.weight_type != "fix"]
    if fixed > TOTAL_WEIGHT:
        raise ValidationError(f"Fixed variant weights total {fixed}, more than 1000 - at `{path}`")
    if not variable:
        if fixed != TOTAL_WEIGHT:
            raise ValidationError(
                f"Variant weights must total 1000 (got {fixed}) or include a variable variant"
                f" - at `{path}`"
            )
        return list(variants)
    share, extra = divmod(TOTAL_WEIGHT - fixed, len(variable))
    weights = {i: share + (1 if n < extra else 0) for n, i in enumerate(variable)}
    return [
        msgspec.structs.replace(v, weight=weights[i]) if i in weights else v
        for i, v in enumerate(variants)
    ]


def check_variant_names(variants: Sequence[StrategyVariant | Variant], path: str) -> None:
    """Names are unique, and a payload's value fits its type (json parses, number is one)."""
    names = [v.name for v in variants]
    if len(names) != len(set(names)):
        raise ValidationError(f"Variant names must be unique - at `{path}`")
    for i, variant in enumerate(variants):
        payload = variant.payload
        if payload is None:
            continue
        where = f"{path}[{i}].payload.value"
        if payload.type == "number" and not _is_number(payload.value):
            raise ValidationError(f"A number payload needs a number - at `{where}`")
        if payload.type == "json":
            try:
                msgspec.json.decode(payload.value)
            except msgspec.DecodeError:
                raise ValidationError(f"A json payload needs valid JSON - at `{where}`") from None


def _is_number(value: str) -> bool:
    try:
        return math.isfinite(float(value))
    except ValueError:
        return False


def check_constraints(constraints: Sequence[Constraint]) -> None:
    for i, c in enumerate(constraints):
        path = f"$.constraints[{i}]"
        if c.operator in _SINGLE_VALUE:
            _check_single_value(c.operator, c.value, f"{path}.value")
        elif not c.values:
            raise ValidationError(f"{c.operator} needs a non-empty `values` list - at `{path}`")


def _check_single_value(operator: str, value: str | None, path: str) -> None:
    if value is None or not value.strip():
        raise ValidationError(f"{operator} needs a `value` - at `{path}`")
    if operator.startswith("NUM_"):
        if not _is_number(value):
            raise ValidationError(f"{operator} needs a number - at `{path}`")
    elif operator.startswith("DATE_"):
        try:
            datetime.fromisoformat(value)
        except ValueError:
            raise ValidationError(f"{operator} needs an ISO 8601 date - at `{path}`") from None
    elif not _SEMVER.match(value):
        raise ValidationError(f"{operator} needs a semantic version - at `{path}`")


def strategy_data(body: StrategyBody, strategy_id: str, default_sort_order: int) -> StrategyData:
    """Validate a strategy body and decide what is stored (variant weights spread)."""
    check_constraints(body.constraints)
    check_variant_names(body.variants, "$.variants")
    return StrategyData(
        id=strategy_id,
        name=body.name,
        title=body.title,
        disabled=bool(body.disabled),
        sort_order=default_sort_order if body.sort_order is None else body.sort_order,
        constraints=list(body.constraints),
        parameters=dict(body.parameters),
        variants=spread_weights(body.variants, "$.variants"),
        segments=list(dict.fromkeys(body.segments)),
    )


def environment_variants(variants: Sequence[Variant]) -> list[Variant]:
    check_variant_names(variants, "$")
    return spread_weights(variants, "$")


TAG_TYPES = frozenset({"simple"})  # built in, as in Unleash
TAG_VALUE_LENGTH = (2, 50)


def tag_value(body_value: str) -> str:
    """Tag values are trimmed and 2..50 characters long."""
    value = body_value.strip()
    low, high = TAG_VALUE_LENGTH
    if not low <= len(value) <= high:
        raise ValidationError(f"Tag value must be {low} to {high} characters - at `$.value`")
    return value


def check_tag_type(tag_type: str) -> None:
    if tag_type not in TAG_TYPES:
        raise ValidationError(f"Tag type {tag_type} does not exist - at `$.type`")


def add_dependency(  # noqa: PLR0913 - every fact the rule needs
    child: str,
    project: str,
    body: DependencyBody,
    *,
    parent_found: bool,
    parent_has_parents: bool,
    child_has_children: bool,
) -> DependencyAdded:
    """One level only: no self-dependency, no parent with a parent, no child with children."""
    if body.feature == child:
        raise ValidationError("A flag cannot depend on itself - at `$.feature`")
    if not parent_found:
        raise ValidationError(
            f"The parent {body.feature} must be an active flag in project {project}"
            " - at `$.feature`"
        )
    if parent_has_parents:
        raise ValidationError(
            f"{body.feature} depends on another flag itself; chains are not allowed"
            " - at `$.feature`"
        )
    if child_has_children:
        raise ValidationError(f"{child} is a parent of other flags; it cannot depend on one itself")
    if body.variants and not body.enabled:
        raise ValidationError("variants apply only when enabled is true - at `$.variants`")
    return DependencyAdded(
        name=child,
        project=project,
        parent=body.feature,
        enabled=body.enabled,
        variants=list(dict.fromkeys(body.variants)),
    )


def clone_strategy(
    strategy: StrategyData, new_name: str, *, replace_group_id: bool
) -> StrategyData:
    """A copy with a new id; groupId follows the new name unless told otherwise."""
    parameters = dict(strategy.parameters)
    if replace_group_id and "groupId" in parameters:
        parameters["groupId"] = new_name
    return msgspec.structs.replace(strategy, id=str(uuid.uuid4()), parameters=parameters)
