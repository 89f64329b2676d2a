"""Tokens per grading of each strategy on a real model server, next to the floor.

    bash scripts/model-server.sh start /tmp/model     # or any server: EVALUAITOR_LLM_BASE_URL
    EVALUAITOR_MODEL_SERVER=/tmp/model/model.json .venv/bin/python bench/bench_realmodel.py

Each strategy grades the four works of tests/realmodel (good, weak, off-topic, Spanish)
through the worker's runner and a recording relay. Per strategy it prints the calls, the
prompt and completion tokens per grading as the server counted them, the floor (the tokens of
the work, the rubric and a one-line instruction: what a single bare call could not do
without), the prompt's multiple of it, the largest reply cap sent, how many replies were cut
at their cap, and the seconds per grading. Needs Redis (started here, embedded) for the
count of calls in flight.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.jobs.redis_server import EmbeddedRedis  # noqa: E402
from tests.realmodel.recorder import Recorder  # noqa: E402
from tests.realmodel.works import (  # noqa: E402
    INSTRUCTIONS,
    RUBRIC,
    WORKS,
    Server,
    app_config,
    grade,
    server_from_environment,
    strategies,
)

ONE_LINE = "Grade this work against the rubric; reply with a score out of 10."


def floor_tokens(server: Server, work: str) -> tuple[int, str]:
    """The floor's tokens as the server counts them (llama.cpp's /extras/tokenize), else by
    the usual estimate of four characters a token; with which."""
    rubric = "\n".join(f"- {c['name']}: {c['requirement']}" for c in RUBRIC["criteria"])
    text = "\n\n".join((INSTRUCTIONS, rubric, ONE_LINE, WORKS[work]))
    root = server.base_url.rstrip("/").removesuffix("/v1")
    try:
        answer = httpx.post(f"{root}/extras/tokenize", json={"input": text}, timeout=30)
        return len(answer.json()["tokens"]), "server"
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return len(text) // 4, "estimate"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--strategy", action="append", help="Only these (repeatable).")
    args = parser.parse_args()
    server = server_from_environment()
    if server is None:
        print("skipped: no model server. Start one with scripts/model-server.sh and set")
        print("EVALUAITOR_MODEL_SERVER to its model.json, or set EVALUAITOR_LLM_BASE_URL.")
        return
    floors = {work: floor_tokens(server, work) for work in WORKS}
    floor = statistics.mean(tokens for tokens, _ in floors.values())
    counted_by = ", ".join({how for _, how in floors.values()})
    print(f"server {server.base_url}, model {server.model}; floor counted by {counted_by}")
    print(
        f"{'strategy':<24}{'calls':>6}{'prompt':>8}{'reply':>7}{'floor':>7}{'x floor':>8}"
        f"{'cap':>6}{'cut':>5}{'s':>7}  outcomes"
    )
    with (
        tempfile.TemporaryDirectory() as folder,
        EmbeddedRedis(Path(folder) / "redis") as redis,
        Recorder(server.base_url, server.api_key) as relay,
    ):
        config = app_config(server, relay, redis.url, Path(folder))
        for name in args.strategy or strategies(server.model, server.second_model):
            rows = [grade(config, relay, server, name, work) for work in WORKS]
            exchanges = [e for r in rows for e in r.exchanges]
            prompt = sum(e.usage.get("prompt_tokens", 0) for e in exchanges) / len(rows)
            reply = sum(e.usage.get("completion_tokens", 0) for e in exchanges) / len(rows)
            cap = max(e.request.get("max_tokens") or 0 for e in exchanges)
            cut = sum(e.finish_reason == "length" for e in exchanges)
            outcomes = ", ".join(
                f"{work}:{r.result.outcome.value}"
                + (f" {r.result.score:g}" if r.result.score is not None else "")
                for work, r in zip(WORKS, rows, strict=True)
            )
            print(
                f"{name:<24}{len(exchanges) / len(rows):>6.1f}{prompt:>8.0f}{reply:>7.0f}"
                f"{floor:>7.0f}{prompt / floor:>8.1f}{cap:>6}{cut:>5}"
                f"{statistics.mean(r.seconds for r in rows):>7.1f}  {outcomes}"
            )


if __name__ == "__main__":
    main()
