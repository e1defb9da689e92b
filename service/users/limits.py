"""Sign-in rate limits: attempts per client address and per account name, kept in memory by
each replica (with N replicas behind one Service, up to N times each limit)."""

from __future__ import annotations

import hashlib
import ipaddress
import math
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Final

from aiohttp import web

from service.errors import TooManyRequests
from service.http.requests import forwarded_address

if TYPE_CHECKING:
    from collections.abc import Callable

    from service.settings import Settings

WINDOW: Final = 60.0  # the limits are per minute, as Unleash's
# Keys each limiter remembers at most (a key's memory does not grow with its length, so the
# total is bounded: docs/signin.md); beyond, the one used least recently is forgotten. Keys
# whose bucket is full again are dropped as they are met.
MAX_KEYS: Final = 100_000
MAX_KEY_LENGTH: Final = 200  # an address that is not one is cut to this


class RateLimiter:
    """A token bucket per key (GCRA: one float each): `limit` attempts at once, then one more
    every WINDOW / limit seconds, so never more than `limit` a minute in the long run. The
    float is the time at which the key's bucket is full again; keys are kept as a 16-byte
    digest (the names typed are not kept, and a long one costs no more)."""

    def __init__(self, limit: int, *, window: float = WINDOW, max_keys: int = MAX_KEYS) -> None:
        self.limit = limit
        self._interval = window / limit
        self._burst = window - self._interval  # how far ahead of now a bucket may be drained
        self._max_keys = max_keys
        self._full_at: OrderedDict[bytes, float] = OrderedDict()

    def wait(self, key: str, now: float) -> float:
        """Seconds until an attempt for key is allowed; 0 when it is allowed now."""
        full_at = self._full_at.get(_digest(key), now)
        return max(0.0, full_at - self._burst - now)

    def take(self, key: str, now: float) -> None:
        """Count one attempt for key (allowed, as wait said)."""
        digest = _digest(key)
        self._full_at[digest] = max(self._full_at.get(digest, now), now) + self._interval
        self._full_at.move_to_end(digest)
        while self._full_at:  # least recently used first: forget the full, then the oldest
            oldest, full_at = next(iter(self._full_at.items()))
            if full_at > now and len(self._full_at) <= self._max_keys:
                break
            del self._full_at[oldest]

    def __len__(self) -> int:
        return len(self._full_at)


class SignInLimits:
    """POST /auth/simple/login: every well-formed attempt counts, whether it succeeds or not
    (as Unleash counts every request to the route), once per client address and once per
    account name as typed (stripped, lower-cased), so names that exist and names that do not
    are limited alike. An attempt over either limit is refused before any database or
    argon2 work, and counts against neither."""

    def __init__(
        self,
        *,
        per_address: int,
        per_account: int,
        proxy_hops: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.by_address = RateLimiter(per_address)
        self.by_account = RateLimiter(per_account)
        self._proxy_hops = proxy_hops
        self._clock = clock

    @classmethod
    def from_settings(cls, settings: Settings) -> SignInLimits:
        return cls(
            per_address=settings.login_rate_limit_per_address,
            per_account=settings.login_rate_limit_per_account,
            proxy_hops=settings.trusted_proxy_hops,
        )

    def check(self, request: web.Request, username: str) -> None:
        """Counts the attempt, or raises TooManyRequests saying when the next is allowed."""
        address = client_address(request, self._proxy_hops)
        account = username.strip().lower()
        now = self._clock()
        by_address = self.by_address.wait(address, now)
        by_account = self.by_account.wait(account, now)
        if by_address or by_account:
            limiter, what = (
                (self.by_address, "from this address")
                if by_address >= by_account
                else (self.by_account, "for this account")
            )
            seconds = math.ceil(max(by_address, by_account))
            raise TooManyRequests(
                f"Too many sign-in attempts {what} (at most {limiter.limit} a minute); "
                f"try again in {seconds} seconds",
                seconds,
            )
        self.by_address.take(address, now)
        self.by_account.take(account, now)


SIGN_IN_LIMITS = web.AppKey("sign_in_limits", SignInLimits)


def _digest(key: str) -> bytes:
    return hashlib.blake2b(key.encode(errors="surrogatepass"), digest_size=16).digest()


def client_address(request: web.Request, proxy_hops: int) -> str:
    """Whom to count an attempt against. With no trusted proxy, the peer's address (any
    X-Forwarded-For is the client's own claim and ignored). Behind `proxy_hops` proxies that
    each append the address they were connected from, the entry that many from the right of
    X-Forwarded-For: the entries further left were written by the client and prove nothing.
    With fewer entries than hops, the leftmost; with none, the peer. An IPv6 address counts as
    its /64 network, which one host or household usually holds whole."""
    return _normalized(forwarded_address(request, proxy_hops))


def _normalized(address: str) -> str:
    candidates = [address]
    if address.startswith("[") and "]" in address:  # [v6]:port
        candidates.append(address[1 : address.index("]")])
    elif address.count(":") == 1:  # v4:port
        candidates.append(address.split(":", maxsplit=1)[0])
    for candidate in candidates:
        try:
            ip = ipaddress.ip_address(candidate)
        except ValueError:
            continue
        if isinstance(ip, ipaddress.IPv6Address):
            if ip.ipv4_mapped is not None:
                return str(ip.ipv4_mapped)
            return str(ipaddress.IPv6Network(f"{ip}/64", strict=False))
        return str(ip)
    return address[:MAX_KEY_LENGTH]  # not an address (a proxy's name, "unknown"): as written
