"""Teacher test cases as activity settings (pydantic), turned into the judge's own types."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from app.judge.runner import Compare, TestCase
from app.judge.sandbox import MIB, Limits


class TestSpec(BaseModel):
    """One test: what the program reads, what it must print, how much it counts."""

    __test__ = False  # not a pytest class
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=100)
    stdin: str = Field("", max_length=1_000_000)
    expected_stdout: str | None = Field(
        "", max_length=1_000_000, description="None: passes when the program exits 0."
    )
    weight: float = Field(1.0, gt=0)
    trim: bool = True
    whitespace: bool = False
    case_insensitive: bool = False
    float_tolerance: float | None = Field(None, ge=0)

    def to_case(self) -> TestCase:
        compare = Compare(self.trim, self.whitespace, self.case_insensitive, self.float_tolerance)
        return TestCase(self.name, self.stdin, self.expected_stdout, self.weight, compare)


class LimitsSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    wall_seconds: float = Field(5.0, gt=0, le=60)
    memory_mb: int = Field(256, ge=32, le=2048)
    output_kb: int = Field(64, ge=1, le=4096)

    def to_limits(self) -> Limits:
        return Limits(
            wall_seconds=self.wall_seconds,
            cpu_seconds=max(1, int(self.wall_seconds)),
            memory_bytes=self.memory_mb * MIB,
            output_bytes=self.output_kb * 1024,
        )
