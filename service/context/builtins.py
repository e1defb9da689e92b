"""The context fields every install has, as Unleash 6.10.1 seeds them (its migrations; its
`GET /api/admin/context` on a new install): the fields of every SDK's context. They are
constants, not events; a change to one is an event, and its row then overrides the constant
(projections/context_fields.py)."""

from __future__ import annotations

from typing import Final

from service.context.domain import Field


def _built_in(name: str, description: str, sort_order: int, *, stickiness: bool = False) -> Field:
    return Field(
        name=name,
        description=description,
        legal_values=[],
        stickiness=stickiness,
        sort_order=sort_order,
        created_at=None,
        built_in=True,
    )


BUILT_IN: Final[dict[str, Field]] = {
    f.name: f
    for f in (
        _built_in("environment", "Allows you to constrain on application environment", 0),
        _built_in("userId", "Allows you to constrain on userId", 1),
        _built_in("appName", "Allows you to constrain on application name", 2),
        _built_in("currentTime", "Allows you to constrain on date values", 3),
        _built_in("sessionId", "Allows you to constrain on sessionId", 4, stickiness=True),
    )
}
