"""Feature types: the built-in ones and changes of their lifetime. Pure decisions, no I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, NamedTuple

from eventlog.events.feature_types import FeatureTypeDefined, FeatureTypeLifetimeChanged
from service.errors import NotFound

if TYPE_CHECKING:
    from service.feature_types.commands import UpdateLifetime


class Definition(NamedTuple):
    id: str
    name: str
    description: str
    lifetime_days: int | None


# Unleash 6.10.1's feature types, in its order, with its names, descriptions and lifetimes.
# Flags are created with one of these ids (service/features/commands.py, FeatureType; a test
# holds the two lists equal); there is no creating or deleting a type.
BUILT_IN: Final = (
    Definition(
        "release", "Release", "Release feature toggles are used to release new features.", 40
    ),
    Definition(
        "experiment",
        "Experiment",
        "Experiment feature toggles are used to test and verify multiple different versions of "
        "a feature.",
        40,
    ),
    Definition(
        "operational",
        "Operational",
        "Operational feature toggles are used to control aspects of a rollout.",
        7,
    ),
    Definition(
        "kill-switch",
        "Kill switch",
        "Kill switch feature toggles are used to quickly turn on or off critical functionality "
        "in your system.",
        None,
    ),
    Definition(
        "permission",
        "Permission",
        "Permission feature toggles are used to control permissions in your system.",
        None,
    ),
)


def stream(type_id: str) -> tuple[str, str]:
    return ("feature-type", type_id)


def defined(definition: Definition, sort_order: int) -> FeatureTypeDefined:
    """A built-in type as the first start records it (service/bootstrap.py)."""
    return FeatureTypeDefined(
        feature_type_id=definition.id,
        name=definition.name,
        description=definition.description,
        lifetime_days=definition.lifetime_days,
        sort_order=sort_order,
    )


def change_lifetime(
    type_id: str, body: UpdateLifetime, *, current: tuple[int | None] | None
) -> FeatureTypeLifetimeChanged | None:
    """`current`: the type's lifetime (in a 1-tuple), None when there is no such type. 0 is
    stored as null, as Unleash does: both mean never. None: the lifetime is that already, and
    nothing is recorded (Unleash records an update each time)."""
    if current is None:
        raise NotFound(f'The feature type you tried to update ("{type_id}") does not exist.')
    lifetime = body.lifetime_days or None
    if current[0] == lifetime:
        return None
    return FeatureTypeLifetimeChanged(feature_type_id=type_id, lifetime_days=lifetime)
