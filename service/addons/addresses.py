"""The address rules of where an integration may send (docs/integrations.md, "Where
integrations may send"): pure, so that settings and domain code may use them; the connection's
side is service/addons/network.py."""

from __future__ import annotations

import re
import socket
from ipaddress import (
    IPv4Address,
    IPv4Network,
    IPv6Address,
    IPv6Network,
    ip_address,
    ip_network,
)
from typing import TYPE_CHECKING, Final, TypeAlias
from urllib.parse import unquote

from yarl import URL

from service.errors import ValidationError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

Address = IPv4Address | IPv6Address
Network = IPv4Network | IPv6Network

SETTING: Final = "INTEGRATION_ALLOWED_NETWORKS"

_NEVER: Final = "which integrations never call"
_UNLESS: Final = f"which integrations call only when {SETTING} lists it"

_METADATA_V6: Final = IPv6Network("fd00:ec2::254/128")  # AWS's; inside fc00::/7, not link-local
_THIS_NETWORK: Final = IPv4Network("0.0.0.0/8")
_BROADCAST: Final = IPv4Network("255.255.255.255/32")
_CARRIER_NAT: Final = IPv4Network("100.64.0.0/10")
_PRIVATE: Final = (
    IPv4Network("10.0.0.0/8"),
    IPv4Network("172.16.0.0/12"),
    IPv4Network("192.168.0.0/16"),
    IPv6Network("fc00::/7"),
)
_NAT64: Final = IPv6Network("64:ff9b::/96")
_COMPATIBLE: Final = IPv6Network("::/96")  # ::a.b.c.d, the deprecated IPv4-compatible form

# A host name as DNS carries it (IDNA already applied): labels of letters, digits, "-" and "_"
# (service names such as _dmarc), at most 253 characters.
_HOST_NAME: Final = re.compile(
    r"(?=.{1,253}\.?\Z)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
    r"(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*\.?\Z"
)
_DOTTED: Final = re.compile(r"[0-9.]+\Z")


class Refused(ValidationError):
    """A receiver URL the rules refuse; the message names the rule, e.g. "The URL
    http://169.254.169.254/ is refused: 169.254.169.254 is a link-local address (the cloud
    metadata address among them), which integrations never call"."""


def parse_allowed(text: str | None) -> tuple[Network, ...]:
    """INTEGRATION_ALLOWED_NETWORKS: CIDRs separated by commas (spaces allowed); a bad one raises
    ValueError naming it."""
    networks: list[Network] = []
    for item in (text or "").split(","):
        cidr = item.strip()
        if not cidr:
            continue
        try:
            network = ip_network(cidr)
        except ValueError as exc:
            raise ValueError(
                f"{cidr!r} is not a network in CIDR notation such as 10.0.0.0/8 or "
                f"fd12:3456::/32 ({exc})"
            ) from None
        if network.is_link_local:  # an operator who lists it expects it to work: say it won't
            raise ValueError(f"{cidr} is link-local, {_NEVER} whatever {SETTING} lists")
        networks.append(network)
    return tuple(networks)


def check_address(address: Address, allowed: Sequence[Network]) -> None:
    """Refused unless an integration may connect to `address`."""
    if (reason := refusal(address, allowed)) is not None:
        raise Refused(f"The address {address} is refused: {reason}")


def check_url(url: str, allowed: Sequence[Network]) -> None:
    """A receiver URL as saved: http or https, a host, no user:password@, a port from 1 to
    65535; an IP address as its host is judged at once (a name is judged at each connection)."""
    parsed = _parse_url(url)
    host = parsed.raw_host or ""
    if literal(host) is None and not _HOST_NAME.match(host):
        raise Refused(f"The URL is refused: {host!r} is not a host name or an IP address")
    check_url_host(parsed, allowed)


def check_url_host(url: URL, allowed: Sequence[Network]) -> None:
    """Refused when the URL's host is an IP address the rules refuse; a name passes (it is
    judged where it is resolved)."""
    address = literal(url.raw_host or "")
    if address is not None and (reason := refusal(address, allowed)) is not None:
        raise Refused(f"The URL {shown(url)} is refused: {reason}")


def check_addresses(host: str, addresses: Sequence[str], allowed: Sequence[Network]) -> None:
    """Refused when any address `host` resolved to is: a name must not point at a public and an
    internal address at once."""
    for text in addresses:
        try:
            reason = refusal(ip_address(text), allowed)
        except ValueError:
            reason = f"{text!r} is not an IP address"
        if reason is not None:
            raise Refused(
                f"The host {host} is refused: it resolves to {', '.join(addresses)}; {reason}"
            )


def refusal(address: Address, allowed: Sequence[Network]) -> str | None:
    """Why an integration may not connect to `address`, or None when it may."""
    carried = _carried(address)
    judged = address if carried is None else carried
    said = "" if carried is None else f"{address} carries the IPv4 address {carried}; "
    if (always := _first(_ALWAYS_REFUSED, judged)) is not None:
        return f"{said}{judged} is {always}, {_NEVER}"
    if any(judged in net or address in net for net in allowed):
        return None
    if (unless := _first(_UNLESS_ALLOWED, judged)) is not None:
        return f"{said}{judged} is {unless}, {_UNLESS}"
    return None


def literal(host: str) -> Address | None:
    """The IP address `host` is, None for a name; refused for the numeric forms that name an
    address obliquely (127.1, 2130706433, 0x7f.1), as aiohttp and getaddrinfo would read them."""
    text = unquote(host)  # a zone id arrives as %25
    if ":" in text or _DOTTED.match(text):
        try:
            return ip_address(text)
        except ValueError:
            pass
    else:
        try:
            socket.inet_aton(text)
        except OSError:
            return None
    raise Refused(
        f"The host {host} is refused: it is not an IP address in its usual form "
        "(dotted decimal such as 192.0.2.1, or IPv6) nor a name"
    )


def shown(url: URL) -> str:
    """The URL as a refusal names it: scheme, host and port only (a webhook's path and query
    often hold its secret, and the message is logged)."""
    return f"{url.origin()}/"


Rule: TypeAlias = "tuple[Callable[[Address], bool], str]"  # a test and what it names

# The rules no setting lifts.
_ALWAYS_REFUSED: Final[tuple[Rule, ...]] = (
    (lambda a: a in _METADATA_V6, "the cloud metadata address"),
    (lambda a: a.is_link_local, "a link-local address (the cloud metadata address among them)"),
    (lambda a: a.is_unspecified or a in _THIS_NETWORK, "an unspecified address (0.0.0.0/8 or ::)"),
    (lambda a: a.is_multicast, "a multicast address"),
    (lambda a: a in _BROADCAST, "the broadcast address"),
    # ::1 lies in the reserved ::/8 and is judged as loopback.
    (lambda a: a.is_reserved and not a.is_loopback, "a reserved address"),
)
# The rules INTEGRATION_ALLOWED_NETWORKS lifts for the networks it lists.
_UNLESS_ALLOWED: Final[tuple[Rule, ...]] = (
    (lambda a: a.is_loopback, "a loopback address"),
    (lambda a: any(a in net for net in _PRIVATE), "a private address"),
    (lambda a: a in _CARRIER_NAT, "a carrier-grade NAT address (100.64.0.0/10)"),
    # Python counts the deprecated site-local fec0::/10 as global.
    (
        lambda a: isinstance(a, IPv6Address) and a.is_site_local,
        "a site-local address (fec0::/10)",
    ),
    (lambda a: not a.is_global, "not a global address"),
)


def _first(rules: Sequence[Rule], address: Address) -> str | None:
    return next((what for applies, what in rules if applies(address)), None)


def _carried(address: Address) -> IPv4Address | None:
    """The IPv4 address an IPv6 one stands for (mapped, compatible, 6to4, NAT64): the address
    the packets reach in the end, so the one the rules judge."""
    if isinstance(address, IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64 or (address in _COMPATIBLE and int(address) > 1):  # not :: nor ::1
        return IPv4Address(int(address) & 0xFFFF_FFFF)
    return None


def _parse_url(url: str) -> URL:
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url):
        raise Refused("The URL is refused: it contains a space or a control character")
    try:
        parsed = URL(url)
        scheme, host, port = parsed.scheme, parsed.raw_host, parsed.port
        userinfo = parsed.raw_user is not None or parsed.raw_password is not None
    except ValueError as exc:
        raise Refused(f"The URL is refused: it is not a valid absolute URL ({exc})") from None
    if not scheme:
        raise Refused("The URL is refused: it is not absolute (such as https://example.com/hook)")
    if scheme not in ("http", "https"):
        raise Refused(
            f"The URL is refused: its scheme is {scheme!r}; integrations send only over "
            "http or https"
        )
    if not host:
        raise Refused("The URL is refused: it names no host")
    if userinfo:
        raise Refused(
            "The URL is refused: it carries a user or password (user:password@); send "
            "credentials in the integration's headers instead"
        )
    if port is None or not 1 <= port <= 65535:
        raise Refused("The URL is refused: its port is not a number from 1 to 65535")
    return parsed
