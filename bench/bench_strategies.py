"""Model calls, tokens and wall time per submission for each grading strategy.

A 10-criterion rubric (and the matching 10-question criteria tree), one essay, and a fake
OpenAI-compatible server on 127.0.0.1 that answers every request after 500 ms with the reply
its prompt asks for (:func:`shaped_reply`): the same judgement of the essay in each strategy's
shape and scale, within the reply cap the strategy sends, which the fake enforces as a server
does. Runs each strategy through the same runner the worker uses.

Token counts are the ``usage`` the server reports (prompt, completion, total), summed over the
calls a grade made. The fake server's counts are an estimate (``estimate_tokens`` in
``tests/fakes/llm_server.py``: no tokenizer works offline here) and are labelled so. With
``EVALUAITOR_LLM_BASE_URL`` set (and ``EVALUAITOR_LLM_MODEL``, ``EVALUAITOR_LLM_API_KEY`` as the
server needs) the strategies ask that server instead, and its own counts are printed.

    .venv/bin/python bench/bench_strategies.py [--latency 0.5]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from werkzeug.wrappers import Response

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.grading import runner  # noqa: E402
from app.grading.base import GradingResult  # noqa: E402
from app.grading.rubric import parse_rubric  # noqa: E402
from app.llm import LLMClient, LLMSettings  # noqa: E402
from app.llm.client import client_from_config  # noqa: E402
from app.llm.session import LLMSession  # noqa: E402
from app.llm.slots import HOSTED_DEFAULT, ServerSlots  # noqa: E402
from tests.documents import ESSAY  # noqa: E402
from tests.fakes.llm_server import FakeLLM, error  # noqa: E402

CRITERIA = [
    {"name": f"Criterion {i}", "requirement": f"The essay covers point {i}.", "weight": w}
    for i, w in enumerate([10, 8, 8, 6, 6, 5, 5, 4, 3, -5], start=1)
]
TREE = {
    "base": {
        "children": [
            {"name": c["name"], "test": {"kind": "ai", "question": c["requirement"]}}
            for c in CRITERIA[:9]
        ]
    },
    "penalty": {
        "weight": 20,
        "children": [{"name": "No copying", "test": {"kind": "ai", "question": "Is it original?"}}],
    },
}
#: The judgement every fake reply gives, whichever strategy asks: the essay covers points 1-7
#: of the rubric, misses 8 and 9, and does not make the fault (criterion 10); it is original.
COVERED = range(1, 8)
#: Short exact quotes of the essay, one per point in turn, as the prompts ask for evidence.
QUOTES = (
    "light energy into chemical energy",
    "Chlorophyll absorbs red and blue light",
    "the Calvin cycle fixes carbon dioxide into sugars",
)


def _point(text: str) -> int | None:
    """The rubric point a criterion or question is about ("... covers point 3."), if any."""
    found = re.search(r"\bpoint (\d+)\b", text)
    return int(found.group(1)) if found else None


def _judgement(point: int | None, fault: bool) -> dict:
    """The criteria strategy's verdict shape for one criterion, with real text."""
    if fault:
        return {"verdict": "UNMET", "reason": "Nothing is copied or off topic.", "evidence": ""}
    if point in COVERED:
        quote = QUOTES[point % len(QUOTES)]
        return {"verdict": "MET", "reason": f"The essay explains point {point}.", "evidence": quote}
    return {"verdict": "UNMET", "reason": f"Point {point} is not mentioned.", "evidence": ""}


def _answer(question: str, kind: str) -> dict:
    """The criteria tree's answer shape for one question: 0..100, or pass true or false."""
    point = _point(question)
    yes = point is None or point in COVERED  # "Is it original?": yes
    reason = "Yes, the essay does this." if yes else "The essay does not mention it."
    quote = QUOTES[(point or 0) % len(QUOTES)] if yes else ""
    key, value = ("score", 100 if yes else 0) if kind == "score" else ("pass", yes)
    return {key: value, "reason": reason, "quote": quote}


def _rubric_rows(user: str) -> list[dict]:
    """One row per criterion of the rubric listing (app.grading.pipeline_prompts.rubric_listing)
    in ``user``, scored as :data:`COVERED` says; a fault that is absent costs nothing."""
    rows = []
    for name, kind, weight, requirement in re.findall(
        r"^- (.+?) \((requirement|fault)[^)]*weight (-?\d+)\): (.*)$", user, re.M
    ):
        judged = _judgement(_point(requirement), fault=kind == "fault")
        top = abs(int(weight))
        rows.append(
            {
                "name": name,
                "score": top if kind == "requirement" and judged["verdict"] == "MET" else 0,
                "max": top,
                "reason": judged["reason"],
                "evidence": judged["evidence"],
            }
        )
    return rows


def _share(rows: list[dict], maximum: float) -> float:
    """The grade the rows add up to on ``maximum``, as the rubric_eval/pipeline check it."""
    earned, possible = sum(r["score"] for r in rows), sum(r["max"] for r in rows)
    return round(earned / possible * maximum, 2)


def _categories(user: str) -> str:
    """The ensemble's run: each category of its listing ("Name (points), ...") at 80 % of its
    points, each with a quote of the essay, as the grader's prompt asks."""
    listing = re.search(r"^Rubric categories \(points\): (.*)$", user, re.M).group(1)
    points = {name: float(top) for name, top in re.findall(r"(.+?) \(([\d.]+)\)(?:, |$)", listing)}
    return json.dumps(
        {
            "categories": {name: top * 0.8 for name, top in points.items()},
            "evidence": {name: QUOTES[i % len(QUOTES)] for i, name in enumerate(points)},
            "issues": ["Points 8 and 9 are not covered."],
        }
    )


def shaped_reply(request: dict, broken_batch: bool) -> str | Response:
    """A reply shaped like what the request's prompt asks, chosen by a marker of that prompt,
    small enough for the cap each strategy sends, on the scale asked and with real text (the
    strategies refuse a copy of their format example, and a reply cut at its cap). A prompt it
    does not know gets an error, so a changed prompt shows as a failed row, not a wrong one."""
    system = request["messages"][0]["content"]
    user = request["messages"][1]["content"]
    if "You grade one student's program against a rubric" in system:  # an ensemble grader
        return _categories(user)
    if "one entry per question id" in system:  # criteria tree, every AI test at once
        if broken_batch:
            return "Sorry, I cannot answer in JSON."
        asked = re.findall(r"^- (q\d+) \((score|pass/fail), [^)]*\): (.*)$", user, re.M)
        return json.dumps({qid: _answer(question, kind) for qid, kind, question in asked})
    if "Answer the one question" in system:  # criteria tree, one AI test
        _, kind, question = re.search(
            r"^- (q\d+) \((score|pass/fail), [^)]*\): (.*)$", user, re.M
        ).groups()
        return json.dumps(_answer(question, kind))
    if "Judge this single criterion" in user:  # criteria per_criterion
        task = user.rsplit("Judge this single criterion", 1)[1]
        return json.dumps(_judgement(_point(task), fault=task.startswith(", a fault")))
    if "one key per criterion id" in user:  # criteria one_shot
        listing = re.findall(r"^- (C\d+) \((requirement|fault)\) .*?: (.*)$", user, re.M)
        return json.dumps(
            {cid: _judgement(_point(req), kind == "fault") for cid, kind, req in listing}
        )
    if "Weigh the whole submission" in user:  # criteria holistic, out of 100
        return json.dumps(
            {"score": 80, "explanation": "A clear, accurate essay; points 8 and 9 are missing."}
        )
    if "Final score: X/" in system:  # rubric_eval: Markdown feedback, then the score line
        maximum = float(re.search(r"^Maximum score: ([\d.]+)$", user, re.M).group(1))
        return (
            "The essay explains clearly how light energy becomes chemical energy and names the "
            "Calvin cycle.\n\nIt does not cover points 8 and 9: add a paragraph on each.\n\n"
            f"Final score: {_share(_rubric_rows(user), maximum):g}/{maximum:g}"
        )
    if "Summarise the submission" in system:  # pipeline summary
        return (
            "The essay says that photosynthesis turns light into chemical energy and names "
            "the Calvin cycle. It does not cover points 8 and 9."
        )
    if "a later step grades" in system:  # pipeline analysis
        return (
            'Points 1 to 7 are met: "light energy into chemical energy". Points 8 and 9 are '
            "missing. Nothing is copied."
        )
    if "Answer with a single JSON object and nothing else" in system:  # pipeline final grade
        maximum = float(re.search(r'"max_score": ([\d.]+);', system).group(1))
        rows = _rubric_rows(user)
        return json.dumps(
            {
                "score": _share(rows, maximum),
                "max_score": maximum,
                "feedback": "A clear, accurate essay. Add points 8 and 9 to complete it.",
                "criteria": rows,
            }
        )
    return error(500, f"the bench has no reply for this prompt: {system[:80]!r}")


STRATEGIES = [
    ("rubric_eval", {}, None),
    ("criteria per_criterion", {"mode": "per_criterion"}, "criteria"),
    ("criteria one_shot", {"mode": "one_shot"}, "criteria"),
    ("criteria holistic", {"mode": "holistic"}, "criteria"),
    ("pipeline (summary+analysis)", {"summary": True, "analysis": True}, "pipeline"),
    ("pipeline (final only)", {"summary": False, "analysis": False}, "pipeline"),
    ("criteria_tree (10 AI tests)", {"tree": TREE}, "criteria_tree"),
    ("criteria_tree, batch unusable", {"tree": TREE}, "criteria_tree"),
    ("ensemble (2 models x 2 runs)", {"models": ["bench-a", "bench-b"]}, "ensemble"),
]


def tokens(provenance: dict) -> list[str]:
    """Prompt, completion and total tokens of the calls made (not served from the cache),
    or "n/a" where the server reported no usage for some call."""
    calls = [c for c in provenance["calls"] if not c["cached"]]
    return [
        str(sum(c[key] for c in calls)) if all(c[key] is not None for c in calls) else "n/a"
        for key in ("prompt_tokens", "completion_tokens", "total_tokens")
    ]


@contextmanager
def fake_client(latency: float, broken_batch: list[bool]) -> Iterator[LLMClient]:
    """A client of a fake server that answers each prompt in its shape after ``latency``
    seconds; the tree's batched question unusably while ``broken_batch[0]`` is set."""

    def slow(request: dict) -> str | Response:
        time.sleep(latency)
        return shaped_reply(request, broken_batch[0])

    with FakeLLM() as fake:
        # It stands for a hosted service, which takes several calls at once (a server on
        # this machine would get one: app.llm.slots).
        slots = ServerSlots(fake.url, HOSTED_DEFAULT)
        client = LLMClient(LLMSettings(base_url=fake.url, model="bench"), slots=slots)
        fake.set_default(slow)
        with client:
            yield client


@contextmanager
def llm_client(latency: float, broken_batch: list[bool]) -> Iterator[tuple[LLMClient, str]]:
    """The real server named by the environment, else the fake one; with the source of the
    token counts, for the table's heading."""
    real = client_from_config(os.environ)
    if real is not None:
        with real:
            yield real, f"as reported by the server at {real.settings.base_url}"
        return
    with fake_client(latency, broken_batch) as client:
        yield client, "ESTIMATED by the fake server (no real tokenizer offline; see its docstring)"


def grade_all(
    client: LLMClient, broken_batch: list[bool], fake: bool
) -> Iterator[tuple[str, GradingResult, float]]:
    """Each strategy's label, result and wall time (ms) grading the essay; the row that
    breaks the tree's batched reply, and the ensemble's (two models by name), only with the
    fake server, the only one told to break it and that answers any model."""
    rubric = parse_rubric({"criteria": CRITERIA})
    reference = " ".join(f"Section {i}: {ESSAY}" for i in range(40))
    model = client.settings.model or "bench"
    for label, params, plugin in STRATEGIES:
        broken_batch[0] = "unusable" in label
        if (broken_batch[0] or plugin == "ensemble") and not fake:
            continue
        session = LLMSession(client, model=model, max_concurrency=10)
        job = runner.Job.for_text(
            plugin=plugin or label,
            params=params,
            text=ESSAY * 5,
            filename="essay.txt",
            kind="text",
            instructions="Explain photosynthesis.",
            max_score=10,
            rubric=rubric,
            reference=reference,
        )
        started = time.perf_counter()
        result = runner.grade(job, session, lambda *_: None)
        yield label, result, (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per fake reply")
    args = parser.parse_args()

    broken_batch = [False]
    with llm_client(args.latency, broken_batch) as (client, source):
        fake = source.startswith("ESTIMATED")
        model = client.settings.model or "bench"
        where = f"fake LLM answering in {args.latency * 1000:.0f} ms" if fake else model
        print(f"10-criterion rubric, {where}; tokens {source}\n")
        print(
            f"{'strategy':<30}{'calls':>6}{'prompt':>8}{'compl.':>8}{'total':>8}{'wall ms':>9}"
            "  result"
        )
        for label, result, wall in grade_all(client, broken_batch, fake):
            calls = result.provenance["llm_calls"]
            prompt, completion, total = tokens(result.provenance)
            score = "-" if result.score is None else f"{result.score:.2f}/{result.scale:g}"
            print(
                f"{label:<30}{calls:>6}{prompt:>8}{completion:>8}{total:>8}{wall:>9.0f}"
                f"  {result.outcome.value} {score}"
            )


if __name__ == "__main__":
    main()
