"""Stored events of applications (stream `application/<name>`): what people say of an
application the SDKs report (its description, URL, colour and icon), and its deletion. What
SDKs report of it (instances, counts) is telemetry, never events (sql/0015)."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from eventlog.events.base import Event

_FIELDS = ("app_name", "description", "url", "color", "icon")


class ApplicationCreated(Event, frozen=True, kw_only=True, tag="ApplicationCreated"):
    """Someone described an application that had no description yet (whether or not an SDK
    reported it): from now on it is listed even when no SDK reports it."""

    not_personal: ClassVar[tuple[str, ...]] = _FIELDS

    app_name: str
    description: str | None
    url: str | None
    color: str | None
    icon: str | None
    created_at: datetime


class ApplicationUpdated(Event, frozen=True, kw_only=True, tag="ApplicationUpdated"):
    """The application's description, URL, colour and icon as they are from now on (all four,
    those the request left out as they were)."""

    not_personal: ClassVar[tuple[str, ...]] = _FIELDS

    app_name: str
    description: str | None
    url: str | None
    color: str | None
    icon: str | None
    updated_at: datetime


class ApplicationDeleted(Event, frozen=True, kw_only=True, tag="ApplicationDeleted"):
    """The application is gone: what was said of it, and (in the same transaction, outside
    the log) its SDK instances. An SDK that registers again brings it back, undescribed."""

    not_personal: ClassVar[tuple[str, ...]] = ("app_name",)

    app_name: str
