"""The judge end to end: every language, every verdict, partial credit, output comparison."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import app
from app.judge.languages import detect_language, java_main_class
from app.judge.runner import (
    Compare,
    CompilerMissing,
    JudgeReport,
    TestCase,
    compile_only,
    judge,
    outputs_match,
)
from app.judge.sandbox import MIB, Limits

SUM_TESTS = [
    TestCase("small", "3 4\n", "7\n", weight=2),
    TestCase("larger", "10 5", "15", weight=1),
    TestCase("negative", "-2 -3", "-5", weight=1),
]

SUM = {
    "python": {"main.py": "a, b = map(int, input().split())\nprint(a + b)\n"},
    "java": {
        "Main.java": "import java.util.*;\npublic class Main {\n"
        "  public static void main(String[] args) {\n"
        "    Scanner s = new Scanner(System.in);\n"
        "    System.out.println(s.nextInt() + s.nextInt());\n  }\n}\n"
    },
    "c": {
        "sum.c": '#include <stdio.h>\nint main(void) { int a, b; scanf("%d %d", &a, &b);'
        ' printf("%d\\n", a + b); return 0; }\n'
    },
    "cpp": {
        "sum.cpp": "#include <iostream>\nint main() { int a, b; std::cin >> a >> b;"
        " std::cout << a + b << std::endl; }\n"
    },
    "javascript": {
        "main.js": "const [a, b] = require('fs').readFileSync(0, 'utf8')"
        ".trim().split(/\\s+/).map(Number);\nconsole.log(a + b);\n"
    },
}

# Each adds wrongly for negative numbers, so one test of three (weight 1 of 4) fails.
OFF = {
    "python": {"main.py": "a, b = map(int, input().split())\nprint(abs(a) + abs(b))\n"},
    "java": {
        "Main.java": SUM["java"]["Main.java"].replace(
            "s.nextInt() + s.nextInt()", "Math.abs(s.nextInt()) + Math.abs(s.nextInt())"
        )
    },
    "c": {"sum.c": SUM["c"]["sum.c"].replace("a + b", "a < 0 ? -a - b : a + b")},
    "cpp": {"sum.cpp": SUM["cpp"]["sum.cpp"].replace("a + b", "(a < 0 ? -a - b : a + b)")},
    "javascript": {
        "main.js": SUM["javascript"]["main.js"].replace("a + b", "Math.abs(a) + Math.abs(b)")
    },
}

BROKEN = {
    "python": ({"main.py": "print(1\n"}, "was never closed"),
    "java": (
        {"Main.java": "public class Main { public static void main(String[] a) { int x = } }"},
        "illegal start of expression",
    ),
    "c": ({"sum.c": "int main(void) { return y; }"}, "undeclared"),
    "cpp": ({"sum.cpp": "int main() { return y; }"}, "not declared"),
    "javascript": ({"main.js": "console.log((1;\n"}, "SyntaxError"),
}

# Programs that parse but do not type-check: a string in an int, a call to a function that
# does not exist. (Python cannot tell before running: both are errors only at run time.)
TYPE_ERRORS = {
    ("java", "string in int"): (
        {"Main.java": 'class Main { public static void main(String[] a) { int sum = "zero"; } }'},
        "incompatible types",
    ),
    ("java", "undefined method"): (
        {"Main.java": "class Main { public static void main(String[] a) { total(5); } }"},
        "cannot find symbol",
    ),
    ("c", "string in int"): (
        {"sum.c": 'int main(void) { int sum = "zero"; return sum; }'},
        "int-conversion",
    ),
    ("c", "undefined function"): (
        {"sum.c": "int main(void) { return total(5); }"},
        "implicit-function-declaration",
    ),
    ("cpp", "string in int"): (
        {"sum.cpp": 'int main() { int sum = "zero"; return sum; }'},
        "invalid conversion",
    ),
    ("cpp", "undefined function"): (
        {"sum.cpp": "int main() { return total(5); }"},
        "was not declared",
    ),
}

CRASH = {
    "python": {"main.py": "raise ValueError('boom')\n"},
    "java": {
        "Main.java": "public class Main { public static void main(String[] a) {"
        ' throw new IllegalStateException("boom"); } }'
    },
    "c": {"sum.c": "#include <stdlib.h>\nint main(void) { abort(); }"},
    "cpp": {"sum.cpp": '#include <stdexcept>\nint main() { throw std::runtime_error("boom"); }'},
    "javascript": {"main.js": "throw new Error('boom');"},
}


def need(language: str) -> None:
    tool = detect_language([], language).executable
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed on this machine")


LANGS = ["python", "java", "c", "cpp", "javascript"]


@pytest.mark.parametrize("language", LANGS)
def test_correct_program_passes_every_test(language: str) -> None:
    need(language)
    report = judge(SUM[language], None, SUM_TESTS)
    assert report.language == language
    assert [t.status for t in report.tests] == ["passed"] * 3, report.tests
    assert (report.score, report.max_score, report.fraction) == (4, 4, 1.0)


@pytest.mark.parametrize("language", LANGS)
def test_wrong_answer_gets_partial_credit_by_weight(language: str) -> None:
    need(language)
    report = judge(OFF[language], language, SUM_TESTS)
    assert [t.status for t in report.tests] == ["passed", "passed", "wrong_answer"]
    assert report.tests[2].stdout.strip() == "5"
    assert (report.score, report.fraction) == (3, 0.75)


@pytest.mark.parametrize("language", sorted(BROKEN))
def test_compile_error_carries_the_compiler_message(language: str) -> None:
    need(language)
    files, message = BROKEN[language]
    report = judge(files, language, SUM_TESTS)
    assert not report.compiled
    assert message in report.compile_output
    assert "/sandbox/" not in report.compile_output
    assert {t.status for t in report.tests} == {"compile_error"}
    assert all(message in t.message for t in report.tests)
    assert report.score == 0


@pytest.mark.parametrize("case", sorted(TYPE_ERRORS), ids=" ".join)
def test_type_errors_are_compile_errors(case: tuple[str, str]) -> None:
    language = case[0]
    need(language)
    files, message = TYPE_ERRORS[case]
    compiled, output = compile_only(files, language)
    assert not compiled
    assert message in output
    report = judge(files, language, SUM_TESTS[:1])
    assert [t.status for t in report.tests] == ["compile_error"]


@pytest.mark.parametrize("language", LANGS)
def test_compile_only_accepts_a_correct_program(language: str) -> None:
    need(language)
    assert compile_only(SUM[language], language)[0]


def test_without_the_toolchain_nothing_is_judged(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's fault, not a compile error of the student's."""
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(CompilerMissing, match="javac is not installed"):
        compile_only(SUM["java"], "java")
    with pytest.raises(CompilerMissing, match="gcc is not installed"):
        judge(SUM["c"], "c", SUM_TESTS)


@pytest.mark.parametrize("language", LANGS)
def test_runtime_error_is_reported(language: str) -> None:
    need(language)
    report = judge(CRASH[language], language, SUM_TESTS[:1])
    [result] = report.tests
    assert result.status == "runtime_error"
    assert result.message
    if language != "c":
        assert "boom" in result.stderr


def test_java_without_main_is_a_compile_error() -> None:
    report = judge(
        {"Util.java": "public class Util { static int f() { return 1; } }"}, None, SUM_TESTS[:1]
    )
    assert report.tests[0].status == "compile_error"
    assert "no entry point" in report.compile_output


def test_java_main_class_detection() -> None:
    src = (
        "package edu.demo;\nclass Helper {}\n"
        "public class App {\n public static void main(String[] a) {}\n}"
    )
    assert java_main_class({"edu/demo/App.java": src, "X.java": "class X {}"}) == "edu.demo.App"
    assert java_main_class({"X.java": "class X {}"}) is None


def test_teacher_unit_test_harness_passes_on_exit_zero() -> None:
    files = {
        "solution.py": "def add(a, b):\n    return a + b\n",
        "test_main.py": "from solution import add\nassert add(2, 3) == 5\nassert add(-1, 1) == 0\n",
    }
    report = judge(files, "python", [TestCase("unit", expected_stdout=None)], entry="test_main.py")
    assert report.tests[0].status == "passed"
    files["solution.py"] = "def add(a, b):\n    return a - b\n"
    report = judge(files, "python", [TestCase("unit", expected_stdout=None)], entry="test_main.py")
    assert report.tests[0].status == "runtime_error"
    assert "AssertionError" in report.tests[0].stderr


def test_unsafe_file_names_are_refused() -> None:
    with pytest.raises(ValueError, match="unsafe"):
        judge({"../escape.py": "print(1)"}, "python", SUM_TESTS)


# Escape attempts through the judge: each ends as a clear per-test verdict.

QUICK = Limits(wall_seconds=3, cpu_seconds=2, memory_bytes=256 * MIB, output_bytes=32_768)


def verdict(files: dict[str, str], language: str | None = None) -> JudgeReport:
    return judge(files, language, [TestCase("probe", "", "secret")], QUICK)


def test_infinite_loop_is_a_timeout() -> None:
    assert verdict({"main.py": "while True:\n    pass\n"}).tests[0].status == "timeout"


def test_python_fork_bomb_is_contained() -> None:
    code = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    assert verdict({"main.py": code}).tests[0].status == "timeout"


def test_c_fork_bomb_is_contained() -> None:
    report = verdict({"bomb.c": "#include <unistd.h>\nint main(void) { for (;;) fork(); }"})
    assert report.tests[0].status == "timeout"


def test_memory_hog_is_a_memory_limit() -> None:
    report = verdict({"main.py": "hog = []\nwhile True:\n    hog.append(bytearray(10**7))\n"})
    assert report.tests[0].status == "memory_limit"


def test_java_memory_hog_is_a_memory_limit() -> None:
    code = (
        "import java.util.*;\npublic class Main { public static void main(String[] a) {"
        " List<long[]> hog = new ArrayList<>(); while (true) hog.add(new long[1 << 20]); } }"
    )
    assert verdict({"Main.java": code}).tests[0].status == "memory_limit"


def test_huge_output_is_an_output_limit() -> None:
    report = verdict({"main.c": '#include <stdio.h>\nint main(void) { for (;;) puts("spam"); }'})
    [result] = report.tests
    assert result.status == "output_limit"
    assert len(result.stdout) <= 2001


def test_reading_passwd_and_app_files_fails() -> None:
    app_file = Path(app.__file__).resolve()
    code = (
        f"for path in ('/etc/passwd', '/etc/shadow', {str(app_file)!r}):\n"
        "    try:\n        print(open(path).read())\n"
        "    except OSError as e:\n        print('denied', path, type(e).__name__)\n"
    )
    result = verdict({"main.py": code}).tests[0]
    assert result.status == "wrong_answer"
    assert "root:x:0:0" not in result.stdout
    assert "create_app" not in result.stdout
    assert result.stdout.count("denied") == 3


def test_network_connection_fails() -> None:
    code = (
        "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 80), timeout=2)\n"
        "    print('connected')\nexcept OSError as e:\n    print('blocked', e.errno)\n"
    )
    result = verdict({"main.py": code}).tests[0]
    assert result.stdout.startswith("blocked")


# Output comparison options.


@pytest.mark.parametrize(
    ("got", "want", "options", "same"),
    [
        ("7\n", "7", Compare(), True),
        ("7  \n\n", "\n7", Compare(), True),
        ("7  \n", "7", Compare(trim=False), False),
        ("a\r\nb\r\n", "a\nb\n", Compare(), True),
        ("1 2\n3", "1\n2 3", Compare(), False),
        ("1   2\n3", "1\n2 3", Compare(whitespace=True), True),
        ("Hello World", "hello world", Compare(), False),
        ("Hello World", "hello world", Compare(case_insensitive=True), True),
        ("3.14159", "3.1416", Compare(float_tolerance=1e-3), True),
        ("3.2", "3.1416", Compare(float_tolerance=1e-3), False),
        ("x= 1.0000001", "x= 1", Compare(float_tolerance=1e-6), True),
        ("x= 1.0", "y= 1.0", Compare(float_tolerance=1e-6), False),
        ("1e6", "1000000.5", Compare(float_tolerance=1e-6), True),
        ("nan", "nan", Compare(float_tolerance=0.1), True),
        ("1 2", "1 2 3", Compare(float_tolerance=0.1), False),
    ],
)
def test_output_comparison(got: str, want: str, options: Compare, same: bool) -> None:
    assert outputs_match(got, want, options) is same


def test_comparison_options_apply_in_the_judge() -> None:
    files = {"main.py": "print('The ANSWER is   3.14159')\n"}
    tests = [
        TestCase("strict", expected_stdout="the answer is 3.14"),
        TestCase(
            "lenient",
            expected_stdout="the answer is 3.14",
            weight=3,
            compare=Compare(case_insensitive=True, float_tolerance=0.01),
        ),
    ]
    report = judge(files, None, tests)
    assert [t.status for t in report.tests] == ["wrong_answer", "passed"]
    assert report.fraction == 0.75
