"""Inside an LMS iframe: framing allowed, cookies that survive third-party contexts."""

from __future__ import annotations

from tests.fakes.platform import browser_launch


def test_https_login_sets_partitioned_cross_site_cookies(app, platform, live_tool):
    client = app.test_client()
    params = platform.login_params(target_link_uri="https://tool.example/lti/launch")
    response = client.post("/lti/login", data=params, base_url="https://tool.example")
    assert response.status_code == 302
    cookies = response.headers.getlist("Set-Cookie")
    assert cookies
    for cookie in cookies:
        assert "Secure" in cookie and "SameSite=None" in cookie and "Partitioned" in cookie


def test_behind_a_trusted_proxy_forwarded_https_counts(app, platform, live_tool):
    from werkzeug.middleware.proxy_fix import ProxyFix

    app.wsgi_app = ProxyFix(app.wsgi_app, x_proto=1, x_host=1)
    client = app.test_client()
    params = platform.login_params(target_link_uri="https://tool.example/lti/launch")
    response = client.post(
        "/lti/login",
        data=params,
        headers={"X-Forwarded-Proto": "https", "X-Forwarded-Host": "tool.example"},
    )
    assert "redirect_uri=https%3A%2F%2Ftool.example%2Flti%2Flaunch" in response.headers["Location"]
    assert all("Partitioned" in c for c in response.headers.getlist("Set-Cookie"))


def test_pages_may_be_framed_by_the_lms(browser, platform, live_tool):
    launch = browser_launch(browser, platform, live_tool)
    page = browser.get(launch.headers["Location"])
    assert "X-Frame-Options" not in page.headers
    assert "frame-ancestors" not in page.headers["Content-Security-Policy"]
    assert page.headers["X-Content-Type-Options"] == "nosniff"
