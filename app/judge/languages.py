"""Per-language compile and run commands, as seen inside the sandbox (sources at /sandbox).

Compiled artefacts go to /sandbox/build during the (writable) compile step; test runs then see
/sandbox read-only, so one compile serves every test of a submission.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

GIB = 1024**3
BUILD = "build"


class UnsupportedLanguage(ValueError):
    """Neither the language name nor the file extensions say how to run the submission."""


@dataclass(frozen=True)
class Language:
    """How to build and run one language.

    entry picks the entry point (file or Java class) from the sources; run(entry, heap_bytes)
    gives the command line. vm_overhead is added to the address-space limit: JVMs and V8
    reserve (not use) gigabytes of virtual memory at start-up, so their heap is capped by a
    runtime flag instead.
    """

    name: str
    extensions: tuple[str, ...]
    executable: str
    compile: Callable[[Sequence[str]], list[str]] | None
    entry: Callable[[Mapping[str, str]], str | None]
    run: Callable[[str, int], list[str]]
    vm_overhead: int = 0
    compile_vm_overhead: int = 0

    def available(self) -> bool:
        """Whether this machine has the toolchain (node is optional)."""
        return shutil.which(self.executable) is not None


def _main_file(preferred: str) -> Callable[[Mapping[str, str]], str | None]:
    """Entry point: the conventional file name when present, else the first source file."""

    def pick(sources: Mapping[str, str]) -> str | None:
        names = sorted(sources)
        for name in names:
            if PurePosixPath(name).name == preferred:
                return name
        return names[0] if names else None

    return pick


_PY_CHECK = """import sys, traceback
for f in sys.argv[1:]:
    try:
        compile(open(f, "rb").read(), f, "exec")
    except SyntaxError as e:
        sys.exit("".join(traceback.format_exception_only(e)))
"""


def _python_compile(files: Sequence[str]) -> list[str]:
    """Syntax check only, so a SyntaxError is a compile error rather than a failed test."""
    return ["python3", "-I", "-c", _PY_CHECK, *files]


def _python_run(entry: str, heap: int) -> list[str]:
    return ["python3", "-E", "-s", "-B", entry]  # not -I: it drops the script dir


_JVM_FLAGS = (
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:ReservedCodeCacheSize=32m",
    "-XX:CompressedClassSpaceSize=64m",
    "-XX:MaxMetaspaceSize=128m",
)


def _java_compile(files: Sequence[str]) -> list[str]:
    flags = [f"-J{flag}" for flag in (*_JVM_FLAGS, "-Xmx512m")]
    return ["javac", *flags, "-encoding", "UTF-8", "-nowarn", "-d", BUILD, *files]


_MAIN_METHOD = re.compile(r"\bstatic\s+(?:final\s+)?void\s+main\s*\(")
# Blanks within the line only: with \s* a run of blank lines was rescanned from each line start.
_PACKAGE = re.compile(r"^[^\S\n]*package\s+([\w.]+)\s*;", re.MULTILINE)
_CLASS = re.compile(r"\b(?:class|record|enum|interface)\s+(\w+)")


def java_main_class(sources: Mapping[str, str]) -> str | None:
    """Fully qualified name of the class declaring main (the last type declared before it)."""
    for text in sources.values():
        found = _MAIN_METHOD.search(text)
        if not found:
            continue
        classes = _CLASS.findall(text[: found.start()])
        if not classes:
            continue
        package = _PACKAGE.search(text)
        return f"{package.group(1)}.{classes[-1]}" if package else classes[-1]
    return None


def _java_run(main_class: str, heap: int) -> list[str]:
    """The JVM command for one test run; heap is capped by -Xmx, not by RLIMIT_AS."""
    heap_mib = max(16, heap // (1024 * 1024))
    return ["java", "-Xss8m", f"-Xmx{heap_mib}m", *_JVM_FLAGS, "-cp", BUILD, main_class]


# GCC 12 only warns about these C type errors (``int sum = "zero";``, a call to an undeclared
# function) and builds a program anyway; GCC 14 refuses them, as javac and g++ always do.
_C_TYPE_ERRORS = (
    "-Werror=implicit-function-declaration",
    "-Werror=implicit-int",
    "-Werror=int-conversion",
    "-Werror=incompatible-pointer-types",
)


def _c_compile(files: Sequence[str]) -> list[str]:
    flags = ["-O2", "-std=gnu17", *_C_TYPE_ERRORS, "-pipe"]
    return ["gcc", *flags, "-o", f"{BUILD}/main", *files, "-lm"]


def _cpp_compile(files: Sequence[str]) -> list[str]:
    return ["g++", "-O2", "-std=gnu++17", "-pipe", "-o", f"{BUILD}/main", *files, "-lm"]


def _native_entry(sources: Mapping[str, str]) -> str:
    return f"./{BUILD}/main"


def _native_run(entry: str, heap: int) -> list[str]:
    return [entry]


def _node_check(files: Sequence[str]) -> list[str]:
    """Syntax check of every file (``node --check`` takes one), so a SyntaxError is a compile
    error rather than a crash in each test. JavaScript has no types to check before running."""
    return ["sh", "-c", 'for f do node --check "$f" || exit 1; done', "node-check", *files]


def _node_run(entry: str, heap: int) -> list[str]:
    heap_mib = max(16, heap // (1024 * 1024))
    return ["node", f"--max-old-space-size={heap_mib}", entry]


LANGUAGES: dict[str, Language] = {
    lang.name: lang
    for lang in (
        Language(
            "python", (".py",), "python3", _python_compile, _main_file("main.py"), _python_run
        ),
        Language(
            "java",
            (".java",),
            "javac",
            _java_compile,
            java_main_class,
            _java_run,
            vm_overhead=2 * GIB,
            compile_vm_overhead=3 * GIB,
        ),
        Language("c", (".c",), "gcc", _c_compile, _native_entry, _native_run),
        Language("cpp", (".cpp", ".cc", ".cxx"), "g++", _cpp_compile, _native_entry, _native_run),
        Language(
            "javascript",
            (".js",),
            "node",
            _node_check,
            _main_file("main.js"),
            _node_run,
            vm_overhead=2 * GIB,
            compile_vm_overhead=2 * GIB,
        ),
    )
}


def detect_language(filenames: Sequence[str], name: str | None = None) -> Language:
    """Pick the language by name, else by the extensions of the submitted files."""
    if name:
        key = {"py": "python", "c++": "cpp", "js": "javascript", "node": "javascript"}.get(
            name.lower(), name.lower()
        )
        if key in LANGUAGES:
            return LANGUAGES[key]
        raise UnsupportedLanguage(f"unsupported language: {name}")
    for lang in LANGUAGES.values():
        if any(PurePosixPath(f).suffix.lower() in lang.extensions for f in filenames):
            return lang
    raise UnsupportedLanguage(f"no supported source file among: {', '.join(filenames)}")


def sources_for(lang: Language, filenames: Sequence[str]) -> list[str]:
    """The files this language compiles or runs (extras such as data files are left alone)."""
    return sorted(f for f in filenames if PurePosixPath(f).suffix.lower() in lang.extensions)
