"""Unleash's admin API as the importer reads it: one session, bounded concurrency, and the
checks that come before anything is read (reachable, the token accepted, an admin's, a version
this importer knows)."""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Any, Final, Self, TypeVar

import aiohttp
import msgspec

if TYPE_CHECKING:
    from types import TracebackType

T = TypeVar("T")

# The versions whose admin API the importer reads as it is documented for 6.10.1 (checked
# against that version's server: tests/switchover, `make import-compare`).
SUPPORTED_MAJOR: Final = 6
CONCURRENCY: Final = 8  # requests in flight to the source at once: enough to hide latency,
# few enough that a production Unleash hardly notices the import
TIMEOUT: Final = aiohttp.ClientTimeout(total=120, connect=10)
# The first request, once: a server that accepts connections and never answers (or answers
# slowly) is named within seconds rather than after every read's attempts.
CHECK_TIMEOUT: Final = aiohttp.ClientTimeout(total=15, connect=10)
ATTEMPTS: Final = 3  # of a read that failed on the network or with a 5xx
_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)")


class SourceError(Exception):
    """The source cannot be read as asked; `exit_code` 2 for what the command line got wrong
    (an address, a token, a version), 1 for a failure while reading."""

    def __init__(self, message: str, *, exit_code: int = 2, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.status = status  # the HTTP status the source answered, if it answered


class Version(msgspec.Struct, frozen=True):
    oss: str | None = None
    enterprise: str | None = None


class VersionInfo(msgspec.Struct, frozen=True):
    current: Version = msgspec.field(default_factory=Version)


class UiConfig(msgspec.Struct, frozen=True):
    version: str = ""
    versionInfo: VersionInfo = msgspec.field(default_factory=VersionInfo)  # noqa: N815 - Unleash's


class Unleash:
    """A running Unleash at `url`, read with an admin token (an admin API token or an Admin's
    personal access token). Use inside `async with`; `check()` before reading."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url.rstrip("/")
        self._token = token
        self._session: aiohttp.ClientSession | None = None
        self._slots = asyncio.Semaphore(CONCURRENCY)
        self.version = ""
        self.enterprise = False
        self.requests = 0

    async def __aenter__(self) -> Self:
        self._session = aiohttp.ClientSession(
            timeout=TIMEOUT,
            headers={"Authorization": self._token, "Accept": "application/json"},
        )
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def origin(self) -> str:
        """What marks the events this source brought (Metadata.origin)."""
        return f"unleash:{self.url}"

    async def check(self) -> None:
        """Reachable, the token accepted, a supported version, and an admin's rights (the users
        list is an admin's alone); each refusal a SourceError with exit code 2."""
        try:
            config = await self._call("GET", "/api/admin/ui-config", UiConfig, first=True)
        except SourceError as exc:
            raise _refusal(exc, self.url) from None
        self.version = config.versionInfo.current.oss or config.version
        self.enterprise = bool(config.versionInfo.current.enterprise)
        found = _VERSION.match(self.version)
        if found is None or int(found.group(1)) != SUPPORTED_MAJOR:
            raise SourceError(
                f"Unleash {self.version or '(no version given)'} at {self.url} is not supported: "
                f"this importer reads Unleash {SUPPORTED_MAJOR}.x (docs/migrating.md)"
            )
        try:
            await self.get("/api/admin/user-admin", dict[str, Any])
        except SourceError as exc:
            raise _refusal(exc, self.url) from None

    async def get(self, path: str, shape: type[T], params: dict[str, str] | None = None) -> T:
        """GET a path's JSON as `shape`; a network failure or a 5xx is tried again (ATTEMPTS)."""
        return await self._call("GET", path, shape, params=params)

    async def post(self, path: str, shape: type[T], body: object) -> T:
        """POST a JSON body and read the answer (a read that Unleash answers to a POST, such as
        its export)."""
        return await self._call("POST", path, shape, body=body)

    async def _call(  # noqa: PLR0913 - a request's parts
        self,
        method: str,
        path: str,
        shape: type[T],
        *,
        params: dict[str, str] | None = None,
        body: object = None,
        first: bool = False,
    ) -> T:
        """`first`: the run's first request, tried once within CHECK_TIMEOUT."""
        assert self._session is not None, "use Unleash inside `async with`"
        where = f"{method} {self.url}{path}"
        attempts = 1 if first else ATTEMPTS
        for attempt in range(1, attempts + 1):
            async with self._slots:
                self.requests += 1
                try:
                    async with self._session.request(
                        method,
                        self.url + path,
                        params=params,
                        json=body if method == "POST" else None,
                        allow_redirects=False,
                        timeout=CHECK_TIMEOUT if first else TIMEOUT,
                    ) as response:
                        status = response.status
                        raw = await response.read()
                except (aiohttp.ClientConnectionError, TimeoutError) as exc:
                    if attempt == attempts:
                        why = f"{type(exc).__name__} {exc}".strip()
                        raise SourceError(f"cannot reach Unleash at {self.url}: {why}") from None
                    await asyncio.sleep(0.2 * attempt)
                    continue
                except aiohttp.InvalidURL:
                    raise SourceError(f"not a URL: {self.url}") from None
            if status >= 500 and attempt < attempts:
                await asyncio.sleep(0.2 * attempt)
                continue
            break
        if status == 401:
            raise SourceError(
                f"the token was refused by {self.url} (401): check --token", status=status
            )
        if status != 200:
            raise SourceError(
                f"{where} answered {status}", exit_code=1 if status >= 500 else 2, status=status
            )
        try:
            return msgspec.json.decode(raw, type=shape)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise SourceError(
                f"{where} answered what this importer cannot read: {exc}", exit_code=1
            ) from None


def _refusal(exc: SourceError, url: str) -> SourceError:
    """A check's failure as the command says it: a token without an admin's rights (403), a
    server that does not answer Unleash's admin API (404), or the failure as it was."""
    if exc.status == 403:
        return SourceError(
            f"the token has no admin rights at {url}: an admin API token or an Admin's "
            "personal access token is needed"
        )
    if exc.status == 404:
        return SourceError(f"{url} does not answer Unleash's admin API: {exc.message}")
    return exc
