"""Finding a local OpenAI-compatible server: real servers on free ports of 127.0.0.1, the fake
LLM among them, and ports where something else (or nothing) answers."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator

import httpx
import pytest
from werkzeug.wrappers import Response

from app.llm import discovery
from tests.fakes.http import BackgroundServer
from tests.fakes.llm_server import FakeLLM
from tests.llm.test_client import free_port


@pytest.fixture
def serve() -> Iterator[Callable[[Callable], int]]:
    """Serve one fixed response (or any WSGI app) on a free port of 127.0.0.1; returns the
    port."""
    servers: list[BackgroundServer] = []

    def start(response: Callable) -> int:
        server = BackgroundServer(response, "not-an-llm")
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


def _port(fake: FakeLLM) -> int:
    return httpx.URL(fake.url).port


NOT_OPENAI = {
    "404": Response('{"error": "not found"}', status=404, content_type="application/json"),
    "html": Response("<!doctype html><title>My app</title>", content_type="text/html"),
    "other json": Response('{"status": "ok"}', content_type="application/json"),
    "no models": Response('{"object": "list", "data": []}', content_type="application/json"),
}


def test_finds_the_fake_llm_after_ports_that_do_not_answer_as_openai(serve, fake_llm):
    others = [serve(response) for response in NOT_OPENAI.values()]
    ports = [free_port(), *others, _port(fake_llm)]
    server = discovery.find_local_server(ports)
    assert server == discovery.LocalServer(fake_llm.url, ("fake-model",))


@pytest.mark.parametrize("name", NOT_OPENAI)
def test_a_server_that_is_not_openai_like_is_ignored(serve, name):
    assert discovery.find_local_server([serve(NOT_OPENAI[name])]) is None


def test_nothing_found_when_no_port_answers():
    assert discovery.find_local_server([free_port(), free_port()]) is None


def test_the_configured_model_is_used_when_offered_else_the_first(fake_llm):
    fake_llm.models = ["llama3.2", "qwen2.5-coder", "llama3.2"]
    server = discovery.find_local_server([_port(fake_llm)])
    assert server is not None and server.models == ("llama3.2", "qwen2.5-coder")
    assert server.choose_model("qwen2.5-coder") == "qwen2.5-coder"
    assert server.choose_model("gpt-4o-mini") == "llama3.2"
    assert server.choose_model(None) == "llama3.2"


@pytest.mark.parametrize(
    ("setting", "ports"),
    [
        (None, discovery.DEFAULT_PORTS),
        ("", discovery.DEFAULT_PORTS),
        ("off", ()),
        ("11434, 8080", (11434, 8080)),
    ],
)
def test_the_ports_setting(setting, ports):
    assert discovery.probe_ports(setting) == ports


@pytest.mark.parametrize("setting", ["ollama", "11434;1234", "70000", "-1"])
def test_a_bad_ports_setting_names_itself(setting):
    with pytest.raises(ValueError, match="EVALUAITOR_LLM_PROBE_PORTS"):
        discovery.probe_ports(setting)


def slow_models(environ: dict, start_response: Callable) -> Iterable[bytes]:
    """A server busy computing a reply: its model list comes only after it, two seconds."""
    time.sleep(2)
    body = {"object": "list", "data": [{"id": "busy-model", "object": "model"}]}
    return Response(json.dumps(body), content_type="application/json")(environ, start_response)


def test_a_busy_server_that_answers_its_model_list_late_is_found(serve):
    """llama.cpp serves one request at a time: asked while it computes a grading, it answers
    after it. The probe waits for a port that accepted the connection."""
    port = serve(slow_models)
    started = time.monotonic()
    server = discovery.find_local_server([free_port(), port])
    assert server == discovery.LocalServer(f"http://127.0.0.1:{port}/v1", ("busy-model",))
    assert time.monotonic() - started >= 2
