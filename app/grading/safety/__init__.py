"""Checks on a student's text before an LLM grader reads it: injection flags and PII masking.

The submission always reaches the model as delimited data, so these checks never alter a grade.
``inspect`` tells the teacher where the text tries to instruct the grader, hides text, or grades
itself; ``strip_invisible`` removes the characters that hide text, and ``mask_pii`` replaces
obvious personal data with placeholders (``[email]``, ``[phone]``, ``[id]``, ``[name]``).

Matching runs on a folded copy of the text (compatibility forms, no accents, lower case, Latin
lookalikes for Cyrillic/Greek letters, invisible characters removed), so "ig<U+200B>nоre" (with
a Cyrillic o) still reads "ignore". Every pattern is linear: no nested unbounded repetition, and
runs are only tried from their start. Phrases mentioned mid-sentence, in quotes, or in a text
about prompt injection are still flagged, with a message saying they may be a quotation.

The package splits that work: :mod:`~app.grading.safety.patterns` holds the compiled tables
(phrases in English, Spanish and Catalan, score claims, lookalikes, personal-data shapes),
:mod:`~app.grading.safety.folding` the folded text, :mod:`~app.grading.safety.flags` the
flags and :mod:`~app.grading.safety.masking` the masking.
"""

from app.grading.safety.flags import MAX_FLAGS, SafetyFlag, inspect, strip_invisible
from app.grading.safety.masking import PROSE_KINDS, MaskingReport, mask_pii

__all__ = [
    "MAX_FLAGS",
    "PROSE_KINDS",
    "MaskingReport",
    "SafetyFlag",
    "inspect",
    "mask_pii",
    "strip_invisible",
]
