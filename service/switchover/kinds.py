"""The kinds of entity an import writes, in the order it writes them: what a kind refers to
(a flag to its project, tag types, segments, strategy definitions) is written before it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from service.switchover.context_fields import ContextFields
from service.switchover.default_strategies import DefaultStrategies
from service.switchover.environments import Environments
from service.switchover.feature_types import FeatureTypes
from service.switchover.flags import Flags
from service.switchover.projects import Projects
from service.switchover.segments import Segments
from service.switchover.strategy_types import StrategyTypes
from service.switchover.tag_types import TagTypes

if TYPE_CHECKING:
    from service.switchover.run import Kind


def all_kinds() -> list[Kind]:
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
        Flags(),
    ]
