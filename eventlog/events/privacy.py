"""The stored event of an erasure."""

from __future__ import annotations

from typing import ClassVar

from eventlog.events.base import Event


class PersonalDataErased(Event, frozen=True, kw_only=True, tag="PersonalDataErased"):
    """A person's data key was destroyed: everything sealed with it, in every event before and
    in every copy of the log, reads `"[erased]"` from now on. Ids only. `reason`: `user-deleted`,
    `inactive-user-deleted` (each right away, or ERASURE_DELAY_DAYS later when due) or `by-hand`
    (`python -m service erase-user`); `had_key`: false when nothing of theirs had been sealed
    (their data, if any, is in events written before encryption: docs/privacy.md)."""

    not_personal: ClassVar[tuple[str, ...]] = ("reason",)

    person_id: int
    reason: str
    had_key: bool
