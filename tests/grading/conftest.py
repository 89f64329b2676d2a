"""Plugin tests talk to a scripted OpenAI-compatible server over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.llm import LLMClient, LLMSettings
from app.llm.session import LLMSession
from app.llm.slots import ServerSlots
from tests.fakes.llm_server import FakeLLM


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


@pytest.fixture
def session(fake_llm) -> Iterator[LLMSession]:
    """A session against the fake, without cache, as a grading job would have."""
    settings = LLMSettings(base_url=fake_llm.url, model="fake-model", backoff_base=0.01)
    # Eight calls in flight, as a hosted service takes them (a local one gets 1: app.llm.slots).
    with LLMClient(settings, slots=ServerSlots(fake_llm.url, 8)) as client:
        yield LLMSession(client, model="fake-model", max_concurrency=8)
