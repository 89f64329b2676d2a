"""Receiving upload bytes: written once, straight into the data directory, hashed and
size-checked while they arrive.

Werkzeug would otherwise spool each file to a temporary file of its own, which we would
then copy and hash a second time. :class:`UploadRequest` makes the form parser write into
an :class:`IncomingFile` instead; accepting the upload is then a hard link.
"""

from __future__ import annotations

import errno
import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, BinaryIO

from flask import Request, current_app

from app.errors import FileTooLarge, StorageFull

#: Bytes kept from the start of the file for content sniffing.
HEAD_BYTES = 64 * 1024
_COPY_CHUNK = 256 * 1024


class IncomingFile:
    """A file-like object for the form parser that hashes and counts what is written.

    Closing it removes its temporary name; keep the bytes by :meth:`keep_as` first.
    """

    def __init__(self, directory: Path, limit_bytes: int) -> None:
        with _storage_full_is_said():
            directory.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(dir=directory, prefix=".upload-")
        self.path = Path(name)
        self._file: IO[bytes] = os.fdopen(fd, "w+b")
        self._hash = hashlib.sha256()
        self._limit = limit_bytes
        self.size = 0
        self.head = b""

    @classmethod
    def copy_of(cls, stream: BinaryIO, directory: Path, limit_bytes: int) -> IncomingFile:
        """For streams that did not come through the form parser (e.g. tests, other APIs)."""
        incoming = cls(directory, limit_bytes)
        try:
            while chunk := stream.read(_COPY_CHUNK):
                incoming.write(chunk)
        except BaseException:
            incoming.close()
            raise
        return incoming

    @property
    def sha256(self) -> str:
        return self._hash.hexdigest()

    def write(self, data: bytes) -> int:
        self.size += len(data)
        if self.size > self._limit:
            self.close()
            raise FileTooLarge(self._limit / (1024 * 1024))
        if len(self.head) < HEAD_BYTES:
            self.head += data[: HEAD_BYTES - len(self.head)]
        self._hash.update(data)
        with self._storage_full_closes():
            return self._file.write(data)

    def keep_as(self, path: Path) -> None:
        """Give the bytes their final name (same file system: no copy)."""
        with self._storage_full_closes():
            self._file.flush()
            os.link(self.path, path)

    @contextmanager
    def _storage_full_closes(self) -> Iterator[None]:
        try:
            with _storage_full_is_said():
                yield
        except StorageFull:
            self.close()
            raise

    def close(self) -> None:
        try:
            self._file.close()
        except OSError:
            pass  # bytes still buffered could not be written (a full disk): they go anyway
        finally:
            self.path.unlink(missing_ok=True)

    # The rest of the file protocol the form parser and FileStorage use.
    def seek(self, offset: int, whence: int = 0) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()

    def read(self, size: int = -1) -> bytes:
        return self._file.read(size)

    def flush(self) -> None:
        with self._storage_full_closes():
            self._file.flush()


@contextmanager
def _storage_full_is_said() -> Iterator[None]:
    """A full disk or quota becomes :class:`StorageFull` (a clear message, HTTP 507)."""
    try:
        yield
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise StorageFull() from exc
        raise


def incoming_dir(data_dir: str) -> Path:
    return Path(data_dir) / ".incoming"


def limit_bytes() -> int:
    return int(current_app.config["EVALUAITOR_MAX_UPLOAD_MB"] * 1024 * 1024)


class UploadRequest(Request):
    """Flask's request, with uploaded files streamed into :class:`IncomingFile` objects.

    Every one is closed (its temporary name removed) when the request ends, also when the
    body was cut short or refused half-way.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._incoming: list[IncomingFile] = []

    def close(self) -> None:
        super().close()
        for incoming in self._incoming:
            incoming.close()

    def _get_file_stream(
        self,
        total_content_length: int | None,
        content_type: str | None,
        filename: str | None = None,
        content_length: int | None = None,
    ) -> IncomingFile:
        incoming = IncomingFile(
            incoming_dir(current_app.config["EVALUAITOR_DATA_DIR"]), limit_bytes()
        )
        self._incoming.append(incoming)
        return incoming
