"""The admin API's operations that Unleash's web UI (service/ui.py) reads about the server
itself, as Unleash 6.10.1 answers them: `GET /api/admin/ui-config` (what the UI may offer),
and `POST /api/admin/record-ui-error` (the UI reports its own crashes, which land in the log).

The service presents itself as Unleash's open-source edition: no enterprise version, so the
UI hides its enterprise pages and never calls their operations, and no flag that makes it call
Unleash's hosted services (its analytics, its own Unleash client, its feedback service).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal

import msgspec
import structlog

from service import auth
from service.appkeys import FRONTEND_ORIGINS, POOL
from service.http.answers import empty, json_response
from service.http.requests import principal, read_json
from service.http.routes import Route
from service.instance.state import maintenance
from service.ui import UI_VERSION

if TYPE_CHECKING:
    from aiohttp import web

log = structlog.get_logger()

# Our limits (the request Structs of service/features/commands.py), in Unleash's names. The UI
# warns as a count nears its limit and refuses past it; where we have no such limit, UNLIMITED
# is a count nobody reaches, so the UI never refuses.
CONSTRAINT_VALUES: Final = 1000  # values of one constraint
CONSTRAINTS: Final = 100  # constraints of one strategy
STRATEGY_SEGMENTS: Final = 100  # segments of one strategy
SEGMENT_VALUES: Final = 100 * CONSTRAINT_VALUES  # a segment's constraints, each with its values
UNLIMITED: Final = 1_000_000_000


class ResourceLimits(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    segment_values: int = SEGMENT_VALUES
    strategy_segments: int = STRATEGY_SEGMENTS
    # Signals and actions are enterprise features: Unleash's own defaults, never reached.
    signal_endpoints: int = 5
    action_set_actions: int = 10
    action_sets_per_project: int = 5
    action_set_filters: int = 5
    action_set_filter_values: int = 25
    signal_tokens_per_endpoint: int = 5
    feature_environment_strategies: int = UNLIMITED
    constraint_values: int = CONSTRAINT_VALUES
    constraints: int = CONSTRAINTS
    environments: int = UNLIMITED
    projects: int = UNLIMITED
    api_tokens: int = UNLIMITED
    segments: int = UNLIMITED
    feature_flags: int = UNLIMITED


class Version(msgspec.Struct, frozen=True, kw_only=True):
    oss: str
    enterprise: Literal[""] = ""  # empty: the open-source edition (the UI's isOss())


class VersionInfo(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    current: Version
    latest: dict[str, str]
    is_latest: bool  # true: the UI offers no upgrade
    instance_id: str


# The UI's feature flags: the frontend API exists here; every other flag stays off (absent
# ones are off too). Never `T` (the UI's analytics) nor any other that calls hosted services.
FLAGS: Final = {"embedProxy": True, "embedProxyFrontend": True}


class UiConfig(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What Unleash's web UI needs to know about this server (Unleash's uiConfigSchema)."""

    environment: str = "Open Source"
    flags: dict[str, bool]
    version: str
    email_enabled: bool = False
    unleash_url: str
    base_uri_path: str = ""
    # Unleash's name for its own open-source sign-in (a password form): service/users.
    authentication_type: Literal["open-source"] = "open-source"
    segment_values_limit: int = SEGMENT_VALUES
    strategy_segments_limit: int = STRATEGY_SEGMENTS
    frontend_api_origins: list[str]
    version_info: VersionInfo
    prometheus_api_available: bool = msgspec.field(default=False, name="prometheusAPIAvailable")
    resource_limits: ResourceLimits
    disable_password_auth: bool = False
    maintenance_mode: bool = False
    max_sessions_count: int = 0
    # The UI's own Unleash client reads its context here; it never starts without a token
    # (service/ui.py), and nothing personal is sent.
    unleash_context: dict[str, Any]


INSTANCE_ID: Final = "flagstore"


async def ui_config(request: web.Request) -> web.Response:
    """The configuration of the web UI: this server as Unleash's open-source edition, its
    limits, whether maintenance mode is on (the UI shows a banner and offers no changes), and
    the origins the frontend API admits (set through the admin API, else
    `FRONTEND_API_ORIGINS`)."""
    pool = request.app[POOL]
    async with pool.acquire() as conn:
        maintenance_mode = await maintenance(conn)
    body = UiConfig(
        flags=FLAGS,
        version=UI_VERSION,
        unleash_url=str(request.url.origin()),
        frontend_api_origins=list(await request.app[FRONTEND_ORIGINS].get(pool)),
        version_info=VersionInfo(
            current=Version(oss=UI_VERSION), latest={}, is_latest=True, instance_id=INSTANCE_ID
        ),
        resource_limits=ResourceLimits(),
        maintenance_mode=maintenance_mode,
        unleash_context={},
    )
    return json_response(body)


class RecordUiError(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """An error the web UI met (Unleash's recordUiErrorSchema)."""

    error_message: str
    error_stack: str = ""

    example: ClassVar[dict[str, object]] = {
        "errorMessage": "Cannot read properties of undefined (reading 'name')",
        "errorStack": "TypeError: Cannot read properties of undefined\n    at FeatureView",
    }


# What a log line keeps of a report: enough to find the bug, never a whole page of text.
MESSAGE_KEPT: Final = 1000
STACK_KEPT: Final = 4000
# Tokens as they look (`*:*.<secret>`, `project:env.<secret>`, `user:<secret>`, a secret of 16
# characters or more): never in the log.
_TOKEN = re.compile(r"[\w*\[\]-]+:[\w*\[\]-]+\.[\w-]{16,}|user:[\w-]{16,}")


def _kept(text: str, most: int) -> str:
    masked = _TOKEN.sub(lambda m: auth.secret_hint(m[0], reveal=False), text)
    return masked if len(masked) <= most else masked[:most] + "..."


async def record_ui_error(request: web.Request) -> web.Response:
    """The web UI reports an error it met: one warning line in the log (shortened, tokens
    masked), nothing stored."""
    report = await read_json(request, RecordUiError)
    log.warning(
        "ui_error",
        principal=principal(request).id,
        error_message=_kept(report.error_message, MESSAGE_KEPT),
        error_stack=_kept(report.error_stack, STACK_KEPT),
    )
    return empty(204)


ROUTES: Final = [
    Route("GET", "/api/admin/ui-config", ui_config, auth.READ, ok={200: UiConfig}),
    Route(
        "POST",
        "/api/admin/record-ui-error",
        record_ui_error,
        auth.READ,
        body=RecordUiError,
        ok={204: None},
    ),
]
