"""The kinds of entity an import writes, in the order it writes them: what a kind refers to
(a flag to its project, tag types, segments, strategy definitions; a token to its environment
and projects) is written before it.

People come before the flags: a flag's events name the person who made or last changed it at
the source as their actor (its `createdBy` and collaborators), which needs that person here.
API tokens come last: a token makes this service answer the SDKs that hold it, which it should
do only once the flags they ask for are here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from service.switchover.api_tokens import ApiTokens
from service.switchover.context_fields import ContextFields
from service.switchover.default_strategies import DefaultStrategies
from service.switchover.environments import Environments
from service.switchover.feature_types import FeatureTypes
from service.switchover.flags import Flags
from service.switchover.projects import Projects
from service.switchover.segments import Segments
from service.switchover.service_accounts import ServiceAccounts
from service.switchover.strategy_types import StrategyTypes
from service.switchover.tag_types import TagTypes
from service.switchover.users import DEFAULT_PUBLIC_URL, Users

if TYPE_CHECKING:
    from service.switchover.run import Kind


def all_kinds(public_url: str = DEFAULT_PUBLIC_URL, *, renew_links: bool = False) -> list[Kind]:
    """`public_url`: where this service is reached, the base of the reset links;
    `renew_links`: new links for the imported people who have no password here yet."""
    # A project's environments exist before it; its default strategies name segments.
    projects = Projects()
    return [
        Environments(),
        projects,
        ContextFields(),
        StrategyTypes(),
        FeatureTypes(),
        Segments(),
        DefaultStrategies(projects),
        TagTypes(),
        Users(public_url, renew_links=renew_links),
        ServiceAccounts(),
        Flags(),
        ApiTokens(),
    ]
