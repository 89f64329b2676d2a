"""Code-judge throughput for Java and Python, and the sandbox's overhead per run.

For each language: the same small program (read two numbers, print their sum) is compiled once,
then run N times bare (subprocess, no isolation) and N times through the sandbox with the same
command line; the difference of the means is the sandbox's cost per run. Then whole judge()
calls (compile + 3 tests, all sandboxed) are timed to give judged submissions per minute.

    .venv/bin/python bench/bench_judge.py [--runs 30] [--judges 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.judge.languages import BUILD, LANGUAGES  # noqa: E402
from app.judge.runner import TestCase, judge  # noqa: E402
from app.judge.sandbox import Limits, run_sandboxed  # noqa: E402

PROGRAMS = {
    "python": {"main.py": "a, b = map(int, input().split())\nprint(a + b)\n"},
    "java": {
        "Main.java": "import java.util.*;\npublic class Main {\n"
        "  public static void main(String[] args) {\n"
        "    Scanner s = new Scanner(System.in);\n"
        "    System.out.println(s.nextInt() + s.nextInt());\n  }\n}\n"
    },
}
TESTS = [TestCase("a", "1 2", "3"), TestCase("b", "10 20", "30"), TestCase("c", "-1 1", "0")]
LIMITS = Limits()
LIMITS_FOR = {
    "python": LIMITS,
    "java": Limits(memory_bytes=LIMITS.memory_bytes + LANGUAGES["java"].vm_overhead),
}
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"  # what the sandbox's PATH resolves


def prepare(language: str) -> tuple[Path, list[str]]:
    """Write and (bare) compile the program; return its directory and the run command."""
    lang = LANGUAGES[language]
    workdir = Path(tempfile.mkdtemp(prefix="bench-judge-"))
    files = PROGRAMS[language]
    for name, text in files.items():
        (workdir / name).write_text(text)
    (workdir / BUILD).mkdir()
    if lang.compile:
        subprocess.run(lang.compile(sorted(files)), cwd=workdir, check=True, capture_output=True)
    entry = lang.entry(files)
    assert entry is not None
    return workdir, lang.run(entry, LIMITS.memory_bytes)


def time_runs(runs: int, once) -> list[float]:  # noqa: ANN001
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        once()
        times.append(time.perf_counter() - started)
    return times


def bench_language(language: str, runs: int, judges: int) -> None:
    workdir, argv = prepare(language)
    # The same binary in both modes (the host PATH may put a shim such as pyenv's first).
    bare_argv = [shutil.which(argv[0], path=SANDBOX_PATH) or argv[0], *argv[1:]]
    try:

        def bare() -> None:
            done = subprocess.run(bare_argv, cwd=workdir, input=b"1 2", capture_output=True)
            assert done.stdout.strip() == b"3", done

        def sandboxed() -> None:
            done = run_sandboxed(argv, workdir, stdin=b"1 2", limits=LIMITS_FOR[language])
            assert done.stdout.strip() == b"3", done

        bare()  # warm the page cache for both
        sandboxed()
        bare_times = time_runs(runs, bare)
        box_times = time_runs(runs, sandboxed)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    def one_judge() -> None:
        report = judge(PROGRAMS[language], language, TESTS)
        assert report.fraction == 1.0, report

    judge_times = time_runs(judges, one_judge)
    bare_ms = statistics.mean(bare_times) * 1000
    box_ms = statistics.mean(box_times) * 1000
    judge_s = statistics.mean(judge_times)
    print(
        f"{language:7s} bare {bare_ms:7.1f} ms/run ({60_000 / bare_ms:6.0f}/min)  "
        f"sandboxed {box_ms:7.1f} ms/run ({60_000 / box_ms:6.0f}/min)  "
        f"overhead {box_ms - bare_ms:+6.1f} ms/run  |  "
        f"judge (compile + {len(TESTS)} tests) {judge_s * 1000:7.0f} ms "
        f"= {60 / judge_s:5.0f} submissions/min"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--judges", type=int, default=5)
    args = parser.parse_args()
    print(f"{args.runs} runs per mode, {args.judges} judged submissions per language, sequential")
    for language in ("python", "java"):
        bench_language(language, args.runs, args.judges)


if __name__ == "__main__":
    main()
