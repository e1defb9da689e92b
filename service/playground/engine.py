"""The playground's evaluations, by Unleash's own engine (yggdrasil, as the client and frontend
APIs): each flag's answer (enabled, variant) is the engine's for the flag as SDKs see it, so
it is what an SDK gets for the same context.

The engine answers for whole flags only, so the why (each strategy's result, each constraint's,
each segment's) is asked of it too, through flags made up for the purpose beside the real ones
in the same engine: one a strategy (alone, with its constraints and segments: the strategy's
result), one a strategy's variants (the variant the context gets of them), one a constraint
(under the default strategy: whether the context meets it). Their names begin with a space,
which no flag's name has. The strategies that are off in the environment (SDKs never see them)
are shown as Unleash shows them: `unknown`, not evaluated; those of a type the engine does
not know (an application's own, and applicationHostname) are `unknown` when their constraints
and segments are met, as in Unleash.

One engine per environment and projects, built once per revision of the client model in a
thread, then asked per request with the context encoded once."""

from __future__ import annotations

import asyncio
import ctypes
import functools
import itertools
import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import msgspec
import structlog
from aiohttp import web
from yggdrasil_engine.engine import UnleashEngine

from service.client.responses import (
    Constraint,
    Dependency,
    Feature,
    Payload,
    Segment,
    Strategy,
    StrategyVariant,
)
from service.frontend.context import Context
from service.frontend.engine import Reads
from service.playground.responses import (
    FeatureVariant,
    PlaygroundConstraint,
    PlaygroundFeature,
    PlaygroundSegment,
    PlaygroundStrategies,
    PlaygroundStrategy,
    ShownVariant,
    StrategyLinks,
    StrategyResult,
    StrategyVariantShown,
    Unknown,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable, Mapping

    from service.client.model import Model, Scope
    from service.client.responses import Variant

log = structlog.get_logger()

MOST_SCOPES: Final = 16  # engines kept (environment and projects asked about lately)
MOST_ANSWERS: Final = 2_000  # answers to repeatable contexts kept (all engines together)
# The strategy types the engine evaluates (applicationHostname reads the host the SDK runs
# on, which the playground has not: Unleash shows it as unknown).
KNOWN_STRATEGIES: Final = frozenset(
    {
        "default",
        "userWithId",
        "gradualRolloutUserId",
        "gradualRolloutSessionId",
        "gradualRolloutRandom",
        "flexibleRollout",
        "remoteAddress",
    }
)
UNKNOWN: Final[Unknown] = "unknown"
_NO_CUSTOM: Final = b"{}"


class _Payload(msgspec.Struct, frozen=True):
    type: str
    value: str


class _Variant(msgspec.Struct, frozen=True, rename="camel"):
    name: str
    enabled: bool
    feature_enabled: bool = False
    payload: _Payload | None = None


class _Answer(msgspec.Struct, frozen=True):
    status_code: str
    value: _Variant | None = None
    error_message: str | None = None


_answer = msgspec.json.Decoder(_Answer)
_encoder = msgspec.json.Encoder()
_serials = itertools.count()


class EngineError(RuntimeError):
    """The engine refused a call, or did not know a flag of its own state (a bug here)."""


@dataclass(frozen=True, slots=True)
class StrategyRow:
    """A strategy of a flag in the environment as the read model has it (off ones too)."""

    id: str
    name: str
    title: str | None
    disabled: bool
    parameters: dict[str, str]
    constraints: list[Constraint]
    variants: list[StrategyVariant]
    segments: list[int]


@dataclass(frozen=True, slots=True)
class _StrategyPlan:
    row: StrategyRow
    own: bytes | None  # the made-up flag of the strategy alone (None: not evaluated)
    variant: bytes | None  # the made-up flag of its variants (None: it has none)
    constraints: tuple[bytes, ...]  # one made-up flag a constraint
    edit: str  # the UI's page of the strategy


@dataclass(frozen=True, slots=True)
class _FlagPlan:
    feature: Feature  # as SDKs see it
    key: bytes
    custom: bytes  # the results of custom strategies (false: none is implemented here)
    strategies: tuple[_StrategyPlan, ...]


@dataclass(frozen=True, slots=True)
class _SegmentPlan:
    segment: Segment
    constraints: tuple[bytes, ...]


def edit_link(project: str, flag: str, environment: str, strategy: str) -> str:
    return (
        f"/projects/{project}/features/{flag}/strategies/edit"
        f"?environmentId={environment}&strategyId={strategy}"
    )


class _Builder:
    """The made-up flags of an engine's state, numbered as they are added."""

    def __init__(self, environment: str) -> None:
        self.environment = environment
        self.made: list[Feature] = []

    def add(self, project: str, strategy: Strategy) -> bytes:
        name = f" {len(self.made)}"
        self.made.append(
            Feature(
                name=name,
                type="release",
                description=None,
                enabled=True,
                stale=False,
                impression_data=False,
                project=project,
                strategies=[strategy],
                variants=[],
                dependencies=[],
            )
        )
        return name.encode()

    def constraint(self, project: str, constraint: Constraint) -> bytes:
        return self.add(project, _default(constraints=[constraint]))

    def strategy(self, feature: Feature, row: StrategyRow) -> _StrategyPlan:
        project = feature.project
        # A rollout's stickiness hashes the group (the flag's name unless it has one): the
        # made-up flag's name is not the flag's, so the group is given.
        parameters = {"groupId": feature.name, **row.parameters}
        own = None
        if not row.disabled and row.name in KNOWN_STRATEGIES:
            own = self.add(
                project,
                Strategy(
                    name=row.name,
                    constraints=row.constraints,
                    parameters=parameters,
                    variants=[],
                    sort_order=0,
                    segments=row.segments,
                ),
            )
        variant = None
        if row.variants:
            variant = self.add(
                project,
                _default(parameters={"groupId": parameters["groupId"]}, variants=row.variants),
            )
        return _StrategyPlan(
            row=row,
            own=own,
            variant=variant,
            constraints=tuple(self.constraint(project, c) for c in row.constraints),
            edit=edit_link(project, feature.name, self.environment, row.id),
        )


def _default(
    *,
    constraints: list[Constraint] | None = None,
    parameters: dict[str, str] | None = None,
    variants: list[StrategyVariant] | None = None,
) -> Strategy:
    return Strategy(
        name="default",
        constraints=constraints or [],
        parameters=parameters or {},
        variants=variants or [],
        sort_order=0,
    )


class Explainer:
    """One engine holding one scope's flags (and the made-up ones) at one revision."""

    def __init__(
        self,
        engine: UnleashEngine,
        flags: list[_FlagPlan],
        segments: dict[int, _SegmentPlan],
        revision: int,
        reads: Reads,
    ) -> None:
        self.revision = revision
        self.serial = next(_serials)  # names it among the answers kept (Explainers)
        self.reads = reads
        self._engine = engine  # kept alive: it frees the engine's state when collected
        self._state = engine.state
        self._check, self._free = _functions(engine.lib._name)  # noqa: SLF001 - ctypes' own name
        self.flags = flags
        self._segments = segments
        self._by_name = {f.feature.name: f for f in flags}

    @classmethod
    def build(
        cls,
        environment: str,
        features: Iterable[Feature],
        rows: Mapping[str, list[StrategyRow]],
        segments: Mapping[int, Segment],
        revision: int,
    ) -> Explainer:
        """An engine with these flags (as SDKs see them), their strategies' rows (off ones
        too; none where the flag's project lacks the environment) and every segment."""
        engine = UnleashEngine()
        custom = engine.custom_strategy_handler
        builder = _Builder(environment)
        flags: list[_FlagPlan] = []
        real: list[Feature] = []
        for feature in features:
            real.append(feature)
            flags.append(
                _FlagPlan(
                    feature=feature,
                    key=feature.name.encode(),
                    custom=json.dumps(custom.evaluate_custom_strategies(feature.name, {})).encode(),
                    strategies=tuple(
                        builder.strategy(feature, row) for row in rows.get(feature.name, ())
                    ),
                )
            )
        shown = {
            i: _SegmentPlan(
                segment=segment,
                constraints=tuple(builder.constraint("default", c) for c in segment.constraints),
            )
            for i, segment in segments.items()
        }
        state = _encoder.encode(
            {"version": 2, "features": [*real, *builder.made], "segments": list(segments.values())}
        )
        warnings = engine.take_state(state.decode())
        if warnings:
            log.warning("playground_engine_warnings", warnings=str(warnings)[:1000])
        reads = Reads()
        for feature in real:
            reads.strategies(feature.strategies)
            reads.variants(feature.variants)
        for segment in segments.values():
            reads.constraints(segment.constraints)
        return cls(engine, flags, shown, revision, reads)

    def _ask(self, key: bytes, encoded: bytes, custom: bytes = _NO_CUSTOM) -> _Variant:
        pointer = self._check(self._state, key, encoded, custom)
        try:
            answer = _answer.decode(ctypes.string_at(pointer))
        finally:
            self._free(pointer)
        if answer.status_code != "Ok" or answer.value is None:
            raise EngineError(f"{key!r}: {answer.status_code} {answer.error_message}")
        return answer.value

    def repeatable(self, context: Mapping[str, Any]) -> bool:
        """Whether this engine answers the context the same each time: nothing random, no
        clock but the context's, every stickiness field given, and a user or a session for
        the default stickiness (without either the engine draws at random)."""
        root = {k: v for k, v in context.items() if k != "properties"}
        return ("userId" in root or "sessionId" in root) and self.reads.repeatable(
            Context(root=root, properties=context.get("properties", {}))
        )

    def evaluate(self, context: Mapping[str, Any]) -> list[PlaygroundFeature]:
        """Every flag's answer for the context (the engine's form: root fields and
        `properties`), with its strategies' results, in name order."""
        encoded = _encoder.encode(context)
        segments: dict[int, PlaygroundSegment] = {}
        return [self._feature(flag, encoded, segments) for flag in self.flags]

    def _feature(
        self, flag: _FlagPlan, encoded: bytes, segments: dict[int, PlaygroundSegment]
    ) -> PlaygroundFeature:
        feature = flag.feature
        answer = self._ask(flag.key, encoded, flag.custom)
        strategies = [self._strategy(s, encoded, segments) for s in flag.strategies]
        results = [s.result.enabled for s in strategies]
        result: bool | Unknown = (
            feature.enabled
            if not results
            else True
            if True in results
            else UNKNOWN
            if UNKNOWN in results
            else False
        )
        decided = next(
            (s for s in strategies if s.result.enabled is True and s.result.variants), None
        )
        return PlaygroundFeature(
            name=feature.name,
            project_id=feature.project,
            strategies=PlaygroundStrategies(result=result, data=strategies),
            is_enabled_in_current_environment=feature.enabled,
            is_enabled=answer.feature_enabled,
            has_unsatisfied_dependency=not all(
                self._satisfied(d, encoded) for d in feature.dependencies
            ),
            variant=FeatureVariant(
                name=answer.name,
                enabled=answer.enabled,
                payload=_payload(answer.payload),
                feature_enabled=answer.feature_enabled,
            ),
            variants=decided.result.variants or []
            if decided is not None
            else [_flag_variant(v) for v in feature.variants],
        )

    def _satisfied(self, dependency: Dependency, encoded: bytes) -> bool:
        """Whether the parent is as the dependency needs: on (with one of `variants`, when
        given) or off."""
        found = self._by_name.get(dependency.feature)
        if found is None:
            return not dependency.enabled
        answer = self._ask(found.key, encoded, found.custom)
        if not dependency.enabled:
            return not answer.feature_enabled
        variants = dependency.variants
        return answer.feature_enabled and (not variants or answer.name in variants)

    def _strategy(
        self, plan: _StrategyPlan, encoded: bytes, segments: dict[int, PlaygroundSegment]
    ) -> PlaygroundStrategy:
        row = plan.row
        constraints = [
            _constraint(c, met=self._ask(k, encoded).feature_enabled)
            for c, k in zip(row.constraints, plan.constraints, strict=True)
        ]
        shown = [s for i in row.segments if (s := self._segment(i, encoded, segments))]
        if row.disabled:
            result = StrategyResult(enabled=UNKNOWN, evaluation_status="unevaluated")
        elif plan.own is None:
            met = all(c.result for c in constraints) and all(s.result for s in shown)
            result = StrategyResult(
                enabled=UNKNOWN if met else False, evaluation_status="incomplete"
            )
        else:
            variant = None if plan.variant is None else self._ask(plan.variant, encoded)
            # A constraint or a segment that fails fails the strategy: the engine need not
            # be asked.
            met = all(c.result for c in constraints) and all(s.result for s in shown)
            result = StrategyResult(
                enabled=met and self._ask(plan.own, encoded).feature_enabled,
                evaluation_status="complete",
                variant=None
                if variant is None
                else StrategyVariantShown(
                    name=variant.name, enabled=True, payload=_payload(variant.payload)
                ),
                variants=[_strategy_variant(v) for v in row.variants] if row.variants else None,
            )
        return PlaygroundStrategy(
            name=row.name,
            id=row.id,
            title=row.title or None,
            disabled=row.disabled,
            parameters=row.parameters,
            result=result,
            constraints=constraints,
            segments=shown,
            links=StrategyLinks(edit=plan.edit),
        )

    def _segment(
        self, segment_id: int, encoded: bytes, done: dict[int, PlaygroundSegment]
    ) -> PlaygroundSegment | None:
        """A segment's result (once a context); None for one that is gone."""
        found = done.get(segment_id)
        if found is not None:
            return found
        plan = self._segments.get(segment_id)
        if plan is None:
            return None
        constraints = [
            _constraint(c, met=self._ask(k, encoded).feature_enabled)
            for c, k in zip(plan.segment.constraints, plan.constraints, strict=True)
        ]
        found = done[segment_id] = PlaygroundSegment(
            name=plan.segment.name,
            id=segment_id,
            result=all(c.result for c in constraints),
            constraints=constraints,
        )
        return found


def _constraint(constraint: Constraint, *, met: bool) -> PlaygroundConstraint:
    return PlaygroundConstraint(
        context_name=constraint.context_name,
        operator=constraint.operator,
        values=constraint.values,
        inverted=constraint.inverted,
        case_insensitive=constraint.case_insensitive,
        value=constraint.value,
        result=met,
    )


def _payload(payload: _Payload | None) -> Payload | None:
    return None if payload is None else Payload(type=payload.type, value=payload.value)


def _strategy_variant(v: StrategyVariant) -> ShownVariant:
    return ShownVariant(
        name=v.name,
        weight=v.weight,
        weight_type=v.weight_type,
        stickiness=v.stickiness,
        payload=v.payload,
    )


def _flag_variant(v: Variant) -> ShownVariant:
    return ShownVariant(
        name=v.name,
        weight=v.weight,
        weight_type=v.weight_type,
        stickiness=v.stickiness,
        payload=v.payload,
        overrides=v.overrides,
    )


@functools.cache
def _functions(library: str) -> tuple[Any, Any]:
    """check_variant and free_response of the engine's library (as the frontend API's)."""
    lib = ctypes.CDLL(library)
    check = lib.check_variant
    check.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]
    check.restype = ctypes.c_void_p
    free = lib.free_response
    free.argtypes = [ctypes.c_void_p]
    free.restype = None
    return check, free


class Explainers:
    """The engines of the scopes asked about lately, each at the revision it was built for:
    built once however many requests ask at once (the rows read, then the engine made in a
    thread)."""

    def __init__(self, most: int = MOST_SCOPES, most_answers: int = MOST_ANSWERS) -> None:
        self.most = most
        self.most_answers = most_answers
        self._built: OrderedDict[Scope, tuple[int, asyncio.Task[Explainer]]] = OrderedDict()
        self._answers: OrderedDict[tuple[int, bytes], list[PlaygroundFeature]] = OrderedDict()

    def known(
        self, explainer: Explainer, context: Mapping[str, Any]
    ) -> list[PlaygroundFeature] | None:
        """The answers kept for a repeatable context (by engine and context, until the flags
        change), as the frontend API keeps its ETags; None when there are none."""
        key = (explainer.serial, _encoder.encode(context))
        found = self._answers.get(key)
        if found is not None:
            self._answers.move_to_end(key)
        return found

    def remember(
        self, explainer: Explainer, context: Mapping[str, Any], answers: list[PlaygroundFeature]
    ) -> None:
        if explainer.repeatable(context):
            self._answers[explainer.serial, _encoder.encode(context)] = answers
            while len(self._answers) > self.most_answers:
                self._answers.popitem(last=False)

    async def explainer(
        self,
        model: Model,
        scope: Scope,
        rows: Callable[[], Awaitable[Mapping[str, list[StrategyRow]]]],
    ) -> Explainer:
        found = self._built.get(scope)
        if found is None or found[0] < model.revision:
            task = asyncio.create_task(_build(model, scope, rows))
            task.add_done_callback(_retrieve)
            found = self._built[scope] = (model.revision, task)
            while len(self._built) > self.most:
                self._built.popitem(last=False)
        self._built.move_to_end(scope)
        try:
            return await asyncio.shield(found[1])
        except Exception:
            if self._built.get(scope) is found:  # the next request tries again
                del self._built[scope]
            raise


async def _build(
    model: Model, scope: Scope, rows: Callable[[], Awaitable[Mapping[str, list[StrategyRow]]]]
) -> Explainer:
    loaded = await rows()
    features = []
    shown: dict[str, list[StrategyRow]] = {}
    for flag in model.visible(scope):
        features.append(model.feature(flag, scope))
        # In an environment its project lacks, a flag has no strategies (as SDKs see it).
        if scope.environment in model.project_environments.get(flag.project, ()):
            shown[flag.name] = loaded.get(flag.name, [])
    return await asyncio.to_thread(
        Explainer.build, scope.environment, features, shown, model.segments, model.revision
    )


def _retrieve(task: asyncio.Task[Explainer]) -> None:
    if not task.cancelled():
        task.exception()


PLAYGROUND_ENGINES = web.AppKey("playground_engines", Explainers)
