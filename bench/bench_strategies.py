"""Model calls, tokens and wall time per submission for each grading strategy.

A 10-criterion rubric (and the matching 10-question criteria tree), one essay, and a fake
OpenAI-compatible server on 127.0.0.1 that answers every request after 500 ms with a JSON
reply every strategy can read. Runs each strategy through the same runner the worker uses.

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
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.grading import runner  # noqa: E402
from app.grading.rubric import parse_rubric  # noqa: E402
from app.llm import LLMClient, LLMSettings  # noqa: E402
from app.llm.client import client_from_config  # noqa: E402
from app.llm.session import LLMSession  # noqa: E402
from app.llm.slots import HOSTED_DEFAULT, ServerSlots  # noqa: E402
from tests.documents import ESSAY  # noqa: E402
from tests.fakes.llm_server import FakeLLM  # noqa: E402

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
#: One reply that every strategy's parser accepts: each reads the keys it asked for.
ANSWERS = {
    "verdict": "MET",
    "reason": "The essay does this.",
    "evidence": "light energy",
    "score": 8,
    "max_score": 10,
    "explanation": "A solid essay.",
    "feedback": "Solid work.\n\nFinal score: 8/10",
    "criteria": [],
    **{f"C{i}": {"verdict": "MET", "reason": "Yes.", "evidence": ""} for i in range(1, 11)},
    **{f"q{i}": {"score": 80, "reason": "Mostly.", "quote": ""} for i in range(1, 11)},
}
REPLY = json.dumps(ANSWERS)
#: The holistic mode asks for a score out of 100 where the others ask out of 10.
HOLISTIC_REPLY = json.dumps(ANSWERS | {"score": 80})

STRATEGIES = [
    ("rubric_eval", {}, None),
    ("criteria per_criterion", {"mode": "per_criterion"}, "criteria"),
    ("criteria one_shot", {"mode": "one_shot"}, "criteria"),
    ("criteria holistic", {"mode": "holistic"}, "criteria"),
    ("pipeline (summary+analysis)", {"summary": True, "analysis": True}, "pipeline"),
    ("pipeline (final only)", {"summary": False, "analysis": False}, "pipeline"),
    ("criteria_tree (10 AI tests)", {"tree": TREE}, "criteria_tree"),
    ("criteria_tree, batch unusable", {"tree": TREE}, "criteria_tree"),
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
def llm_client(latency: float, broken_batch: list[bool]) -> Iterator[tuple[LLMClient, str]]:
    """The real server named by the environment, else the fake one; with the source of the
    token counts, for the table's heading."""
    real = client_from_config(os.environ)
    if real is not None:
        with real:
            yield real, f"as reported by the server at {real.settings.base_url}"
        return

    def slow(request: dict) -> str:
        time.sleep(latency)
        system = request["messages"][0]["content"]
        if broken_batch[0] and "one entry per question id" in system:
            return "Sorry, I cannot answer in JSON."
        if "from 0 to 100" in request["messages"][-1]["content"]:
            return HOLISTIC_REPLY  # the holistic mode asks out of 100, the others out of 10
        return json.dumps(ANSWERS | {"score": 80}) if "Answer the one question" in system else REPLY

    with FakeLLM() as fake:
        # It stands for a hosted service, which takes several calls at once (a server on
        # this machine would get one: app.llm.slots).
        slots = ServerSlots(fake.url, HOSTED_DEFAULT)
        client = LLMClient(LLMSettings(base_url=fake.url, model="bench"), slots=slots)
        fake.set_default(slow)
        with client:
            yield (
                client,
                "ESTIMATED by the fake server (no real tokenizer offline; see its docstring)",
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per fake reply")
    args = parser.parse_args()

    broken_batch = [False]
    rubric = parse_rubric({"criteria": CRITERIA})
    reference = " ".join(f"Section {i}: {ESSAY}" for i in range(40))
    with llm_client(args.latency, broken_batch) as (client, source):
        model = client.settings.model or "bench"
        fake = source.startswith("ESTIMATED")
        where = f"fake LLM answering in {args.latency * 1000:.0f} ms" if fake else model
        print(f"10-criterion rubric, {where}; tokens {source}\n")
        print(
            f"{'strategy':<30}{'calls':>6}{'prompt':>8}{'compl.':>8}{'total':>8}{'wall ms':>9}"
            "  result"
        )
        for label, params, plugin in STRATEGIES:
            broken_batch[0] = "unusable" in label
            if broken_batch[0] and not fake:
                continue  # only the fake can be told to break the batched reply
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
            wall = (time.perf_counter() - started) * 1000
            calls = result.provenance["llm_calls"]
            prompt, completion, total = tokens(result.provenance)
            score = "-" if result.score is None else f"{result.score:.2f}/{result.scale:g}"
            print(
                f"{label:<30}{calls:>6}{prompt:>8}{completion:>8}{total:>8}{wall:>9.0f}"
                f"  {result.outcome.value} {score}"
            )


if __name__ == "__main__":
    main()
