"""The strategy types every install has, as Unleash 6.10.1 seeds them (names, texts,
parameters, order and deprecation, as its `GET /api/admin/strategies` answers on a new
install). They are constants, not events: only their deprecation can change (an event then).

The flags' strategy routes import the names (service/features/queries.py): a flag's strategy
must name a known type."""

from __future__ import annotations

from typing import Final

from eventlog.events.strategy_definitions import StrategyParameter
from service.strategies.domain import StrategyType


def _built_in(
    name: str,
    display_name: str,
    description: str,
    parameters: tuple[tuple[str, str, str, bool], ...] = (),
    *,
    deprecated: bool = False,
) -> StrategyType:
    return StrategyType(
        name=name,
        display_name=display_name,
        title=None,
        description=description,
        parameters=[
            StrategyParameter(name=n, type=t, description=d, required=r)
            for n, t, d, r in parameters
        ],
        deprecated=deprecated,
        built_in=True,
    )


# In Unleash's order (its sort_order column); custom types follow, by name.
BUILT_IN: Final[dict[str, StrategyType]] = {
    t.name: t
    for t in (
        _built_in(
            "flexibleRollout",
            "Gradual rollout",
            "Roll out to a percentage of your userbase, and ensure that the experience is the "
            "same for the user on each visit.",
            (
                ("rollout", "percentage", "", False),
                (
                    "stickiness",
                    "string",
                    "Used define stickiness. Possible values: default, userId, sessionId, random",
                    True,
                ),
                (
                    "groupId",
                    "string",
                    (
                        "Used to define a activation groups, which allows you to correlate "
                        "across feature toggles."
                    ),
                    True,
                ),
            ),
        ),
        _built_in(
            "default",
            "Standard",
            'This strategy turns on / off for your entire userbase. Prefer using "Gradual '
            'rollout" strategy (100%=on, 0%=off).',
        ),
        _built_in(
            "userWithId",
            "UserIDs",
            'Enable the feature for a specific set of userIds. Prefer using "Gradual rollout" '
            "strategy with user id constraints.",
            (("userIds", "list", "", False),),
            deprecated=True,
        ),
        _built_in(
            "remoteAddress",
            "IPs",
            "Enable the feature for a specific set of IP addresses.",
            (("IPs", "list", "List of IPs to enable the feature toggle for.", True),),
        ),
        _built_in(
            "applicationHostname",
            "Hosts",
            "Enable the feature for a specific set of hostnames.",
            (("hostNames", "list", "List of hostnames to enable the feature toggle for.", False),),
        ),
    )
}
NAMES: Final = frozenset(BUILT_IN)
