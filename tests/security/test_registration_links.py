"""Issue 21, item 4.2: Dynamic Registration starts only from a one-time, expiring link an admin
made for the LMS's address, and private addresses are opened host by host or network by
network (EVALUAITOR_ALLOWED_PRIVATE_HOSTS), not all at once."""

from __future__ import annotations

import ipaddress
import socket
from datetime import timedelta

import pytest
from click.testing import CliRunner
from flask.cli import ScriptInfo
from sqlalchemy import select

from app import create_app, outbound
from app.cli import cli
from app.extensions import db
from app.lti import registration_links
from app.models import Platform, RegistrationLink
from app.models.base import utcnow
from tests.conftest import registration_path
from tests.fakes import sockets
from tests.fakes.platform import FakePlatform
from tests.test_admin import (
    admin_app,  # noqa: F401  (the fixture)
    csrf_token,
    sign_in,
)

LINK_REFUSED = "This registration link is not valid"


@pytest.fixture
def moodle(app, live_tool):
    with FakePlatform() as fake:
        yield fake


@pytest.fixture
def listener():
    """A server that must never be called: where a refused registration would point."""
    with sockets.RawServer(sockets.http_answer(200, b'{"issuer": "x"}')) as server:
        yield server


def start(browser, moodle: FakePlatform, path: str):
    return browser.get(moodle.registration.start_url(path, token=moodle.registration.token()))


def stored() -> list[Platform]:
    db.session.expire_all()
    return list(db.session.scalars(select(Platform)))


# --- the link ---------------------------------------------------------------------------


def test_without_a_link_nothing_is_fetched(browser, listener):
    url = f"{listener.url}/openid-configuration"
    response = browser.get(
        "/lti/register", params={"openid_configuration": url, "registration_token": "t"}
    )
    assert response.status_code == 403
    assert "registration link that the Evaluaitor administrator makes" in response.text
    assert listener.connections == 0


def test_an_unknown_link_fetches_nothing(browser, listener):
    url = f"{listener.url}/openid-configuration"
    response = browser.get(
        "/lti/register/forged-token",
        params={"openid_configuration": url, "registration_token": "t"},
    )
    assert response.status_code == 403 and LINK_REFUSED in response.text
    assert listener.connections == 0


def test_a_link_works_only_for_its_lms_address(browser, moodle, listener):
    """A link made for the school's Moodle cannot point the tool at another host or port."""
    path = registration_path(moodle.url)
    for elsewhere in (f"{listener.url}/c", moodle.url.replace("127.0.0.1", "localhost") + "/c"):
        response = browser.get(
            path, params={"openid_configuration": elsewhere, "registration_token": "t"}
        )
        assert response.status_code == 403 and LINK_REFUSED in response.text
    assert listener.connections == 0
    assert start(browser, moodle, path).status_code == 200  # still unused: it works once
    assert [p.issuer for p in stored()] == [moodle.issuer]


def test_a_link_is_used_once(browser, moodle):
    path = registration_path(moodle.url)
    assert start(browser, moodle, path).status_code == 200
    again = start(browser, moodle, path)
    assert again.status_code == 403 and LINK_REFUSED in again.text
    link = db.session.scalars(select(RegistrationLink)).one()
    assert link.used_at is not None and link.platform_id == stored()[0].id


def test_an_expired_link_is_refused(browser, moodle):
    path = registration_path(moodle.url)
    link = db.session.scalars(select(RegistrationLink)).one()
    link.expires_at = utcnow() - timedelta(seconds=1)
    db.session.commit()
    response = start(browser, moodle, path)
    assert response.status_code == 403 and LINK_REFUSED in response.text
    assert moodle.registration.registrations == [] and stored() == []


def test_a_failed_exchange_gives_the_link_back(browser, moodle):
    path = registration_path(moodle.url)
    moodle.registration.next_answer = (500, "down for maintenance")
    assert start(browser, moodle, path).status_code == 502
    assert stored() == []
    assert start(browser, moodle, path).status_code == 200  # the admin's retry


def test_only_the_token_hash_is_stored(app):
    made = registration_links.create("https://Moodle.School.edu:443/login/index.php", hours=1)
    row = db.session.get(RegistrationLink, made.link.id)
    assert made.token not in (row.token_hash, row.lms_origin)
    assert row.lms_origin == "https://moodle.school.edu"
    with pytest.raises(ValueError):
        registration_links.create("javascript:alert(1)", hours=1)


def test_the_admin_page_makes_a_link_that_registers(
    admin_app,  # noqa: F811
    browser,
    moodle,
    live_tool,
):
    sign_in(browser)
    page = browser.get("/admin/")
    bad = browser.post(
        "/admin/registration-links", data={"lms": "ftp://x", "csrf_token": csrf_token(page.text)}
    )
    assert bad.status_code == 400 and "must be an http(s) address" in bad.text
    made = browser.post(
        "/admin/registration-links",
        data={"lms": moodle.url + "/", "csrf_token": csrf_token(page.text)},
    )
    assert made.status_code == 200
    url = made.text.split('id="new-registration-link">', 1)[1].split("<", 1)[0]
    assert url.startswith(f"{live_tool}/lti/register/")
    assert start(browser, moodle, url).status_code == 200
    listing = browser.get("/admin/").text
    assert "used: registered" in listing and url not in listing  # shown once


def test_the_admin_page_needs_a_signed_in_admin(admin_app, browser):  # noqa: F811
    page = browser.get("/admin/")
    response = browser.post(
        "/admin/registration-links",
        data={"lms": "https://moodle.school.edu", "csrf_token": csrf_token(page.text)},
    )
    assert response.status_code == 403
    assert db.session.scalars(select(RegistrationLink)).all() == []


def test_the_cli_makes_a_link_that_registers(app, browser, moodle, live_tool):
    result = CliRunner().invoke(
        cli,
        ["registration-link", moodle.url, "--tool-url", live_tool + "/", "--hours", "2"],
        obj=ScriptInfo(create_app=lambda: app),
    )
    assert result.exit_code == 0, result.output
    url = result.stdout.strip()
    assert url.startswith(f"{live_tool}/lti/register/")
    assert start(browser, moodle, url).status_code == 200
    assert [p.issuer for p in stored()] == [moodle.issuer]


# --- private addresses, one by one ---------------------------------------------------------


def fake_dns(monkeypatch, answers: dict[str, str]) -> None:
    """Name resolution from ``answers`` (no connection is made by these tests)."""

    def getaddrinfo(host, port, *args, **kwargs):
        address = answers[host]
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def test_named_hosts_and_networks_are_checked_on_resolved_addresses(monkeypatch):
    fake_dns(
        monkeypatch,
        {
            "moodle.school.lan": "10.9.0.7",
            "wiki.school.lan": "10.9.0.8",
            "lab.example.org": "10.2.4.4",
            "rebound.example.org": "169.254.169.254",
            "mapped.example.org": "::ffff:10.2.0.9",
        },
    )
    access = outbound.PrivateAccess.parse("Moodle.School.LAN., 10.2.0.0/16")
    assert outbound.resolve("moodle.school.lan", 443, private=access) == ["10.9.0.7"]
    assert outbound.resolve("lab.example.org", 443, private=access) == ["10.2.4.4"]
    assert outbound.resolve("mapped.example.org", 443, private=access)
    for refused in ("wiki.school.lan", "rebound.example.org"):
        with pytest.raises(outbound.OutboundError, match="not a public address"):
            outbound.resolve(refused, 443, private=access)
    with pytest.raises(outbound.OutboundError):
        outbound.resolve("moodle.school.lan", 443, private=outbound.NO_PRIVATE)


def test_a_named_host_never_reaches_loopback_or_link_local(monkeypatch):
    fake_dns(monkeypatch, {"moodle.school.lan": "169.254.169.254", "localhost": "127.0.0.1"})
    access = outbound.PrivateAccess.parse("moodle.school.lan,localhost")
    for host in ("moodle.school.lan", "localhost"):
        with pytest.raises(outbound.OutboundError):
            outbound.resolve(host, 80, private=access)
    assert outbound.PrivateAccess.parse("127.0.0.1").allows(
        "localhost", ipaddress.ip_address("127.0.0.1")
    )


def test_registration_reaches_an_allowed_private_lms_only(app, browser, moodle):
    app.config["EVALUAITOR_ALLOW_PRIVATE_URLS"] = 0
    app.config["EVALUAITOR_ALLOWED_PRIVATE_HOSTS"] = "10.0.0.0/8"
    assert start(browser, moodle, registration_path(moodle.url)).status_code == 502
    app.config["EVALUAITOR_ALLOWED_PRIVATE_HOSTS"] = "127.0.0.1"
    assert start(browser, moodle, registration_path(moodle.url)).status_code == 200


@pytest.mark.parametrize("entry", ["moodle school", "10.0.0.0/33", "http://x/"])
def test_a_bad_allowed_entry_stops_the_start(monkeypatch, entry):
    monkeypatch.setenv("EVALUAITOR_ALLOWED_PRIVATE_HOSTS", f"moodle.lan,{entry}")
    with pytest.raises(ValueError, match="EVALUAITOR_ALLOWED_PRIVATE_HOSTS"):
        create_app()


def test_the_practice_platform_opens_loopback_only(monkeypatch):
    monkeypatch.setenv("EVALUAITOR_PRACTICE", "1")
    monkeypatch.delenv("EVALUAITOR_ALLOW_PRIVATE_URLS", raising=False)
    monkeypatch.setenv("EVALUAITOR_ALLOWED_PRIVATE_HOSTS", "moodle.lan")
    config = create_app().config
    access = outbound.private_access(config)
    assert not access.everything and "moodle.lan" in access.hosts
    assert access.allows("localhost", ipaddress.ip_address("127.0.0.1"))
    assert access.allows("localhost", ipaddress.ip_address("::1"))
    assert not access.allows("x", ipaddress.ip_address("10.0.0.1"))
