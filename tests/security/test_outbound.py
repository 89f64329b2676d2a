"""Outbound requests that others steer (issue items 2 and 6): Dynamic Registration may not
call this server's own network, hang a worker, or show what the other end answered; the
guard in app/outbound.py pins the checked address, keeps one deadline per request and caps
the answer; /lti/register is rate-limited per client address."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from sqlalchemy import select
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from app import outbound
from app.extensions import db, redis_connection
from app.models import Platform
from tests.conftest import registration_path
from tests.fakes import sockets
from tests.fakes.platform import FakePlatform
from tests.test_registration import behind_a_proxy

#: The one answer whatever the other end did.
NEUTRAL = (
    "Evaluaitor could not complete the registration with the LMS at {host}. "
    "Check the address, or ask the administrator to look at the server log."
)
MARKER = "internal-service-secret-7f3a"
DEADLINE = 1.0


@pytest.fixture
def private_refused(app):
    app.config["EVALUAITOR_ALLOW_PRIVATE_URLS"] = 0


@pytest.fixture
def listener() -> Iterator[sockets.RawServer]:
    """An HTTP-ish server on 127.0.0.1 and [::1] that must never be called."""
    with sockets.RawServer(sockets.http_answer(200, b'{"issuer": "x"}')) as server:
        yield server


def register(browser: httpx.Client, url: str) -> httpx.Response:
    """The registration from ``url``, with a link an admin made for its origin (when it has
    one: the parameter checks come first)."""
    try:
        path = registration_path(url)
    except ValueError:
        path = "/lti/register"
    return browser.get(path, params={"openid_configuration": url, "registration_token": "t"})


def message_of(page: httpx.Response) -> str:
    """The error page's message, without the markup."""
    return page.text.split('role="alert">', 1)[1].split("</p>", 1)[0]


# --- the address rule --------------------------------------------------------------------

NOT_PUBLIC = [
    "127.0.0.1",
    "127.255.0.9",
    "0.0.0.0",
    "0.1.2.3",
    "10.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "100.64.0.1",  # carrier-grade NAT
    "169.254.169.254",  # cloud metadata
    "192.0.0.170",
    "198.18.0.1",
    "224.0.0.1",  # multicast, although "global"
    "240.0.0.1",
    "255.255.255.255",
    "::",
    "::1",
    "::7f00:1",  # IPv4-compatible
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:169.254.169.254",
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of the metadata address
    "64:ff9b:1::808:808",  # local-use NAT64: never global
    "2002:7f00:1::",  # 6to4 of 127.0.0.1
    "2002:a00:1::1",  # 6to4 of 10.0.0.1
    "2001:0:7f00:1::80ff:fffe",  # Teredo: server and client 127.0.0.1
    "fe80::1",
    "fc00::1",
    "fd00::2",
    "ff02::1",
]
PUBLIC = ["8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::"]


@pytest.mark.parametrize("address", NOT_PUBLIC)
def test_non_public_addresses_are_refused(address):
    assert not outbound.is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_allowed_even_when_translated(address):
    assert outbound.is_public(ipaddress.ip_address(address))


#: Every way we know to write "this machine" or a private network in a URL's host.
SPELLINGS = [
    "127.0.0.1",
    "2130706433",  # decimal
    "0x7f000001",  # hexadecimal
    "0177.0.0.1",  # octal
    "127.1",  # short form
    "0",
    "0.0.0.0",
    "localhost",  # a name that resolves to loopback
    "LOCALHOST.",
    "[::1]",
    "[::]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[64:ff9b::7f00:1]",
    "[2002:7f00:1::]",
    "[2001:0:7f00:1::80ff:fffe]",
    "169.254.169.254",
    "[fe80::1]",
    "100.64.0.1",
    "10.0.0.1",
    "192.168.0.1",
    "224.0.0.1",
    "[ff02::1]",
]


@pytest.mark.parametrize("host", SPELLINGS)
def test_registration_refuses_every_spelling_of_a_private_address(
    private_refused, browser, listener, host
):
    response = register(browser, f"http://{host}:{listener.port}/openid-configuration")
    assert response.status_code == 502
    shown = host.strip("[]").lower()
    assert message_of(response) == NEUTRAL.format(host=shown)
    assert listener.connections == 0
    assert db.session.scalars(select(Platform)).all() == []


def test_the_guard_is_installed_in_the_transport(listener):
    """app/outbound replaces httpx's private HTTPTransport._pool: if a new httpx stopped using
    it, requests would bypass the check and this test would see a connection."""
    limits = outbound.Limits(DEADLINE, 1000, private=outbound.NO_PRIVATE)
    with outbound.client(limits) as http, pytest.raises(outbound.OutboundError):
        outbound.fetch(http, "GET", listener.url + "/")
    assert listener.connections == 0
    with outbound.client(outbound.Limits(DEADLINE, 1000, private=outbound.ANY_PRIVATE)) as http:
        assert outbound.fetch(http, "GET", listener.url + "/").status_code == 200
    assert listener.connections == 1


@pytest.mark.parametrize(
    ("first", "second"),
    [("93.184.216.34", "127.0.0.1"), ("127.0.0.1", "93.184.216.34")],
    ids=["public-then-loopback", "loopback-then-public"],
)
def test_the_connection_goes_to_the_address_that_was_checked(monkeypatch, listener, first, second):
    """DNS rebinding: a name answers a public address to the check and loopback afterwards.
    The host is looked up once and the connection goes to that answer, or nowhere."""
    answers = [first, second]
    lookups: list[str] = []
    dialled: list[tuple[str, int]] = []

    def getaddrinfo(host, port, *args, **kwargs):
        lookups.append(host)
        address = answers.pop(0) if host == "rebind.example" else host
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    def create_connection(address, *args, **kwargs):
        dialled.append(address)  # no connection leaves this machine in a test
        raise ConnectionRefusedError(111, "refused by the test")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket, "create_connection", create_connection)
    limits = outbound.Limits(DEADLINE, 1000, private=outbound.NO_PRIVATE)
    with outbound.client(limits) as http, pytest.raises(outbound.OutboundError):
        outbound.fetch(http, "GET", f"http://rebind.example:{listener.port}/")
    assert lookups == ["rebind.example"]
    assert dialled == ([(first, listener.port)] if first != "127.0.0.1" else [])
    assert listener.connections == 0


def test_tls_keeps_the_name_while_connecting_to_the_checked_address(tmp_path, monkeypatch):
    """SNI, the certificate check and the Host header use the URL's name, not the IP."""
    cert, key = _self_signed("localhost", tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    names: list[str | None] = []
    context.sni_callback = lambda _sock, name, _ctx: names.append(name)
    hosts: list[str] = []

    def answer(environ, start_response):
        hosts.append(Request(environ).host)
        return Response("ok")(environ, start_response)

    server = make_server("127.0.0.1", 0, answer, threaded=True, ssl_context=context)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # our CA, as a lab would set it
    try:
        url = f"https://localhost:{server.server_port}/"
        with outbound.client(outbound.Limits(5.0, 1000, private=outbound.ANY_PRIVATE)) as http:
            assert outbound.fetch(http, "GET", url).text == "ok"
    finally:
        server.shutdown()
        server.server_close()
    assert names == ["localhost"]
    assert hosts == [f"localhost:{server.server_port}"]


def _self_signed(name: str, directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


# --- the platform's endpoints ------------------------------------------------------------


@pytest.fixture
def moodle(app, live_tool) -> Iterator[FakePlatform]:
    with FakePlatform() as fake:
        yield fake


@pytest.mark.parametrize(
    "endpoint", ["registration_endpoint", "jwks_uri", "token_endpoint", "authorization_endpoint"]
)
def test_the_endpoints_a_configuration_names_must_be_public_too(
    app, private_refused, monkeypatch, browser, moodle, live_tool, listener, endpoint
):
    """The configuration may come from a public host and name private endpoints, which are
    stored and called later: each is checked before anything is posted or stored."""
    real = outbound.is_public
    monkeypatch.setattr(  # the fake LMS on 127.0.0.1 stands for a public one here
        outbound, "is_public", lambda a: a == ipaddress.ip_address("127.0.0.1") or real(a)
    )
    moodle.registration.configuration_changes[endpoint] = f"http://127.0.0.2:{listener.port}/x"
    token = moodle.registration.token()
    link = live_tool + registration_path(moodle.url)
    response = browser.get(moodle.registration.start_url(link, token=token))
    assert response.status_code == 502
    assert message_of(response) == NEUTRAL.format(host="127.0.0.1")
    assert moodle.registration.registrations == []
    assert db.session.scalars(select(Platform)).all() == []


# --- one neutral answer, one deadline ----------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_page_is_the_same_whatever_the_other_end_did(app, browser, caplog):
    """Refused port, garbage, HTTP 500 with a body, silence, a drip, and an address we do not
    call: one status, one text, nothing of the body (not in the page, not in the log)."""
    app.config["EVALUAITOR_AGS_TIMEOUT"] = DEADLINE
    pages = {"closed": register(browser, f"http://127.0.0.1:{_closed_port()}/c")}
    handlers = {
        "garbage": sockets.garbage,
        "http-500": sockets.http_answer(500, f'{{"error": "{MARKER}"}} {MARKER}'.encode()),
        "html-200": sockets.http_answer(200, f"<html>{MARKER}</html>".encode()),
        "silent": sockets.silent,
        "drip": sockets.DRIP_BODY,
    }
    for name, handler in handlers.items():
        with sockets.RawServer(handler) as server:
            pages[name] = register(browser, server.url + "/c")
            assert server.connections == 1  # private addresses are allowed here: it was called
    app.config["EVALUAITOR_ALLOW_PRIVATE_URLS"] = 0
    with sockets.RawServer(handlers["http-500"]) as server:
        pages["private"] = register(browser, server.url + "/c")
        assert server.connections == 0

    assert {name: page.status_code for name, page in pages.items()} == dict.fromkeys(pages, 502)
    assert {message_of(page) for page in pages.values()} == {NEUTRAL.format(host="127.0.0.1")}
    assert len({page.text for page in pages.values()}) == 1
    assert MARKER not in caplog.text
    assert "answered HTTP 500" in caplog.text  # the administrator's detail


@pytest.mark.parametrize("handler", [sockets.DRIP_HEADERS, sockets.DRIP_BODY], ids=["head", "body"])
def test_a_drip_is_cut_off_at_the_deadline(handler):
    """httpx's read timeout is per read; a byte a second would never trip it."""
    with sockets.RawServer(handler) as server:
        limits = outbound.Limits(DEADLINE, 10_000_000, private=outbound.ANY_PRIVATE)
        started = time.monotonic()
        with outbound.client(limits) as http, pytest.raises(outbound.OutboundError) as failed:
            outbound.fetch(http, "GET", server.url + "/")
        elapsed = time.monotonic() - started
    assert failed.value.summary == "timed out"
    assert elapsed < DEADLINE + 2


def test_a_dripping_platform_does_not_hold_the_registration(app, browser):
    app.config["EVALUAITOR_AGS_TIMEOUT"] = DEADLINE
    with sockets.RawServer(sockets.DRIP_HEADERS) as server:
        started = time.monotonic()
        response = register(browser, server.url + "/openid-configuration")
        elapsed = time.monotonic() - started
    assert response.status_code == 502
    assert elapsed < DEADLINE + 2


@pytest.mark.parametrize("announced", [True, False], ids=["content-length", "until-close"])
def test_an_oversized_answer_is_refused(announced):
    limits = outbound.Limits(DEADLINE, 1000, private=outbound.ANY_PRIVATE)
    with (
        sockets.RawServer(sockets.http_answer(200, b"x" * 2000, announced=announced)) as server,
        outbound.client(limits) as http,
        pytest.raises(outbound.OutboundError) as failed,
    ):
        outbound.fetch(http, "GET", server.url + "/")
    assert failed.value.summary == "the answer is too large"


def test_redirects_are_not_followed(listener):
    location = f"{listener.url}/internal".encode()
    answer = b"HTTP/1.1 302 Found\r\nLocation: " + location + b"\r\nContent-Length: 0\r\n\r\n"
    with sockets.RawServer(lambda connection, _: connection.sendall(answer)) as server:
        with outbound.client(outbound.Limits(DEADLINE, 1000, private=outbound.ANY_PRIVATE)) as http:
            response = outbound.fetch(http, "GET", server.url + "/")
        with pytest.raises(outbound.OutboundError, match="HTTP 302"):
            outbound.check_status(response)
    assert listener.connections == 0


# --- rate limit --------------------------------------------------------------------------


def test_the_eleventh_registration_from_one_address_gets_429(browser):
    for _ in range(10):
        assert register(browser, "ftp://x/").status_code == 400
    refused = register(browser, "ftp://x/")
    assert refused.status_code == 429
    assert "Too many registration attempts" in refused.text
    assert 0 < int(refused.headers["Retry-After"]) <= 600


def test_the_limit_counts_the_client_behind_a_trusted_proxy(tmp_path, redis_server, key_dir):
    proxied = behind_a_proxy(tmp_path, redis_server, key_dir, EVALUAITOR_REGISTER_RATE_LIMIT=2)
    with proxied.app_context():
        redis_connection().flushdb()
    client = proxied.test_client()

    def attempt(address: str) -> int:
        return client.get("/lti/register", headers={"X-Forwarded-For": address}).status_code

    assert [attempt("203.0.113.7") for _ in range(3)] == [400, 400, 429]
    assert attempt("203.0.113.8") == 400  # another client behind the same proxy


def test_clients_share_their_tls_settings_until_the_ca_setting_changes(tmp_path, monkeypatch):
    """Reading the CA bundle costs about 20 ms: every client of a process shares one TLS
    context, and a lab's own CA set later (SSL_CERT_FILE) still gets a context of its own."""
    limits = outbound.Limits(5.0, 1000, private=outbound.ANY_PRIVATE)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    first, second = outbound.ssl_context(), outbound.ssl_context()
    assert first is second
    with outbound.client(limits) as http:
        assert http._transport._pool._ssl_context is first  # the pool that sends requests
    cert, _key = _self_signed("localhost", tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    lab = outbound.ssl_context()
    assert lab is not first and lab is outbound.ssl_context()
    assert ((("commonName", "localhost"),),) in [ca["subject"] for ca in lab.get_ca_certs()]
