"""What the real-model tests (and bench/bench_realmodel.py) grade: one assignment, four kinds
of work, and every strategy and mode that asks a model."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from flask import Config
from redis import Redis

from app import create_app
from app.grading import runner
from app.grading.base import GradingResult
from app.grading.cross_check import Safeguards
from app.grading.rubric import parse_rubric
from tests.realmodel.recorder import Exchange, Recorder

INSTRUCTIONS = (
    "Explain photosynthesis in a short essay: what the plant takes in, what it makes, where "
    "in the cell it happens, and why it matters for life on Earth."
)
MAX_SCORE = 10.0
RUBRIC = {
    "title": "Photosynthesis essay",
    "criteria": [
        {
            "name": "Inputs and outputs",
            "requirement": "Names light, water and carbon dioxide as inputs, and glucose and "
            "oxygen as outputs.",
            "weight": 4,
        },
        {
            "name": "Where it happens",
            "requirement": "Says that it happens in the chloroplasts, using chlorophyll.",
            "weight": 3,
        },
        {
            "name": "Why it matters",
            "requirement": "Explains why photosynthesis matters for other living things.",
            "weight": 3,
        },
    ],
}

WORKS = {
    "good": (
        "Photosynthesis is how green plants make their own food. In the chloroplasts of leaf "
        "cells, the green pigment chlorophyll absorbs light energy. The plant takes in water "
        "through its roots and carbon dioxide from the air through small pores called stomata. "
        "Using the light energy, it turns the water and carbon dioxide into glucose, a sugar it "
        "uses for energy and growth, and releases oxygen as a by-product. The light-dependent "
        "reactions split water and make ATP; the Calvin cycle then fixes carbon dioxide into "
        "sugar. Photosynthesis matters because almost every food chain starts with it, and the "
        "oxygen we breathe comes from it. It also removes carbon dioxide from the atmosphere."
    ),
    "weak": "Plants need the sun. They are green. Photosynthesis is good for plants I think.",
    "off_topic": (
        "Last weekend our football team played the final of the regional cup. We scored in the "
        "first ten minutes, but the other team equalised before half time. In the second half "
        "our goalkeeper saved a penalty and we won two to one in the last minute."
    ),
    "spanish": (
        "La fotosíntesis es el proceso por el que las plantas verdes fabrican su alimento. En "
        "los cloroplastos, la clorofila absorbe la energía de la luz. La planta toma agua por "
        "las raíces y dióxido de carbono del aire por los estomas, y con la energía de la luz "
        "los convierte en glucosa y oxígeno. Es importante porque casi todas las cadenas "
        "alimentarias empiezan con ella y porque produce el oxígeno que respiramos."
    ),
}

#: AI tests of a criteria tree: one scored, one pass/fail.
TREE = {
    "base": {
        "children": [
            {
                "name": "Explanation",
                "test": {
                    "kind": "ai",
                    "question": "How well does the essay explain what photosynthesis takes in "
                    "and makes?",
                    "answer": "score",
                },
            },
            {
                "name": "Location",
                "test": {
                    "kind": "ai",
                    "question": "Does the essay say that photosynthesis happens in the "
                    "chloroplasts?",
                    "answer": "pass_fail",
                },
            },
        ]
    }
}


def strategies(model: str, second_model: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every strategy and mode that asks a model: id -> (plugin, its settings)."""
    return {
        "rubric_eval": ("rubric_eval", {}),
        "criteria-per_criterion": ("criteria", {"mode": "per_criterion"}),
        "criteria-one_shot": ("criteria", {"mode": "one_shot"}),
        "criteria-holistic": ("criteria", {"mode": "holistic"}),
        "pipeline": ("pipeline", {"summary": True, "analysis": True}),
        "ensemble": ("ensemble", {"models": [model, second_model]}),
        "criteria_tree": ("criteria_tree", {"tree": TREE}),
    }


@dataclass(frozen=True)
class Server:
    """Where the model server is, and the two model names an ensemble is given."""

    base_url: str
    model: str
    second_model: str
    api_key: str | None = None


def server_from_environment() -> Server | None:
    """The server EVALUAITOR_MODEL_SERVER's file names (scripts/model-server.sh), else the one
    EVALUAITOR_LLM_BASE_URL names, with EVALUAITOR_LLM_ENSEMBLE_MODELS ("a,b") as the
    ensemble's two models there; None when neither is set."""
    if path := os.environ.get("EVALUAITOR_MODEL_SERVER"):
        found = json.loads(Path(path).read_text())
        # llama.cpp answers any model name with its one model: two names make two graders.
        return Server(found["base_url"], found["model"], "second-grader")
    if base_url := os.environ.get("EVALUAITOR_LLM_BASE_URL"):
        model = os.environ.get("EVALUAITOR_LLM_MODEL") or "gpt-4o-mini"
        named = [m.strip() for m in os.environ.get("EVALUAITOR_LLM_ENSEMBLE_MODELS", "").split(",")]
        first, second = named if len(named) == 2 and all(named) else (model, model + "-second")
        return Server(base_url, first, second, os.environ.get("EVALUAITOR_LLM_API_KEY"))
    return None


@dataclass(frozen=True)
class Graded:
    result: GradingResult
    exchanges: list[Exchange]
    seconds: float


def grade(
    config: Mapping[str, Any],
    relay: Recorder,
    model_server: Server,
    strategy: str,
    work: str,
    *,
    text: str | None = None,
) -> Graded:
    """Grade one of WORKS (or ``text``) with one of the strategies, as the worker does (runner),
    sharing the count of calls in flight through Redis; with what crossed the relay meanwhile."""
    plugin, params = strategies(model_server.model, model_server.second_model)[strategy]
    job = runner.Job.for_text(
        plugin,
        WORKS[work] if text is None else text,
        "essay.txt",
        "text",
        params=params,
        max_score=MAX_SCORE,
        instructions=INSTRUCTIONS,
        rubric=parse_rubric(RUBRIC),
        model=model_server.model,
    )
    job = replace(job, safeguards=Safeguards.from_config(config))
    mark = len(relay.exchanges)
    started = time.monotonic()
    result = runner.grade_with_model(
        job,
        config,
        lambda *_: None,
        tenant_folder="local",
        redis=Redis.from_url(config["REDIS_URL"]),
    )
    return Graded(result, relay.since(mark), time.monotonic() - started)


def app_config(server: Server, relay: Recorder, redis_url: str, folder: Path) -> Config:
    """Settings that send every call through ``relay`` to the server, with no reply cache (so
    the tokens recorded can be compared with the server's own counts)."""
    app = create_app(
        {
            "TESTING": True,
            "DATABASE_URL": f"sqlite:///{folder / 'never-created.db'}",
            "REDIS_URL": redis_url,
            "EVALUAITOR_LLM_BASE_URL": relay.url,
            "EVALUAITOR_LLM_MODEL": server.model,
            "EVALUAITOR_LLM_API_KEY": None,  # the relay holds the server's key, if any
            "EVALUAITOR_LLM_CACHE_DIR": None,
        }
    )
    return app.config
