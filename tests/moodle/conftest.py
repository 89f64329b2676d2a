"""Fixtures for the tests against a real Moodle (see tests/moodle/__init__.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.fakes.http import BackgroundServer
from tests.fakes.llm_server import FakeLLM
from tests.moodle.flows import Tool, activate, register
from tests.moodle.site import ENVIRONMENT, Moodle, Person
from tests.test_reliability import stack  # noqa: F401  (the fixture: Redis and workers)

HOW_TO_RUN = (
    f"no Moodle is running for these tests ({ENVIRONMENT} is unset): "
    "bash scripts/moodle.sh test  (starts Moodle 4.5, runs tests/moodle, stops it; "
    "scripts/test.sh always does)"
)


@pytest.fixture(scope="session")
def moodle() -> Moodle:
    site = Moodle.from_environment()
    if site is None:
        if os.environ.get("CI"):  # scripts/test.sh starts one: a skip there hides a failure
            raise RuntimeError(f"CI must run the Moodle tests: {HOW_TO_RUN}")
        pytest.skip(HOW_TO_RUN)
    return site


def _signed_in(moodle: Moodle, role: str) -> Iterator[Person]:
    person = moodle.sign_in(getattr(moodle, role))
    yield person
    person.close()


@pytest.fixture(scope="session")
def admin(moodle) -> Iterator[Person]:
    yield from _signed_in(moodle, "admin")


@pytest.fixture(scope="session")
def teacher(moodle) -> Iterator[Person]:
    yield from _signed_in(moodle, "teacher")


@pytest.fixture(scope="session")
def student(moodle) -> Iterator[Person]:
    yield from _signed_in(moodle, "student")


@pytest.fixture(scope="session")
def student2(moodle) -> Iterator[Person]:
    yield from _signed_in(moodle, "student2")


@pytest.fixture
def tool(moodle, app, stack) -> Iterator[Tool]:  # noqa: F811  (stack: the imported fixture)
    """The tool over HTTP as ``http://localhost:<port>`` (another site than Moodle's
    ``127.0.0.1``, so its frame is third-party as in a school), with one worker process,
    its own Redis and the fake model."""
    yield from _served(moodle, app, stack, "localhost")


@pytest.fixture
def same_site_tool(moodle, app, stack) -> Iterator[Tool]:  # noqa: F811
    """The tool as ``http://127.0.0.1:<port>``: the same site as Moodle, as a school that
    serves it under its own domain (``evaluaitor.school.edu`` beside ``moodle.school.edu``),
    so a browser keeps the tool's cookies in Moodle's frame."""
    yield from _served(moodle, app, stack, "127.0.0.1")


def _served(moodle: Moodle, app, stack, host: str) -> Iterator[Tool]:  # noqa: F811
    app.config["EVALUAITOR_REGISTRATION_AUTO_ACTIVATE"] = 1
    with FakeLLM() as llm:
        app.config["EVALUAITOR_LLM_BASE_URL"] = llm.url
        server = BackgroundServer(app, "evaluaitor")
        port = server.start()
        stack.start_worker()
        try:
            yield Tool(f"http://{host}:{port}", app, stack, llm, moodle)
        finally:
            server.stop()


@pytest.fixture
def type_id(tool, admin) -> int:
    """The tool registered with Moodle by Dynamic Registration and activated there."""
    found = register(admin, tool)
    activate(admin, found)
    return found
