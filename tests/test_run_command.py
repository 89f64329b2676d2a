"""``evaluaitor run`` starts a working service from nothing: Redis, database, worker, web."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
from redis import Redis
from rq import Worker


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_run_starts_everything_from_an_empty_instance_folder(tmp_path):
    port = _free_port()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("EVALUAITOR_", "REDIS_URL", "DATABASE_URL"))
    }
    env["EVALUAITOR_INSTANCE_DIR"] = str(tmp_path / "instance")
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "run", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    lines: list[str] = []
    reader = threading.Thread(
        target=lambda: lines.extend(line.decode() for line in process.stdout), daemon=True
    )
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None, "".join(lines)
                assert time.monotonic() < deadline, "the server did not come up"
                time.sleep(0.2)
        assert health.json()["status"] == "ok"
        assert httpx.get(f"http://127.0.0.1:{port}/lti/jwks").json()["keys"]
        assert (tmp_path / "instance" / "evaluaitor.db").exists()
        # The worker is running: it registers itself in the embedded Redis.
        url = next(line for line in lines if "Embedded Redis at" in line).split()[-1]
        redis = Redis.from_url(url)
        while not Worker.all(connection=redis):
            assert time.monotonic() < deadline, "no worker registered"
            time.sleep(0.2)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)
        reader.join(timeout=5)
    assert "Traceback" not in "".join(lines)
