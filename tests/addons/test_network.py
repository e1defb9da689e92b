"""Where integrations may send: the address rules, the URL's syntax, resolution, and a real
delivery session against a real server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network
from typing import TYPE_CHECKING

import aiohttp
import pytest
from aiohttp import web
from hypothesis import assume, given
from hypothesis import strategies as st

from eventlog.errors import ConfigError
from service.addons import addresses
from service.addons.network import (
    CheckedResolver,
    Refused,
    check_address,
    check_host,
    check_url,
    client_session,
    parse_allowed,
    refused_cause,
)
from service.errors import ValidationError
from service.settings import load_settings

if TYPE_CHECKING:
    from collections.abc import Sequence

    from aiohttp.test_utils import TestServer
    from pytest_aiohttp import AiohttpServer

Address = IPv4Address | IPv6Address
Network = IPv4Network | IPv6Network

NONE: tuple[Network, ...] = ()
EVERYTHING = (ip_network("0.0.0.0/0"), ip_network("::/0"))
LOOPBACK = parse_allowed("127.0.0.0/8")
NEVER = "which integrations never call"
UNLESS = "which integrations call only when INTEGRATION_ALLOWED_NETWORKS lists it"


def refusal(address: str, allowed: Sequence[Network]) -> str | None:
    try:
        check_address(ip_address(address), allowed)
    except Refused as exc:
        return exc.message
    return None


# Refused even with every network allowed.
@pytest.mark.parametrize(
    ("address", "rule"),
    [
        ("169.254.169.254", "169.254.169.254 is a link-local address (the cloud metadata"),
        ("169.254.0.1", "is a link-local address"),
        ("169.254.255.255", "is a link-local address"),
        ("fe80::1", "is a link-local address"),
        ("febf:ffff::1", "is a link-local address"),
        ("fd00:ec2::254", "fd00:ec2::254 is the cloud metadata address"),
        ("0.0.0.0", "is an unspecified address"),
        ("0.1.2.3", "is an unspecified address"),
        ("::", "is an unspecified address"),
        ("224.0.0.1", "is a multicast address"),
        ("239.255.255.250", "is a multicast address"),
        ("ff02::1", "is a multicast address"),
        ("255.255.255.255", "is the broadcast address"),
        ("240.0.0.1", "is a reserved address"),
        ("100::1", "is a reserved address"),
    ],
)
def test_always_refused_whatever_is_allowed(address: str, rule: str) -> None:
    for allowed in (NONE, EVERYTHING, (ip_network(address),)):
        message = refusal(address, allowed)
        assert message is not None
        assert message.startswith(f"The address {address} is refused: ")
        assert rule in message
        assert message.endswith(NEVER)


def test_the_cloud_metadata_address_is_named_as_the_brief_names_it() -> None:
    with pytest.raises(Refused) as caught:
        check_url("http://169.254.169.254/latest/meta-data/", EVERYTHING)
    assert caught.value.message == (
        "The URL http://169.254.169.254/ is refused: 169.254.169.254 is a link-local address "
        "(the cloud metadata address among them), which integrations never call"
    )
    assert isinstance(caught.value, ValidationError)
    assert (caught.value.status, caught.value.name) == (400, "ValidationError")


# Refused unless the allowed networks cover them.
@pytest.mark.parametrize(
    ("address", "rule", "network"),
    [
        ("127.0.0.1", "is a loopback address", "127.0.0.0/8"),
        ("127.255.0.9", "is a loopback address", "127.0.0.0/8"),
        ("::1", "is a loopback address", "::1/128"),
        ("10.1.2.3", "is a private address", "10.0.0.0/8"),
        ("172.16.0.1", "is a private address", "172.16.0.0/12"),
        ("172.31.255.254", "is a private address", "172.16.0.0/12"),
        ("192.168.1.1", "is a private address", "192.168.0.0/16"),
        ("fc00::1", "is a private address", "fc00::/7"),
        ("fd12:3456::1", "is a private address", "fd12:3456::/32"),
        ("100.64.0.1", "is a carrier-grade NAT address (100.64.0.0/10)", "100.64.0.0/10"),
        ("100.127.255.254", "is a carrier-grade NAT address (100.64.0.0/10)", "100.64.0.0/10"),
        ("fec0::1", "is a site-local address (fec0::/10)", "fec0::/10"),
        ("192.0.2.1", "is not a global address", "192.0.2.0/24"),
        ("198.18.0.1", "is not a global address", "198.18.0.0/15"),
        ("2001:db8::1", "is not a global address", "2001:db8::/32"),
    ],
)
def test_internal_refused_unless_allowed(address: str, rule: str, network: str) -> None:
    message = refusal(address, NONE)
    assert message == f"The address {address} is refused: {address} {rule}, {UNLESS}"
    assert refusal(address, parse_allowed("203.0.113.0/24, 2001:db8:1::/48")) == message
    assert refusal(address, parse_allowed(network)) is None
    assert refusal(address, EVERYTHING) is None


@pytest.mark.parametrize(
    "address",
    ["8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2001:4860:4860::8888", "2a00:1450::1"],
)
def test_global_addresses_pass(address: str) -> None:
    assert refusal(address, NONE) is None


@pytest.mark.parametrize(
    ("address", "carried", "rule"),
    [
        ("::ffff:127.0.0.1", "127.0.0.1", "is a loopback address"),
        ("::ffff:169.254.169.254", "169.254.169.254", "is a link-local address"),
        ("::ffff:10.0.0.1", "10.0.0.1", "is a private address"),
        ("::127.0.0.1", "127.0.0.1", "is a loopback address"),  # IPv4-compatible
        ("2002:7f00:1::", "127.0.0.1", "is a loopback address"),  # 6to4
        ("2002:a9fe:a9fe::1", "169.254.169.254", "is a link-local address"),
        ("64:ff9b::a00:1", "10.0.0.1", "is a private address"),  # NAT64
        ("64:ff9b::a9fe:a9fe", "169.254.169.254", "is a link-local address"),
    ],
)
def test_ipv6_forms_are_judged_by_the_ipv4_address_they_carry(
    address: str, carried: str, rule: str
) -> None:
    shown = str(ip_address(address))
    message = refusal(address, NONE)
    assert message is not None
    assert message.startswith(
        f"The address {shown} is refused: {shown} carries the IPv4 address {carried}; "
        f"{carried} {rule}"
    )
    allowed = [ip_network(carried)]
    if "link-local" in rule:
        assert refusal(address, allowed) == message
    else:
        assert refusal(address, allowed) is None


@pytest.mark.parametrize("address", ["::ffff:8.8.8.8", "2002:808:808::1", "64:ff9b::808:808"])
def test_ipv6_forms_of_a_global_address_pass(address: str) -> None:
    assert refusal(address, NONE) is None


def _six_to_four(v4: IPv4Address) -> IPv6Address:
    return IPv6Address((0x2002 << 112) | (int(v4) << 80))


def _nat64(v4: IPv4Address) -> IPv6Address:
    return IPv6Address(int(IPv6Address("64:ff9b::")) | int(v4))


def _mapped(v4: IPv4Address) -> IPv6Address:
    return IPv6Address(f"::ffff:{v4}")


def _forms(v4: st.SearchStrategy[IPv4Address]) -> st.SearchStrategy[Address]:
    """The address and each IPv6 form that carries it."""
    return st.one_of(v4, v4.map(_mapped), v4.map(_six_to_four), v4.map(_nat64))


@st.composite
def networks(draw: st.DrawFn) -> Network:
    address: Address = draw(st.ip_addresses())
    prefix = draw(st.integers(0, address.max_prefixlen))
    return ip_network(f"{address}/{prefix}", strict=False)


allowed_lists = st.lists(
    st.one_of(networks(), st.sampled_from([*EVERYTHING, ip_network("169.254.0.0/16")])),
    max_size=4,
)
link_local: st.SearchStrategy[Address] = st.one_of(
    _forms(st.ip_addresses(network="169.254.0.0/16")),  # type: ignore[arg-type]
    st.ip_addresses(network="fe80::/10"),
)


@given(address=link_local, allowed=allowed_lists)
def test_every_link_local_address_is_refused_whatever_is_allowed(
    address: Address, allowed: list[Network]
) -> None:
    message = refusal(str(address), [*allowed, ip_network(f"{address}/{address.max_prefixlen}")])
    assert message is not None
    assert "is a link-local address" in message


# Ranges the rules refuse whatever is allowed, as the standards define them; within 2000::/3
# (but 6to4's 2002::/16) and fc00::/7 (but the metadata address) IPv6 has none.
ALWAYS_V4 = [ip_network(n) for n in ("169.254.0.0/16", "0.0.0.0/8", "224.0.0.0/4", "240.0.0.0/4")]


@given(data=st.data(), network=networks())
def test_an_address_inside_allowed_that_is_not_always_refused_passes(
    data: st.DataObject, network: Network
) -> None:
    if isinstance(network, IPv6Network):
        assume(
            network.subnet_of(IPv6Network("2000::/3")) or network.subnet_of(IPv6Network("fc00::/7"))
        )
    address: Address = data.draw(st.ip_addresses(network=network))
    if isinstance(address, IPv4Address):
        assume(not any(address in n for n in ALWAYS_V4))
    else:
        assume(address not in IPv6Network("2002::/16") and address != IPv6Address("fd00:ec2::254"))
    assert refusal(str(address), [network]) is None
    assert refusal(str(address), [ip_network("198.51.100.0/24"), network]) is None


global_v4 = st.ip_addresses(v=4).filter(lambda a: a.is_global and not a.is_multicast)
global_v6 = st.ip_addresses(network="2000::/3").filter(
    lambda a: a.is_global and a not in IPv6Network("2002::/16")
)


@given(address=st.one_of(_forms(global_v4), global_v6))  # type: ignore[arg-type]
def test_a_global_address_passes(address: Address) -> None:
    assert refusal(str(address), NONE) is None


def test_parse_allowed() -> None:
    assert parse_allowed(None) == ()
    assert parse_allowed("") == ()
    assert parse_allowed(" 10.0.0.0/8 ,fd00::/8, ,127.0.0.1") == (
        IPv4Network("10.0.0.0/8"),
        IPv6Network("fd00::/8"),
        IPv4Network("127.0.0.1/32"),
    )
    with pytest.raises(ValueError, match=r"'10\.0\.0\.1/8' is not a network .*host bits set"):
        parse_allowed("127.0.0.0/8, 10.0.0.1/8")
    with pytest.raises(ValueError, match="'intranet' is not a network in CIDR notation"):
        parse_allowed("intranet")
    with pytest.raises(ValueError, match=r"169\.254\.169\.254/32 is link-local, which"):
        parse_allowed("169.254.169.254/32")
    with pytest.raises(ValueError, match="fe80::/64 is link-local"):
        parse_allowed("fe80::/64")


def test_the_setting_is_read_and_validated_at_start() -> None:
    settings = load_settings({"INTEGRATION_ALLOWED_NETWORKS": "10.0.0.0/8, 192.168.0.0/16"})
    assert settings.integration_allowed_networks == "10.0.0.0/8, 192.168.0.0/16"
    assert load_settings({}).integration_allowed_networks is None
    with pytest.raises(ConfigError) as caught:
        load_settings({"INTEGRATION_ALLOWED_NETWORKS": "10.0.0.0/8, 10.0.0.0/33"})
    assert str(caught.value).startswith(
        "Invalid setting INTEGRATION_ALLOWED_NETWORKS: '10.0.0.0/33' is not a network"
    )


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.slack.com/services/T0/B0/secret",
        "http://example.com",
        "http://example.com:8080/path?q=1#f",
        "https://b\u00fccher.de/",
        "http://my_service.internal-name.example./",
        "http://8.8.8.8/",
        "http://[2001:4860:4860::8888]:443/",
        "HTTPS://EXAMPLE.COM/",
    ],
)
def test_check_url_accepts(url: str) -> None:
    check_url(url, NONE)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/", "its scheme is 'ftp'; integrations send only over http or https"),
        ("file:///etc/passwd", "its scheme is 'file'"),
        ("gopher://127.0.0.1:6379/", "its scheme is 'gopher'"),
        ("example.com/hook", "it is not absolute (such as https://example.com/hook)"),
        ("//example.com/hook", "it is not absolute"),
        ("http:///hook", "it names no host"),
        ("http:example.com", "it names no host"),
        ("http://user:pw@example.com/", "it carries a user or password (user:password@)"),
        ("http://user@example.com/", "it carries a user or password"),
        ("http://example.com:0/", "its port is not a number from 1 to 65535"),
        ("http://example.com:70000/", "not a valid absolute URL"),
        ("http://example.com:http/", "not a valid absolute URL"),
        ("http://exa mple.com/", "a space or a control character"),
        ("http://example.com/\r\nHost: x", "a space or a control character"),
        ("http://[::1/", "not a valid absolute URL"),
        ("http://ex!ample.com/", "'ex!ample.com' is not a host name or an IP address"),
        ("http://127.1/", "The host 127.1 is refused: it is not an IP address in its usual form"),
        ("http://2130706433/", "The host 2130706433 is refused"),
        ("http://0x7f.0.0.1/", "The host 0x7f.0.0.1 is refused"),
        ("http://0177.0.0.1/", "The host 0177.0.0.1 is refused"),
        ("http://127.0.0.1:8080/x", "The URL http://127.0.0.1:8080/ is refused: 127.0.0.1 is a"),
        ("http://[::ffff:127.0.0.1]/", "carries the IPv4 address 127.0.0.1"),
        ("http://[fe80::1%25eth0]/", "is a link-local address"),
        ("http://10.0.0.1/secret-token", "The URL http://10.0.0.1/ is refused: 10.0.0.1 is a"),
    ],
)
def test_check_url_refuses(url: str, message: str) -> None:
    with pytest.raises(Refused) as caught:
        check_url(url, NONE)
    assert message in caught.value.message
    assert "secret" not in caught.value.message


def test_check_url_lets_allowed_literals_through() -> None:
    check_url("http://127.0.0.1:8080/x", LOOPBACK)
    check_url("http://10.0.0.1/", parse_allowed("10.0.0.0/8"))
    with pytest.raises(Refused, match="link-local"):
        check_url("http://169.254.169.254/", [*LOOPBACK, *EVERYTHING])


async def test_check_host_resolves_and_judges_every_address() -> None:
    with pytest.raises(Refused) as caught:
        await check_host("localhost", 80, NONE)
    assert caught.value.message.startswith("The host localhost is refused: it resolves to ")
    assert "is a loopback address" in caught.value.message
    found = await check_host("localhost", 80, [*LOOPBACK, ip_network("::1/128")])
    assert "127.0.0.1" in found
    assert await check_host("127.0.0.1", 80, LOOPBACK) == ["127.0.0.1"]
    assert await check_host("[::ffff:8.8.8.8]", 80, NONE) == ["::ffff:808:808"]
    with pytest.raises(Refused, match="link-local"):
        await check_host("169.254.169.254", 80, EVERYTHING)
    with pytest.raises(OSError):  # noqa: PT011 (getaddrinfo's error, whatever its code)
        await check_host("no-such-host.invalid", 80, EVERYTHING)


def test_one_refused_address_refuses_the_name() -> None:
    # A name with a public and an internal address: judged through the resolver's one rule.
    with pytest.raises(
        Refused, match=r"it resolves to 127\.0\.0\.1, 10\.0\.0\.1; 10\.0\.0\.1 is a private"
    ):
        addresses.check_addresses("both.example", ["127.0.0.1", "10.0.0.1"], LOOPBACK)
    addresses.check_addresses(
        "both.example", ["127.0.0.1", "10.0.0.1"], parse_allowed("127.0.0.0/8,10.0.0.0/8")
    )


async def test_the_resolver_returns_the_addresses_it_checked() -> None:
    resolver = CheckedResolver(LOOPBACK)
    found = await resolver.resolve("localhost", 8080, family=socket.AF_INET)
    assert found == [
        {
            "hostname": "localhost",
            "host": "127.0.0.1",
            "port": 8080,
            "family": socket.AF_INET,
            "proto": socket.IPPROTO_TCP,
            "flags": socket.AI_NUMERICHOST | socket.AI_NUMERICSERV,
        }
    ]
    with pytest.raises(Refused, match="The host localhost is refused"):
        await CheckedResolver(NONE).resolve("localhost", 8080, family=socket.AF_INET)
    await resolver.close()


def test_refused_cause() -> None:
    refused = Refused("The URL http://x/ is refused: test")
    assert refused_cause(refused) is refused
    wrapped = aiohttp.ClientError("wrapped")
    wrapped.__cause__ = refused
    assert refused_cause(wrapped) is refused
    context = RuntimeError("while handling")
    context.__context__ = wrapped
    assert refused_cause(context) is refused
    assert refused_cause(ExceptionGroup("many", [ValueError(), refused])) is refused
    assert refused_cause(OSError("connection refused")) is None


# A real session against a real server.
landed: list[str] = []


async def _ok(request: web.Request) -> web.Response:
    landed.append(request.path)
    return web.Response(text="delivered")


async def _to_metadata(_: web.Request) -> web.Response:
    return web.Response(status=302, headers={"Location": "http://169.254.169.254/latest/"})


async def _to_here(request: web.Request) -> web.Response:
    return web.Response(status=307, headers={"Location": f"http://{request.host}/ok"})


@pytest.fixture
async def receiver(aiohttp_server: AiohttpServer) -> TestServer:
    app = web.Application()
    app.router.add_post("/ok", _ok)
    app.router.add_post("/to-metadata", _to_metadata)
    app.router.add_post("/to-here", _to_here)
    landed.clear()
    return await aiohttp_server(app, host="127.0.0.1")


TIMEOUT = aiohttp.ClientTimeout(total=5)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_a_session_sends_where_allowed(receiver: TestServer, host: str) -> None:
    async with (
        client_session(LOOPBACK, timeout=TIMEOUT) as session,
        session.post(f"http://{host}:{receiver.port}/ok", json={}) as response,
    ):
        assert (response.status, await response.text()) == (200, "delivered")
    assert landed == ["/ok"]


@pytest.mark.parametrize(
    ("host", "message"),
    [
        ("127.0.0.1", "The URL http://127.0.0.1:{port}/ is refused: 127.0.0.1 is a loopback"),
        ("localhost", "The host localhost is refused: it resolves to 127.0.0.1; 127.0.0.1 is a"),
        ("[::ffff:127.0.0.1]", "carries the IPv4 address 127.0.0.1; 127.0.0.1 is a loopback"),
        ("127.1", "The host 127.1 is refused"),
        ("0x7f.1", "The host 0x7f.1 is refused"),
    ],
)
async def test_a_session_refuses_what_is_not_allowed(
    receiver: TestServer, host: str, message: str
) -> None:
    async with client_session(parse_allowed("10.0.0.0/8"), timeout=TIMEOUT) as session:
        with pytest.raises(Exception) as caught:  # noqa: PT011 (whatever aiohttp wraps it in)
            await session.post(f"http://{host}:{receiver.port}/ok", json={})
    refused = refused_cause(caught.value)
    assert refused is not None
    assert message.format(port=receiver.port) in refused.message
    assert landed == []


async def test_a_connection_error_is_not_a_refusal() -> None:
    with socket.socket() as unused:  # a port nobody listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    async with client_session(LOOPBACK, timeout=TIMEOUT) as session:
        with pytest.raises(aiohttp.ClientConnectorError) as caught:
            await session.post(f"http://127.0.0.1:{port}/", json={})
    assert refused_cause(caught.value) is None


async def test_a_session_never_uses_a_proxy(receiver: TestServer) -> None:
    async with client_session(LOOPBACK, timeout=TIMEOUT) as session:
        with pytest.raises(Refused, match="integrations never use a proxy"):
            await session.post(
                "http://example.com/ok", proxy=f"http://127.0.0.1:{receiver.port}", json={}
            )
    assert landed == []


async def test_a_redirect_is_returned_not_followed(receiver: TestServer) -> None:
    async with (
        client_session(LOOPBACK, timeout=TIMEOUT) as session,
        session.post(
            f"http://127.0.0.1:{receiver.port}/to-metadata", json={}, allow_redirects=False
        ) as response,
    ):
        assert response.status == 302
        assert response.headers["Location"] == "http://169.254.169.254/latest/"


async def test_a_redirect_left_to_the_default_is_refused(receiver: TestServer) -> None:
    # Even to an allowed address: the receiver is not followed anywhere.
    async with client_session(LOOPBACK, timeout=TIMEOUT) as session:
        with pytest.raises(Refused) as caught:
            await session.post(f"http://127.0.0.1:{receiver.port}/to-here", json={})
        assert caught.value.message == (
            f"The URL http://127.0.0.1:{receiver.port}/ is refused: it answered 307 with a "
            "redirect, which integrations never follow (send with allow_redirects=False to get "
            "the answer as it is)"
        )
        # The session stays usable: the refused answer's connection was released.
        async with session.post(f"http://127.0.0.1:{receiver.port}/ok", json={}) as response:
            assert response.status == 200
    assert landed == ["/ok"]


async def test_the_resolver_is_asked_at_each_connection(receiver: TestServer) -> None:
    # No DNS cache: a name is judged again for each new connection.
    asked: list[str] = []

    class Counting(CheckedResolver):
        async def resolve(
            self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
        ) -> list[aiohttp.abc.ResolveResult]:
            asked.append(host)
            return await super().resolve(host, port, family)

    async with client_session(LOOPBACK, timeout=TIMEOUT) as session:
        connector = session.connector
        assert isinstance(connector, aiohttp.TCPConnector)
        assert connector.use_dns_cache is False
        connector._resolver = Counting(LOOPBACK)
        for _ in range(2):
            async with session.post(
                f"http://localhost:{receiver.port}/ok", json={}, headers={"Connection": "close"}
            ) as response:
                assert response.status == 200
            await asyncio.sleep(0)
    assert asked == ["localhost", "localhost"]
