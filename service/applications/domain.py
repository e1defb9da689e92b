"""Applications: pure decisions (no I/O) and what SDK versions are outdated."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final, NamedTuple

import msgspec

from eventlog.events.applications import (
    ApplicationCreated,
    ApplicationDeleted,
    ApplicationUpdated,
)
from service.errors import NotFound, ValidationError

if TYPE_CHECKING:
    from datetime import datetime

    from service.applications.commands import SetApplication

MAX_NAME: Final = 255


def stream(app_name: str) -> tuple[str, str]:
    return ("application", app_name)


def application_missing(app_name: str) -> NotFound:
    return NotFound(f"Could not find appName={app_name}")


def validate_app_name(app_name: str) -> str:
    """A path's application name: 1..255 characters (the SDKs' appName limit)."""
    if not 1 <= len(app_name) <= MAX_NAME:
        raise ValidationError(f"appName must be 1 to {MAX_NAME} characters - at `appName`")
    return app_name


class Described(NamedTuple):
    """What people said of an application, as it is."""

    description: str | None
    url: str | None
    color: str | None
    icon: str | None


def set_application(
    app_name: str, body: SetApplication, current: Described | None, now: datetime
) -> ApplicationCreated | ApplicationUpdated | None:
    """POST: the fields given replace those said before (null clears one); an application no
    one described yet is created (reported by an SDK or not, as in Unleash). None: nothing
    changes, and nothing is recorded."""
    base = current or Described(None, None, None, None)
    wanted = Described(
        *(
            old if new is msgspec.UNSET else new
            for old, new in zip(
                base, (body.description, body.url, body.color, body.icon), strict=True
            )
        )
    )
    if current is None:
        return ApplicationCreated(app_name=app_name, **wanted._asdict(), created_at=now)
    if wanted == current:
        return None
    return ApplicationUpdated(app_name=app_name, **wanted._asdict(), updated_at=now)


def delete_application(app_name: str, *, known: bool) -> ApplicationDeleted | None:
    """As in Unleash, deleting an application that is not there succeeds; only one that is
    there (described, or with SDK instances) records its deletion."""
    return ApplicationDeleted(app_name=app_name) if known else None


# The oldest version of each SDK Unleash 6.10.1 does not call outdated (its findOutdatedSdks).
MINIMUM_SDK_VERSIONS: Final = {
    "unleash-client-node": (5, 3, 2),
    "unleash-client-java": (9, 2, 0),
    "unleash-client-go": (4, 1, 0),
    "unleash-client-python": (5, 11, 0),
    "unleash-client-ruby": (5, 0, 0),
    "unleash-client-dotnet": (4, 1, 3),
    "unleash-client-php": (2, 3, 0),
}
# A semantic version's numbers; a pre-release (`-rc.1`) sorts before its release.
_SEMVER: Final = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")


def is_outdated(sdk_version: str | None) -> bool:
    """`name:version` of an SDK older than its minimum; unknown SDKs and versions that are not
    semantic versions are not outdated."""
    if not sdk_version or sdk_version.count(":") != 1:
        return False
    name, version = sdk_version.split(":")
    minimum = MINIMUM_SDK_VERSIONS.get(name)
    match = _SEMVER.match(version)
    if minimum is None or match is None:
        return False
    numbers = (int(match[1]), int(match[2]), int(match[3]))
    return numbers < minimum or (numbers == minimum and match[4] is not None)
