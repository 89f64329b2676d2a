"""LLM client tests over real HTTP against the FakeLLM server (no httpx mocks)."""

from __future__ import annotations

import email.utils
import socket
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from app.llm import (
    Completion,
    LLMClient,
    LLMConnectionError,
    LLMError,
    LLMNotConfiguredError,
    LLMRateLimitError,
    LLMRequestError,
    LLMResponseError,
    LLMServerError,
    LLMSettings,
    LLMTimeoutError,
    Usage,
    client_from_config,
)
from tests.fakes.llm_server import FakeLLM

API_KEY = "sk-test-0123456789abcdef"
MESSAGES = [
    {"role": "system", "content": "You grade essays."},
    {"role": "user", "content": "Grade this essay please."},
]

MakeClient = Callable[..., LLMClient]


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def make_client(fake: FakeLLM, sleeps: list[float]) -> Iterator[MakeClient]:
    """Clients pointing at the fake, with tiny backoff and recorded (not real) sleeps."""
    clients: list[LLMClient] = []

    def make(**overrides: object) -> LLMClient:
        options: dict = {
            "base_url": fake.url,
            "api_key": API_KEY,
            "model": "grader-model",
            "timeout": 5.0,
            "max_retries": 3,
            "backoff_base": 0.01,
            "backoff_max": 30.0,
        }
        options.update(overrides)
        client = LLMClient(LLMSettings(**options), sleep=sleeps.append)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- normal replies -------------------------------------------------------------------------


def test_normal_reply_parses_content_usage_and_sends_request_fields(
    fake: FakeLLM, make_client: MakeClient, sleeps: list[float]
) -> None:
    fake.reply(
        "Score: 8/10", usage={"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16}
    )

    result = make_client().complete(
        MESSAGES, model="other-model", temperature=0.0, max_tokens=256, seed=42
    )

    assert isinstance(result, Completion)
    assert result.content == "Score: 8/10"
    assert result.model == "other-model"
    assert result.usage == Usage(prompt_tokens=12, completion_tokens=4, total_tokens=16)
    assert result.attempts == 1
    assert result.finish_reason == "stop"
    assert isinstance(result.elapsed_ms, int) and result.elapsed_ms >= 0
    assert sleeps == []
    [body] = fake.requests
    assert body == {
        "model": "other-model",
        "messages": MESSAGES,
        "temperature": 0.0,
        "max_tokens": 256,
        "seed": 42,
    }
    assert fake.headers[0]["authorization"] == f"Bearer {API_KEY}"
    assert fake.headers[0]["content-type"] == "application/json"


def test_defaults_come_from_settings_and_optional_fields_are_omitted(
    fake: FakeLLM, make_client: MakeClient
) -> None:
    """A request never goes uncapped: with no cap named, the settings' applies (a small model
    otherwise writes to the end of its context while the client times out)."""
    fake.reply("ok")

    make_client(temperature=0.3, max_tokens=700).complete(MESSAGES)

    assert fake.requests[0] == {
        "model": "grader-model",
        "messages": MESSAGES,
        "temperature": 0.3,
        "max_tokens": 700,
    }


def test_no_api_key_sends_no_authorization_header(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.reply("ok")

    make_client(api_key=None).complete(MESSAGES)

    assert "authorization" not in fake.headers[0]


def test_missing_usage_and_model_fall_back(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.raw(b'{"choices": [{"message": {"role": "assistant", "content": "fine"}}]}')

    result = make_client().complete(MESSAGES)

    assert result.content == "fine"
    assert result.model == "grader-model"
    assert result.usage == Usage(None, None, None)
    assert result.finish_reason is None


def test_content_as_list_of_parts(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.raw(
        b'{"model": "m", "choices": [{"finish_reason": "stop", "message": {"role": "assistant",'
        b' "content": [{"type": "text", "text": "Good "}, {"type": "text", "text": "work."}]}}]}'
    )

    assert make_client().complete(MESSAGES).content == "Good work."


def test_client_works_as_context_manager(fake: FakeLLM) -> None:
    fake.reply("ok")
    with LLMClient(LLMSettings(base_url=fake.url + "/")) as client:
        assert client.complete(MESSAGES).content == "ok"
    with pytest.raises(RuntimeError):
        client.complete(MESSAGES)


# --- retries --------------------------------------------------------------------------------


def test_429_retry_after_seconds_is_honoured(
    fake: FakeLLM, make_client: MakeClient, sleeps: list[float]
) -> None:
    fake.fail(429, retry_after="3")
    fake.reply("after the wait")

    result = make_client().complete(MESSAGES)

    assert result.content == "after the wait"
    assert result.attempts == 2
    assert sleeps == [3.0]
    assert len(fake.requests) == 2


def test_retry_after_http_date_is_honoured(
    fake: FakeLLM, make_client: MakeClient, sleeps: list[float]
) -> None:
    fake.fail(503, retry_after=email.utils.formatdate(time.time() + 6, usegmt=True))
    fake.reply("ok")

    make_client().complete(MESSAGES)

    [wait] = sleeps
    assert 4.0 <= wait <= 6.0


def test_retry_after_is_capped_by_backoff_max(
    fake: FakeLLM, make_client: MakeClient, sleeps: list[float]
) -> None:
    fake.fail(429, retry_after="3600")
    fake.reply("ok")

    make_client(backoff_max=2.0).complete(MESSAGES)

    assert sleeps == [2.0]


def test_5xx_then_success_uses_jittered_exponential_backoff(
    fake: FakeLLM, make_client: MakeClient, sleeps: list[float]
) -> None:
    fake.fail(500)
    fake.fail(503)
    fake.fail(502)
    fake.reply("third time lucky")

    result = make_client(backoff_base=0.5).complete(MESSAGES)

    assert result.content == "third time lucky"
    assert result.attempts == 4
    assert len(sleeps) == 3
    for retry, wait in enumerate(sleeps):
        assert 0.0 <= wait <= 0.5 * 2**retry


def test_5xx_retries_exhausted_raises_server_error(
    fake: FakeLLM, make_client: MakeClient, sleeps: list[float]
) -> None:
    for _ in range(3):
        fake.fail(502)

    with pytest.raises(LLMServerError) as info:
        make_client(max_retries=2).complete(MESSAGES)

    assert info.value.attempts == 3
    assert info.value.status_code == 502
    assert len(fake.requests) == 3
    assert len(sleeps) == 2


def test_429_retries_exhausted_raises_rate_limit_error(
    fake: FakeLLM, make_client: MakeClient, sleeps: list[float]
) -> None:
    for _ in range(2):
        fake.fail(429, retry_after="1")

    with pytest.raises(LLMRateLimitError) as info:
        make_client(max_retries=1).complete(MESSAGES)

    assert info.value.attempts == 2
    assert sleeps == [1.0]
    assert "busy" in info.value.user_message


def test_zero_retries_makes_a_single_attempt(
    fake: FakeLLM, make_client: MakeClient, sleeps: list[float]
) -> None:
    fake.fail(500)

    with pytest.raises(LLMServerError) as info:
        make_client(max_retries=0).complete(MESSAGES)

    assert info.value.attempts == 1
    assert sleeps == []


def test_a_reply_that_does_not_come_in_time_is_not_asked_for_again(
    fake: FakeLLM, make_client: MakeClient, sleeps: list[float]
) -> None:
    """A server that computes one reply at a time goes on computing a request whose client has
    gone; a second copy would wait behind it and time out too. The grading waits instead (a
    transient error) and is tried again later."""
    fake.delay(1.0, "too late")
    fake.reply("on time")

    started = time.monotonic()
    with pytest.raises(LLMTimeoutError) as info:
        make_client(timeout=0.2, max_retries=3).complete(MESSAGES)

    assert info.value.attempts == 1
    assert sleeps == []
    assert len(fake.requests) == 1
    assert time.monotonic() - started < 1.0
    assert isinstance(info.value.__cause__, httpx.ReadTimeout)


def test_connection_refused_raises_connection_error(
    make_client: MakeClient, sleeps: list[float]
) -> None:
    client = make_client(base_url=f"http://127.0.0.1:{free_port()}/v1", max_retries=2)

    with pytest.raises(LLMConnectionError) as info:
        client.complete(MESSAGES)

    assert info.value.attempts == 3
    assert len(sleeps) == 2
    assert isinstance(info.value.__cause__, httpx.ConnectError)


def test_stopped_server_refuses_connections(make_client: MakeClient) -> None:
    server = FakeLLM().start()
    server.stop()

    with pytest.raises(LLMConnectionError):
        make_client(base_url=server.url, max_retries=0).complete(MESSAGES)


# --- requests the server rejects ------------------------------------------------------------


def test_401_is_not_retried_and_never_leaks_the_key(
    fake: FakeLLM, make_client: MakeClient, sleeps: list[float]
) -> None:
    fake.fail(401, body=f"Incorrect API key provided: {API_KEY}")

    with pytest.raises(LLMRequestError) as info:
        make_client().complete(MESSAGES)

    error = info.value
    assert error.attempts == 1
    assert error.status_code == 401
    assert len(fake.requests) == 1
    assert sleeps == []
    assert API_KEY not in str(error)
    assert API_KEY not in error.user_message
    assert "API key" in error.user_message


@pytest.mark.parametrize(
    ("status", "message"),
    [(404, "The model `nope` does not exist"), (400, "model 'nope' not found")],
)
def test_unknown_model_is_not_retried(
    fake: FakeLLM, make_client: MakeClient, status: int, message: str
) -> None:
    fake.fail(status, body=message)

    with pytest.raises(LLMRequestError) as info:
        make_client().complete(MESSAGES, model="nope")

    assert info.value.status_code == status
    assert len(fake.requests) == 1
    assert "model name" in info.value.user_message


def test_context_length_error_has_a_helpful_message(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.fail(400, body="This model's maximum context length is 8192 tokens.")

    with pytest.raises(LLMRequestError) as info:
        make_client().complete(MESSAGES)

    assert "too long" in info.value.user_message


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b'{"choices": [{"message": {"content": "trunc', "application/json"),
        (b'{"id": "x", "object": "chat.completion"}', "application/json"),
        (b'{"choices": []}', "application/json"),
        (b'{"choices": [{"message": {"role": "assistant", "content": null}}]}', "application/json"),
        (b'{"choices": [{"message": {"role": "assistant", "content": "  "}}]}', "application/json"),
        (b'{"choices": [{"message": {"role": "assistant", "content": 42}}]}', "application/json"),
        (b'{"choices": [{"message": "hello"}]}', "application/json"),
        (b'["not", "an", "object"]', "application/json"),
        (b'{"error": {"message": "upstream exploded"}}', "application/json"),
        (b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html"),
        (b'{"choices": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", "application/json"),
    ],
    ids=[
        "truncated-json",
        "no-choices",
        "empty-choices",
        "null-content",
        "blank-content",
        "int-content",
        "message-not-object",
        "not-an-object",
        "error-with-200",
        "html-with-200",
        "nested-too-deep",
    ],
)
def test_malformed_bodies_raise_response_error(
    fake: FakeLLM, make_client: MakeClient, body: bytes, content_type: str
) -> None:
    fake.raw(body, content_type=content_type)

    with pytest.raises(LLMResponseError) as info:
        make_client().complete(MESSAGES)

    assert info.value.attempts == 1
    assert len(fake.requests) == 1


# --- JSON mode ------------------------------------------------------------------------------


def test_json_mode_sends_response_format(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.reply('{"score": 7}')

    result = make_client().complete(MESSAGES, json_mode=True)

    assert result.content == '{"score": 7}'
    assert fake.requests[0]["response_format"] == {"type": "json_object"}


def test_json_mode_falls_back_when_response_format_is_unsupported(
    fake: FakeLLM, make_client: MakeClient
) -> None:
    fake.fail(400, body="Unsupported parameter: 'response_format'")
    fake.reply('{"score": 7}')
    fake.reply('{"score": 9}')
    client = make_client()

    first = client.complete(MESSAGES, json_mode=True)
    second = client.complete(MESSAGES, json_mode=True)

    assert (first.content, first.attempts) == ('{"score": 7}', 2)
    assert (second.content, second.attempts) == ('{"score": 9}', 1)
    assert "response_format" in fake.requests[0]
    assert "response_format" not in fake.requests[1]
    assert "response_format" not in fake.requests[2]


def test_unrelated_400_in_json_mode_is_not_retried(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.fail(400, body="messages must not be empty")

    with pytest.raises(LLMRequestError):
        make_client().complete(MESSAGES, json_mode=True)

    assert len(fake.requests) == 1


# --- configuration --------------------------------------------------------------------------


def test_client_from_config_without_base_url_returns_none() -> None:
    assert client_from_config({}) is None
    assert client_from_config({"EVALUAITOR_LLM_BASE_URL": " ", "EVALUAITOR_LLM_MODEL": "m"}) is None


def test_client_from_config_reads_settings(fake: FakeLLM) -> None:
    fake.reply("configured")
    config = {
        "EVALUAITOR_LLM_BASE_URL": fake.url,
        "EVALUAITOR_LLM_API_KEY": API_KEY,
        "EVALUAITOR_LLM_MODEL": "cfg-model",
        "EVALUAITOR_LLM_TIMEOUT": "7.5",
        "EVALUAITOR_LLM_MAX_RETRIES": "2",
        "EVALUAITOR_LLM_BACKOFF_BASE": 0.25,
    }

    client = client_from_config(config)

    assert client is not None
    with client:
        assert client.settings == LLMSettings(
            base_url=fake.url,
            api_key=API_KEY,
            model="cfg-model",
            timeout=7.5,
            max_retries=2,
            backoff_base=0.25,
        )
        assert client.complete(MESSAGES).content == "configured"
    assert fake.requests[0]["model"] == "cfg-model"
    assert fake.headers[0]["authorization"] == f"Bearer {API_KEY}"


def test_client_from_config_rejects_non_numeric_values() -> None:
    config = {"EVALUAITOR_LLM_BASE_URL": "http://llm.local/v1", "EVALUAITOR_LLM_TIMEOUT": "soon"}

    with pytest.raises(LLMNotConfiguredError, match="EVALUAITOR_LLM_TIMEOUT"):
        client_from_config(config)


@pytest.mark.parametrize("base_url", ["llm.local/v1", "ftp://llm.local/v1"])
def test_invalid_base_url_is_a_configuration_error(base_url: str) -> None:
    with pytest.raises(LLMNotConfiguredError):
        LLMClient(LLMSettings(base_url=base_url))


def test_settings_repr_hides_the_api_key() -> None:
    assert API_KEY not in repr(LLMSettings(base_url="http://llm.local/v1", api_key=API_KEY))


def test_user_messages_are_plain_text() -> None:
    classes = [LLMError, *LLMError.__subclasses__()]
    assert len(classes) == 9
    for cls in classes:
        message = cls("technical detail").user_message
        assert message and "http" not in message.lower()
        assert "technical detail" not in message


# --- the fake itself ------------------------------------------------------------------------


def test_fake_default_reply_and_models_endpoint(fake: FakeLLM, make_client: MakeClient) -> None:
    fake.set_default(lambda request: f"echo: {request['messages'][-1]['content']}")

    assert make_client().complete(MESSAGES).content == "echo: Grade this essay please."
    assert httpx.get(f"{fake.url}/models").json()["data"][0]["id"] == "fake-model"


def test_fake_without_script_answers_500(fake: FakeLLM, make_client: MakeClient) -> None:
    with pytest.raises(LLMServerError) as info:
        make_client(max_retries=0).complete(MESSAGES)

    assert "no scripted reply" in str(info.value)
