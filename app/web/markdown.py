"""Model feedback is Markdown written by an LLM that read student text: render it, then
sanitise it, so nothing a student smuggled into the reply can run in a teacher's browser,
and nothing it quotes (a file name with a right-to-left override) can disguise itself
(app.text; the gradebook gets the same text)."""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup

from app.text import clean_text

# "commonmark" without raw HTML: tags in the reply stay text; nh3 then keeps a safe subset.
_renderer = MarkdownIt("commonmark", {"html": False}).enable("table")
_ALLOWED_TAGS = {
    "p", "br", "strong", "em", "code", "pre", "blockquote", "ul", "ol", "li",
    "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "hr", "a",
}  # fmt: skip


def render(text: str | None) -> Markup:
    html = _renderer.render(clean_text(text))
    clean = nh3.clean(
        html,
        tags=_ALLOWED_TAGS,
        attributes={"a": {"href"}},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
    return Markup(clean)  # nosec B704: nh3 has just sanitised it to the allow-list above
