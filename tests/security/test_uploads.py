"""Damaged documents (issue item 7): a truncated or corrupt PDF or Word file is refused at
upload with a message saying so, by students' uploads, the REST API and the reference
material of the setup form, and nothing is stored; a PDF built to make the check slow (a
huge page tree or cross-reference stream) is refused without stalling the request."""

from __future__ import annotations

import io
import re
import struct
import time
import zipfile
import zlib

import pytest

from app.extensions import db
from app.models import Activity, Evaluation, Submission
from tests.api.conftest import make_tenant, submit
from tests.documents import docx_bytes, pdf_bytes
from tests.test_core_loop import open_activity, upload
from tests.test_deep_linking import post_form, start_setup, valid_form
from tests.test_uploads import encrypted_pdf, garbled_xref, noise, stored_files

DAMAGED_PDF = "This PDF is damaged or incomplete (it could not be opened)"
DAMAGED_DOCX = "This Word document is damaged and cannot be read"
PASSWORD = "This PDF is password-protected"
TOO_MANY_PAGES = "more than 2000 pages"


def docx_with(part: str, transform) -> bytes:
    """A real DOCX whose ``part`` is replaced by ``transform(part's bytes)``."""
    source = zipfile.ZipFile(io.BytesIO(docx_bytes()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = source.read(info.filename)
            target.writestr(info.filename, transform(data) if info.filename == part else data)
    return out.getvalue()


def docx_with_a_bad_checksum() -> bytes:
    """A DOCX whose styles part (stored uncompressed) has one byte changed after its CRC was
    computed: well-formed XML that is not what was written."""
    source = zipfile.ZipFile(io.BytesIO(docx_bytes()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            stored = info.filename == "word/styles.xml"
            compression = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
            target.writestr(info.filename, source.read(info.filename), compression)
    data = out.getvalue()
    at = data.index(b"<w:style ")
    return data[:at] + b"<w:stylx " + data[at + len(b"<w:style ") :]


def many_pages(count: int) -> bytes:
    """A valid PDF of ``count`` empty pages (about 100 bytes each)."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>"
        % (b" ".join(b"%d 0 R" % (n + 3) for n in range(count)), count),
        *[b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"] * count,
    ]
    return _assemble(objects)


def xref_stream_bomb(entries: int) -> bytes:
    """A 20 KB PDF whose compressed cross-reference stream declares ``entries`` objects."""
    body = io.BytesIO()
    body.write(b"%PDF-1.5\n")
    offsets = []
    for text in (
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
    ):
        offsets.append(body.tell())
        body.write(b"%d 0 obj\n%s\nendobj\n" % (len(offsets), text))
    rows = [struct.pack(">BIH", 0, 0, 65535)] + [struct.pack(">BIH", 1, o, 0) for o in offsets]
    rows += [rows[-1]] * (entries - len(rows))
    stream = zlib.compress(b"".join(rows), 9)
    start = body.tell()
    body.write(
        b"%d 0 obj\n<< /Type /XRef /Size %d /W [1 4 2] /Root 1 0 R /Length %d "
        b"/Filter /FlateDecode >>\nstream\n" % (entries, entries + 1, len(stream))
    )
    body.write(stream + b"\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n" % start)
    return body.getvalue()


def _assemble(objects: list[bytes]) -> bytes:
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, text in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, text))
    start = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.write(b"".join(b"%010d 00000 n \n" % offset for offset in offsets))
    out.write(
        b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, start)
    )
    return out.getvalue()


PDF = pdf_bytes(pages=3)
DAMAGED = {
    "pdf-half": ("essay.pdf", PDF[: len(PDF) // 2], DAMAGED_PDF),
    "pdf-without-trailer": ("essay.pdf", PDF[: PDF.rindex(b"trailer")], DAMAGED_PDF),
    "pdf-minus-10-bytes": ("essay.pdf", PDF[:-10], DAMAGED_PDF),
    "pdf-garbled-xref": ("essay.pdf", garbled_xref(PDF, keep_trailer=False), DAMAGED_PDF),
    "pdf-header-then-noise": ("essay.pdf", b"%PDF-1.7\n" + noise(20_000), DAMAGED_PDF),
    "pdf-with-password": ("essay.pdf", encrypted_pdf("secret"), PASSWORD),
    "docx-half": ("essay.docx", docx_bytes()[: len(docx_bytes()) // 2], DAMAGED_DOCX),
    "docx-broken-xml": (
        "essay.docx",
        docx_with("word/document.xml", lambda xml: xml[: len(xml) // 2]),
        DAMAGED_DOCX,
    ),
    "docx-bad-checksum": ("essay.docx", docx_with_a_bad_checksum(), DAMAGED_DOCX),
}


def the_row_and_file(app) -> tuple[list, list]:
    db.session.expire_all()
    rows = [(s.id, s.original_filename, s.sha256) for s in db.session.query(Submission)]
    return rows, sorted(stored_files(app))


@pytest.mark.parametrize("case", DAMAGED, ids=DAMAGED)
def test_a_student_upload_of_a_damaged_document_is_refused(app, browser, platform, live_tool, case):
    filename, data, message = DAMAGED[case]
    page = open_activity(browser, platform, live_tool)
    assert upload(browser, page, "essay.pdf", pdf_bytes()).status_code == 303
    before = the_row_and_file(app)
    response = upload(browser, page, filename, data)
    assert response.status_code == 400
    assert message in response.text and 'role="alert"' in response.text
    assert the_row_and_file(app) == before  # no new row or file; the first one untouched


@pytest.mark.parametrize("case", DAMAGED, ids=DAMAGED)
def test_an_api_submission_of_a_damaged_document_is_refused(app, live_tool, case):
    filename, data, message = DAMAGED[case]
    tenant = make_tenant(live_tool, "school-a")
    with tenant.client:
        assert submit(tenant.client, "essay.pdf", pdf_bytes()).status_code == 202
        before = sorted(stored_files(app))
        response = submit(tenant.client, filename, data)
    assert response.status_code == 422
    assert message in response.json()["error"]["message"]
    assert db.session.query(Evaluation).count() == 1
    assert sorted(stored_files(app)) == before


def test_a_huge_page_tree_is_refused_by_counting_only_part_of_it(app, browser, platform, live_tool):
    page = open_activity(browser, platform, live_tool)
    response = upload(browser, page, "essay.pdf", many_pages(100_000))
    assert response.status_code == 400 and TOO_MANY_PAGES in response.text
    assert stored_files(app) == []


def test_a_cross_reference_bomb_does_not_stall_the_upload(app, browser, platform, live_tool):
    bomb = xref_stream_bomb(1_500_000)  # with pypdf's default limits: 6 s to read
    assert len(bomb) < 100_000
    page = open_activity(browser, platform, live_tool)
    started = time.monotonic()
    response = upload(browser, page, "essay.pdf", bomb)
    assert time.monotonic() - started < 5  # generous: the check stops after 200 000 entries
    assert response.status_code == 400 and DAMAGED_PDF in response.text
    assert stored_files(app) == []


@pytest.mark.parametrize(
    ("data", "message"),
    [(PDF[: len(PDF) // 2], DAMAGED_PDF), (many_pages(5_000), TOO_MANY_PAGES)],
    ids=["truncated", "too-many-pages"],
)
def test_damaged_reference_material_is_refused_by_the_same_check(
    browser, platform, live_tool, data, message
):
    page = start_setup(browser, platform, live_tool)
    form = valid_form(plugin="pipeline")
    response = post_form(browser, page, form, files={"reference_file": ("notes.pdf", data)})
    assert response.status_code == 400
    assert re.search(r'id="reference-error"[^>]*>[^<]*' + re.escape(message), response.text)
    assert db.session.query(Activity).one().reference_text == ""
