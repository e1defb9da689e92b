"""HTTP handlers of the playground (Unleash's /api/admin/playground): every flag of some
projects evaluated for a context by the engine SDKs embed (service/playground/engine.py), with
each strategy's, constraint's and segment's result. Reads only: no event."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
from typing import TYPE_CHECKING, Any, Final

import msgspec

from service import auth, errors
from service.appkeys import CLIENT_FEED, POOL, WORK
from service.client import model as m
from service.client.responses import Constraint, StrategyVariant
from service.frontend import context as ctx
from service.frontend.commands import ROOT_FIELDS
from service.http.answers import json_response
from service.http.requests import read_json
from service.http.routes import Route
from service.playground import queries
from service.playground.commands import (
    MAX_COMBINATIONS,
    EvaluateAdvancedPlayground,
    EvaluatePlayground,
    Projects,
)
from service.playground.engine import PLAYGROUND_ENGINES, Explainer, StrategyRow
from service.playground.responses import (
    AdvancedEnvironmentFeature,
    AdvancedFeature,
    AdvancedPlaygroundResponse,
    PlaygroundFeature,
    PlaygroundResponse,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aiohttp import web

    from service.frontend.commands import ContextFields

# From this many evaluations (flags x contexts), the engine is asked in a thread (its calls
# let go of the GIL: the event loop goes on meanwhile).
IN_THREAD_FROM: Final = 200
ALL: Final = "*"
_constraints = msgspec.json.Decoder(list[Constraint])
_variants = msgspec.json.Decoder(list[StrategyVariant])
_parameters = msgspec.json.Decoder(dict[str, str])


async def evaluate_playground(request: web.Request) -> web.Response:
    """Every flag of the projects in the environment, for the context."""
    cmd = await read_json(request, EvaluatePlayground)
    context = engine_context(cmd.context)
    explainer = await _explainer(request, cmd.projects, cmd.environment)
    features = await _evaluate(request, explainer, [context])
    return json_response(PlaygroundResponse(input=cmd, features=features[0]))


async def evaluate_advanced_playground(request: web.Request) -> web.Response:
    """Every flag of the projects in each environment, for each combination of the context's
    comma-separated values (at most MAX_COMBINATIONS evaluations)."""
    cmd = await read_json(request, EvaluateAdvancedPlayground)
    engine_context(cmd.context)  # the whole context is checked before it is split
    combinations = combine(cmd.context)
    contexts = [engine_context(c) for c in combinations]
    environments = list(dict.fromkeys(cmd.environments))
    explainers = [await _explainer(request, cmd.projects, e) for e in environments]
    total = len(environments) * len(explainers[0].flags) * len(contexts)
    if total > MAX_COMBINATIONS:
        raise errors.ValidationError(
            f"Rejecting evaluation as it would generate {total} combinations exceeding "
            f"{MAX_COMBINATIONS} limit. Please reduce the number of selected environments "
            f"({len(environments)}), features ({len(explainers[0].flags)}), context field "
            f"combinations ({len(contexts)})."
        )
    by_flag: dict[str, AdvancedFeature] = {}
    for environment, explainer in zip(environments, explainers, strict=True):
        evaluated = await _evaluate(request, explainer, contexts)
        for combination, features in zip(combinations, evaluated, strict=True):
            for f in features:
                found = by_flag.get(f.name)
                if found is None:
                    found = by_flag[f.name] = AdvancedFeature(
                        name=f.name, project_id=f.project_id, environments={}
                    )
                found.environments.setdefault(environment, []).append(
                    _in_environment(f, environment, combination)
                )
    return json_response(AdvancedPlaygroundResponse(input=cmd, features=list(by_flag.values())))


def engine_context(context: ContextFields) -> dict[str, Any]:
    """The context as the engine takes it: the root fields, every other field a property
    (`properties` over plain fields of the same name), as the frontend API reads one; unlike
    it, nothing is filled in (the playground evaluates the context as given). appName is
    required and currentTime is a date and time, as in Unleash."""
    fields, explicit = ctx.from_body(context)
    if not fields.get("appName"):
        raise errors.ValidationError("A context needs an appName - at `$.context.appName`")
    current = fields.get("currentTime")
    if current:
        try:
            dt.datetime.fromisoformat(current)
        except ValueError:
            raise errors.ValidationError(
                "Expected a date and time (RFC 3339) - at `$.context.currentTime`"
            ) from None
    root: dict[str, Any] = {name: fields[name] for name in ROOT_FIELDS if fields.get(name)}
    properties = {name: value for name, value in fields.items() if name not in ROOT_FIELDS}
    properties.update(explicit)
    root["properties"] = properties
    return root


def combine(context: ContextFields) -> list[dict[str, Any]]:
    """Every combination of the fields' comma-separated values (`properties` as given), in
    the order Unleash makes them: the last field varies fastest."""
    names = [k for k, v in context.items() if isinstance(v, str)]
    choices = [str(context[k]).split(",") for k in names]
    fixed = {k: v for k, v in context.items() if not isinstance(v, str)}
    # appName goes last in each combination, as Unleash's cleanContext puts it (the UI's
    # columns follow the order of the fields).
    return [
        _app_name_last({**dict(zip(names, values, strict=True)), **fixed})
        for values in itertools.product(*choices)
    ]


def _app_name_last(context: dict[str, Any]) -> dict[str, Any]:
    if "appName" in context:
        context["appName"] = context.pop("appName")
    return context


def _in_environment(
    f: PlaygroundFeature, environment: str, context: dict[str, Any]
) -> AdvancedEnvironmentFeature:
    return AdvancedEnvironmentFeature(
        name=f.name,
        project_id=f.project_id,
        environment=environment,
        context=context,
        strategies=f.strategies,
        is_enabled_in_current_environment=f.is_enabled_in_current_environment,
        is_enabled=f.is_enabled,
        has_unsatisfied_dependency=f.has_unsatisfied_dependency,
        variant=f.variant,
        variants=f.variants,
    )


async def _evaluate(
    request: web.Request, explainer: Explainer, contexts: list[dict[str, Any]]
) -> list[list[PlaygroundFeature]]:
    """Each context's answers: kept ones, the others asked of the engine (in a thread for
    many) and kept when the context is repeatable."""
    engines = request.app[PLAYGROUND_ENGINES]
    known = [engines.known(explainer, c) for c in contexts]
    missing = [c for c, k in zip(contexts, known, strict=True) if k is None]

    def run() -> list[list[PlaygroundFeature]]:
        return [explainer.evaluate(c) for c in missing]

    if len(explainer.flags) * len(missing) < IN_THREAD_FROM:
        made = iter(run())
    else:
        made = iter(await asyncio.to_thread(run))
    answers = []
    for context, kept in zip(contexts, known, strict=True):
        if kept is None:
            fresh = next(made)
            engines.remember(explainer, context, fresh)
            answers.append(fresh)
        else:
            answers.append(kept)
    return answers


async def _explainer(
    request: web.Request, projects: Projects | msgspec.UnsetType, environment: str
) -> Explainer:
    """The engine of the projects' flags in the environment, with this process's own commits
    (read your own writes)."""
    chosen = None if projects is msgspec.UNSET or projects == ALL else frozenset(projects)
    scope = m.Scope(environment, chosen)
    feed = request.app[CLIENT_FEED]
    try:
        model = await feed.fresh(request.app[WORK].after.position)
    except TimeoutError:
        raise errors.ServiceUnavailable("The flags are not loaded yet; try again shortly") from None

    async def rows() -> Mapping[str, list[StrategyRow]]:
        async with request.app[POOL].acquire() as conn:
            found = await conn.fetch(
                queries.STRATEGIES, environment, None if chosen is None else sorted(chosen)
            )
        by_flag: dict[str, list[StrategyRow]] = {}
        for r in found:
            by_flag.setdefault(r["feature_name"], []).append(
                StrategyRow(
                    id=r["id"],
                    name=r["name"],
                    title=r["title"],
                    disabled=r["disabled"],
                    parameters=_parameters.decode(r["parameters"]),
                    constraints=_constraints.decode(r["constraints"]),
                    variants=_variants.decode(r["variants"]),
                    segments=sorted(r["segments"]),
                )
            )
        return by_flag

    return await request.app[PLAYGROUND_ENGINES].explainer(model, scope, rows)


ROUTES = [
    Route(
        "POST",
        "/api/admin/playground",
        evaluate_playground,
        auth.READ,
        body=EvaluatePlayground,
        ok={200: PlaygroundResponse},
    ),
    Route(
        "POST",
        "/api/admin/playground/advanced",
        evaluate_advanced_playground,
        auth.READ,
        body=EvaluateAdvancedPlayground,
        ok={200: AdvancedPlaygroundResponse},
    ),
]
