"""Browser tests: headless Chromium (Debian's package, driven by Playwright) against the tool
served over real HTTP and the practice platform on its own site.

The platform is served as ``http://localhost:<port>`` and the tool as
``http://127.0.0.1:<port>``: two sites, so the tool's frame is third-party exactly as in a
real LMS (two ports of one host would be the same site, and cookies would flow).
Skipped, with the reason, when Playwright or Chromium is missing
(``scripts/install-browser.sh`` installs Chromium).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_jobs
from tests.documents import pdf_bytes
from tests.test_practice import practice_platform  # noqa: F401  (the fixture)

sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")

CHROMIUM = os.environ.get("EVALUAITOR_CHROMIUM") or shutil.which("chromium")
if not CHROMIUM:
    if os.environ.get("CI"):  # CI installs it (scripts/setup.sh): a skip there hides a failure
        raise RuntimeError("Chromium is missing in CI: bash scripts/install-browser.sh")
    pytest.skip("Chromium is missing: bash scripts/install-browser.sh", allow_module_level=True)

#: A folder to save screenshots of the student, teacher and setup pages in (see README).
SCREENSHOT_DIR = os.environ.get("EVALUAITOR_SCREENSHOTS")
TIMEOUT_MS = 10_000
# Assertions wait as long as actions do (Playwright's own default for them is 5 s, which a
# page behind a loaded CI machine's other tests can miss).
sync_api.expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="session")
def chromium() -> Iterator[sync_api.Browser]:
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            # Block third-party cookies, as Chrome does in incognito and Safari always.
            args=["--test-third-party-cookie-phaseout", "--no-sandbox"],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(chromium) -> Iterator[sync_api.Page]:
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    yield page
    context.close()


def screenshot(page: sync_api.Page, name: str) -> None:
    """Save a screenshot when EVALUAITOR_SCREENSHOTS names a folder; otherwise nothing."""
    if SCREENSHOT_DIR:
        Path(SCREENSHOT_DIR).mkdir(parents=True, exist_ok=True)
        for frame in page.frames:  # show each page from its top, as a person first sees it
            frame.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(Path(SCREENSHOT_DIR) / f"{name}.png"), full_page=True)


def submit_pdf(page: sync_api.Page, link_id: str, title: str, folder: Path):
    """As the student, open ``link_id`` from the platform page, upload a PDF and let the
    worker grade it; returns the tool's frame once its status is final."""
    essay = folder / "essay.pdf"
    essay.write_bytes(pdf_bytes())
    page.get_by_test_id(f"student-{link_id}").click()
    tool = page.frame_locator("iframe[name=tool-frame]")
    sync_api.expect(tool.get_by_role("heading", level=1)).to_have_text(title)
    tool.get_by_label(re.compile("^File")).set_input_files(str(essay))
    tool.get_by_role("button", name="Submit").click()
    sync_api.expect(tool.get_by_text("Waiting in the grading queue")).to_be_visible()
    run_jobs()
    sync_api.expect(tool.locator("section.status[data-final=true]")).to_be_attached()
    return tool
