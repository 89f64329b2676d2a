"""``evaluaitor grade``: local files in, one JSON line per file out, as the worker would grade."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from flask.cli import ScriptInfo

from app import create_app
from app.cli import cli
from tests.documents import ESSAY, pdf_bytes


@pytest.fixture
def run(tmp_path, fake_llm):
    """Invoke the command with an app that has no database or Redis behind it."""
    app = create_app(
        {
            "EVALUAITOR_LLM_BASE_URL": fake_llm.url,
            "EVALUAITOR_LLM_MODEL": "fake-model",
            "EVALUAITOR_LLM_BACKOFF_BASE": 0.01,
            "EVALUAITOR_LLM_MAX_RETRIES": 1,
            # Four in flight: the fake on 127.0.0.1 would otherwise get one, as a local server.
            "EVALUAITOR_LLM_MAX_IN_FLIGHT": 4,
            "EVALUAITOR_LLM_CACHE_DIR": str(tmp_path / "cache"),
            "DATABASE_URL": f"sqlite:///{tmp_path / 'never-created.db'}",
        }
    )

    def invoke(*args: str):
        result = CliRunner().invoke(cli, list(args), obj=ScriptInfo(create_app=lambda: app))
        lines = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
        return result, lines

    yield invoke
    assert not (tmp_path / "never-created.db").exists()


def test_grades_each_file_and_prints_json_lines(run, fake_llm, tmp_path):
    fake_llm.set_default("Well argued.\n\nFinal score: 8/10")
    (tmp_path / "a.txt").write_text(ESSAY)
    (tmp_path / "b.pdf").write_bytes(pdf_bytes())
    (tmp_path / "broken.pdf").write_bytes(pdf_bytes()[:500])
    result, lines = run(
        "grade", str(tmp_path / "a.txt"), str(tmp_path / "b.pdf"), str(tmp_path / "broken.pdf"),
        "--instructions", "Explain photosynthesis.",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert [line["status"] for line in lines] == ["graded", "graded", "failed"]
    first = lines[0]
    assert first["file"].endswith("a.txt")
    assert (first["score"], first["scale"], first["normalized"]) == (8, 10, 0.8)
    assert set(first) >= {"flags", "criteria", "feedback", "error"}
    assert "damaged" in lines[2]["error"]
    assert "Explain photosynthesis." in fake_llm.requests[0]["messages"][1]["content"]


def test_files_are_graded_concurrently(run, fake_llm, tmp_path):
    def slow(_body):
        time.sleep(0.4)
        return "Final score: 6/10"

    fake_llm.set_default(slow)
    paths = []
    for i in range(4):
        (tmp_path / f"s{i}.txt").write_text(f"{ESSAY} Student {i}.")
        paths.append(str(tmp_path / f"s{i}.txt"))
    started = time.monotonic()
    result, lines = run("grade", *paths, "--jobs", "4")
    assert [line["score"] for line in lines] == [6, 6, 6, 6]
    assert time.monotonic() - started < 4 * 0.4


def test_regrading_unchanged_text_costs_no_call_unless_forced(run, fake_llm, tmp_path):
    fake_llm.set_default("Final score: 5/10")
    (tmp_path / "a.txt").write_text(ESSAY)
    run("grade", str(tmp_path / "a.txt"))
    _, lines = run("grade", str(tmp_path / "a.txt"))
    assert len(fake_llm.requests) == 1
    assert lines[0]["provenance"]["cache_hits"] == 1
    run("grade", str(tmp_path / "a.txt"), "--force")
    assert len(fake_llm.requests) == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--plugin", "nope"], "no grading strategy named 'nope'"),
        (["--params", "{not json"], "--params is not valid JSON"),
        (["--params", '{"colour": "red"}'], "colour: is not a setting"),
    ],
)
def test_bad_options_are_usage_errors(run, tmp_path, args, message):
    (tmp_path / "a.txt").write_text(ESSAY)
    result, _ = run("grade", str(tmp_path / "a.txt"), *args)
    assert result.exit_code == 2
    assert message in result.output


def test_without_an_llm_each_file_says_so(tmp_path):
    app = create_app({"EVALUAITOR_LLM_BASE_URL": None})
    (tmp_path / "a.txt").write_text(ESSAY)
    result = CliRunner().invoke(
        cli, ["grade", str(tmp_path / "a.txt")], obj=ScriptInfo(create_app=lambda: app)
    )
    line = json.loads(result.output.strip().splitlines()[-1])
    assert line["status"] == "failed" and "No language model is configured" in line["error"]


def test_plugins_lists_strategies_with_their_parameters(run):
    result, _ = run("plugins")
    described = {plugin["name"]: plugin for plugin in json.loads(result.output)}
    assert "rubric_eval" in described
    schema = described["rubric_eval"]["parameters"]
    assert schema["properties"]["max_chars"]["default"] == 60000


def test_ensemble_prints_policy_flags_even_without_a_model(tmp_path):
    java = Path(__file__).parent.parent / "policy" / "java" / "hardcoded_literal.java"
    target = tmp_path / "SumCalculator.java"
    target.write_text(java.read_text())
    app = create_app({"EVALUAITOR_LLM_BASE_URL": None})
    result = CliRunner().invoke(
        cli,
        [
            "grade",
            str(target),
            "--plugin",
            "ensemble",
            "--params",
            '{"policy": "sumcalc", "models": ["g", "e"]}',
        ],
        obj=ScriptInfo(create_app=lambda: app),
    )
    line = json.loads(result.output.strip().splitlines()[-1])
    assert {k: v for k, v in line["flags"][0].items() if k in ("code", "cap")} == {
        "code": "HardcodedOnly",
        "cap": 25,
    }
    assert "Model grading was skipped" in line["feedback"]
