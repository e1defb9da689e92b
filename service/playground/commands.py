"""The request bodies of the playground (Unleash's playgroundRequestSchema and
advancedPlaygroundRequestSchema), with their limits: the projects ("*" or a list), the
environment(s), and the context (appName required; every other field a property, as in the
frontend API). In the advanced playground a context value may hold several values separated by
commas: every combination is evaluated, at most MAX_COMBINATIONS evaluations a request."""

from __future__ import annotations

from typing import Annotated, ClassVar, Final, Literal

import msgspec

from service.frontend.commands import ContextFields

MAX_NAME: Final = 100  # characters of a project's or an environment's name
MAX_PROJECTS: Final = 1_000
MAX_ENVIRONMENTS: Final = 100
# Evaluations (environments x flags x context combinations) one advanced request may ask for,
# as Unleash's validateQueryComplexity.
MAX_COMBINATIONS: Final = 30_000

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_NAME)]
Projects = Literal["*"] | Annotated[list[Name], msgspec.Meta(max_length=MAX_PROJECTS)]


class EvaluatePlayground(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Every flag of `projects` (left out: all) in `environment`, for `context`."""

    example: ClassVar[dict[str, object]] = {
        "projects": "*",
        "environment": "development",
        "context": {"appName": "web", "userId": "user-17", "properties": {"region": "eu"}},
    }
    projects: Projects | msgspec.UnsetType = msgspec.UNSET
    environment: Name
    context: ContextFields


class EvaluateAdvancedPlayground(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Every flag of `projects` in each of `environments`, for each combination of the
    context's comma-separated values."""

    example: ClassVar[dict[str, object]] = {
        "projects": ["default"],
        "environments": ["development", "production"],
        "context": {"appName": "web", "userId": "user-17,user-18"},
    }
    projects: Projects | msgspec.UnsetType = msgspec.UNSET
    environments: Annotated[list[Name], msgspec.Meta(min_length=1, max_length=MAX_ENVIRONMENTS)]
    context: ContextFields
