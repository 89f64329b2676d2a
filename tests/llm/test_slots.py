"""Calls in flight to one model server, counted across processes (app.llm.slots): real worker
processes with their own ServerSlots on the embedded Redis, the fake model server counting
the requests it is computing at once, a worker SIGKILLed while holding a slot, and a Redis
that is not there."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from redis import Redis

from app.evaluation import sweeper
from app.evaluation.pipeline import TRANSIENT
from app.extensions import redis_connection
from app.llm import LLMClient, LLMSettings, LLMTimeoutError
from app.llm.session import LLMSession
from app.llm.slots import HOSTED_DEFAULT, LOCAL_DEFAULT, ServerSlots, default_limit
from tests import processes
from tests.conftest import run_jobs
from tests.documents import ESSAY
from tests.fakes.llm_server import FakeLLM
from tests.llm.test_client import free_port
from tests.test_core_loop import open_activity, status, upload

MESSAGES = [{"role": "user", "content": "Grade this."}]
START_TIMEOUT = 60


class InFlight:
    """A reply function for the fake that takes ``seconds`` and counts the requests being
    answered at once, as a server computing them would."""

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._lock = threading.Lock()
        self._now = 0
        self.most = 0

    def __call__(self, _body: dict) -> str:
        with self._lock:
            self._now += 1
            self.most = max(self.most, self._now)
        time.sleep(self._seconds)
        with self._lock:
            self._now -= 1
        return "Final score: 7/10"


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.fixture
def prefix() -> str:
    """A key prefix of this test's own: the Redis server serves the whole run."""
    return f"slots-test-{uuid.uuid4().hex[:8]}"


def _caller(tmp_path: Path, redis_url: str, base_url: str, limit: int, prefix: str, *args):
    """tests/llm/slot_caller.py in a process of its own, working in ``tmp_path`` (so that
    tests.processes finds it), its output read line by line."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.llm.slot_caller", redis_url, base_url, str(limit), prefix]
        + [str(a) for a in args],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _env() -> dict[str, str]:
    return os.environ | {"PYTHONPATH": str(Path(__file__).parents[2])}


def _expect_line(process: subprocess.Popen, text: str) -> None:
    line = process.stdout.readline()
    assert line.strip() == text, f"{line!r}; stderr: {process.stderr.read()}"


@pytest.mark.parametrize("limit", [1, 2])
def test_calls_from_several_worker_processes_never_exceed_the_limit(
    tmp_path, redis_server, fake, prefix, limit
):
    """Three workers, three calls each, all at once: the server never computes more than
    ``limit`` at a time, and it does compute ``limit`` at a time (the line is not one call
    at a time regardless). Without the shared count, all three would call at once."""
    in_flight = InFlight(0.25)
    fake.set_default(in_flight)
    go = tmp_path / "go"
    with processes.reaped(tmp_path):
        callers = [
            _caller(tmp_path, redis_server.url, fake.url, limit, prefix, go, 3) for _ in range(3)
        ]
        for caller in callers:
            _expect_line(caller, "ready")
        go.touch()
        outputs = [caller.communicate(timeout=START_TIMEOUT) for caller in callers]
    for caller, (out, err) in zip(callers, outputs, strict=True):
        assert caller.returncode == 0, err
        assert out.count("queued_ms") == 3
    assert len(fake.requests) == 9
    assert in_flight.most == limit
    # Somebody waited for a slot, and said so.
    waits = [int(line.split()[-1]) for out, _ in outputs for line in out.splitlines()]
    assert max(waits) >= 200


def test_a_worker_killed_while_holding_a_slot_frees_it_when_its_lease_ends(
    tmp_path, redis_server, fake, prefix
):
    lease = 2.0
    redis = Redis.from_url(redis_server.url)
    with processes.reaped(tmp_path):
        holder = _caller(tmp_path, redis_server.url, fake.url, 1, prefix, "hold", lease)
        _expect_line(holder, "held")
        held_at = time.monotonic()
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        holder.stdout.close()
        holder.stderr.close()

    # Its release never ran: the slot stays taken until the lease ends...
    slots = ServerSlots(fake.url, 1, redis=redis, max_wait=0.3, prefix=prefix)
    with pytest.raises(LLMTimeoutError), slots.hold():
        pass
    # ...and then it is free again, without anybody's help.
    patient = ServerSlots(fake.url, 1, redis=redis, max_wait=lease + 5, prefix=prefix)
    with patient.hold() as waited:
        free_after = time.monotonic() - held_at
    assert waited > 0
    assert lease - 0.1 <= free_after <= lease + 1.5


def test_a_caller_that_waits_past_max_wait_gets_a_timeout_the_job_waits_out(
    redis_server, fake, prefix
):
    """A busy server is like a slow one: LLMTimeoutError, one of the failures after which a
    grading waits and is tried again later (app.evaluation.pipeline.TRANSIENT)."""
    fake.set_default("Final score: 7/10")
    redis = Redis.from_url(redis_server.url)
    busy = ServerSlots(fake.url, 1, redis=redis, prefix=prefix)
    slots = ServerSlots(fake.url, 1, redis=redis, max_wait=0.5, prefix=prefix)
    settings = LLMSettings(base_url=fake.url, model="m", max_retries=2, backoff_base=0.01)
    with LLMClient(settings, slots=slots) as client, busy.hold():
        started = time.monotonic()
        with pytest.raises(LLMTimeoutError) as caught:
            client.complete(MESSAGES)
        waited = time.monotonic() - started
    assert isinstance(caught.value, TRANSIENT)
    assert "stayed busy" in str(caught.value)
    assert 0.5 <= waited < 2  # given up once, not retried like a failed request
    assert fake.requests == []


def test_without_redis_the_count_falls_back_to_the_process(fake):
    """Redis away (a closed port): the calls still go, one at a time, counted in this process;
    once Redis failed it is not asked again at every call (each ask costs its client's
    reconnection attempts, three seconds here)."""
    away = Redis(host="127.0.0.1", port=free_port(), socket_connect_timeout=1)
    in_flight = InFlight(0.2)
    fake.set_default(in_flight)
    slots = ServerSlots(fake.url, 1, redis=away, max_wait=30)
    settings = LLMSettings(base_url=fake.url, model="m", max_retries=0)
    with LLMClient(settings, slots=slots) as client:
        session = LLMSession(client, model="m", max_concurrency=4)
        session.complete(MESSAGES)  # finds Redis away
        started = time.monotonic()
        replies = session.map(lambda n: session.complete([*MESSAGES, *[MESSAGES[0]] * n]), range(4))
        took = time.monotonic() - started
    assert [r.content for r in replies] == ["Final score: 7/10"] * 4
    assert in_flight.most == 1
    assert len(fake.requests) == 5
    queued = sorted(c.queued_ms for c in session.calls[1:])
    assert queued[0] < 150 and queued[-1] >= 500  # the last waited for three calls
    assert took < 2.5  # four calls of 0.2 s, not four reconnections to a Redis that is away


def test_without_redis_a_full_process_count_still_gives_up_after_max_wait(fake):
    away = Redis(host="127.0.0.1", port=free_port(), socket_connect_timeout=1)
    slots = ServerSlots(fake.url + "/other", 1, redis=away, max_wait=0.3)
    with slots.hold(), pytest.raises(LLMTimeoutError), slots.hold():
        pass


@pytest.mark.parametrize(
    ("url", "limit"),
    [
        ("http://127.0.0.1:11434/v1", LOCAL_DEFAULT),
        ("http://localhost:8080/v1", LOCAL_DEFAULT),
        ("http://[::1]:8000/v1", LOCAL_DEFAULT),
        ("http://10.0.3.7:8000/v1", LOCAL_DEFAULT),
        ("http://192.168.1.20:11434/v1", LOCAL_DEFAULT),
        ("http://172.16.0.9/v1", LOCAL_DEFAULT),
        ("http://moodle.school.lan:8000/v1", LOCAL_DEFAULT),
        ("http://gpu-box.local/v1", LOCAL_DEFAULT),
        ("http://ollama:11434/v1", LOCAL_DEFAULT),
        ("https://api.openai.com/v1", HOSTED_DEFAULT),
        ("https://8.8.8.8/v1", HOSTED_DEFAULT),
        ("https://lamb.example.edu/v1", HOSTED_DEFAULT),
    ],
)
def test_default_limit_by_where_the_server_is(url, limit):
    assert (LOCAL_DEFAULT, HOSTED_DEFAULT) == (1, 8)
    assert default_limit(url) == limit


def test_the_wait_for_a_slot_is_recorded_apart_from_the_models_time(redis_server, fake, prefix):
    fake.set_default("Final score: 7/10")
    redis = Redis.from_url(redis_server.url)
    slots = ServerSlots(fake.url, 1, redis=redis, max_wait=30, prefix=prefix)
    settings = LLMSettings(base_url=fake.url, model="m", max_retries=0)
    with LLMClient(settings, slots=slots) as client:
        session = LLMSession(client, model="m")
        session.complete(MESSAGES)  # nobody else: no wait
        other = ServerSlots(fake.url, 1, redis=redis, prefix=prefix)
        with other.hold():  # another worker's call, 0.6 s long
            waiter = threading.Thread(target=session.complete, args=(MESSAGES + MESSAGES,))
            waiter.start()
            time.sleep(0.6)
        waiter.join(timeout=10)
    first, second = session.calls
    assert first.queued_ms < 100
    assert second.queued_ms >= 500
    assert second.elapsed_ms >= second.queued_ms
    assert second.elapsed_ms - second.queued_ms < 500  # the model itself answered at once
    assert session.provenance()["calls"][1]["queued_ms"] == second.queued_ms


def test_a_grading_whose_server_stays_busy_waits_and_is_graded_later(
    app, browser, platform, llm, live_tool
):
    """Every slot of the server held elsewhere past EVALUAITOR_LLM_SLOT_WAIT: the submission
    waits for the grading service (not failed) and is graded once the retry is due."""
    app.config |= {"EVALUAITOR_LLM_SLOT_WAIT": 0.3, "EVALUAITOR_LLM_RETRY_SCHEDULE": [0]}
    llm.set_default("Clear and accurate.\n\nFinal score: 8/10")
    page = open_activity(browser, platform, live_tool)
    elsewhere = ServerSlots(
        llm.url, 1, redis=redis_connection(), prefix=app.config["EVALUAITOR_QUEUE_PREFIX"]
    )
    with elsewhere.hold():
        upload(browser, page, "essay.txt", ESSAY.encode())
        run_jobs()
        assert status(browser, page)["status"] == "waiting"
        assert llm.requests == []
    assert sweeper.sweep(timedelta(seconds=30)) == 1
    run_jobs()
    assert status(browser, page)["status"] == "completed"
    assert len(llm.requests) == 1


def test_a_servers_slot_set_lasts_no_longer_than_its_newest_lease(redis_server, fake, prefix):
    """Left alone, the count of a server no longer used goes away with its last lease."""
    redis = Redis.from_url(redis_server.url)
    slots = ServerSlots(fake.url, 2, redis=redis, lease_seconds=5, prefix=prefix)
    key = f"{prefix}:llm-slots:{fake.url}"
    with slots.hold():
        assert redis.zcard(key) == 1
        assert 0 < redis.pttl(key) <= 5000
