"""Where a request's time goes: the core loop's handlers in one process, one request at a
time, Evaluaitor next to bench/bare_app.py. For each phase (login + launch, upload of a 1 MB
PDF, page reload, status poll) it prints the time and CPU time inside the app (WSGI call to
the last byte; the client's and the fake platform's work are not counted), and the SQL
statements and Redis commands per request.

bench_core.py measures under load; this explains its figures. With ``--profile PHASE``
cProfile's top functions inside the app for that phase (``--bare``: in the bare app);
``--sql`` prints the statements of one request per phase.

    .venv/bin/python bench/profile_web.py [--requests 200] [--profile upload] [--sql]
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import io
import os
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from redis import Redis
from sqlalchemy import event

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_core import bare_environment  # noqa: E402

from app import create_app  # noqa: E402
from app.extensions import db  # noqa: E402
from app.jobs.redis_server import EmbeddedRedis  # noqa: E402
from tests.conftest import register  # noqa: E402
from tests.documents import pdf_bytes  # noqa: E402
from tests.fakes.platform import FakePlatform  # noqa: E402

PHASES = ("launch", "upload", "page", "status")
USER = "1001"
#: The student whose page is reloaded: with ``--history`` submissions, not the hundreds of
#: the upload phase (bench_core.py's students have about 20).
PAGE_USER = "1002"


class Meter:
    """WSGI middleware: time, CPU time, SQL statements and Redis commands of each request,
    added to the current phase; optionally under cProfile."""

    def __init__(self, wsgi: Callable, redis: Redis) -> None:
        self.wsgi = wsgi
        self.redis = redis
        self.profiler: cProfile.Profile | None = None
        self.statements: list[str] = []
        self.reset()

    def reset(self) -> None:
        self.wall = self.cpu = 0.0
        self.sql = self.redis_commands = 0
        self.statements.clear()

    def on_sql(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        self.sql += 1
        self.statements.append(" ".join(statement.split())[:150])

    def _redis_total(self) -> int:
        return int(self.redis.info("stats")["total_commands_processed"])

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        before = self._redis_total()
        wall, cpu = time.perf_counter(), time.thread_time()
        if self.profiler:
            self.profiler.enable()
        response = self.wsgi(environ, start_response)
        try:
            body = [bytes(chunk) for chunk in response]
        finally:
            if hasattr(response, "close"):
                response.close()
            if self.profiler:
                self.profiler.disable()
            self.cpu += time.thread_time() - cpu
            self.wall += time.perf_counter() - wall
        self.redis_commands += self._redis_total() - before - 1  # the INFO itself
        return body


def tool_app(tmp: Path, redis_url: str, platform: FakePlatform):
    app = create_app(
        {
            "DATABASE_URL": f"sqlite:///{tmp / 'tool.db'}",
            "REDIS_URL": redis_url,
            "EVALUAITOR_DATA_DIR": str(tmp / "data"),
            "EVALUAITOR_KEY_DIR": str(tmp / "keys"),
            "SECRET_KEY": "profile",
            "EVALUAITOR_ALLOW_PRIVATE_URLS": 1,
        }
    )
    with app.app_context():
        db.create_all()
        register(platform)
    return app


def bare_app(tmp: Path, redis_url: str, platform: FakePlatform):
    os.environ.update(bare_environment(tmp, redis_url, platform, "profile"))
    return importlib.import_module("bare_app").app


def phases(
    app, platform: FakePlatform, document: bytes, bare: bool, history: int
) -> tuple[dict[str, Callable], dict[str, Callable]]:
    """One callable per phase, each one request (a launch: the tool's two), and what to do,
    untimed, before a phase."""
    client = app.test_client()
    page = {"url": "", "user": USER}

    def launch() -> None:
        client._cookies.clear()  # one state cookie per login would pile up
        params = platform.login_params(
            target_link_uri="http://localhost/lti/launch", user=page["user"]
        )
        login = client.post("/lti/login", data=params)
        assert login.status_code == 302, login.text[:300]
        _, fields = platform.authorize(dict(parse_qsl(urlsplit(login.headers["Location"]).query)))
        launched = client.post("/lti/launch", data=fields)
        assert launched.status_code == 303, launched.text[:300]
        page["url"] = urlsplit(launched.headers["Location"]).path

    def upload() -> None:
        url = f"/upload?user={page['user']}" if bare else page["url"] + "submissions"
        response = client.post(url, data={"file": (io.BytesIO(document), "work.pdf")})
        assert response.status_code == 303, response.text[:300]

    def reload() -> None:
        response = client.get(page["url"])
        assert response.status_code == 200, response.text[:300]

    def status() -> None:
        response = client.get("/status" if bare else page["url"] + "status")
        assert response.status_code == 200, response.text[:300]

    def student_with_history() -> None:
        page["user"] = PAGE_USER
        launch()
        for _ in range(history):
            upload()

    calls = {"launch": launch, "upload": upload, "page": reload, "status": status}
    return calls, {"page": student_with_history}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=200, help="per phase and app")
    parser.add_argument("--profile", choices=PHASES, help="cProfile this phase")
    parser.add_argument("--bare", action="store_true", help="profile the bare app instead")
    parser.add_argument("--top", type=int, default=40, help="functions shown by --profile")
    parser.add_argument("--callers", default="", help="with --profile: who calls these")
    parser.add_argument("--sql", action="store_true", help="print one request's statements")
    parser.add_argument("--history", type=int, default=20, help="submissions on the page")
    args = parser.parse_args()
    document = pdf_bytes(padding=1024 * 1024)
    tmp = Path(tempfile.mkdtemp(prefix="evaluaitor-profile-"))
    try:
        figures = profile(args, tmp, document)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report(args, figures)


def profile(args: argparse.Namespace, tmp: Path, document: bytes) -> dict[str, dict]:
    """Each phase in turn, Evaluaitor and the bare app alternating in blocks."""
    with EmbeddedRedis(tmp / "redis", persistent=False) as server, FakePlatform() as platform:
        platform.tool_redirect_uris = ["http://localhost/lti/launch"]
        redis = Redis.from_url(server.url)
        apps = {
            "tool": tool_app(tmp, server.url, platform),
            "bare": bare_app(tmp, server.url, platform),
        }
        meters = {}
        calls = {}
        prepare = {}
        for name, app in apps.items():
            meters[name] = app.wsgi_app = Meter(app.wsgi_app, redis)
            calls[name], prepare[name] = phases(
                app, platform, document, bare=name == "bare", history=args.history
            )
        with apps["tool"].app_context():
            event.listen(db.engine, "before_cursor_execute", meters["tool"].on_sql)
        figures = {name: {} for name in apps}
        for phase in PHASES:
            # Alternate in blocks so that drift on a shared machine favours neither app.
            for name in apps:
                if phase in prepare[name]:
                    prepare[name][phase]()
                for _ in range(5):  # first-use caches, lazy imports
                    calls[name][phase]()
                meters[name].reset()
            totals: dict[str, list[float]] = {name: [0.0, 0.0, 0, 0] for name in apps}
            profiled = "bare" if args.bare else "tool"
            if args.profile == phase:
                meters[profiled].profiler = cProfile.Profile()
            for block in range(10):
                for name in apps if block % 2 == 0 else reversed(list(apps)):
                    meter = meters[name]
                    meter.reset()
                    for _ in range(max(1, args.requests // 10)):
                        calls[name][phase]()
                    for i, value in enumerate(
                        (meter.wall, meter.cpu, meter.sql, meter.redis_commands)
                    ):
                        totals[name][i] += value
            n = max(1, args.requests // 10) * 10
            for name in apps:
                wall, cpu, sql, redis_n = totals[name]
                figures[name][phase] = (wall / n * 1000, cpu / n * 1000, sql / n, redis_n / n)
            if args.profile == phase:
                stats = pstats.Stats(meters[profiled].profiler)
                meters[profiled].profiler = None
                stats.sort_stats("cumulative").print_stats(args.top)
                stats.sort_stats("tottime").print_stats(args.top)
                if args.callers:
                    stats.print_callers(args.callers)
            if args.sql:
                meters["tool"].statements.clear()
                calls["tool"][phase]()
                print(f"-- {phase}: one request's statements")
                print("\n".join(meters["tool"].statements))
    return figures


def report(args: argparse.Namespace, figures: dict[str, dict[str, tuple]]) -> None:
    print(
        f"\nInside the app, one request at a time, {args.requests} requests per phase and "
        f"app; the page shows {args.history} submissions"
    )
    print(
        f"{'phase':<8}{'ms':>8}{'CPU ms':>8}{'SQL':>6}{'Redis':>7}"
        f"{'bare ms':>9}{'bare CPU':>9}{'Redis':>7}{'x ms':>7}{'x CPU':>7}"
    )
    for phase in PHASES:
        ms, cpu, sql, redis_n = figures["tool"][phase]
        b_ms, b_cpu, _, b_redis = figures["bare"][phase]
        print(
            f"{phase:<8}{ms:>8.2f}{cpu:>8.2f}{sql:>6.1f}{redis_n:>7.1f}"
            f"{b_ms:>9.2f}{b_cpu:>9.2f}{b_redis:>7.1f}{ms / b_ms:>7.2f}{cpu / b_cpu:>7.2f}"
        )


if __name__ == "__main__":
    main()
