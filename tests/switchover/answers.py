"""The official Python SDK (UnleashClient) asked the same questions of two servers: generated
contexts (from what the flags' constraints and strategies name), every flag, is_enabled and
get_variant; how many answers agree and the first that do not.

Each SDK keeps its cache in a directory of its own and sends neither registrations nor
metrics. Contexts always carry a userId, a sessionId and every custom stickiness field, so
that no answer depends on chance (a rollout or variant whose stickiness field the context
lacks is decided at random by Unleash's engine).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import random
import tempfile
import threading
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from UnleashClient.clients.unleash_client import UnleashClient
from UnleashClient.events import BaseEvent, UnleashEventType
from UnleashClient.utils import InstanceAllowType

if TYPE_CHECKING:
    from collections.abc import Iterator

READY_SECONDS = 20.0
BUILT_IN = frozenset(
    {"userId", "sessionId", "remoteAddress", "appName", "environment", "currentTime"}
)
NUMERIC = frozenset({"NUM_EQ", "NUM_GT", "NUM_GTE", "NUM_LT", "NUM_LTE"})
DATES = frozenset({"DATE_AFTER", "DATE_BEFORE"})
SEMVERS = frozenset({"SEMVER_EQ", "SEMVER_GT", "SEMVER_LT"})
STRINGS = frozenset({"STR_CONTAINS", "STR_STARTS_WITH", "STR_ENDS_WITH"})


@dataclass
class Vocabulary:
    """What the contexts are made of: each field's values seen in constraints (and legal
    values), how they are compared, and the strategies' users, addresses and hosts."""

    values: dict[str, set[str]] = field(default_factory=dict)
    operators: dict[str, set[str]] = field(default_factory=dict)
    users: set[str] = field(default_factory=set)
    addresses: set[str] = field(default_factory=set)
    sticky: set[str] = field(default_factory=set)

    def add(self, name: str, operator: str, values: list[str]) -> None:
        self.values.setdefault(name, set()).update(v for v in values if v)
        self.operators.setdefault(name, set()).add(operator)


def _constraints(vocab: Vocabulary, constraints: list[dict[str, Any]]) -> None:
    for constraint in constraints:
        values = list(constraint.get("values") or [])
        if constraint.get("value"):
            values.append(str(constraint["value"]))
        vocab.add(constraint["contextName"], constraint.get("operator", "IN"), values)


NOT_STICKY = frozenset({None, "default", "random", *BUILT_IN})


def _strategy_words(vocab: Vocabulary, strategy: dict[str, Any]) -> None:
    _constraints(vocab, strategy.get("constraints") or [])
    parameters = strategy.get("parameters") or {}
    vocab.users.update(u.strip() for u in parameters.get("userIds", "").split(",") if u)
    vocab.addresses.update(
        ip.strip().partition("/")[0] for ip in parameters.get("IPs", "").split(",") if ip
    )
    sticky = [parameters.get("stickiness")] + [
        v.get("stickiness") for v in strategy.get("variants") or []
    ]
    vocab.sticky.update(str(s) for s in sticky if s not in NOT_STICKY)


def vocabulary(client_features: dict[str, Any], context_fields: list[dict[str, Any]]) -> Vocabulary:
    """From a `GET /api/client/features` answer and the context fields of the admin API."""
    vocab = Vocabulary()
    for context_field in context_fields:
        legal = [v["value"] for v in context_field.get("legalValues") or []]
        if legal:
            vocab.add(context_field["name"], "IN", legal)
        if context_field.get("stickiness") and context_field["name"] not in BUILT_IN:
            vocab.sticky.add(context_field["name"])
    for segment in client_features.get("segments") or []:
        _constraints(vocab, segment.get("constraints") or [])
    for feature in client_features.get("features") or []:
        for strategy in feature.get("strategies") or []:
            _strategy_words(vocab, strategy)
        for variant in feature.get("variants") or []:
            for override in variant.get("overrides") or []:
                vocab.add(override["contextName"], "IN", override.get("values") or [])
            if variant.get("stickiness") not in NOT_STICKY:
                vocab.sticky.add(variant["stickiness"])
    return vocab


def _value(rng: random.Random, name: str, vocab: Vocabulary) -> str:
    """A value for a field: one the constraints name, near one, or any, as its operators
    compare it."""
    seen = sorted(vocab.values.get(name, set()))
    operators = vocab.operators.get(name, set())
    if operators & NUMERIC:
        base = float(rng.choice(seen)) if seen and rng.random() < 0.6 else rng.uniform(0, 100)
        value = base + rng.choice((-1, -0.5, 0, 0, 0.5, 1))
        return str(int(value)) if rng.random() < 0.5 else f"{value:.1f}"
    if operators & DATES:
        return _date(rng, seen)
    if operators & SEMVERS:
        return _semver(rng, seen)
    if operators & STRINGS and rng.random() < 0.7 and seen:
        piece = rng.choice(seen)
        piece = piece.lower() if rng.random() < 0.2 else piece
        return rng.choice((f"{piece}-x", f"x-{piece}", f"a{piece}b", piece))
    if seen and rng.random() < 0.8:
        known = rng.choice(seen)
        return known.upper() if rng.random() < 0.1 else known
    return f"other-{rng.randint(1, 50)}"


def _date(rng: random.Random, seen: list[str]) -> str:
    if seen and rng.random() < 0.5:
        with contextlib.suppress(ValueError):
            base = datetime.fromisoformat(rng.choice(seen))
            moved = base + timedelta(hours=rng.choice((-30, -1, 1, 30)))
            return moved.isoformat().replace("+00:00", "Z")
    start = datetime(2023, 1, 1, tzinfo=UTC)
    moment = start + timedelta(seconds=rng.randint(0, 6 * 365 * 86400))
    return moment.isoformat().replace("+00:00", "Z")


def _semver(rng: random.Random, seen: list[str]) -> str:
    if seen and rng.random() < 0.4:
        return rng.choice(seen)
    version = f"{rng.randint(0, 4)}.{rng.randint(0, 10)}.{rng.randint(0, 10)}"
    return version + (rng.choice(("-alpha.1", "-beta.1", "-rc.2")) if rng.random() < 0.2 else "")


def contexts(vocab: Vocabulary, count: int, seed: int, environment: str) -> list[dict[str, Any]]:
    """`count` contexts, the same for the same vocabulary and seed."""
    rng = random.Random(seed)
    users = sorted(vocab.users | vocab.values.get("userId", set()))
    apps = sorted(vocab.values.get("appName", set())) or ["app"]
    addresses = sorted(vocab.addresses | vocab.values.get("remoteAddress", set()))
    custom = sorted(name for name in vocab.values if name not in BUILT_IN)
    made = []
    for n in range(count):
        context: dict[str, Any] = {"appName": rng.choice([*apps, "other-app"])}
        context["userId"] = rng.choice(users) if users and rng.random() < 0.5 else f"u-{n}"
        context["sessionId"] = f"s-{rng.randint(1, 10_000)}"
        if rng.random() < 0.6:
            context["remoteAddress"] = (
                rng.choice(addresses)
                if addresses and rng.random() < 0.5
                else f"10.0.{rng.randint(0, 3)}.{rng.randint(1, 254)}"
            )
        context["environment"] = environment if rng.random() < 0.9 else "other"
        context["currentTime"] = _date(rng, sorted(vocab.values.get("currentTime", set())))
        properties = {}
        for name in custom:
            if name in vocab.sticky or rng.random() < 0.75:
                properties[name] = _value(rng, name, vocab)
        for name in vocab.sticky - set(properties):
            properties[name] = f"sticky-{rng.randint(1, 100)}"
        context["properties"] = properties
        made.append(context)
    return made


@dataclass
class Agreement:
    """How two servers' SDKs answered: per question (a flag, a context, is_enabled or
    get_variant) whether they agree."""

    environment: str
    flags: int
    contexts: int
    agree: int = 0
    differ: int = 0
    enabled: int = 0  # is_enabled answers that were true (on A): the contexts are no blanks
    variants: set[str] = field(default_factory=set)  # variant names A's SDK answered
    examples: list[str] = field(default_factory=list)
    error: str = ""  # why the SDKs were not asked

    @property
    def ok(self) -> bool:
        return not self.error and self.differ == 0 and self.agree > 0


class Sdk:
    """One UnleashClient on a server with a client token, ready once it holds the flags."""

    def __init__(self, url: str, token: str, environment: str, cache: str) -> None:
        self.ready = threading.Event()
        self.client = UnleashClient(
            url=f"{url.rstrip('/')}/api",
            app_name="compare",
            instance_id="compare",
            environment=environment,
            refresh_interval=3600,
            disable_metrics=True,
            disable_registration=True,
            custom_headers={"Authorization": token},
            cache_directory=cache,
            multiple_instance_mode=InstanceAllowType.SILENTLY_ALLOW,
            event_callback=self._event,
            verbose_log_level=logging.DEBUG,  # an unknown flag is asked about on purpose
        )

    def _event(self, event: BaseEvent) -> None:
        if event.event_type == UnleashEventType.READY:
            self.ready.set()

    def start(self) -> None:
        self.client.initialize_client()
        if not self.ready.wait(READY_SECONDS):
            raise RuntimeError(f"the SDK had no flags within {READY_SECONDS} s")

    def answer(self, flag: str, context: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        return self.client.is_enabled(flag, context), self.client.get_variant(flag, context)


@contextlib.contextmanager
def sdk(url: str, token: str, environment: str) -> Iterator[Sdk]:
    with tempfile.TemporaryDirectory(prefix="compare-sdk-") as cache:
        client = Sdk(url, token, environment, cache)
        try:
            client.start()
            yield client
        finally:
            client.client.destroy()


def ask(
    url: str, token: str, environment: str, *, flags: list[str], asked: list[dict[str, Any]]
) -> list[tuple[bool, dict[str, Any]]]:
    """One server's SDK's answers: for each context, each flag (in a process of its own)."""
    with sdk(url, token, environment) as client:
        return [client.answer(flag, context) for context in asked for flag in flags]


def agreement(
    a: tuple[str, str],
    b: tuple[str, str],
    environment: str,
    *,
    flags: list[str],
    asked: list[dict[str, Any]],
    examples: int = 5,
) -> Agreement:
    """Both servers' SDKs (url, client token) asked about every flag for every context: the
    two in processes of their own, side by side (an answer costs the SDK some 80 µs)."""
    result = Agreement(environment, len(flags), len(asked))
    with ProcessPoolExecutor(
        max_workers=2, mp_context=multiprocessing.get_context("spawn")
    ) as pool:
        jobs = [pool.submit(ask, *side, environment, flags=flags, asked=asked) for side in (a, b)]
        first, second = (job.result() for job in jobs)
    questions = [(flag, context) for context in asked for flag in flags]
    for (flag, context), x, y in zip(questions, first, second, strict=True):
        result.enabled += x[0]
        result.variants.add(x[1]["name"])
        for what, one, other in (("is_enabled", x[0], y[0]), ("get_variant", x[1], y[1])):
            if one == other:
                result.agree += 1
                continue
            result.differ += 1
            if len(result.examples) < examples:
                result.examples.append(f"{flag} {what}: {one} != {other} for {context}")
    return result
