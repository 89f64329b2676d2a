"""Judge a submission: compile once, run every teacher test in the sandbox, score by weight.

A test passes or fails as a whole; partial credit is the weighted share of passed tests.
"""

from __future__ import annotations

import math
import shutil
import signal
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Literal

from app.catalogue import N_
from app.judge.languages import (
    BUILD,
    Language,
    UnsupportedLanguage,
    detect_language,
    sources_for,
)
from app.judge.sandbox import MIB, Limits, SandboxResult, SandboxUnavailable, run_sandboxed

Status = Literal[
    "passed",
    "wrong_answer",
    "compile_error",
    "runtime_error",
    "timeout",
    "memory_limit",
    "output_limit",
]

EXCERPT_CHARS = 2000
COMPILE_LIMITS = Limits(
    wall_seconds=60.0,
    cpu_seconds=60,
    memory_bytes=1024 * MIB,
    max_processes=64,
    output_bytes=256 * 1024,
    file_bytes=64 * MIB,
    open_files=256,
)


@dataclass(frozen=True)
class Compare:
    """How output is compared with the expected text.

    trim: ignore trailing spaces on each line and blank lines at the start and end.
    whitespace: any run of whitespace (newlines included) counts as one separator.
    case_insensitive: compare case-folded text.
    float_tolerance: numbers may differ by this much (absolute, or relative for large values);
    implies token-wise comparison, as with whitespace.
    Line endings (CRLF/CR) are always normalised to LF.
    """

    trim: bool = True
    whitespace: bool = False
    case_insensitive: bool = False
    float_tolerance: float | None = None


@dataclass(frozen=True)
class TestCase:
    """One teacher test: stdin in, expected stdout out. expected_stdout=None means the test
    passes when the program exits 0 (teacher's own unit-test harness)."""

    __test__ = False  # not a pytest class

    name: str
    stdin: str = ""
    expected_stdout: str | None = ""
    weight: float = 1.0
    compare: Compare = field(default_factory=Compare)


@dataclass(frozen=True)
class TestResult:
    __test__ = False

    name: str
    status: Status
    weight: float
    score: float
    time_seconds: float
    stdout: str = ""
    stderr: str = ""
    message: str = ""


@dataclass(frozen=True)
class JudgeReport:
    """The whole verdict; compile_output holds the compiler's (trimmed) messages."""

    language: str
    compiled: bool
    compile_output: str
    tests: list[TestResult]
    score: float
    max_score: float

    @property
    def fraction(self) -> float:
        return self.score / self.max_score if self.max_score else 0.0

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "fraction": self.fraction}


def _lines(text: str, options: Compare) -> list[str]:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if options.case_insensitive:
        text = text.casefold()
    if options.whitespace or options.float_tolerance is not None:
        return text.split()
    lines = text.split("\n")
    if options.trim:
        lines = [line.rstrip() for line in lines]
        while lines and not lines[-1]:
            lines.pop()
        while lines and not lines[0]:
            lines.pop(0)
    return lines


def _same_token(got: str, want: str, tolerance: float | None) -> bool:
    if got == want:
        return True
    if tolerance is None:
        return False
    try:
        a, b = float(got), float(want)
    except ValueError:
        return False
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)


def outputs_match(got: str, expected: str, options: Compare) -> bool:
    """Compare program output with the expected text under the test's options."""
    a, b = _lines(got, options), _lines(expected, options)
    return len(a) == len(b) and all(
        _same_token(x, y, options.float_tolerance) for x, y in zip(a, b, strict=True)
    )


def _excerpt(data: bytes, tail: bool = False) -> str:
    text = data.decode("utf-8", errors="replace").replace("/sandbox/", "")
    if len(text) <= EXCERPT_CHARS:
        return text
    return "…" + text[-EXCERPT_CHARS:] if tail else text[:EXCERPT_CHARS] + "…"


def _write_sources(workdir: Path, files: Mapping[str, str | bytes]) -> None:
    """Write the submission under workdir, refusing names that would land elsewhere."""
    for name, content in files.items():
        rel = PurePosixPath(name)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts:
            raise ValueError(f"unsafe file name in submission: {name!r}")
        target = workdir.joinpath(*rel.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode() if isinstance(content, str) else content
        target.write_bytes(data)


def _classify(result: SandboxResult) -> tuple[Status | None, str]:
    """A non-None status when the run failed before its output could be compared."""
    if result.stopped == "timeout":
        return "timeout", "time limit exceeded"
    if result.stopped == "output_limit":
        return "output_limit", "output limit exceeded"
    if result.stopped == "memory":
        return "memory_limit", "memory limit exceeded"
    if result.stopped == "signal":
        assert result.signal is not None
        try:
            name = signal.Signals(result.signal).name
        except ValueError:
            name = str(result.signal)
        return "runtime_error", f"killed by signal {name}"
    if result.exit_code:
        return "runtime_error", f"exit status {result.exit_code}"
    return None, ""


def _run_test(
    lang: Language, entry: str, workdir: Path, test: TestCase, limits: Limits
) -> TestResult:
    run_limits = replace(limits, memory_bytes=limits.memory_bytes + lang.vm_overhead)
    result = run_sandboxed(
        lang.run(entry, limits.memory_bytes),
        workdir,
        stdin=test.stdin.encode(),
        limits=run_limits,
    )
    status, message = _classify(result)
    if status is None:
        stdout = result.stdout.decode("utf-8", errors="replace")
        if test.expected_stdout is None or outputs_match(
            stdout, test.expected_stdout, test.compare
        ):
            status = "passed"
        else:
            status, message = "wrong_answer", "output differs from the expected output"
    return TestResult(
        name=test.name,
        status=status,
        weight=test.weight,
        score=test.weight if status == "passed" else 0.0,
        time_seconds=round(result.wall_seconds, 3),
        stdout=_excerpt(result.stdout),
        stderr=_excerpt(result.stderr, tail=True),
        message=message,
    )


def _compile(lang: Language, workdir: Path, sources: list[str]) -> tuple[bool, str]:
    """Compile once for all tests; the compiler runs in the sandbox too (it reads hostile input)."""
    if lang.compile is None:
        return True, ""
    (workdir / BUILD).mkdir(exist_ok=True)
    limits = replace(
        COMPILE_LIMITS, memory_bytes=COMPILE_LIMITS.memory_bytes + lang.compile_vm_overhead
    )
    result = run_sandboxed(lang.compile(sources), workdir, limits=limits, writable=True)
    output = _excerpt(result.stdout + result.stderr, tail=False).strip()
    if result.stopped != "ok" or result.exit_code:
        status, message = _classify(result)
        reason = "" if result.exit_code else f"compiler stopped: {message}\n"
        return False, reason + output
    return True, output


class CompilerMissing(SandboxUnavailable):
    """This server has no toolchain for the language. Like a missing sandbox, it is the
    server's fault: the program must not be blamed with a compile error (inside the sandbox
    the missing command would read as one), and a check that needs the compiler says so."""

    user_message = N_(
        "The code judge cannot run: this server has no compiler or interpreter for this "
        "language. Ask the administrator to see docs/sandbox.md."
    )


@contextmanager
def _submission(source_files: Mapping[str, str | bytes]) -> Iterator[Path]:
    """A fresh work directory holding the submission, removed afterwards (reachable by the
    sandbox's uids: the default temporary directory, see docs/sandbox.md)."""
    workdir = Path(tempfile.mkdtemp(prefix="judge-"))
    try:
        _write_sources(workdir, source_files)
        yield workdir
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def compile_only(source_files: Mapping[str, str], language: str | None) -> tuple[bool, str]:
    """Compile a submission without running it, in the sandbox: ``(compiled, messages)``.

    The static checks use it when no teacher test made the judge compile; a language without
    a compile step (JavaScript is only syntax-checked) passes when its check does. Raises
    CompilerMissing when this server lacks the toolchain, SandboxUnavailable when it cannot
    sandbox, UnsupportedLanguage for files no language here reads.
    """
    lang, sources = _toolchain(source_files, language, need_sources=True)
    with _submission(source_files) as workdir:
        return _compile(lang, workdir, sources)


def _toolchain(
    source_files: Mapping[str, str | bytes], language: str | None, *, need_sources: bool = False
) -> tuple[Language, list[str]]:
    """The submission's language and its source files. UnsupportedLanguage when
    ``need_sources`` and there are none; CompilerMissing when this server has no toolchain
    for the language."""
    lang = detect_language(list(source_files), language)
    sources = sources_for(lang, list(source_files))
    if need_sources and not sources:
        raise UnsupportedLanguage(f"no {lang.name} source file among: {', '.join(source_files)}")
    if not lang.available():
        raise CompilerMissing(f"{lang.executable} is not installed on this server")
    return lang, sources


def judge(
    source_files: Mapping[str, str | bytes],
    language: str | None,
    tests: Sequence[TestCase],
    limits: Limits | None = None,
    *,
    entry: str | None = None,
) -> JudgeReport:
    """Compile and run a submission against tests, every step inside the sandbox.

    source_files maps relative names to contents (teacher harness files may be merged in);
    language is a name ("java", "python", …) or None to detect it by extension; entry overrides
    the entry point (main file, or Java main class). Raises SandboxUnavailable (CompilerMissing
    when only the language's toolchain is missing) rather than judge on a server that cannot.
    """
    limits = limits or Limits()
    lang, sources = _toolchain(source_files, language)
    with _submission(source_files) as workdir:
        texts = {
            name: (c if isinstance(c, str) else c.decode("utf-8", errors="replace"))
            for name, c in source_files.items()
            if name in sources
        }
        compiled, compile_output = _compile(lang, workdir, sources)
        entry = entry or lang.entry(texts)
        if compiled and entry is None:
            compiled, compile_output = False, "no entry point (e.g. no main method) was found"
        if not compiled or entry is None:
            results = [
                TestResult(t.name, "compile_error", t.weight, 0.0, 0.0, message=compile_output)
                for t in tests
            ]
        else:
            results = [_run_test(lang, entry, workdir, t, limits) for t in tests]
    return JudgeReport(
        language=lang.name,
        compiled=compiled,
        compile_output=compile_output,
        tests=results,
        score=sum(r.score for r in results),
        max_score=sum(t.weight for t in tests),
    )
