"""The "sumcalc" pack on sample Java programs, and the policy framework around it.

Each sample in ``java/`` starts with ``// expect: CODE ...`` (or ``none``); the header is a
comment, so it also shows that comments never count as code.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.policy import (
    DuplicatePack,
    Evidence,
    Finding,
    InvalidRuleConfig,
    Pack,
    PolicyContext,
    Rule,
    UnknownPack,
    check_pack,
    get_pack,
    register_pack,
    strictest_cap,
)
from app.policy.compiler import BY_JUDGE, NO_SANDBOX

SAMPLES = Path(__file__).parent / "java"


def expected(path: Path) -> set[str]:
    header = path.read_text().splitlines()[0]
    assert header.startswith("// expect:"), path.name
    return set(header.removeprefix("// expect:").split()) - {"none"}


def context(source: str, **kwargs: object) -> PolicyContext:
    return PolicyContext({"SumCalculator.java": source}, "java", **kwargs)  # type: ignore[arg-type]


def found(name: str, ctx: PolicyContext, **config) -> list[Finding]:
    """The pack's findings only (check_pack also says how compiling was checked)."""
    return check_pack(name, ctx, **config).findings


def codes(findings: list[Finding]) -> set[str]:
    return {f.code for f in findings}


@pytest.mark.parametrize("path", sorted(SAMPLES.glob("*.java")), ids=lambda p: p.stem)
def test_sample_programs(path: Path) -> None:
    findings = found("sumcalc", context(path.read_text()))
    assert codes(findings) == expected(path)
    for finding in findings:
        assert finding.evidence, finding.code
        for item in finding.evidence:
            assert item.source == "SumCalculator.java"
            assert item.line is not None and item.snippet
            if finding.code != "CompileError":  # the compiler's message, not the line
                assert item.snippet in path.read_text().splitlines()[item.line - 1]


def test_every_rule_has_positive_and_negative_samples() -> None:
    seen = set().union(*(expected(p) for p in SAMPLES.glob("*.java")))
    assert seen == {rule.code for rule in get_pack("sumcalc").rules}
    assert sum(1 for p in SAMPLES.glob("*.java") if not expected(p)) >= 15


def test_seed_caps_as_fractions() -> None:
    caps = {rule.code: rule.cap for rule in get_pack("sumcalc").rules}
    assert caps == {
        "HardcodedOnly": 0.25,
        "EvenOnly": 0.55,
        "OffByOne": 0.60,
        "PrintInLoop": 0.65,
        "CompileError": 0.25,
    }


def sample(name: str) -> str:
    return (SAMPLES / f"{name}.java").read_text()


def test_evidence_points_at_the_offending_line() -> None:
    [finding] = found("sumcalc", context(sample("offbyone_lt")))
    assert finding.evidence[0] == Evidence(
        "SumCalculator.java", 5, "for (int i = 1; i < 100; i++) {"
    )
    [finding] = found("sumcalc", context(sample("print_in_loop_brace_less")))
    assert finding.evidence == (Evidence("SumCalculator.java", 6, "System.out.println(sum += i);"),)


def test_compile_error_from_the_judge() -> None:
    findings = found("sumcalc", context(sample("correct_for"), compile_ok=False))
    assert codes(findings) == {"CompileError"}
    assert findings[0].evidence == (Evidence("code judge", None, "the program did not compile"),)


def test_judge_that_compiled_overrides_the_parser() -> None:
    findings = found("sumcalc", context(sample("compile_error"), compile_ok=True))
    assert "CompileError" not in codes(findings)


def test_syntax_error_evidence_has_a_line() -> None:
    [finding] = found("sumcalc", context(sample("compile_error")))
    assert finding.evidence[0].line == 4


needs_javac = pytest.mark.skipif(
    shutil.which("javac") is None or shutil.which("bwrap") is None,
    reason="compiling needs javac (default-jdk-headless) and bwrap (scripts/install-sandbox.sh)",
)
TYPE_ERROR = """public class SumCalculator {
    public static void main(String[] args) {
        int sum = "zero";
        for (int i = 1; i <= 100; i++) sum += i;
        System.out.println(sum);
    }
}
"""


@needs_javac
class TestCompiling:
    """Without the judge's verdict the pack compiles with the real javac, in the sandbox."""

    def test_type_error_is_a_compile_error(self) -> None:
        run = check_pack("sumcalc", context(TYPE_ERROR))
        [finding] = run.findings
        assert finding.code == "CompileError"
        assert finding.evidence == (
            Evidence(
                "SumCalculator.java", 3, "incompatible types: String cannot be converted to int"
            ),
        )
        assert run.compile_check == "compiled by the java compiler in the sandbox"

    def test_call_to_an_undefined_method_is_a_compile_error(self) -> None:
        source = sample("correct_for").replace('"Sum: " + sum', "total(sum)")
        [finding] = found("sumcalc", context(source))
        assert finding.code == "CompileError"
        assert finding.evidence[0].snippet.startswith("cannot find symbol")

    def test_program_that_compiles_is_not_flagged(self) -> None:
        run = check_pack("sumcalc", context(sample("correct_for")))
        assert run.findings == []
        assert run.compile_check.startswith("compiled by")

    def test_without_javac_only_syntax_is_checked_and_said(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("PATH", "/nonexistent")
        # Sources no other test compiled: a remembered verdict would hide the fallback.
        run = check_pack("sumcalc", context(TYPE_ERROR + "// no javac\n"))
        assert run.findings == []
        assert run.compile_check == "syntax only: javac is not installed on this server"
        [finding] = found("sumcalc", context(sample("compile_error") + "// no javac\n"))
        assert finding.evidence[0].line == 4
        assert finding.evidence[-1] == Evidence(
            "syntax check", None, "syntax only: javac is not installed on this server"
        )

    def test_without_a_sandbox_javac_is_not_run_unconfined(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        (tmp_path / "javac").symlink_to(shutil.which("javac") or "")
        monkeypatch.setenv("PATH", str(tmp_path))  # javac, but no bwrap
        run = check_pack("sumcalc", context(TYPE_ERROR + "// no sandbox\n"))
        assert run.findings == []
        assert run.compile_check == NO_SANDBOX

    def test_the_judges_verdict_is_used_as_given(self) -> None:
        run = check_pack("sumcalc", context(TYPE_ERROR, compile_ok=True))
        assert run.findings == [] and run.compile_check == BY_JUDGE


def test_computed_result_that_equals_the_literal_is_not_hardcoded() -> None:
    source = sample("correct_for").replace('"Sum: " + sum', "sum == 5050 ? 5050 : sum")
    assert found("sumcalc", context(source, program_output="5050\n")) == []


class TestProgramOutput:
    def test_confirms_hardcoded(self) -> None:
        [finding] = found("sumcalc", context(sample("hardcoded_literal"), program_output="5050"))
        assert finding.evidence[-1] == Evidence("program output", None, "the output shows 5050")

    def test_output_without_5050_cancels_hardcoded(self) -> None:
        findings = found("sumcalc", context(sample("hardcoded_literal"), program_output="x"))
        assert findings == []

    def test_confirms_even_only(self) -> None:
        ctx = context(sample("even_step"), program_output="2550\n")
        [finding] = found("sumcalc", ctx)
        assert finding.evidence[-1].snippet == "the output shows 2550, not 5050"

    def test_output_of_5050_cancels_off_by_one(self) -> None:
        ctx = context(sample("offbyone_lt"), program_output="Sum: 5050\n")
        assert found("sumcalc", ctx) == []

    def test_output_alone_flags_nothing(self) -> None:
        ctx = context(sample("correct_unknown_bound"), program_output="4950\n")
        assert found("sumcalc", ctx) == []

    def test_many_lines_confirm_print_in_loop(self) -> None:
        output = "\n".join(str(sum(range(1, k + 1))) for k in range(1, 101))
        [finding] = found("sumcalc", context(sample("print_in_loop_braced"), program_output=output))
        assert finding.evidence[-1].snippet == "the output has 100 lines"

    def test_single_line_cancels_print_in_loop(self) -> None:
        ctx = context(sample("print_in_loop_braced"), program_output="Running total: 5050\n")
        assert found("sumcalc", ctx) == []


def test_sources_other_than_java_are_ignored() -> None:
    ctx = PolicyContext({"README.txt": "System.out.println(5050);"}, "java")
    assert found("sumcalc", ctx) == []
    assert found("sumcalc", PolicyContext({"a.py": "print(5050)"}, "python")) == []


class TestFramework:
    def test_findings_sorted_by_cap(self) -> None:
        findings = found("sumcalc", context(sample("print_in_loop_off_by_one")))
        assert [f.code for f in findings] == ["OffByOne", "PrintInLoop"]
        assert [f.cap for f in findings] == sorted(f.cap for f in findings)
        assert strictest_cap(findings) == 0.60
        assert strictest_cap([]) is None

    def test_unknown_pack_is_a_named_error(self) -> None:
        with pytest.raises(UnknownPack, match="sumcalc"):
            found("no-such-pack", context(""))

    def test_activity_overrides_caps_and_disables_rules(self) -> None:
        ctx = context(sample("print_in_loop_off_by_one"))
        findings = found("sumcalc", ctx, caps={"PrintInLoop": 0.5}, disabled={"OffByOne"})
        assert [(f.code, f.cap) for f in findings] == [("PrintInLoop", 0.5)]

    @pytest.mark.parametrize("cap", [0, 25, -0.1, 1.5, True])
    def test_cap_must_be_a_fraction(self, cap: float) -> None:
        with pytest.raises(InvalidRuleConfig, match="fraction"):
            found("sumcalc", context(""), caps={"OffByOne": cap})

    def test_unknown_rule_in_config(self) -> None:
        with pytest.raises(InvalidRuleConfig, match="NoSuchRule"):
            found("sumcalc", context(""), disabled={"NoSuchRule"})

    def test_custom_pack_and_duplicate(self) -> None:
        rule = Rule(
            "Empty",
            "No code.",
            "Write some code.",
            0.1,
            lambda c: [] if any(c.sources.values()) else [Evidence("submission", None, "no files")],
        )
        pack = Pack("test-empty", "java", "test pack", (rule,))
        register_pack(pack)
        with pytest.raises(DuplicatePack):
            register_pack(pack)
        assert codes(found("test-empty", PolicyContext({}, "java"))) == {"Empty"}
        assert found("test-empty", context("class A {}")) == []


def test_program_of_several_files() -> None:
    sources = {
        "Main.java": "class Main { void run() { System.out.println(new SumCalculator().sum()); } }",
        "SumCalculator.java": (
            "class SumCalculator {\n"
            "  int sum() {\n"
            "    int t = 0;\n"
            "    for (int i = 2; i <= 100; i++) t += i;\n"
            "    return t;\n"
            "  }\n"
            "}\n"
        ),
    }
    [finding] = found("sumcalc", PolicyContext(sources, "java"))
    assert finding.code == "OffByOne"
    assert finding.evidence == (
        Evidence("SumCalculator.java", 4, "for (int i = 2; i <= 100; i++) t += i;"),
    )
