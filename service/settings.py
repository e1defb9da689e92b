"""Settings read from the environment once, validated into a frozen Struct."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal
from urllib.parse import urlsplit

import msgspec

from eventlog.errors import ConfigError
from service.addons.addresses import parse_allowed

if TYPE_CHECKING:
    from collections.abc import Mapping

ADMIN_TOKEN_PREFIX = "*:*."
# Admin tokens chosen by an operator are stored as unsalted sha256 like every token: a short
# secret could be found from a database dump by brute force.
MIN_ADMIN_SECRET = 32

Port = Annotated[int, msgspec.Meta(ge=0, le=65535)]
Days = Annotated[int, msgspec.Meta(ge=1, le=36500)]
Seconds = Annotated[float, msgspec.Meta(ge=0, le=600)]


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    host: str = "127.0.0.1"
    port: Port = 4242
    database_url: str | None = None
    data_dir: str = ".data"
    init_admin_api_tokens: tuple[str, ...] = ()
    log_format: Literal["json", "console"] = "json"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    user_inactivity_threshold_in_days: Days = 180
    # Kubernetes: keep listening with /ready at 503 this long after SIGTERM before closing.
    shutdown_drain_seconds: Seconds = 0.0
    # In-flight requests get this long to finish after the drain; stopping the projection runner
    # and the pool adds at most a few seconds more.
    shutdown_timeout_seconds: Seconds = 10.0
    db_pool_size: Annotated[int, msgspec.Meta(ge=1, le=200)] = 10
    # A statement of a request (or its rollback) that takes longer is abandoned: 503.
    db_command_timeout_seconds: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 5.0
    # An idle keep-alive connection is closed after this long (Unleash/Node: 5 s; nginx: 75 s).
    keepalive_timeout_seconds: Annotated[float, msgspec.Meta(ge=1, le=3600)] = 75.0
    # From the first byte of a request, its line and headers must arrive within this long.
    request_header_timeout_seconds: Annotated[float, msgspec.Meta(ge=1, le=600)] = 10.0
    # A request body (after its headers) must arrive within this long; else 408.
    request_body_timeout_seconds: Annotated[float, msgspec.Meta(ge=1, le=3600)] = 30.0
    # Open client connections at most (further capped by the open-files limit); when full,
    # the longest-idle connection is closed for a new one, or the new one gets a 503.
    max_connections: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 10_000
    # Sign-in attempts per minute from one client address, and for one account name.
    login_rate_limit_per_address: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 10
    login_rate_limit_per_account: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 10
    # argon2 hashes computed at once (each holds 64 MiB and a core while it runs: docs/signin.md).
    password_hash_concurrency: Annotated[int, msgspec.Meta(ge=1, le=64)] = 1
    # Behind N proxies that append to X-Forwarded-For, the client address is the Nth entry
    # from the right; 0 (the default) uses the peer address and ignores the header.
    trusted_proxy_hops: Annotated[int, msgspec.Meta(ge=0, le=10)] = 0
    # The key that wraps every person's data key (docs/privacy.md): 32 bytes, base64 or hex.
    # Required with DATABASE_URL; with the embedded database, made once into DATA_DIR.
    pii_master_key: str | None = None
    # During a rotation (`python -m service rotate-master-key`): the keys it replaces.
    pii_previous_master_keys: str | None = None
    # A deleted person's key is destroyed this many days later (0: at once, in the deletion).
    erasure_delay_days: Annotated[int, msgspec.Meta(ge=0, le=36500)] = 0
    # How often each replica looks for erasures that are due.
    erasure_interval_seconds: Annotated[float, msgspec.Meta(ge=1, le=86400)] = 60.0
    # What SDKs report (service/telemetry): hourly counts, and instances not heard from, are
    # kept this many days.
    client_metrics_retention_days: Days = 30
    # The browser origins that may call the frontend API (CORS), comma-separated; "*" (as in
    # Unleash, the default) allows every origin. Each is scheme://host[:port], as browsers send it.
    frontend_api_origins: tuple[str, ...] = ("*",)
    # How long browsers may keep the answer to a CORS preflight (Unleash's default: a day).
    access_control_max_age: Annotated[int, msgspec.Meta(ge=0, le=86400 * 7)] = 86400
    # Unleash's web UI at `/` (service/ui.py); false answers its paths with a 404.
    ui_enabled: bool = True
    # The folder `make install` fetched the UI into (tools/ui_fetch.py); unset: `.ui/` beside
    # the source. The container image sets its own.
    ui_dir: str | None = None
    # The internal networks integrations may send to (service/addons/addresses.py), CIDRs
    # separated by commas; unset: only global addresses. Link-local is refused whatever it says.
    integration_allowed_networks: str | None = None
    # Whether `serve` delivers integrations' events beside answering requests; false leaves it
    # to `python -m service deliver` processes (service/delivering.py).
    integration_delivery: bool = True
    # This server's address, for the links in integrations' messages (Unleash's UNLEASH_URL).
    unleash_url: str = "http://localhost:4242"
    # A delivery that keeps failing is retried, with backoff up to the second setting, for
    # this many hours; then it is recorded as given up and the integration goes on.
    integration_give_up_hours: Annotated[float, msgspec.Meta(gt=0, le=720)] = 24.0
    integration_retry_max_seconds: Annotated[float, msgspec.Meta(ge=1, le=3600)] = 300.0
    # One request to a receiver gets this long to be answered.
    integration_request_timeout_seconds: Annotated[float, msgspec.Meta(gt=0, le=600)] = 60.0
    # For tests: the delivery's clock (backoff, Retry-After, giving up) runs this many times
    # faster than the wall clock.
    integration_time_scale: Annotated[float, msgspec.Meta(ge=1, le=1_000_000)] = 1.0

    @property
    def pg_data_dir(self) -> Path:
        return Path(self.data_dir).resolve() / "pg"


_NAMES = [f.upper() for f in Settings.__struct_fields__]

# Secrets that may instead be read from a file named by `<NAME>_FILE` (the Docker and Kubernetes
# convention: a Secret mounted as a file rather than put in the environment).
FILE_SETTINGS = (
    "database_url",
    "init_admin_api_tokens",
    "pii_master_key",
    "pii_previous_master_keys",
)
# More than a secret's file ever holds; a larger one is the wrong file.
MAX_SECRET_FILE_BYTES = 64 * 1024


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Build Settings from the environment; a bad value raises ConfigError naming the variable."""
    env = os.environ if environ is None else environ
    raw: dict[str, object] = {}
    # Where each secret came from, for messages: DATABASE_URL or DATABASE_URL_FILE.
    source = {field: field.upper() for field in FILE_SETTINGS}
    for field in Settings.__struct_fields__:
        value = env.get(field.upper())
        if field in FILE_SETTINGS and (content := _read_file_setting(field.upper(), value, env)):
            value, source[field] = content, f"{field.upper()}_FILE"
        if value is None or value == "":
            continue
        raw[field] = value.strip()
    if "log_format" not in raw:  # log lines go to stdout
        raw["log_format"] = "console" if sys.stdout.isatty() else "json"
    if isinstance(raw.get("log_level"), str):
        raw["log_level"] = str(raw["log_level"]).lower()
    if "frontend_api_origins" in raw:
        raw["frontend_api_origins"] = _parse_origins(str(raw["frontend_api_origins"]))
    if "init_admin_api_tokens" in raw:
        raw["init_admin_api_tokens"] = _parse_admin_tokens(
            str(raw["init_admin_api_tokens"]), source["init_admin_api_tokens"]
        )
    _check_networks(raw.get("integration_allowed_networks"))
    url = raw.get("database_url")
    if isinstance(url, str):
        _check_url(url, source["database_url"])
    try:
        return msgspec.convert(raw, Settings, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"Invalid setting: {_name_env_var(str(exc), env)}") from None


def _read_file_setting(name: str, value: str | None, env: Mapping[str, str]) -> str | None:
    """The content of the file that `<name>_FILE` names, less one trailing newline; None when
    `<name>_FILE` is unset. Errors name the variable and the path, never what the file holds."""
    file_name = f"{name}_FILE"
    path = env.get(file_name)
    if path is None or path == "":
        return None
    if value:
        raise ConfigError(f"Invalid setting: {name} and {file_name} are both set; set only one")
    try:
        with Path(path).open("rb") as file:
            data = file.read(MAX_SECRET_FILE_BYTES + 1)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"Invalid setting: {file_name}: cannot read {path!r}: {reason}") from None
    if len(data) > MAX_SECRET_FILE_BYTES:
        raise ConfigError(
            f"Invalid setting: {file_name}: {path!r} is larger than {MAX_SECRET_FILE_BYTES} bytes"
        )
    try:
        content = data.decode()
    except UnicodeDecodeError:
        raise ConfigError(f"Invalid setting: {file_name}: {path!r} is not UTF-8 text") from None
    content = content.removesuffix("\n").removesuffix("\r")
    if not content.strip():
        raise ConfigError(f"Invalid setting: {file_name}: {path!r} is empty")
    return content


def _check_url(url: str, name: str) -> None:
    if not url.startswith(("postgres://", "postgresql://")):
        raise ConfigError(f"Invalid setting: {name}: must be a postgresql:// (or postgres://) URL")
    if problem := _url_problem(url):
        raise ConfigError(f"Invalid setting: {name}: {problem}")


def _url_problem(url: str) -> str | None:
    """What makes a postgresql:// URL unusable before any connection (else asyncpg fails with a
    traceback at start). Never quotes the URL: it holds the password. Hosts may be a list."""
    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        return "not a valid URL (unbalanced [ ] around an IPv6 address?)"
    for host in netloc.rpartition("@")[2].split(","):
        port = host.partition("]")[2] if host.startswith("[") else host.partition(":")[2]
        port = port.removeprefix(":") if host.startswith("[") else port
        if port and not (port.isdigit() and 0 < int(port) <= 65535):
            return "a port in the URL is not a number from 1 to 65535"
    return None


def _check_networks(value: object) -> None:
    try:
        parse_allowed(str(value) if value is not None else None)
    except ValueError as exc:
        raise ConfigError(f"Invalid setting INTEGRATION_ALLOWED_NETWORKS: {exc}") from None


def _parse_admin_tokens(value: str, name: str) -> tuple[str, ...]:
    # Separated by commas, or by lines (a file with one token a line).
    tokens = tuple(t.strip() for t in value.replace("\n", ",").split(",") if t.strip())
    for token in tokens:
        if not token.startswith(ADMIN_TOKEN_PREFIX) or len(token) <= len(ADMIN_TOKEN_PREFIX):
            raise ConfigError(
                f"Invalid setting {name}: each token must have the form "
                "'*:*.<secret>' with a non-empty secret"
            )
        if len(token) - len(ADMIN_TOKEN_PREFIX) < MIN_ADMIN_SECRET:
            raise ConfigError(
                f"Invalid setting {name}: the secret after '*:*.' must be at least "
                f"{MIN_ADMIN_SECRET} characters (tokens are stored as unsalted sha256, so a short "
                "one could be guessed from a database dump); e.g. `openssl rand -hex 32`"
            )
    return tokens


def _parse_origins(value: str) -> tuple[str, ...]:
    """Origins as Unleash validates them: "*", or a URL that is its own origin (no path, no
    trailing slash, no default port, lower case), as the Origin header carries it."""
    origins = tuple(o.strip() for o in value.split(",") if o.strip())
    if not origins:
        raise ConfigError("Invalid setting FRONTEND_API_ORIGINS: name at least one origin or *")
    for origin in origins:
        if origin != "*" and not is_origin(origin):
            raise ConfigError(
                f"Invalid setting FRONTEND_API_ORIGINS: {origin!r} is not an origin "
                "(scheme://host[:port], e.g. https://app.example.com) or *"
            )
    return origins


def is_origin(origin: str) -> bool:
    """An origin as the Origin header carries it (scheme://host[:port]), not "*"."""
    if "*" in origin:  # no wildcards within an origin (Unleash's rule; `cors` has none)
        return False
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
        return False
    default = 443 if parts.scheme == "https" else 80
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    shown = f"{parts.scheme}://{host}" + (f":{port}" if port not in (None, default) else "")
    return shown == origin


def _name_env_var(message: str, env: Mapping[str, str]) -> str:
    """Turn msgspec's '... - at `$.port`' into "PORT: ... (got 'http')"."""
    for name in _NAMES:
        marker = f"`$.{name.lower()}`"
        if marker in message:
            reason = message.split(" - at ", maxsplit=1)[0]
            return f"{name}: {reason} (got {env.get(name, '')!r})"
    return message
