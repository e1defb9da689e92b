"""POST /api/admin/constraints/validate: whether a constraint is one a strategy or a segment
can be saved with (the UI asks before it saves one)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from service import auth
from service.features import domain
from service.features.commands import Constraint
from service.http.answers import empty
from service.http.requests import read_json
from service.http.routes import Route

if TYPE_CHECKING:
    from aiohttp import web


async def validate_constraint(request: web.Request) -> web.Response:
    """204 when valid, else 400 naming the field, with the rules strategies and segments
    apply (service/features/domain.py, check_constraint)."""
    domain.check_constraint(await read_json(request, Constraint))
    return empty(204)


ROUTES = [
    Route(
        "POST",
        "/api/admin/constraints/validate",
        validate_constraint,
        auth.READ,
        body=Constraint,
        ok={204: None},
    ),
]
