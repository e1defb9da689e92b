"""Flags evaluated for a context by Unleash's own engine: yggdrasil (PyPI yggdrasil-engine),
the engine Unleash's official SDKs embed. One engine per scope, fed the scope's client-features
body (what an SDK with the same token reads) once per revision, built in a thread (it takes a
while for thousands of flags); then each request asks it about every flag the scope has
switched on in its environment.

Each flag is one call of the engine's C function `check_variant` (the variant, and whether
the flag is enabled): the package's own `check_variant` makes three calls and encodes the
context in Python every time, several times slower for many flags. The context is encoded
once a request, and only with the properties the scope's flags read (constraints, stickiness,
variant overrides): the engine parses the context at each call, so a context full of
unused properties costs nothing more.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import msgspec
import structlog
from aiohttp import web
from yggdrasil_engine.engine import UnleashEngine

from service.frontend.commands import ROOT_FIELDS
from service.frontend.responses import FrontendFeature, FrontendPayload, FrontendVariant

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from service.client.model import Model, Scope
    from service.client.responses import Constraint, Feature, Segment, Strategy, Variant
    from service.frontend.context import Context

log = structlog.get_logger()

# Engines kept: one per scope (environment and projects of tokens), each holding its scope's
# flags (megabytes for thousands of them); a scope asked about again is built again.
MOST_SCOPES: Final = 32
MOST_ETAGS: Final = 20_000  # ETags of repeatable answers kept (one small entry a context)
RANDOM_STRATEGY: Final = "gradualRolloutRandom"


class _Payload(msgspec.Struct, frozen=True):
    type: str
    value: str


class _Variant(msgspec.Struct, frozen=True, rename="camel"):
    name: str
    enabled: bool
    feature_enabled: bool = False
    payload: _Payload | None = None


class _Answer(msgspec.Struct, frozen=True):
    """The engine's answer to one call: `value` None for a flag it does not know."""

    status_code: str
    value: _Variant | None = None
    error_message: str | None = None


_answer = msgspec.json.Decoder(_Answer)
_encoder = msgspec.json.Encoder()


class EngineError(RuntimeError):
    """The engine refused a call, or did not know a flag of its own state (a bug here: the
    context and the flags are ours)."""


@dataclass(frozen=True, slots=True)
class _Flag:
    name: str
    encoded: bytes  # the name as the C function takes it
    custom: bytes  # the results of custom strategies (false: none is implemented here)
    impression_data: bool


@dataclass(slots=True)
class Reads:
    """What the flags of a scope read of a context, and whether their answer for a context
    can change without the context or the flags changing: `random` (random stickiness, the
    gradualRolloutRandom strategy), `clock` (a constraint on currentTime, when the context
    gives none), `sticky` (stickiness fields: when the context lacks one, the engine draws
    at random)."""

    names: set[str] = field(default_factory=set)
    sticky: set[str] = field(default_factory=set)
    random: bool = False
    clock: bool = False

    def strategies(self, strategies: Iterable[Strategy]) -> None:
        for strategy in strategies:
            self.constraints(strategy.constraints)
            self.random |= strategy.name == RANDOM_STRATEGY
            self.stickiness(strategy.parameters.get("stickiness"))
            for variant in strategy.variants:
                self.stickiness(variant.stickiness)

    def variants(self, variants: Iterable[Variant]) -> None:
        for variant in variants:
            self.stickiness(variant.stickiness)
            self.names |= {o.context_name for o in variant.overrides}

    def constraints(self, constraints: Iterable[Constraint]) -> None:
        for constraint in constraints:
            self.names.add(constraint.context_name)
            self.clock |= constraint.context_name == "currentTime"

    def repeatable(self, context: Context) -> bool:
        """Whether the answer for this context is the same each time it is asked (until the
        flags change): nothing random, no clock but the context's, the session the
        client's own, every stickiness field given."""
        return (
            not self.random
            and not context.session_made
            and (not self.clock or "currentTime" in context.root)
            and all(n in context.root or n in context.properties for n in self.sticky)
        )

    def stickiness(self, name: str | None) -> None:
        if name == "random":
            self.random = True
        elif name and name != "default":  # default: userId, else sessionId (always given)
            self.names.add(name)
            self.sticky.add(name)


class Evaluator:
    """One engine holding one scope's flags at one revision."""

    def __init__(
        self, engine: UnleashEngine, flags: list[_Flag], reads: Reads, revision: int
    ) -> None:
        self.revision = revision
        self._engine = engine  # kept alive: it frees the engine's state when collected
        self._state = engine.state
        self._check, self._free = _functions(engine.lib._name)  # noqa: SLF001 - ctypes' own name
        self.flags = flags
        self.reads = reads
        self._properties = frozenset(reads.names - set(ROOT_FIELDS))

    @classmethod
    def build(
        cls,
        body: bytes,
        features: Iterable[Feature],
        segments: Iterable[Segment],
        revision: int,
    ) -> Evaluator:
        """An engine fed this client-features body (at `revision`): its `features` and
        `segments` (those switched on are the flags asked about)."""
        engine = UnleashEngine()
        warnings = engine.take_state(body.decode())
        if warnings:
            log.warning("frontend_engine_warnings", warnings=str(warnings)[:1000])
        custom = engine.custom_strategy_handler
        chosen: list[_Flag] = []
        reads = Reads()
        for feature in features:
            if not feature.enabled:
                continue  # off in the environment: never enabled, whatever the context
            results = custom.evaluate_custom_strategies(feature.name, {})
            chosen.append(
                _Flag(
                    name=feature.name,
                    encoded=feature.name.encode(),
                    custom=json.dumps(results).encode(),
                    impression_data=feature.impression_data,
                )
            )
            reads.strategies(feature.strategies)
            reads.variants(feature.variants)
        for segment in segments:
            reads.constraints(segment.constraints)
        return cls(engine, chosen, reads, revision)

    def encode(self, context: Context) -> bytes:
        """The context as the engine takes it, with only the properties it reads."""
        properties = {k: v for k, v in context.properties.items() if k in self._properties}
        return _encoder.encode({**context.root, "properties": properties})

    def toggles(self, encoded: bytes) -> list[FrontendFeature]:
        """The flags enabled for the (encoded) context, each with its variant, in name
        order."""
        found: list[FrontendFeature] = []
        for flag in self.flags:
            pointer = self._check(self._state, flag.encoded, encoded, flag.custom)
            try:
                answer = _answer.decode(ctypes.string_at(pointer))
            finally:
                self._free(pointer)
            if answer.status_code != "Ok":
                raise EngineError(f"{flag.name}: {answer.status_code} {answer.error_message}")
            variant = answer.value
            if variant is None or not variant.feature_enabled:
                continue
            payload = variant.payload
            found.append(
                FrontendFeature(
                    name=flag.name,
                    enabled=True,
                    impression_data=flag.impression_data,
                    variant=FrontendVariant(
                        name=variant.name,
                        enabled=variant.enabled,
                        payload=None
                        if payload is None
                        else FrontendPayload(type=payload.type, value=payload.value),
                        feature_enabled=True,
                        featureEnabled=True,
                    ),
                )
            )
        return found


@functools.cache
def _functions(library: str) -> tuple[Any, Any]:
    """check_variant and free_response of the engine's library, declared to hand over the
    answer's address (ctypes.string_at reads it faster than the package's cast)."""
    lib = ctypes.CDLL(library)
    check = lib.check_variant
    check.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]
    check.restype = ctypes.c_void_p
    free = lib.free_response
    free.argtypes = [ctypes.c_void_p]
    free.restype = None
    return check, free


class Engines:
    """The engines of the scopes asked about lately, each at the revision it was built for:
    built once however many requests ask at once, in a thread (the event loop goes on).
    Beside them, the ETags of answers that are the same each time for their context: a
    client that asks again with one gets its 304 without the engine."""

    def __init__(self, most: int = MOST_SCOPES, most_etags: int = MOST_ETAGS) -> None:
        self.most = most
        self.most_etags = most_etags
        self._built: OrderedDict[Scope, tuple[int, asyncio.Task[Evaluator]]] = OrderedDict()
        self._etags: OrderedDict[tuple[Scope, int, bytes], str] = OrderedDict()

    async def evaluator(self, model: Model, scope: Scope, body: Callable[[], bytes]) -> Evaluator:
        """The scope's engine at the model's revision (or a later one)."""
        found = self._built.get(scope)
        if found is None or found[0] < model.revision:
            # The flags as the scope's SDKs see them (off where their project lacks the
            # environment), as the body has them.
            features = [model.feature(flag, scope) for flag in model.visible(scope)]
            segments = model.used_segments(features)
            task = asyncio.create_task(
                asyncio.to_thread(Evaluator.build, body(), features, segments, model.revision)
            )
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

    def etag(self, scope: Scope, evaluator: Evaluator, encoded: bytes) -> str | None:
        """The ETag of an earlier answer of this engine to this (repeatable) context."""
        key = (scope, evaluator.revision, encoded)
        found = self._etags.get(key)
        if found is not None:
            self._etags.move_to_end(key)
        return found

    def remember(self, scope: Scope, evaluator: Evaluator, encoded: bytes, etag: str) -> None:
        self._etags[(scope, evaluator.revision, encoded)] = etag
        while len(self._etags) > self.most_etags:
            self._etags.popitem(last=False)


def _retrieve(task: asyncio.Task[Evaluator]) -> None:
    """A build nobody waits for any more (its requests went away) fails quietly."""
    if not task.cancelled():
        task.exception()


FRONTEND_ENGINES = web.AppKey("frontend_engines", Engines)
