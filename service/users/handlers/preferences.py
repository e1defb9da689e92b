"""What a person tells Unleash's web UI, as Unleash 6.10.1 records it: a splash screen or tip
seen (`POST /api/admin/splash/:id`), a feedback prompt answered (`POST /api/admin/feedback`,
`PUT /api/admin/feedback/:id`). Each is that person's own change, one event on their stream;
`GET /api/admin/user` shows them (`splash`, `feedback`), and the UI asks no more.

Only people have them (OWN_ACCOUNT): an API token or a service account gets 403 (Unleash
answers an API token a 500 here)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

import msgspec

from service import auth
from service.errors import ValidationError
from service.http.answers import json_response
from service.http.requests import actor, principal, read_json, unit_of_work
from service.http.routes import Route
from service.users import domain, queries
from service.users.commands import CreateFeedback, UiName, UpdateFeedback
from service.users.responses import Feedback, SplashAnswer

if TYPE_CHECKING:
    from aiohttp import web

    from service.work import UnitOfWork


def _person(request: web.Request) -> int:
    who = principal(request)
    assert who.account_id is not None  # OWN_ACCOUNT is held by people only
    return who.account_id


def _name(value: str, path: str) -> str:
    """A splash screen's or prompt's name from the path, by the body's rule (UiName)."""
    try:
        return msgspec.convert(value, UiName)
    except msgspec.ValidationError as exc:
        raise ValidationError(f"{exc} - at `{path}`".replace(" - at `$`", "")) from None


async def _state(uow: UnitOfWork, query: str, user_id: int, name: str) -> tuple[bool, int]:
    """Under the account's lock: whether the person has this one, and how many they have."""
    row = await uow.conn.fetchrow(query, user_id, name)
    assert row is not None  # one row always
    return row["known"], row["count"]


async def see_splash(request: web.Request) -> web.Response:
    """The caller has seen this splash screen (or tip) of the web UI: it is not shown again.
    Seeing it again changes nothing."""
    user_id = _person(request)
    splash_id = _name(request.match_info["id"], "id")
    async with unit_of_work(request) as uow:
        account = await queries.lock_account(uow.conn, user_id)
        seen, count = await _state(uow, queries.SPLASH_STATE, user_id, splash_id)
        events = domain.see_splash(account, user_id, splash_id, seen=seen, count=count)
        if events:
            await uow.append(domain.user_stream(user_id), events, actor(request))
    return json_response(SplashAnswer(user_id=user_id, splash_id=splash_id, seen=True))


async def _record(
    request: web.Request, uow: UnitOfWork, feedback_id: str, *, given: datetime, never_show: bool
) -> Feedback:
    user_id = _person(request)
    account = await queries.lock_account(uow.conn, user_id)
    answered, count = await _state(uow, queries.FEEDBACK_STATE, user_id, feedback_id)
    event = domain.record_feedback(
        account,
        user_id,
        feedback_id,
        given=given,
        never_show=never_show,
        answered=answered,
        count=count,
    )
    await uow.append(domain.user_stream(user_id), [event], actor(request))
    return Feedback(
        user_id=user_id, feedback_id=feedback_id, never_show=event.never_show, given=event.given
    )


async def create_feedback(request: web.Request) -> web.Response:
    """The caller answered a feedback prompt of the web UI now (or asked never to see it)."""
    cmd = await read_json(request, CreateFeedback)
    async with unit_of_work(request) as uow:
        answer = await _record(
            request, uow, cmd.feedback_id, given=datetime.now(UTC), never_show=cmd.never_show
        )
    return json_response(answer)


async def update_feedback(request: web.Request) -> web.Response:
    """The caller's answer to a feedback prompt changes (recorded when there was none)."""
    feedback_id = _name(request.match_info["id"], "id")
    cmd = await read_json(request, UpdateFeedback)
    given = cmd.given or datetime.now(UTC)
    async with unit_of_work(request) as uow:
        answer = await _record(request, uow, feedback_id, given=given, never_show=cmd.never_show)
    return json_response(answer)


PARAMS: Final = {"id": UiName}
ROUTES: Final = [
    Route(
        "POST",
        "/api/admin/splash/{id}",
        see_splash,
        auth.OWN_ACCOUNT,
        ok={200: SplashAnswer},
        params=PARAMS,
    ),
    Route(
        "POST",
        "/api/admin/feedback",
        create_feedback,
        auth.OWN_ACCOUNT,
        body=CreateFeedback,
        ok={200: Feedback},
    ),
    Route(
        "PUT",
        "/api/admin/feedback/{id}",
        update_feedback,
        auth.OWN_ACCOUNT,
        body=UpdateFeedback,
        ok={200: Feedback},
        params=PARAMS,
    ),
]
