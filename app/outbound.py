"""Requests to addresses someone else chose: an LMS's endpoints, a client's callback URL.

Whoever opens /lti/register, registers a platform or submits a callback URL decides where this
server connects. Without care they could make it call its own network (loopback, the LAN, a
cloud's metadata service), hold a worker with a server that answers one byte a second, or
read what an internal service answered. Every such request goes through :func:`client`:

- The host is resolved once and every address must be public, or allowed by the client's
  :class:`PrivateAccess`: a network the operator named (``10.2.0.0/16``), or a host name the
  operator named (``moodle.school.lan``) resolving to a private address; an address that
  carries an IPv4 address (IPv4-mapped, NAT64, 6to4, Teredo) is judged by that address.
  The connection goes to an address that was checked, never to a second lookup a rebinding
  DNS server could answer differently; the Host header, TLS SNI and the
  certificate check keep the name.
- One deadline per request, however slowly the server sends its headers or body; a cap on
  the body; redirects are not followed; http and https only; no proxy from the environment
  (a proxy would connect for us, past the address check).
- Every failure, refusals included, leaves :func:`fetch` as one :class:`OutboundError`,
  whose text is for the server log; callers show people something neutral.
"""

from __future__ import annotations

import functools
import ipaddress
import math
import os
import re
import socket
import ssl
import time
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

import httpcore
import httpx

from app import safe_json

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: Prefixes whose addresses carry an IPv4 address in their last 32 bits (RFC 6052 NAT64).
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
#: RFC 8215 local-use NAT64: the operator picks where the IPv4 address sits, and the prefix
#: is never global, so it is refused as a whole.
_LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")
#: A DNS name as an operator writes it in a setting (letters, digits, hyphens, dots).
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_HOST_NAME = re.compile(rf"(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*")
#: A refusal code an LMS may answer with (Moodle: "token_already_used"), fit for a log line.
_REFUSAL_CODE = re.compile(r"[A-Za-z0-9_.:-]{1,64}")

#: When the request being served must be finished (time.monotonic()); read by the streams.
_deadline: ContextVar[float] = ContextVar("evaluaitor_outbound_deadline", default=math.inf)


class OutboundError(Exception):
    """A request failed or was refused. ``str()`` is the detail for the server log (never a
    remote body); ``summary`` is a short reason that may be shown to whoever chose the URL;
    ``retryable`` says whether trying again later can help."""

    def __init__(self, detail: str, *, summary: str, retryable: bool = False) -> None:
        super().__init__(detail)
        self.summary = summary
        self.retryable = retryable


class _Refused(OutboundError):
    def __init__(self, detail: str) -> None:
        super().__init__(
            detail,
            summary="refused: only http(s) URLs whose host resolves to public addresses (or "
            "private ones the administrator allowed) are called",
        )


@dataclass(frozen=True)
class PrivateAccess:
    """Which non-public addresses may be called: one school's Moodle on ``10.2.0.7`` must not
    open every private address to whoever can make the tool call a URL.

    ``networks``: any host whose address lies in one of them. ``hosts``: these names (exact,
    case-insensitive), at whatever private address DNS gives them, but never loopback or
    link-local (a cloud's metadata service), which need a network to be named.
    ``everything``: the former single switch (``EVALUAITOR_ALLOW_PRIVATE_URLS=1``), for a
    lab or a test on one machine.
    """

    hosts: frozenset[str] = frozenset()
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    everything: bool = False

    @classmethod
    def parse(cls, allowed: str, *, everything: bool = False) -> PrivateAccess:
        """From a comma-separated list of host names and networks (``10.2.0.0/16``, an
        address alone is a network of one); raises ValueError naming a bad entry."""
        hosts, networks = set(), []
        for entry in (part.strip().lower().rstrip(".") for part in allowed.split(",")):
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                if not _HOST_NAME.fullmatch(entry):
                    raise ValueError(f"{entry!r} is neither a host name nor a network") from None
                hosts.add(entry)
        return cls(frozenset(hosts), tuple(networks), everything)

    def allows(self, host: str, address: IPAddress) -> bool:
        """Whether ``host`` may be called at the non-public ``address``."""
        if self.everything:
            return True
        judged = _embedded_ipv4(address) if isinstance(address, ipaddress.IPv6Address) else None
        judged = judged or [address]
        if all(any(inner in network for network in self.networks) for inner in judged):
            return True
        return host.lower().rstrip(".") in self.hosts and not any(
            inner.is_loopback or inner.is_link_local for inner in [address, *judged]
        )


#: No private address at all: the default.
NO_PRIVATE = PrivateAccess()
#: Every private address (the old switch; tests that run every peer on 127.0.0.1).
ANY_PRIVATE = PrivateAccess(everything=True)


def private_access(config: Mapping[str, Any]) -> PrivateAccess:
    """The operator's policy from the app's settings: EVALUAITOR_ALLOWED_PRIVATE_HOSTS, and
    the discouraged EVALUAITOR_ALLOW_PRIVATE_URLS that opens every private address."""
    return _parsed(
        str(config.get("EVALUAITOR_ALLOWED_PRIVATE_HOSTS") or ""),
        bool(config.get("EVALUAITOR_ALLOW_PRIVATE_URLS")),
    )


@functools.lru_cache(maxsize=16)
def _parsed(allowed: str, everything: bool) -> PrivateAccess:
    return PrivateAccess.parse(allowed, everything=everything)


@dataclass(frozen=True)
class Limits:
    """What one client allows: seconds per request (the whole request, not per read), body
    bytes, and which private, loopback and link-local addresses may be called."""

    timeout: float
    max_bytes: int
    private: PrivateAccess = NO_PRIVATE


# --- the address rule ----------------------------------------------------------------------


def is_public(address: IPAddress) -> bool:
    """Whether ``address`` is on the public internet; translated IPv4 is judged by itself."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            return all(is_public(inner) for inner in embedded)
        if address in _LOCAL_NAT64:
            return False
    return address.is_global and not (
        address.is_multicast or address.is_reserved or address.is_unspecified
    )


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address] | None:
    """The IPv4 address(es) an IPv6 address stands for, or None for a plain IPv6 address."""
    if address.ipv4_mapped is not None:
        return [address.ipv4_mapped]
    if address in _NAT64:
        return [ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)]
    if address.sixtofour is not None:
        return [address.sixtofour]
    if address.teredo is not None:
        return list(address.teredo)  # the relay server and the client behind it
    return None


def resolve(host: str, port: int, *, private: PrivateAccess) -> list[str]:
    """The addresses to connect to for ``host``, looked up once; raises OutboundError when
    the name does not resolve or any address is neither public nor allowed by ``private``
    (checked on what DNS answered, so a public name pointing inside is caught)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise _Refused(f"{host!r} does not resolve: {exc}") from exc
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    for raw in addresses:
        address = ipaddress.ip_address(raw.split("%", 1)[0])
        if not is_public(address) and not private.allows(host, address):
            raise _Refused(
                f"{host!r} resolves to {raw}, which is not a public address nor an allowed "
                "private one (EVALUAITOR_ALLOWED_PRIVATE_HOSTS)"
            )
    if not addresses:
        raise _Refused(f"{host!r} resolves to no address")
    return addresses


def check_url(url: str, *, private: PrivateAccess) -> None:
    """Refuse a URL before storing it: http(s) with a host that resolves as :func:`resolve`
    allows. The connection checks again (DNS can change)."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise _Refused(f"{_for_log(url)!r} is not a valid URL") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _Refused(f"{_for_log(url)!r} is not an http(s) URL with a host")
    resolve(parts.hostname, port, private=private)


# --- the transport -------------------------------------------------------------------------


def _time_left(timeout: float | None, expired: type[Exception]) -> float:
    """The per-operation timeout, cut to what is left before the request's deadline."""
    left = _deadline.get() - time.monotonic()
    if left <= 0:
        raise expired("the request's deadline has passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read and write ends by the request's deadline: a server that
    drips one byte a second cannot stretch the per-read timeout into hours."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _time_left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _time_left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        """TLS with the URL's host name as SNI and for the certificate, whatever we dialled."""
        secured = self._inner.start_tls(
            ssl_context, server_hostname, _time_left(timeout, httpcore.ConnectTimeout)
        )
        return _DeadlineStream(secured)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _PinnedBackend(httpcore.NetworkBackend):
    """httpcore's socket backend, connecting only to addresses :func:`resolve` checked."""

    def __init__(self, private: PrivateAccess) -> None:
        self._private = private
        self._sockets = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        addresses = resolve(host, port, private=self._private)
        for address in addresses[:-1]:  # like socket.create_connection: the next on refusal
            try:
                return self._connect(address, port, timeout, local_address, socket_options)
            except httpcore.ConnectError:
                continue
        return self._connect(addresses[-1], port, timeout, local_address, socket_options)

    def _connect(
        self,
        address: str,
        port: int,
        timeout: float | None,
        local_address: str | None,
        socket_options: Iterable[Any] | None,
    ) -> httpcore.NetworkStream:
        stream = self._sockets.connect_tcp(
            address,  # an IP literal: no second lookup
            port,
            timeout=_time_left(timeout, httpcore.ConnectTimeout),
            local_address=local_address,
            socket_options=socket_options,
        )
        return _DeadlineStream(stream)

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        raise _Refused("unix sockets are not outbound destinations")

    def sleep(self, seconds: float) -> None:
        self._sockets.sleep(seconds)


class _BoundedBody(httpx.SyncByteStream):
    """The response body, read under its request's deadline and refused past ``max_bytes``."""

    def __init__(self, inner: httpx.SyncByteStream, deadline: float, max_bytes: int) -> None:
        self._inner = inner
        self._deadline = deadline
        self._max_bytes = max_bytes

    def __iter__(self) -> Iterator[bytes]:
        chunks = iter(self._inner)
        received = 0
        while True:
            token = _deadline.set(self._deadline)
            try:
                chunk = next(chunks, None)
            finally:
                _deadline.reset(token)
            if chunk is None:
                return
            received += len(chunk)
            if received > self._max_bytes:
                raise _too_large(self._max_bytes)
            yield chunk

    def close(self) -> None:
        self._inner.close()


#: The summary of a refusal for size: a caller may tell it apart (an asset too large).
TOO_LARGE = "the answer is too large"


def _too_large(max_bytes: int) -> OutboundError:
    return OutboundError(f"the answer is larger than {max_bytes} bytes", summary=TOO_LARGE)


def ssl_context() -> ssl.SSLContext:
    """The TLS settings every outbound client shares. Building them reads the CA bundle
    (about 20 ms), which every score push, report, download and grading paid once or twice
    before; they are built once per process for each SSL_CERT_FILE / SSL_CERT_DIR (a lab's
    own CA), read when a client is made."""
    return _ssl_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.cache
def _ssl_context(_cert_file: str | None, _cert_dir: str | None) -> ssl.SSLContext:
    return httpx.create_ssl_context(trust_env=True)  # reads those two from the environment


class _GuardedTransport(httpx.HTTPTransport):
    def __init__(self, limits: Limits) -> None:
        super().__init__(verify=ssl_context(), trust_env=False)
        self._limits = limits
        # httpx has no parameter for its connection pool's network backend, so the pool it
        # built is replaced by one with ours. HTTPTransport._pool is private: the test
        # tests/security/test_outbound.py::test_the_guard_is_installed_in_the_transport
        # fails if a new httpx stops sending requests through it.
        self._pool.close()
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context(), network_backend=_PinnedBackend(limits.private)
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme not in ("http", "https"):
            raise _Refused(f"scheme {request.url.scheme!r} is not http(s)")
        deadline = time.monotonic() + self._limits.timeout
        token = _deadline.set(deadline)
        try:
            response = super().handle_request(request)
        finally:
            _deadline.reset(token)
        length = response.headers.get("Content-Length", "")
        if length.isdigit() and int(length) > self._limits.max_bytes:
            response.close()
            raise _too_large(self._limits.max_bytes)
        body = cast(httpx.SyncByteStream, response.stream)  # HTTPTransport's ResponseStream
        response.stream = _BoundedBody(body, deadline, self._limits.max_bytes)
        return response


def client(limits: Limits, **kwargs: Any) -> httpx.Client:
    """An httpx client whose every request follows the rules above; use it with
    :func:`fetch`, which turns every failure into :class:`OutboundError`."""
    return httpx.Client(
        transport=_GuardedTransport(limits),
        timeout=limits.timeout,
        follow_redirects=False,
        trust_env=False,
        **kwargs,
    )


# --- requests ------------------------------------------------------------------------------


def fetch(http: httpx.Client, method: str, url: str, **kwargs: Any) -> httpx.Response:
    """One request with its body read; any failure (refused, unreachable, slow, too large)
    raises OutboundError. The status is not checked: see :func:`check_status`."""
    what = f"{method} {_for_log(url)!r}"
    try:
        response = http.request(method, url, **kwargs)
    except OutboundError as exc:
        raise OutboundError(f"{what}: {exc}", summary=exc.summary) from exc
    except httpx.InvalidURL as exc:  # not an HTTPError: e.g. an IPv4 host httpx cannot read
        raise _Refused(f"{what}: {exc}") from exc
    except httpx.TimeoutException as exc:
        raise OutboundError(
            f"{what}: timed out ({type(exc).__name__})", summary="timed out", retryable=True
        ) from exc
    except httpx.HTTPError as exc:
        raise OutboundError(
            f"{what}: {type(exc).__name__}",
            summary="the connection failed or the answer was not HTTP",
            retryable=True,
        ) from exc
    return response


def check_status(response: httpx.Response) -> None:
    """Raise OutboundError unless the answer is 2xx. The log line gets the status and, when
    the body is nothing but a short code (or JSON with one in ``error``), that code."""
    status = response.status_code
    if 200 <= status < 300:
        return
    code = _refusal_code(response.content)
    raise OutboundError(
        f"{response.request.method} {_for_log(str(response.request.url))!r} answered HTTP "
        f"{status}" + (f" ({code})" if code else ""),
        summary=f"answered HTTP {status}",
        retryable=status in (408, 425, 429) or status >= 500,
    )


def fetch_json(http: httpx.Client, method: str, url: str, **kwargs: Any) -> Any:
    """A JSON document from a 2xx answer; anything else raises OutboundError."""
    response = fetch(http, method, url, **kwargs)
    check_status(response)
    try:
        return safe_json.loads(response.content)
    except ValueError as exc:
        raise OutboundError(
            f"{method} {_for_log(url)!r}: the answer is not JSON ({exc})",
            summary="the answer is not JSON (or nests too deeply)",
        ) from exc


def _refusal_code(body: bytes) -> str | None:
    text = body[:2000].decode("utf-8", "replace").strip()
    try:
        document = safe_json.loads(text)
    except ValueError:
        document = None
    if isinstance(document, dict):
        text = str(document.get("error") or "")
    return text if _REFUSAL_CODE.fullmatch(text) else None


def _for_log(url: str) -> str:
    """The URL without query or fragment (they may carry secrets), at most 300 characters."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url[:300]
    return urlunsplit(parts._replace(query="", fragment=""))[:300]
