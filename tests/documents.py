"""Real documents made on the fly for tests and benchmarks (reportlab PDFs, python-docx DOCX)."""

from __future__ import annotations

import io

from docx import Document
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

ESSAY = (
    "Photosynthesis converts light energy into chemical energy. Chlorophyll absorbs red and "
    "blue light, and the Calvin cycle fixes carbon dioxide into sugars."
)


def pdf_bytes(text: str = ESSAY, *, pages: int = 1, padding: int = 0) -> bytes:
    """A text PDF; ``padding`` adds that many bytes of incompressible image-free filler."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, pageCompression=0)
    for page in range(pages):
        y = 800
        for line in _wrap(f"{text} (page {page + 1})"):
            pdf.drawString(50, y, line)
            y -= 14
        pdf.showPage()
    pdf.save()
    data = buffer.getvalue()
    if padding:
        # A PDF comment before %%EOF-tail is ignored by readers: a cheap way to reach a size.
        filler = b"%" + b"x" * 78 + b"\n"
        data = data + filler * (padding // len(filler))
    return data


def docx_bytes(text: str = ESSAY) -> bytes:
    document = Document()
    document.add_heading("My essay", level=1)
    document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _wrap(text: str, width: int = 90) -> list[str]:
    words, lines, line = text.split(), [], ""
    for word in words:
        if len(line) + len(word) + 1 > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return [*lines, line]
