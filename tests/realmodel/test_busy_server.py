"""A real server that computes one reply at a time, asked by several gradings at once."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from app.grading.base import Outcome
from app.llm import discovery
from tests.realmodel.test_strategies import BOUND_SECONDS
from tests.realmodel.works import Server, app_config, grade


def test_a_busy_server_is_still_found(model_server: Server) -> None:
    """Its model list waits behind the reply it is computing; the probe waits for it."""
    url = httpx.URL(model_server.base_url)
    if url.host != "127.0.0.1" or url.port is None:
        pytest.skip("discovery looks only on 127.0.0.1")
    started = threading.Event()

    def long_reply() -> None:
        started.set()
        httpx.post(
            f"{model_server.base_url}/chat/completions",
            json={
                "model": model_server.model,
                "messages": [{"role": "user", "content": "Write a long story about a plant."}],
                "max_tokens": 300,
            },
            timeout=300,
        )

    with ThreadPoolExecutor(1) as pool:
        busy = pool.submit(long_reply)
        started.wait()
        time.sleep(0.5)  # the server is computing now
        found = discovery.find_local_server([url.port])
        busy.result()
    assert found is not None and found.base_url == model_server.base_url


def test_two_gradings_at_once_take_turns_and_both_end(
    model_server: Server, relay, redis_server, tmp_path
) -> None:
    """Calls beyond the server's one slot wait in our line, not in its queue: none times out,
    and the server never has two requests of ours at once."""
    config = app_config(model_server, relay, redis_server.url, tmp_path)
    relay.peak = 0
    with ThreadPoolExecutor(2) as pool:
        runs = [
            pool.submit(grade, config, relay, model_server, "criteria-per_criterion", work)
            for work in ("good", "spanish")
        ]
        graded = [run.result() for run in runs]
    assert relay.peak == 1
    for result in graded:
        assert result.result.outcome in (Outcome.GRADED, Outcome.NEEDS_REVIEW)
        assert result.seconds < 2 * BOUND_SECONDS
        assert all(call["attempts"] == 1 for call in result.result.provenance["calls"])
    waited = [c["queued_ms"] for r in graded for c in r.result.provenance["calls"]]
    assert max(waited) > 0  # one grading's calls waited for the other's
