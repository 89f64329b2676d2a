"""Bad uploads get a clear message, and nothing already stored is lost."""

from __future__ import annotations

import html
import io
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from reportlab.lib import pdfencrypt
from reportlab.pdfgen import canvas

from app.extensions import db
from app.models import Submission
from tests.conftest import DATA, run_jobs
from tests.documents import ESSAY, pdf_bytes
from tests.test_core_loop import open_activity, status, upload

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 200
#: Noise that is the same on every run.
noise = random.Random(7).randbytes


def encrypted_pdf(user_password: str) -> bytes:
    buffer = io.BytesIO()
    encryption = pdfencrypt.StandardEncryption(user_password, ownerPassword="owner", canPrint=0)
    pdf = canvas.Canvas(buffer, encrypt=encryption)
    pdf.drawString(50, 800, ESSAY[:90])
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def garbled_xref(data: bytes, *, keep_trailer: bool) -> bytes:
    """The cross-reference table (and the trailer, unless kept) overwritten with random
    bytes of the same length; ``startxref`` and ``%%EOF`` stay."""
    start = data.rindex(b"\nxref\n") + 1
    end = data.rindex(b"trailer") if keep_trailer else data.rindex(b"startxref")
    return data[:start] + noise(end - start) + data[end:]


def stored_files(app) -> list[Path]:
    root = Path(app.config["EVALUAITOR_DATA_DIR"])
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


@pytest.mark.parametrize(
    ("filename", "data", "code", "message"),
    [
        ("empty.txt", b"", 400, "empty"),
        ("blank.md", b"   \n\n  ", 400, "empty"),
        ("program.exe", b"MZ\x90\x00" + b"\x00" * 100, 400, "not accepted"),
        ("picture.pdf", PNG, 400, "PNG"),
        ("binary.txt", bytes(range(256)) * 4, 400, "text"),
        ("", ESSAY.encode(), 400, "Choose a file"),
        ("broken.pdf", pdf_bytes()[:600], 400, "damaged or incomplete"),
        (
            "locked.pdf",
            (DATA / "pdf/libreoffice-writer-password.pdf").read_bytes(),
            400,
            "password",
        ),
    ],
    ids=[
        "empty",
        "whitespace",
        "exe",
        "png-as-pdf",
        "binary-as-text",
        "no-file",
        "truncated-pdf",
        "password-pdf",
    ],
)
def test_rejected_uploads_explain_why_and_store_nothing(
    app, browser, platform, live_tool, filename, data, code, message
):
    page = open_activity(browser, platform, live_tool)
    response = upload(browser, page, filename, data)
    assert response.status_code == code
    assert message.lower() in response.text.lower()
    assert 'role="alert"' in response.text  # announced to screen readers
    assert db.session.query(Submission).count() == 0
    assert stored_files(app) == []


@pytest.mark.parametrize(
    "data",
    [encrypted_pdf(""), garbled_xref(pdf_bytes(pages=3), keep_trailer=True)],
    ids=["owner-password-only", "xref-rebuilt-from-the-objects"],
)
def test_a_pdf_that_opens_is_accepted_and_graded(browser, platform, llm, live_tool, data):
    """Decisions: an encrypted PDF that opens with the empty password (printing or copying
    restricted) is read like any other, and so is one whose cross-reference table pypdf can
    rebuild from intact objects; what cannot be opened is refused."""
    llm.set_default("Final score: 8/10")
    page = open_activity(browser, platform, live_tool)
    assert upload(browser, page, "essay.pdf", data).status_code == 303
    run_jobs()
    assert status(browser, page)["status"] == "completed"


def test_file_over_the_size_limit_is_refused(app, browser, platform, live_tool):
    app.config["EVALUAITOR_MAX_UPLOAD_MB"] = 1
    page = open_activity(browser, platform, live_tool)
    response = upload(browser, page, "big.pdf", pdf_bytes(padding=1_200_000))
    assert response.status_code == 413
    assert "larger than the 1 MB limit" in response.text
    assert stored_files(app) == []


def test_request_over_the_server_cap_gets_the_same_message(app, browser, platform, live_tool):
    app.config["MAX_CONTENT_LENGTH"] = 200_000
    page = open_activity(browser, platform, live_tool)
    response = upload(browser, page, "big.pdf", pdf_bytes(padding=400_000))
    assert response.status_code == 413
    assert "MB limit" in response.text


def test_a_document_without_text_fails_with_a_message_and_no_grade(
    browser, platform, llm, live_tool
):
    """It opens, so it is accepted; that it has no text layer shows when it is read."""
    page = open_activity(browser, platform, live_tool)
    scan = (DATA / "pdf/imagemagick-images.pdf").read_bytes()
    assert upload(browser, page, "scan.pdf", scan).status_code == 303
    run_jobs()
    state = status(browser, page)
    assert state["status"] == "failed"
    assert "no text" in state["error"].lower()
    assert state["score"] is None
    assert llm.requests == []
    assert all(score.get("gradingProgress") != "FullyGraded" for score in platform.scores)


def test_a_bad_resubmission_leaves_the_earlier_one_intact(app, browser, platform, llm, live_tool):
    llm.reply("Final score: 8/10")
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "essay.txt", ESSAY.encode(), comment="first")
    run_jobs()
    before = stored_files(app)
    assert upload(browser, page, "bad.pdf", PNG).status_code == 400
    assert stored_files(app) == before
    assert status(browser, page)["status"] == "completed"
    stored = db.session.query(Submission).one()
    assert stored.comment == "first"
    assert (Path(app.config["EVALUAITOR_DATA_DIR"]) / stored.storage_path).read_bytes() == (
        ESSAY.encode()
    )


def test_an_upload_cut_off_half_way_leaves_no_file(app, browser, platform, live_tool):
    import socket
    import time
    from urllib.parse import urlsplit

    page = open_activity(browser, platform, live_tool)
    boundary = "x-boundary"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
        'filename="essay.pdf"\r\nContent-Type: application/pdf\r\n\r\n'
    ).encode() + pdf_bytes(padding=300_000)[:200_000]
    address = urlsplit(live_tool)
    with socket.create_connection((address.hostname, address.port)) as sock:
        sock.sendall(
            (
                f"POST {page}submissions HTTP/1.1\r\nHost: {address.netloc}\r\n"
                f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
                f"Content-Length: {len(head) + 100_000}\r\n\r\n"
            ).encode()
            + head
        )
        time.sleep(0.3)
        assert [p.parent.name for p in stored_files(app)] == [".incoming"]  # half-way there
    deadline = time.monotonic() + 5
    while stored_files(app) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stored_files(app) == []
    assert db.session.query(Submission).count() == 0


@pytest.fixture
def small_disk(app) -> Iterator[Path]:
    """The data directory on a file system of 512 KB (a real tmpfs), as a disk about to fill."""
    data = Path(app.config["EVALUAITOR_DATA_DIR"])
    data.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(data)], capture_output=True
    )
    if mounted.returncode:
        pytest.skip("mounting a small file system needs root (CAP_SYS_ADMIN)")
    try:
        yield data
    finally:
        subprocess.run(["umount", "--lazy", str(data)], check=True)


def test_a_full_disk_refuses_the_upload_and_loses_nothing(
    app, small_disk, browser, platform, llm, live_tool
):
    """The disk fills during an upload: the student is told, in plain words and HTTP 507,
    that nothing was stored; their earlier graded attempt and its file are untouched."""
    llm.reply("Final score: 8/10")
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "essay.txt", ESSAY.encode())
    run_jobs()
    before = stored_files(app)
    response = upload(browser, page, "long.txt", ("word " * 200_000).encode())  # 1 MB
    assert response.status_code == 507
    assert "no room to store your file" in html.unescape(response.text)
    assert stored_files(app) == before
    assert status(browser, page)["status"] == "completed"
    stored = db.session.query(Submission).one()
    assert (small_disk / stored.storage_path).read_bytes() == ESSAY.encode()
