"""``evaluaitor run`` starts a working service from nothing (Redis, database, worker, web) and
stops all of it on SIGTERM or Ctrl+C, letting the running job finish within the grace; a child
that dies is started again. ``evaluaitor worker`` lets its job finish on SIGTERM.

All real: processes, the embedded Redis, signals and HTTP. The model is the fake
OpenAI-compatible server of tests/fakes, whose delayed reply keeps a job running.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from redis import Redis
from rq import Worker

from app import tenants
from app.api import auth
from app.extensions import db
from app.models import Evaluation
from tests import processes
from tests.documents import ESSAY
from tests.fakes.llm_server import FakeLLM

ADMIN_TOKEN = "admin-token-for-tests-only"
REPLY = "Clear and accurate.\n\nFinal score: 8/10"
#: Generous bounds for slow machines; shutdowns take a few seconds here.
START_TIMEOUT = 60
STOP_MARGIN = 30


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _environment(**settings: str) -> dict[str, str]:
    """This environment without the tests' own settings, plus ``settings``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("EVALUAITOR_", "REDIS_URL", "DATABASE_URL"))
    }
    return env | settings


class Service:
    """A command run as a service would be: in a session of its own, its output collected."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.env = env
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "app.cli", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        self.lines.extend(line.decode(errors="replace") for line in self.process.stdout)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for_line(self, text: str, timeout: float = START_TIMEOUT) -> str:
        deadline = time.monotonic() + timeout
        while True:
            found = next((line for line in list(self.lines) if text in line), None)
            if found is not None:
                return found
            assert self.process.poll() is None, f"it ended early:\n{self.output}"
            assert time.monotonic() < deadline, f"no line with {text!r}:\n{self.output}"
            time.sleep(0.1)

    def stop(self, signum: int, *, group: bool = False, timeout: float) -> float:
        """Send ``signum`` (to the whole process group, as a terminal does, if ``group``) and
        wait for the exit; returns the seconds it took."""
        started = time.monotonic()
        if group:
            os.killpg(self.process.pid, signum)
        else:
            self.process.send_signal(signum)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {timeout} s after {signum!r}:\n{self.output}")
        self._reader.join(timeout=5)
        return time.monotonic() - started


class Run(Service):
    """``evaluaitor run`` with the practice platform, from an empty instance folder."""

    def __init__(self, tmp_path: Path, **settings: str) -> None:
        self.instance = tmp_path / "instance"
        self.port, self.practice_port = _free_port(), _free_port()
        env = _environment(
            EVALUAITOR_INSTANCE_DIR=str(self.instance),
            EVALUAITOR_PRACTICE="1",
            EVALUAITOR_PRACTICE_PORT=str(self.practice_port),
            EVALUAITOR_ADMIN_TOKEN=ADMIN_TOKEN,
            # Whatever this machine runs on the usual model ports is not the test's business.
            **({"EVALUAITOR_LLM_PROBE_PORTS": "off"} | settings),
        )
        super().__init__(["run", "--port", str(self.port)], env)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_until_up(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                httpx.get(f"{self.url}/health", timeout=1).raise_for_status()
                return
            except httpx.TransportError:
                assert self.process.poll() is None, self.output
                assert time.monotonic() < deadline, f"the server did not come up:\n{self.output}"
                time.sleep(0.2)

    def redis(self) -> Redis:
        return Redis.from_url(self.wait_for_line("Embedded Redis at").split()[-1])

    def submit(self) -> str:
        """An API evaluation, through an organization and a token made as an operator would;
        returns its code."""
        admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        made = httpx.post(
            f"{self.url}/organizations", json={"external_id": "school"}, headers=admin, timeout=10
        )
        assert made.status_code == 201, made.text
        created = subprocess.run(
            [sys.executable, "-m", "app.cli", "token", "create", "--org", "school"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT,
        )
        assert created.returncode == 0, created.stderr
        token = created.stdout.split()[-1]
        response = httpx.post(
            f"{self.url}/evaluations",
            files={"file": ("essay.txt", ESSAY.encode())},
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )
        assert response.status_code == 202, response.text
        return response.json()["job_code"]

    def status(self, code: str) -> str:
        """The evaluation's status, read from the database file (the service is gone)."""
        with sqlite3.connect(self.instance / "evaluaitor.db") as connection:
            (status,) = connection.execute(
                "SELECT j.status FROM evaluation e JOIN grading_job j ON j.evaluation_id = e.id"
                " WHERE e.code = ?",
                (code,),
            ).fetchone()
        return status

    def assert_ports_free(self) -> None:
        for port in (self.port, self.practice_port):
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", port), timeout=2).close()
            with socket.socket() as sock:  # as a server restarting on it would bind
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("127.0.0.1", port))


def _wait_for(condition, message: str, timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, message
        time.sleep(0.1)


def _workers(tree: list[processes.Process]) -> list[processes.Process]:
    """The worker and its work horse both run ``app.cli worker``."""
    return [p for p in tree if "app.cli worker" in p.command]


def test_run_starts_everything_from_an_empty_instance_folder(tmp_path):
    with processes.reaped(tmp_path):
        run = Run(tmp_path)
        run.wait_until_up()
        assert httpx.get(f"{run.url}/lti/jwks").json()["keys"]
        assert (run.instance / "evaluaitor.db").exists()
        page = httpx.get(f"http://localhost:{run.practice_port}/", timeout=10)
        assert "Practice course" in page.text
        # The worker is running: it registers itself in the embedded Redis.
        redis = run.redis()
        _wait_for(lambda: Worker.all(connection=redis), "no worker registered")
        run.stop(signal.SIGTERM, timeout=STOP_MARGIN)
        assert run.process.returncode == 0, run.output
        assert "Traceback" not in run.output


def test_run_counts_in_a_metrics_directory_it_empties_at_start(tmp_path):
    """``run`` empties instance/metrics (an earlier run's files name dead, maybe reused,
    pids); its web server's /metrics then shows what the worker's work horse counted, and
    /readyz is ready."""
    stale = tmp_path / "instance" / "metrics" / "counter_4242.db"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"\0" * 16)
    with FakeLLM() as llm, processes.reaped(tmp_path):
        llm.set_default(REPLY)
        run = Run(tmp_path, EVALUAITOR_LLM_BASE_URL=llm.url, EVALUAITOR_METRICS_TOKEN="t0ken")
        run.wait_until_up()
        assert not stale.exists()
        code = run.submit()
        scrape = {"Authorization": "Bearer t0ken"}

        def counted() -> bool:
            text = httpx.get(f"{run.url}/metrics", headers=scrape, timeout=10).text
            return 'evaluaitor_time_to_grade_seconds_count{outcome="completed"} 1.0' in text

        _wait_for(counted, f"the horse's counts never showed:\n{run.output}")
        assert httpx.get(f"{run.url}/readyz", timeout=10).status_code == 200
        run.stop(signal.SIGTERM, timeout=STOP_MARGIN)
        assert run.status(code) == "completed"


# A stop as systemd (KillMode=mixed) and `docker stop` do it, SIGTERM to the main process; and
# as a terminal's Ctrl+C does it, SIGINT to the whole foreground process group.
STOPS = [
    pytest.param(signal.SIGTERM, False, id="SIGTERM"),
    pytest.param(signal.SIGINT, True, id="Ctrl+C"),
]


@pytest.mark.parametrize(("signum", "group"), STOPS)
def test_a_stop_lets_the_running_job_finish_then_ends_every_process(tmp_path, signum, group):
    grace = 30
    with FakeLLM() as llm, processes.reaped(tmp_path):
        llm.delay(3, REPLY)
        run = Run(tmp_path, EVALUAITOR_LLM_BASE_URL=llm.url, EVALUAITOR_SHUTDOWN_GRACE=str(grace))
        run.wait_until_up()
        code = run.submit()
        _wait_for(lambda: llm.requests, f"the job never asked the model:\n{run.output}")
        tree = processes.find(tmp_path)
        assert len(_workers(tree)) >= 2, tree  # worker, work horse (busy)
        assert any("redis-server" in p.command for p in tree), tree

        run.stop(signum, group=group, timeout=grace + STOP_MARGIN)

        assert run.process.returncode == 0, run.output
        assert run.status(code) == "completed", run.output
        assert [p for p in tree if p.is_alive] == []
        assert processes.find(tmp_path) == []
        run.assert_ports_free()
        assert "Traceback" not in run.output


@pytest.mark.parametrize(("signum", "group"), STOPS)
def test_a_job_longer_than_the_grace_is_cut_off_and_left_processing(tmp_path, signum, group):
    grace = 2
    with FakeLLM() as llm, processes.reaped(tmp_path):
        llm.delay(600, REPLY)
        run = Run(
            tmp_path,
            EVALUAITOR_LLM_BASE_URL=llm.url,
            EVALUAITOR_LLM_TIMEOUT="900",
            EVALUAITOR_SHUTDOWN_GRACE=str(grace),
        )
        run.wait_until_up()
        code = run.submit()
        _wait_for(lambda: llm.requests, f"the job never asked the model:\n{run.output}")
        tree = processes.find(tmp_path)
        assert len(_workers(tree)) >= 2, tree

        run.stop(signum, group=group, timeout=grace + STOP_MARGIN)

        assert run.process.returncode == 0, run.output
        assert "its job is cut off" in run.output
        # Left for the sweeper to hand back to the queue.
        assert run.status(code) == "processing"
        assert [p for p in tree if p.is_alive] == []
        assert processes.find(tmp_path) == []
        run.assert_ports_free()


def test_a_stop_while_it_is_still_starting_ends_everything(tmp_path):
    with processes.reaped(tmp_path):
        run = Run(tmp_path)
        run.wait_for_line("Embedded Redis at")  # the migrations are about to run
        run.stop(signal.SIGTERM, timeout=STOP_MARGIN)
        assert run.process.returncode == 0, run.output
        assert processes.find(tmp_path) == []
        run.assert_ports_free()


def test_a_worker_or_redis_that_dies_is_started_again(tmp_path):
    with processes.reaped(tmp_path):
        run = Run(tmp_path)
        run.wait_until_up()
        redis = run.redis()
        _wait_for(lambda: Worker.all(connection=redis), "no worker registered")
        first = _workers(processes.find(tmp_path))
        assert len(first) >= 1, first

        (worker,) = Worker.all(connection=redis)
        os.kill(worker.pid, signal.SIGKILL)
        _wait_for(
            lambda: any(w.pid != worker.pid for w in Worker.all(connection=redis)),
            f"no new worker:\n{run.output}",
        )
        assert "The worker exited with status -9 unexpectedly" in run.output
        assert [p for p in first if p.is_alive] == []  # nothing of it is left

        (server,) = [p for p in processes.find(tmp_path) if "redis-server" in p.command]
        os.kill(server.pid, signal.SIGKILL)
        run.wait_for_line("Redis is running again.")
        assert redis.ping()  # at the same address

        run.stop(signal.SIGTERM, timeout=STOP_MARGIN)
        assert run.process.returncode == 0, run.output
        assert processes.find(tmp_path) == []


def test_the_worker_command_lets_its_job_finish_on_sigterm(app, live_tool, redis_server, tmp_path):
    org, _ = tenants.upsert_organization("school", name="School")
    _, token = auth.create_token(org, "tests")
    db.session.commit()
    with FakeLLM() as llm, processes.reaped(tmp_path):
        llm.delay(3, REPLY)
        worker = Service(
            ["worker"],
            _environment(
                EVALUAITOR_INSTANCE_DIR=str(tmp_path / "worker-instance"),
                DATABASE_URL=app.config["DATABASE_URL"],
                REDIS_URL=redis_server.url,
                EVALUAITOR_DATA_DIR=app.config["EVALUAITOR_DATA_DIR"],
                EVALUAITOR_LLM_CACHE_DIR=app.config["EVALUAITOR_LLM_CACHE_DIR"],
                EVALUAITOR_LLM_BASE_URL=llm.url,
            ),
        )
        response = httpx.post(
            f"{live_tool}/evaluations",
            files={"file": ("essay.txt", ESSAY.encode())},
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )
        assert response.status_code == 202, response.text
        _wait_for(lambda: llm.requests, f"the job never asked the model:\n{worker.output}")
        tree = processes.find(tmp_path)
        assert len(_workers(tree)) >= 2, tree  # worker, work horse (busy)

        worker.stop(signal.SIGTERM, timeout=STOP_MARGIN)

        assert worker.process.returncode == 0, worker.output
        assert "warm shut down requested" in worker.output
        db.session.expire_all()
        evaluation = db.session.query(Evaluation).one()
        assert evaluation.status == "completed", worker.output
        assert [p for p in tree if p.is_alive] == []
        assert "Traceback" not in worker.output


def test_run_without_a_base_url_uses_the_model_server_it_finds_on_this_machine(tmp_path):
    with FakeLLM() as llm, processes.reaped(tmp_path):
        llm.models = ["local-a", "local-b"]
        llm.set_default(REPLY)
        nothing = _free_port()
        run = Run(tmp_path, EVALUAITOR_LLM_PROBE_PORTS=f"{nothing},{httpx.URL(llm.url).port}")
        found = run.wait_for_line("Found an OpenAI-compatible server")
        assert llm.url in found and "local-a, local-b" in found
        assert "EVALUAITOR_LLM_MODEL (gpt-4o-mini) is not offered there" in run.output
        run.wait_for_line(f"Grading with model local-a at {llm.url}")
        run.wait_until_up()
        code = run.submit()
        # The web app queued it and the worker asked the server found, with the model chosen.
        _wait_for(lambda: llm.requests, f"the job never asked the model:\n{run.output}")
        assert llm.requests[0]["model"] == "local-a"
        _wait_for(lambda: run.status(code) == "completed", f"not graded:\n{run.output}")
        run.stop(signal.SIGTERM, timeout=STOP_MARGIN)
        assert run.process.returncode == 0 and "Traceback" not in run.output


def test_run_says_when_no_model_server_answers_and_what_works_without_one(tmp_path):
    with processes.reaped(tmp_path):
        port = _free_port()
        run = Run(tmp_path, EVALUAITOR_LLM_PROBE_PORTS=str(port))
        said = run.wait_for_line("No EVALUAITOR_LLM_BASE_URL")
        assert f"no OpenAI-compatible server answered on 127.0.0.1 (ports {port})" in said
        assert "programming activity is graded without one" in said
        assert "set EVALUAITOR_LLM_BASE_URL" in said
        run.wait_until_up()
        run.stop(signal.SIGTERM, timeout=STOP_MARGIN)
        assert run.process.returncode == 0 and "Found an" not in run.output


def test_run_never_adopts_a_local_server_the_sites_allowlist_forbids(tmp_path):
    """A server on this machine would grade every school's work: one outside
    EVALUAITOR_LLM_ALLOWED_BASE_URLS is not asked, and the message says why."""
    with FakeLLM() as llm, processes.reaped(tmp_path):
        run = Run(
            tmp_path,
            EVALUAITOR_LLM_PROBE_PORTS=str(httpx.URL(llm.url).port),
            EVALUAITOR_LLM_ALLOWED_BASE_URLS="https://llm.school.example/v1",
        )
        said = run.wait_for_line("No EVALUAITOR_LLM_BASE_URL")
        assert "EVALUAITOR_LLM_ALLOWED_BASE_URLS allows none of the local ports" in said
        run.wait_until_up()
        run.stop(signal.SIGTERM, timeout=STOP_MARGIN)
        assert run.process.returncode == 0 and "Found an" not in run.output
        assert llm.requests == []


def test_run_refuses_a_bad_ports_setting_by_name(tmp_path):
    with processes.reaped(tmp_path):
        run = Run(tmp_path, EVALUAITOR_LLM_PROBE_PORTS="ollama")
        assert run.process.wait(timeout=START_TIMEOUT) == 1
        run.stop(signal.SIGTERM, timeout=STOP_MARGIN)
        assert "EVALUAITOR_LLM_PROBE_PORTS must be port numbers" in run.output
        assert "Traceback" not in run.output and "Embedded Redis" not in run.output


def test_a_model_server_started_after_run_is_found_and_grades_what_waited_for_it(tmp_path):
    """No server when `evaluaitor run` starts: an essay fails for want of a model. A server
    then started on a port run looks at is found without a restart, and the essay is graded."""
    port = _free_port()
    with processes.reaped(tmp_path):
        run = Run(tmp_path, EVALUAITOR_LLM_PROBE_PORTS=str(port), EVALUAITOR_LLM_PROBE_EVERY="1")
        run.wait_for_line("looking again every 1 s")
        run.wait_until_up()
        code = run.submit()
        _wait_for(lambda: run.status(code) == "failed", f"not failed:\n{run.output}")

        with FakeLLM(port=port) as llm:
            llm.set_default(REPLY)
            run.wait_for_line(f"Grading with model fake-model at {llm.url}")
            run.wait_for_line("1 submission(s) that waited for it are in line")
            _wait_for(lambda: run.status(code) == "completed", f"not graded:\n{run.output}")
            assert llm.requests[-1]["model"] == "fake-model"
            run.stop(signal.SIGTERM, timeout=STOP_MARGIN)
        assert run.process.returncode == 0 and "Traceback" not in run.output
