"""Why a file could not be turned into gradable text.

Every error carries ``user_message``: one plain sentence or two, addressed to the student, saying
what is wrong and what to do. It is shown in the UI as is, so it never names server paths.
``str(exc)`` may be more technical and is meant for logs.
"""

from __future__ import annotations


class ExtractionError(Exception):
    """Base class: the upload cannot be graded as it is."""

    def __init__(self, user_message: str, detail: str | None = None) -> None:
        super().__init__(detail or user_message)
        self.user_message = user_message


class UnsupportedFileError(ExtractionError):
    """The extension is not accepted, or the content is not what the extension claims."""


class EmptyFileError(ExtractionError):
    """The file has no bytes, or only whitespace."""


class CorruptFileError(ExtractionError):
    """The file claims the right format but is damaged or truncated."""


class EncryptedFileError(ExtractionError):
    """The file needs a password to open."""


class NoTextError(ExtractionError):
    """The file opens but has no text layer to grade (e.g. a scanned PDF)."""
