"""Read models of what people told Unleash's web UI: `user_splashes` (the splash screens and
tips each has seen) and `user_feedback` (the feedback prompts each has answered). They go
with the account."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventlog.events.preferences import FeedbackRecorded, SplashSeen
from eventlog.events.users import UserDeleted, UsersDeleted
from projections.base import Projection
from projections.writes import Delete, Insert, Table, Write

if TYPE_CHECKING:
    from eventlog.codec import RecordedEvent

USER_SPLASHES = Table("user_splashes", ("user_id", "splash_id"), keyed_only=True)
USER_FEEDBACK = Table("user_feedback", ("user_id", "feedback_id"), keyed_only=True)


def _forget(ids: list[int]) -> list[Write]:
    return [
        *(Delete(USER_SPLASHES, {"user_id": i}) for i in ids),
        *(Delete(USER_FEEDBACK, {"user_id": i}) for i in ids),
    ]


def writes(recorded: RecordedEvent) -> list[Write]:
    match recorded.event:
        case SplashSeen() as e:
            return [Insert(USER_SPLASHES, {"user_id": e.user_id, "splash_id": e.splash_id})]
        case FeedbackRecorded() as e:
            row = {
                "user_id": e.user_id,
                "feedback_id": e.feedback_id,
                "given": e.given,
                "never_show": e.never_show,
            }
            return [Insert(USER_FEEDBACK, row, update=("given", "never_show"))]
        case UserDeleted() as e:
            return _forget([e.user_id])
        case UsersDeleted() as e:
            return _forget([u.user_id for u in e.users])
        case _:
            return []


PROJECTION = Projection(
    name="preferences",
    mode="inline",
    tables=(USER_SPLASHES, USER_FEEDBACK),
    writes=writes,
    handles=frozenset({SplashSeen, FeedbackRecorded, UserDeleted, UsersDeleted}),
)
