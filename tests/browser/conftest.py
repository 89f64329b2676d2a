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
from axe_playwright_python.base import AXE_SCRIPT  # noqa: E402  (after the skip above)

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


#: The impacts that fail a page: axe-core's "serious" and "critical" (WCAG A/AA failures that
#: block or seriously hinder a person using a screen reader, a keyboard or low vision).
BLOCKING = frozenset({"serious", "critical"})


def axe_violations(frame: sync_api.Page | sync_api.Frame) -> list[dict]:
    """axe-core's violations on one document (a page or one frame of it: each frame is checked
    in its own origin, since the tool's frame is cross-site). The engine is the axe.min.js that
    axe-playwright-python ships, so the tests need nothing downloaded at run time."""
    frame.evaluate(AXE_SCRIPT)
    # iframes: false: frames are checked on their own; axe would otherwise wait for each.
    results = frame.evaluate(
        "axe.run(document, {resultTypes: ['violations'], iframes: false, "
        "runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', "
        "'wcag22aa', 'best-practice']}})"
    )
    return results["violations"]


def describe_violations(violations: list[dict]) -> str:
    """Each violation with its rule, impact, help and every node (selector, HTML, why)."""
    lines = []
    for violation in violations:
        lines.append(
            f"  {violation['id']} ({violation['impact']}): {violation['help']} "
            f"[{violation['helpUrl']}]"
        )
        for node in violation["nodes"]:
            lines.append(f"    at {' '.join(map(str, node['target']))}: {node['html'][:200]}")
            summary = (node.get("failureSummary") or "").replace("\n", " / ")
            if summary:
                lines.append(f"      {summary}")
    return "\n".join(lines)
