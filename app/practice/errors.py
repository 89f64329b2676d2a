"""The practice platform's one error: a status, a code and a message for the caller."""

from __future__ import annotations


class PracticeError(Exception):
    """Refused input. ``is_api`` errors are JSON (services), the rest a short page."""

    def __init__(self, status: int, code: str, message: str, *, is_api: bool = True) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.is_api = is_api
