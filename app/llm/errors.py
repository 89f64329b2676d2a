"""Errors raised by the language-model client.

Each error carries two texts: ``str(exc)`` is a technical detail for logs and administrators,
while ``user_message`` is plain English that is safe to show teachers and students (it never
contains API keys, raw server output or the configured server's URL: only an allowlist's own
entries, LLMForbiddenError); pages show it translated (app.i18n.localize).
"""

from __future__ import annotations

from app.catalogue import N_


class LLMError(Exception):
    """Base class for every failure while talking to the language model."""

    default_user_message = N_(
        "Something went wrong while contacting the language model. Please try again later."
    )

    def __init__(
        self,
        detail: str | None = None,
        *,
        user_message: str | None = None,
        attempts: int = 0,
        status_code: int | None = None,
    ) -> None:
        self.user_message = user_message or self.default_user_message
        super().__init__(detail or self.user_message)
        self.attempts = attempts
        self.status_code = status_code


class LLMNotConfiguredError(LLMError):
    """No usable language-model endpoint is configured."""

    default_user_message = N_(
        "No language model is configured for Evaluaitor. Ask your administrator to set one up."
    )


class LLMForbiddenError(LLMError):
    """The configured server is not on the organization's or the site's allowlist
    (app.llm.endpoints): nothing was sent, and trying again will not help."""

    default_user_message = N_(
        "The configured model server is not on this organization's list of allowed model "
        "servers, so the work was not sent. Ask your administrator."
    )

    ORGANIZATION = N_(
        "This organization only allows models at %(allowed)s, and the configured model "
        "server is not one of them, so the work was not sent. Ask your administrator."
    )
    SITE = N_(
        "This Evaluaitor only allows models at %(allowed)s, and the configured model server "
        "is not one of them, so the work was not sent. Ask your administrator."
    )


class LLMTimeoutError(LLMError):
    """The server did not answer in time, even after retrying."""

    default_user_message = N_(
        "The language model took too long to respond. Please try again later."
    )


class LLMRateLimitError(LLMError):
    """The server kept answering 429 Too Many Requests."""

    default_user_message = N_(
        "The language model service is busy right now (too many requests). "
        "Please wait a few minutes and try again."
    )


class LLMServerError(LLMError):
    """The server kept failing with 5xx errors."""

    default_user_message = N_(
        "The language model service is having problems right now. Please try again later."
    )


class LLMConnectionError(LLMError):
    """The server could not be reached at all."""

    default_user_message = N_(
        "Evaluaitor could not connect to the language model service. Please try again later, "
        "or ask your administrator to check the connection."
    )


class LLMResponseError(LLMError):
    """The server answered, but not with a usable chat completion."""

    default_user_message = N_(
        "The language model sent back a reply that Evaluaitor could not understand. "
        "Please try again."
    )


class LLMRequestError(LLMError):
    """The server rejected the request (4xx other than 429); retrying would not help."""

    default_user_message = N_(
        "The language model service rejected the request. "
        "Ask your administrator to check the language model settings."
    )


def request_error_message(status: int, body: str) -> str | None:
    """Pick a plain-English explanation for a rejected request; None keeps the default."""
    text = body.lower()
    if status in (401, 403):
        return N_(
            "The language model service did not accept Evaluaitor's credentials. "
            "Ask your administrator to check the API key."
        )
    if status == 413 or "context length" in text or "context_length" in text:
        return N_("The submission is too long for the language model to process.")
    if status == 404 or ("model" in text and ("not found" in text or "does not exist" in text)):
        return N_(
            "The language model service does not know the configured model. "
            "Ask your administrator to check the model name."
        )
    return None
