"""A large, mixed, projection-valid event log for benchmarks (replay, event search, `at=`).

`await generate(conn, total)` appends about `total` events to a migrated database through the
event store itself (numbering, hash chain, streams), in transactions of about 5,000 events,
without the inline projections: `replay` builds the read models afterwards, which is what the
replay benchmark measures. The mix follows what an install's log is made of: flags with their
strategies, switches, variants, tags, staleness and archiving (about 60 %), people with their
passwords, sign-ins, sessions and tokens (about 30 %), service accounts, segments, API tokens,
clones, token-use batches and a few batch deletions. Deterministic for one `seed`.

Actors vary (a few users and API tokens) so that `createdBy` filters select a share of the log.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import msgspec

import eventlog
from eventlog import appends
from eventlog.events.api_tokens import ApiTokenCreated, ApiTokenDeleted
from eventlog.events.base import Metadata
from eventlog.events.features import (
    ClonedEnvironment,
    ClonedTag,
    Constraint,
    DependencyAdded,
    EnvironmentVariantsSet,
    FeatureArchived,
    FeatureCloned,
    FeatureCreated,
    FeatureDeleted,
    FeatureEnvironmentDisabled,
    FeatureEnvironmentEnabled,
    FeatureRevived,
    FeatureStaleSet,
    FeatureTagged,
    SegmentCreated,
    SegmentUpdated,
    StrategyAdded,
    StrategyData,
    StrategyRemoved,
    StrategyUpdated,
    Variant,
)
from eventlog.events.projects import EnvironmentCreated, ProjectCreated
from eventlog.events.users import (
    PasswordChanged,
    PersonalAccessTokenCreated,
    PersonalAccessTokensSeen,
    ServiceAccountCreated,
    TokenUse,
    UserCreated,
    UserDeleted,
    UserRecord,
    UsersDeleted,
    UserSignedIn,
    UserSignedOut,
    UserUpdated,
)

if TYPE_CHECKING:
    from eventlog.codec import DomainEvent
    from eventlog.connections import Conn

ENVIRONMENTS = ("development", "production")
FLAGS_PER_PROJECT = 2_000
TRANSACTION_EVENTS = 5_000
ACTORS = (
    Metadata(actor_id="user:1", actor_name="alice", actor_kind="user", source="api"),
    Metadata(actor_id="user:2", actor_name="bob", actor_kind="user", source="api"),
    Metadata(actor_id="api-token:1", actor_name="admin", actor_kind="api-token", source="api"),
    Metadata(actor_id="api-token:2", actor_name="ci", actor_kind="api-token", source="api"),
)
SYSTEM = Metadata(actor_id="system", actor_name="system", actor_kind="system", source="bootstrap")
# A fixed argon2-shaped string: the generator never hashes (benchmarks measure the log).
PASSWORD_HASH = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0$" + "h" * 43


@dataclass
class _Log:
    """What has been generated so far: ids to refer to, and the batch being written."""

    rng: random.Random
    now: datetime
    batch: list[tuple[tuple[str, str], list[DomainEvent], Metadata]] = field(default_factory=list)
    pending: int = 0
    written: int = 0
    next_id: int = 1
    flags: list[str] = field(default_factory=list)
    users: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    segments: list[int] = field(default_factory=list)
    project: str = "default"

    def add(self, stream: tuple[str, str], events: list[DomainEvent], actor: Metadata) -> None:
        # Every request has an id of its own, as the service's metadata has.
        request_id = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        self.batch.append((stream, events, msgspec.structs.replace(actor, request_id=request_id)))
        self.pending += len(events)

    def ident(self) -> int:
        self.next_id += 1
        return self.next_id

    def tick(self) -> datetime:
        self.now += timedelta(milliseconds=self.rng.randint(1, 50))
        return self.now


def _strategy(log: _Log, sort_order: int) -> StrategyData:
    rng = log.rng
    constraints = [
        Constraint(
            context_name=rng.choice(("userId", "appName", "region")),
            operator=rng.choice(("IN", "NOT_IN", "STR_CONTAINS")),
            case_insensitive=rng.random() < 0.2,
            inverted=False,
            values=[f"v{rng.randint(1, 500)}" for _ in range(rng.randint(1, 4))],
            value=None,
        )
        for _ in range(rng.randint(0, 2))
    ]
    return StrategyData(
        id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        name="flexibleRollout",
        title=None,
        disabled=False,
        sort_order=sort_order,
        constraints=constraints,
        parameters={"rollout": str(rng.randint(0, 100)), "stickiness": "default", "groupId": "g"},
        variants=[],
        segments=[rng.choice(log.segments)] if log.segments and rng.random() < 0.2 else [],
    )


def _flag(log: _Log) -> None:
    rng, project = log.rng, log.project
    name = f"flag-{len(log.flags) + 1}-{rng.getrandbits(24):06x}"
    at = log.tick()
    events: list[DomainEvent] = [
        FeatureCreated(
            name=name,
            project=project,
            feature_type=rng.choice(("release", "experiment", "kill-switch", "operational")),
            description=f"Flag number {len(log.flags) + 1}" if rng.random() < 0.5 else None,
            impression_data=rng.random() < 0.1,
            created_at=at,
        )
    ]
    strategies = []
    for environment in ENVIRONMENTS:
        strategy = _strategy(log, 0)
        strategies.append((environment, strategy))
        events.append(
            StrategyAdded(
                name=name,
                project=project,
                environment=environment,
                strategy=strategy,
                added_at=log.tick(),
            )
        )
        events.append(
            FeatureEnvironmentEnabled(name=name, project=project, environment=environment)
        )
    environment, strategy = strategies[0]
    changed = msgspec.structs.replace(strategy, parameters={**strategy.parameters, "rollout": "50"})
    events.append(
        StrategyUpdated(name=name, project=project, environment=environment, strategy=changed)
    )
    events.append(
        EnvironmentVariantsSet(
            name=name,
            project=project,
            environment="production",
            variants=[
                Variant(
                    name=v,
                    weight=500,
                    weight_type="variable",
                    stickiness="default",
                    payload=None,
                    overrides=[],
                )
                for v in ("a", "b")
            ],
        )
    )
    events.append(
        FeatureTagged(
            name=name,
            tag_type="simple",
            value=rng.choice(("web", "api", "ops")),
            tagged_at=log.tick(),
            project=project,
        )
    )
    if rng.random() < 0.3:
        events.append(
            FeatureEnvironmentDisabled(name=name, project=project, environment="development")
        )
    if rng.random() < 0.2:
        events.append(
            StrategyRemoved(
                name=name,
                project=project,
                environment="production",
                strategy_id=strategies[1][1].id,
            )
        )
    if rng.random() < 0.2:
        events.append(FeatureStaleSet(name=name, project=project, stale=True))
    if log.flags and rng.random() < 0.1:
        events.append(
            DependencyAdded(
                name=name, project=project, parent=rng.choice(log.flags), enabled=True, variants=[]
            )
        )
    if rng.random() < 0.1:
        archived_at = log.tick()
        events.append(FeatureArchived(name=name, project=project, archived_at=archived_at))
        if rng.random() < 0.3:
            events.append(
                FeatureRevived(
                    name=name, project=project, revived_at=log.tick(), lifecycle_stage="initial"
                )
            )
        elif rng.random() < 0.5:  # deleted, and its name taken again: the stream goes on
            created = events[0]
            assert isinstance(created, FeatureCreated)
            events += _deleted_and_created_again(log, created, archived_at)
    log.flags.append(name)
    log.add(("feature", name), events, rng.choice(ACTORS))


def _deleted_and_created_again(
    log: _Log, created: FeatureCreated, archived_at: datetime
) -> list[DomainEvent]:
    name, project = created.name, created.project
    return [
        FeatureDeleted(
            name=name,
            project=project,
            feature_type=created.feature_type,
            description=created.description,
            stale=False,
            impression_data=created.impression_data,
            created_at=created.created_at,
            archived_at=archived_at,
            deleted_at=log.tick(),
        ),
        msgspec.structs.replace(created, created_at=log.tick(), description="again"),
        StrategyAdded(
            name=name,
            project=project,
            environment="development",
            strategy=_strategy(log, 0),
            added_at=log.tick(),
        ),
    ]


def _clone(log: _Log) -> None:
    rng = log.rng
    name = f"clone-{len(log.flags) + 1}-{rng.getrandbits(24):06x}"
    event = FeatureCloned(
        name=name,
        project=log.project,
        feature_type="release",
        description=None,
        impression_data=False,
        created_at=log.tick(),
        source=rng.choice(log.flags),
        source_project=log.project,
        source_position=1,
        environments=[
            ClonedEnvironment(
                environment=e, strategies=[_strategy(log, i) for i in range(2)], variants=[]
            )
            for e in ENVIRONMENTS
        ],
        dependencies=[],
        tags=[ClonedTag(tag_type="simple", value="cloned")],
    )
    log.flags.append(name)
    log.add(("feature", name), [event], rng.choice(ACTORS))


def _user(log: _Log) -> None:
    rng = log.rng
    user_id = log.ident()
    n = user_id
    events: list[DomainEvent] = [
        UserCreated(
            user_id=user_id,
            name=f"User {n}",
            username=f"user{n}",
            email=f"user{n}@example.com",
            root_role=rng.choice((1, 2, 3)),
            created_at=log.tick(),
        ),
        PasswordChanged(user_id=user_id, password_hash=PASSWORD_HASH),
    ]
    for _ in range(rng.randint(1, 4)):
        session = uuid.UUID(int=rng.getrandbits(128)).hex * 2
        at = log.tick()
        events.append(
            UserSignedIn(
                user_id=user_id,
                seen_at=at,
                session_hash=session,
                session_expires_at=at + timedelta(days=2),
            )
        )
        if rng.random() < 0.5:
            events.append(UserSignedOut(user_id=user_id, session_hash=session))
    if rng.random() < 0.4:
        token_id = log.ident()
        events.append(
            PersonalAccessTokenCreated(
                token_id=token_id,
                user_id=user_id,
                description=f"token {n}",
                secret_hash=uuid.UUID(int=rng.getrandbits(128)).hex * 2,
                secret_hint="user:abcd********",
                created_at=log.tick(),
                expires_at=log.now + timedelta(days=365),
            )
        )
        log.tokens.append(token_id)
    if rng.random() < 0.3:
        events.append(
            UserUpdated(
                user_id=user_id, name=f"User {n} renamed", email=f"user{n}@example.com", root_role=3
            )
        )
    log.users.append(user_id)
    log.add(("user", str(user_id)), events, rng.choice(ACTORS))


def _occasional(log: _Log) -> None:
    rng = log.rng
    roll = rng.random()
    if roll < 0.15:
        account_id = log.ident()
        log.add(
            ("service-account", str(account_id)),
            [
                ServiceAccountCreated(
                    account_id=account_id,
                    username=f"sa-{account_id}",
                    name=None,
                    root_role=2,
                    created_at=log.tick(),
                )
            ],
            rng.choice(ACTORS),
        )
    elif roll < 0.30:
        segment_id = len(log.segments) + 1
        constraints = [
            Constraint(
                context_name="region",
                operator="IN",
                case_insensitive=False,
                inverted=False,
                values=["eu", "us"],
                value=None,
            )
        ]
        events: list[DomainEvent] = [
            SegmentCreated(
                segment_id=segment_id,
                name=f"segment-{segment_id}",
                description=None,
                constraints=constraints,
                created_at=log.tick(),
            )
        ]
        if rng.random() < 0.5:
            events.append(
                SegmentUpdated(
                    segment_id=segment_id,
                    name=f"segment-{segment_id}",
                    description="updated",
                    constraints=constraints,
                )
            )
        log.segments.append(segment_id)
        log.add(("segment", str(segment_id)), events, rng.choice(ACTORS))
    elif roll < 0.45:
        token_id = log.ident()
        events = [
            ApiTokenCreated(
                token_id=token_id,
                token_name=f"client-{token_id}",
                token_type="client",
                environment="development",
                projects=["*"],
                secret_hash=uuid.UUID(int=rng.getrandbits(128)).hex * 2,
                secret_hint="*:development.abcd********",
                created_at=log.tick(),
            )
        ]
        if rng.random() < 0.2:
            events.append(ApiTokenDeleted(token_id=token_id, token_name=f"client-{token_id}"))
        log.add(("api-token", str(token_id)), events, rng.choice(ACTORS))
    elif roll < 0.75 and log.tokens:
        seen = [
            TokenUse(token_id=t, seen_at=log.tick())
            for t in rng.sample(log.tokens, min(20, len(log.tokens)))
        ]
        log.add(
            ("token-usage", "personal-access-tokens"), [PersonalAccessTokensSeen(seen=seen)], SYSTEM
        )
    elif roll < 0.85 and log.flags:
        _clone(log)
    elif roll < 0.95 and len(log.users) > 10:
        user_id = log.users.pop(rng.randrange(len(log.users)))
        log.add(
            ("user", str(user_id)),
            [UserDeleted(user_id=user_id, name=None, username=None, email=None)],
            rng.choice(ACTORS),
        )
    elif len(log.users) > 10:
        gone = [log.users.pop(rng.randrange(len(log.users))) for _ in range(3)]
        records = [
            UserRecord(
                user_id=u, name=None, username=None, email=None, root_role=3, created_at=log.now
            )
            for u in gone
        ]
        log.add(
            ("user-batch", str(uuid.UUID(int=rng.getrandbits(128)))),
            [UsersDeleted(users=records, inactive_days=180, deleted_at=log.tick())],
            rng.choice(ACTORS),
        )


async def _flush(conn: Conn, log: _Log) -> None:
    async with conn.transaction():
        for stream, events, actor in log.batch:
            await appends.append(conn, stream, appends.ANY, events, actor)
    log.written += log.pending
    log.batch.clear()
    log.pending = 0


async def generate(conn: Conn, total: int, *, seed: int = 1) -> int:
    """Append about `total` events (a few more, never fewer); returns how many were appended."""
    log = _Log(rng=random.Random(seed), now=datetime(2026, 1, 1, tzinfo=UTC))
    if await eventlog.head(conn) == 0:
        for order, environment in enumerate(ENVIRONMENTS, start=1):
            log.add(
                ("environment", environment),
                [
                    EnvironmentCreated(
                        name=environment,
                        environment_type=environment,
                        sort_order=order,
                        created_at=log.tick(),
                    )
                ],
                SYSTEM,
            )
        log.add(
            ("project", "default"),
            [
                ProjectCreated(
                    project_id="default",
                    name="Default",
                    description=None,
                    environments=list(ENVIRONMENTS),
                    created_at=log.tick(),
                )
            ],
            SYSTEM,
        )
    while log.written + log.pending < total:
        if len(log.flags) % FLAGS_PER_PROJECT == FLAGS_PER_PROJECT - 1:
            log.project = f"project-{len(log.flags) // FLAGS_PER_PROJECT + 1}"
            log.add(
                ("project", log.project),
                [
                    ProjectCreated(
                        project_id=log.project,
                        name=log.project.title(),
                        description=None,
                        environments=list(ENVIRONMENTS),
                        created_at=log.tick(),
                    )
                ],
                log.rng.choice(ACTORS),
            )
        roll = log.rng.random()
        if roll < 0.55:
            _flag(log)
        elif roll < 0.85:
            _user(log)
        else:
            _occasional(log)
        if log.pending >= TRANSACTION_EVENTS:
            await _flush(conn, log)
    await _flush(conn, log)
    return log.written
