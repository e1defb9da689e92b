"""Where an integration may send, at the connection: the delivery's ClientSession, whose every
connection is judged by the address rules (service/addons/addresses.py) when it is made, so that
no integration becomes a way into the service's own network (SSRF)."""

from __future__ import annotations

import asyncio
import socket
from typing import TYPE_CHECKING, Final

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from service.addons.addresses import (
    SETTING,
    Address,
    Network,
    Refused,
    check_address,
    check_addresses,
    check_url,
    check_url_host,
    literal,
    parse_allowed,
    shown,
)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import SimpleNamespace

    from aiohttp.connector import Connection
    from aiohttp.tracing import Trace

__all__ = [
    "CONNECTION_LIMIT",
    "CONNECTION_LIMIT_PER_HOST",
    "SETTING",
    "Address",
    "CheckedConnector",
    "CheckedResolver",
    "Network",
    "Refused",
    "check_address",
    "check_host",
    "check_url",
    "client_session",
    "parse_allowed",
    "refused_cause",
]

# Connections the delivery session holds at once, in all and to one receiver: deliveries are
# small requests, and one slow receiver must not take every connection.
CONNECTION_LIMIT: Final = 50
CONNECTION_LIMIT_PER_HOST: Final = 4

PASSED_KEPT: Final = 1024  # hosts remembered as passed, at most

# What an address resolved here is handed to aiohttp with: it must not be looked up again.
_NUMERIC_FLAGS: Final = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV


async def check_host(host: str, port: int, allowed: Sequence[Network]) -> list[str]:
    """Resolve `host` (the event loop's getaddrinfo) and judge every address: refused if any one
    is, so that a name cannot point at a public and an internal address at once. Returns the
    addresses; a name that does not resolve raises OSError (socket.gaierror)."""
    address = literal(host.removeprefix("[").removesuffix("]"))
    if address is not None:
        check_address(address, allowed)
        return [str(address)]
    found = await _lookup(host, port, socket.AF_UNSPEC)
    addresses = [text for _, _, text, _ in found]
    check_addresses(host, addresses, allowed)
    return addresses


class CheckedResolver(AbstractResolver):
    """The resolver of the delivery's ClientSession: each connection's addresses are resolved
    and checked at connect time, so the name is judged again at each delivery and a name that
    changes its address (DNS rebinding) between the check and the connection cannot slip
    through; aiohttp connects to exactly the addresses this returned."""

    def __init__(self, allowed: Sequence[Network]) -> None:
        self._allowed = tuple(allowed)

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await _lookup(host, port, family)
        check_addresses(host, [text for _, _, text, _ in found], self._allowed)
        return [
            ResolveResult(
                hostname=host,
                host=text,
                port=found_port,
                family=found_family,
                proto=proto,
                flags=_NUMERIC_FLAGS,
            )
            for found_family, proto, text, found_port in found
        ]

    async def close(self) -> None:
        return None


class CheckedConnector(aiohttp.TCPConnector):
    """The delivery's connector: names resolved by CheckedResolver at each new connection (no
    DNS cache), an IP address as the URL's host judged before it is used (aiohttp connects to
    an address without asking the resolver), and never a proxy (a proxy would resolve the
    receiver's name where the rules cannot see it)."""

    def __init__(self, allowed: Sequence[Network]) -> None:
        self._allowed = tuple(allowed)
        # The hosts already judged and passed: the rules and an address's judgement never
        # change, and every request (pooled connections too) passes here.
        self._passed: set[str] = set()
        super().__init__(
            resolver=CheckedResolver(self._allowed),
            use_dns_cache=False,
            limit=CONNECTION_LIMIT,
            limit_per_host=CONNECTION_LIMIT_PER_HOST,
        )

    async def connect(
        self,
        req: aiohttp.ClientRequest,
        traces: list[Trace],
        timeout: aiohttp.ClientTimeout,  # noqa: ASYNC109 (aiohttp's signature)
    ) -> Connection:
        if req.proxy is not None:
            raise Refused(f"The URL {shown(req.url)} is refused: integrations never use a proxy")
        host = req.url.raw_host or ""
        if host not in self._passed:
            check_url_host(req.url, self._allowed)
            if len(self._passed) < PASSED_KEPT:
                self._passed.add(host)
        return await super().connect(req, traces, timeout)


def client_session(
    allowed: Sequence[Network], *, timeout: aiohttp.ClientTimeout
) -> aiohttp.ClientSession:
    """The ClientSession deliveries are sent with (call it inside the event loop; close it).

    Every connection goes through CheckedConnector: a refused address raises Refused from the
    request itself (use refused_cause to find it under a wrapping exception). Callers pass
    allow_redirects=False and get a 3xx answer as it is; a request that leaves the default
    raises Refused at the redirect instead of following it. No cookies are kept between
    receivers and no proxy is read from the environment."""
    redirects = aiohttp.TraceConfig()
    redirects.on_request_redirect.append(_refuse_redirect)
    return aiohttp.ClientSession(
        connector=CheckedConnector(allowed),
        timeout=timeout,
        trust_env=False,
        cookie_jar=aiohttp.DummyCookieJar(),
        trace_configs=[redirects],
    )


def refused_cause(exc: BaseException) -> Refused | None:
    """The Refused that `exc` is or wraps (a cause, a context, a connector error's OSError, a
    group's member): how the delivery tells "refused by our rules" from a connection error."""
    pending: list[BaseException] = [exc]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, Refused):
            return current
        if isinstance(current, aiohttp.ClientConnectorError):
            pending.append(current.os_error)
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return None


async def _lookup(host: str, port: int, family: int) -> list[tuple[int, int, str, int]]:
    """(family, proto, address, port) for each address getaddrinfo finds for `host`."""
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, family=family, flags=socket.AI_ADDRCONFIG
    )
    found: list[tuple[int, int, str, int]] = [
        (info_family, proto, str(sockaddr[0]), int(sockaddr[1]))
        for info_family, _, proto, _, sockaddr in infos
        if info_family in (socket.AF_INET, socket.AF_INET6)
    ]
    if not found:
        raise OSError(f"{host} resolves to no IP address")
    return found


async def _refuse_redirect(
    session: aiohttp.ClientSession,
    context: SimpleNamespace,
    params: aiohttp.TraceRequestRedirectParams,
) -> None:
    """A redirect is never followed: the receiver could point it anywhere."""
    del session, context
    status = params.response.status
    params.response.close()
    raise Refused(
        f"The URL {shown(params.url)} is refused: it answered {status} with a redirect, which "
        "integrations never follow (send with allow_redirects=False to get the answer as it is)"
    )
