"""The one check of every strategy for text a person will read (issue 21): what a reply's
text field may hold, and what counts as copying its prompt's example."""

from __future__ import annotations

import pytest

from app.grading.replies import Unreadable, reply_text

EXAMPLES = ("one or two sentences", "a short exact quote from the submission that supports it")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, ""),
        ("  Clear thesis.  ", "Clear thesis."),
        (["Clear.", " ", "Dated."], "- Clear.\n- Dated."),
        ("The thesis takes one or two sentences.", "The thesis takes one or two sentences."),
    ],
)
def test_text_that_a_person_can_read(value, text) -> None:
    assert reply_text(value, "reason", EXAMPLES) == text


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ({"strengths": "x"}, '"reason" is an object, not text'),
        (["x", {"y": 1}], '"reason" is a list of more than texts, not text'),
        (7, '"reason" is a number, not text'),
        (False, '"reason" is true or false, not text'),
        ("One or two sentences.", '"reason" copies the example of the prompt'),
        ("Quote: a short exact quote from the submission that supports it!", "copies"),
    ],
)
def test_text_that_is_unreadable(value, why) -> None:
    with pytest.raises(Unreadable, match=why):
        reply_text(value, "reason", EXAMPLES)


def test_an_ellipsis_example_matches_any_text_without_words() -> None:
    for text in ("...", "…", " - "):
        with pytest.raises(Unreadable):
            reply_text(text, "quote", ("...",))
    assert reply_text("...", "quote") == "..."  # only when it is the prompt's example
