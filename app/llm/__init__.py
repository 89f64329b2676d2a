"""OpenAI-compatible language-model client used for AI-assisted grading."""

from app.llm.client import Completion, LLMClient, LLMSettings, Usage, client_from_config
from app.llm.errors import (
    LLMConnectionError,
    LLMError,
    LLMForbiddenError,
    LLMNotConfiguredError,
    LLMRateLimitError,
    LLMRequestError,
    LLMResponseError,
    LLMServerError,
    LLMTimeoutError,
)

__all__ = [
    "Completion",
    "LLMClient",
    "LLMConnectionError",
    "LLMError",
    "LLMForbiddenError",
    "LLMNotConfiguredError",
    "LLMRateLimitError",
    "LLMRequestError",
    "LLMResponseError",
    "LLMServerError",
    "LLMSettings",
    "LLMTimeoutError",
    "Usage",
    "client_from_config",
]
