"""Feedback Markdown is rendered, and whatever HTML a reply smuggles in is neutralised."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from app.web.markdown import render


def test_markdown_becomes_html():
    html = str(render("## Feedback\n\n**Strong** work:\n\n- one\n- two"))
    assert "<h2>Feedback</h2>" in html
    assert "<strong>Strong</strong>" in html
    assert "<li>one</li>" in html


@pytest.mark.parametrize(
    "hostile",
    [
        "<script>alert(1)</script>",
        '<img src=x onerror="alert(1)">',
        "[click](javascript:alert(1))",
        '<a href="https://x.example" onclick="alert(1)">x</a>',
        "<iframe src='https://evil.example'></iframe>",
    ],
)
def test_hostile_html_never_survives(hostile):
    """It may stay visible as text; it must never become a live element or attribute."""
    tags = live_tags(str(render(f"Good essay.\n\n{hostile}\n\nFinal score: 8/10")))
    assert {name for name, _ in tags} <= {"p", "a"}
    for _, attrs in tags:
        assert all(not key.startswith("on") for key in attrs)
        assert not attrs.get("href", "").startswith("javascript:")


def live_tags(html: str) -> list[tuple[str, dict[str, str]]]:
    found: list[tuple[str, dict[str, str]]] = []

    class Collector(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, {key: value or "" for key, value in attrs}))

    Collector().feed(html)
    return found


def test_links_are_kept_safe():
    html = str(render("[docs](https://example.edu/guide)"))
    assert 'href="https://example.edu/guide"' in html
    assert "noopener" in html
