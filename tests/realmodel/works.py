"""What the real-model tests (and bench/bench_realmodel.py) grade: one assignment, four kinds
of work, and every strategy and mode that asks a model."""

from __future__ import annotations

from typing import Any

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
