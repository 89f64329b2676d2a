"""Reading the score out of grader replies: what real LLM graders write, and the traps in it."""

import pytest

from app.grading.scores import ScoreReading, misfit, read_score

FEEDBACK = "The essay is well organised and the argument is clear.\n" * 12

# (reply, max_score, expected score, expected scale, expected marker)
READABLE = [
    pytest.param("Good work.\n\nFinal score: 8/10", 10, 8, 10, "final-marker", id="en-final"),
    pytest.param("NOTA FINAL: 7", 10, 7, None, "final-marker", id="es-upper-final"),
    pytest.param("**Nota final:** 8,5", 10, 8.5, None, "final-marker", id="md-bold-comma"),
    pytest.param("## Final score: 7/10", 10, 7, 10, "final-marker", id="md-heading"),
    pytest.param("**Grade**: __9__", 10, 9, None, "marker", id="md-bold-underscore"),
    pytest.param("### Nota\n\n8.5", 10, 8.5, None, "marker", id="md-heading-next-line"),
    pytest.param("## Final score\n**7/10**", 10, 7, 10, "final-marker", id="heading-bold-next"),
    pytest.param(
        "| Criterio | Puntos |\n|---|---|\n| Estructura | 3/4 |\n| **Total** | **17/20** |",
        10,
        17,
        20,
        "total",
        id="md-table-total",
    ),
    pytest.param(
        "- Structure: 3/4\n- Content: 4/4\n- Style: 1/2\n**Total: 8/10**",
        10,
        8,
        10,
        "total",
        id="total-after-criteria",
    ),
    pytest.param("Final grade: 9.5 / 10", 10, 9.5, 10, "final-marker", id="spaced-slash"),
    pytest.param("Puntuación final: 7 sobre 10", 10, 7, 10, "final-marker", id="es-sobre"),
    pytest.param("Puntuacion final: 6,5 sobre 10", 10, 6.5, 10, "final-marker", id="es-no-accent"),
    pytest.param("Qualificació final: 7 de 10", 10, 7, 10, "final-marker", id="ca-de"),
    pytest.param("Qualificacio: 9 (Excel·lent)", 10, 9, None, "marker", id="ca-qualitative"),
    pytest.param("Puntuació: 8/10 punts", 10, 8, 10, "marker", id="ca-punts"),
    pytest.param("Calificación: 9 - Sobresaliente", 10, 9, None, "marker", id="es-dash-word"),
    pytest.param("Calificacion: 5 Aprobado", 10, 5, None, "marker", id="es-no-accent-qualitative"),
    pytest.param("Score: 8 out of 10", 10, 8, 10, "marker", id="en-out-of"),
    pytest.param("Score: 17/20 points", 10, 17, 20, "marker", id="points-other-scale"),
    pytest.param("Overall: 85%", None, 85, 100, "total", id="percent"),
    pytest.param("Grade: 92 %", 100, 92, 100, "marker", id="percent-spaced"),
    pytest.param("Nota: 7'5", 10, 7.5, None, "marker", id="apostrophe-decimal"),
    pytest.param("Nota: 0/10", 10, 0, 10, "marker", id="zero"),
    pytest.param("Final score: 10/10!", 10, 10, 10, "final-marker", id="full-marks"),
    pytest.param("Mark: 6/10", 10, 6, 10, "marker", id="en-mark"),
    pytest.param("**Total points:** 17/20", 20, 17, 20, "total", id="total-points"),
    pytest.param("Puntos totales: 14 de 20", 20, 14, 20, "total", id="es-puntos-totales"),
    pytest.param(
        FEEDBACK + "\nThe final score is 8/10.", 10, 8, 10, "final-marker", id="final-mid-sentence"
    ),
    pytest.param("La nota final es un 7 sobre 10.", 10, 7, 10, "final-marker", id="es-sentence"),
    pytest.param(
        "La qualificació final és de 6,5 sobre 10.", 10, 6.5, 10, "final-marker", id="ca-sentence"
    ),
    pytest.param("Your total score is 15 out of 20.", 20, 15, 20, "total", id="total-sentence"),
    pytest.param("Score (out of 10): 7", 10, 7, 10, "marker", id="scale-in-label"),
    pytest.param("Nota: 7 (sobre 10)", 10, 7, 10, "marker", id="scale-after-value"),
    pytest.param("Suggested grade: 8/10", 10, 8, 10, "marker", id="suggested"),
    pytest.param("Nota sugerida: 8", 10, 8, None, "marker", id="es-sugerida"),
    pytest.param(
        "✅ **Final Score: 9/10** — excellent work.",
        10,
        9,
        10,
        "final-marker",
        id="emoji-dash-tail",
    ),
    pytest.param("> **Final score:** 7/10", 10, 7, 10, "final-marker", id="blockquote"),
    pytest.param("Nota final: 7,5/10 (Notable)", 10, 7.5, 10, "final-marker", id="paren-tail"),
    pytest.param("Total: 17/20 (85%)", 20, 17, 20, "total", id="total-with-percent"),
    pytest.param("Score = 7", 10, 7, None, "marker", id="equals"),
    pytest.param("Nota: 8.5/10.", 10, 8.5, 10, "marker", id="trailing-period"),
    pytest.param("Final score: 12/20", 10, 12, 20, "final-marker", id="scale-differs-max"),
    pytest.param("Nota: 8", None, 8, None, "marker", id="no-max-no-scale"),
    # the total beats per-criterion "Score:" lines
    pytest.param(
        "### Structure\nScore: 3/4\n### Content\nScore: 4/4\n### Style\nScore: 1/2\n"
        "**Total: 8/10**",
        10,
        8,
        10,
        "total",
        id="total-beats-generic",
    ),
    # final beats section totals, wherever it is
    pytest.param(
        "Final score: 7/10\n\nPart 1\nTotal: 3/5\nPart 2\nTotal: 4/5",
        10,
        7,
        10,
        "final-marker",
        id="final-beats-section-totals",
    ),
    # agreeing restatements, also on another scale
    pytest.param(
        "Nota final: 8/10\n" + FEEDBACK + "Nota final: 8/10",
        10,
        8,
        10,
        "final-marker",
        id="restated-same",
    ),
    pytest.param(
        "Total: 16/20\n" + FEEDBACK + "Total: 16/20", 20, 16, 20, "total", id="total-restated"
    ),
    pytest.param(
        "Total: 16/20\nFinal score: 8/10", 10, 8, 10, "final-marker", id="final-agrees-with-total"
    ),
    pytest.param(
        "Total: 8/10\nLate penalty: -1\nFinal grade: 7/10",
        10,
        7,
        10,
        "final-marker",
        id="final-beats-total",
    ),
    pytest.param(
        "Score: 7/10\n" + FEEDBACK + "Score: 7/10",
        10,
        7,
        10,
        "marker",
        id="generic-restated-with-scale",
    ),
    # the model corrects itself at the very end
    pytest.param(
        "Final score: 6/10\n" + FEEDBACK + "On reflection, the analysis is stronger.\n"
        "Final score: 8/10",
        10,
        8,
        10,
        "final-marker",
        id="last-final-wins-at-end",
    ),
    pytest.param(
        "Nota final: 6\n" + FEEDBACK + "Nota final corregida: 7",
        10,
        7,
        None,
        "final-marker",
        id="es-corrected-at-end",
    ),
    # no marker: a fraction alone at the end
    pytest.param(
        FEEDBACK + "Overall a solid piece, well done. 7/10",
        10,
        7,
        10,
        "fraction",
        id="bare-trailing-fraction",
    ),
    pytest.param(FEEDBACK + "**8/10**", 10, 8, 10, "fraction", id="bare-bold-fraction-line"),
    pytest.param(
        "- A: 3/4\n- B: 4/4\n- C: 1/2\n\n8/10", 10, 8, 10, "fraction", id="bare-after-criteria"
    ),
    # false positives around the real score
    pytest.param(
        "Grade 10 student, essay on climate.\n\nFinal score: 7/10",
        10,
        7,
        10,
        "final-marker",
        id="grade-level-then-score",
    ),
    pytest.param(
        "Total words: 532\nTotal de palabras: 532\nNota final: 6",
        10,
        6,
        None,
        "final-marker",
        id="word-counts-then-score",
    ),
    pytest.param(
        "Submitted 15/03/2024.\nPassing grade: 5\nScore: 7/10",
        10,
        7,
        10,
        "marker",
        id="date-and-passing-grade",
    ),
    pytest.param(
        "Total: 1,250 words\nScore: 8/10", 10, 8, 10, "marker", id="thousands-word-count-ignored"
    ),
    pytest.param(
        "Score: N/A for originality\nFinal score: 7/10",
        10,
        7,
        10,
        "final-marker",
        id="weaker-placeholder-ignored",
    ),
    pytest.param(
        "Final score: 8/10\n\n```python\nscore = 3\ntotal: 45\n```",
        10,
        8,
        10,
        "final-marker",
        id="code-block-ignored",
    ),
    pytest.param(
        "Nota: revisa la ortografía.\nPuntuación: 7/10",
        10,
        7,
        10,
        "marker",
        id="es-nota-means-note",
    ),
]


@pytest.mark.parametrize(("reply", "max_score", "score", "scale", "marker"), READABLE)
def test_reads_score(
    reply: str, max_score: float | None, score: float, scale: float | None, marker: str
) -> None:
    reading = read_score(reply, max_score)
    assert reading is not None
    assert (reading.score, reading.scale, reading.marker) == (score, scale, marker)


UNREADABLE = [
    pytest.param("", 10, id="empty"),
    pytest.param(FEEDBACK, 10, id="no-number"),
    pytest.param(
        "The essay is good but question 3/5 was wrong.\nKeep practising.",
        10,
        id="fraction-mid-prose",
    ),
    pytest.param("- Structure: 3/4\n- Content: 4/4\n- Style: 1/2", 10, id="criteria-only"),
    pytest.param(
        "### Structure\nScore: 3/4\n### Content\nScore: 4/4", 10, id="generic-criteria-disagree"
    ),
    pytest.param("Structure\nScore: 2\nContent\nScore: 2", 10, id="bare-generic-repeated"),
    pytest.param("Part 1\nTotal: 3/5\nPart 2\nTotal: 4/5", 10, id="section-totals-disagree"),
    pytest.param("Total: 8/10\nLate penalty: -1\nGrade: 7/10", 10, id="total-vs-grade-same-scale"),
    pytest.param("Final score: 12/10", 10, id="over-written-scale"),
    pytest.param("Nota final: 12", 10, id="over-max-score"),
    pytest.param("Final score: 0/0", 10, id="zero-scale"),
    pytest.param("Score: -2", 10, id="negative"),
    pytest.param("Nota: N/A", 10, id="es-na"),
    pytest.param("Final score: TBD", 10, id="tbd"),
    pytest.param("Qualificació final: pendent", 10, id="ca-pendent"),
    pytest.param("Nota final: -", 10, id="dash-placeholder"),
    pytest.param("Score: 7/10\nFinal score: N/A", 10, id="final-placeholder-wins"),
    pytest.param("Final score: 7-8/10", 10, id="range-dash"),
    pytest.param("Nota final: 7 o 8", 10, id="es-range-or"),
    pytest.param("Nota: 7 → 8 después de revisar", 10, id="arrow-change"),
    pytest.param("Final score: X/10", 10, id="template-echo"),
    pytest.param("Grade: B+", 10, id="letter-grade"),
    pytest.param("Grade 10 student. The essay is clear.", 10, id="grade-level"),
    pytest.param("Grade 10 — History essay\n" + FEEDBACK, 10, id="grade-level-title"),
    pytest.param("Total words: 532", 1000, id="total-words"),
    pytest.param("Total de palabras: 532", 1000, id="es-total-palabras"),
    pytest.param("Grade level: 9", 10, id="grade-level-label"),
    pytest.param("Nota: 2024", None, id="year"),
    pytest.param("Score: 1,000", None, id="thousands-comma"),
    pytest.param("Puntuación: 1.000 puntos", None, id="thousands-dot"),
    pytest.param("Final score: 8.5.3", 10, id="version-number"),
    pytest.param(FEEDBACK + "Fecha: 15/03/2024", 10, id="date-last-line"),
    pytest.param("1. Introduction\n2. Method\n3. Results", 10, id="numbered-list"),
    pytest.param("Passing grade: 5\nNota de corte: 5\nNota mínima: 5", 10, id="thresholds"),
    pytest.param("Max score: 10\nPuntuación máxima: 10", 10, id="maximum-only"),
    pytest.param("Score: 3 of the 5 criteria are met.", 10, id="count-of-criteria"),
    pytest.param("Overall, 3 of 5 answers were correct.", 10, id="overall-prose"),
    pytest.param("Total: 3 errores de ortografía", 10, id="total-errors"),
    pytest.param(
        "Final score: 8/10 if the references were fixed, else 5/10.", 10, id="conditional-score"
    ),
    pytest.param("Nota: 7, 8 y 9 en las tres partes", 10, id="list-of-numbers"),
    pytest.param(
        "Previous grade: 6/10. The new version improves on it.", 10, id="previous-grade-mid-line"
    ),
    pytest.param("Scores: 3/4, 4/4", 10, id="plural-marker"),
    pytest.param("See page 2/3 for details.", 10, id="page-number-prose"),
    pytest.param("Python 3.11 was used.\nSection 2.3.1 is missing.", 10, id="versions"),
    pytest.param("- Style: 1/2", 10, id="criterion-as-last-line"),
    pytest.param("Nota: 8½", 10, id="vulgar-fraction"),
    pytest.param("Nota: 8", 7, id="no-scale-over-max"),
    pytest.param("A final score of 10/10 means every criterion is met.", 10, id="rubric-echo"),
    pytest.param("Grade: 10 = excellent, 5 = pass", 10, id="rubric-scale-echo"),
    pytest.param("Score range: 0-10\nScore: 0-10 scale", 10, id="score-range"),
    pytest.param("Nota final:\n```\nnota = 7\n```", 10, id="heading-then-code"),
    # contradicting finals: the later one is not at the end, so nobody knows which is meant
    pytest.param(
        "Final score: 6/10\nFinal score: 8/10\n" + FEEDBACK * 2,
        10,
        id="contradicting-finals-mid-text",
    ),
    pytest.param("Total: 7/10\n" + FEEDBACK + "Total: 9/10", 10, id="totals-contradict"),
    pytest.param("```\nFinal score: 8/10\n```", 10, id="score-only-in-code-block"),
]


@pytest.mark.parametrize(("reply", "max_score"), UNREADABLE)
def test_unreadable_gives_none(reply: str, max_score: float | None) -> None:
    assert read_score(reply, max_score) is None


JSON_REPLIES = [
    pytest.param('{"score": 7, "max_score": 10, "feedback": "Good"}', 7, 10, id="whole"),
    pytest.param(
        'Here is my evaluation:\n```json\n{"nota": "8,5", "scale": 10}\n```',
        8.5,
        10,
        id="fenced-string-comma",
    ),
    pytest.param('{"grade": "8/10"}', 8, 10, id="string-fraction"),
    pytest.param('{"Puntuación": 6, "out_of": 10}', 6, 10, id="es-key-accent"),
    pytest.param('{"result": {"score": 7, "max": 10}}', 7, 10, id="nested"),
    pytest.param(
        '{"criteria": [{"name": "A", "score": 3}], "final_score": 8, "max": 10}',
        8,
        10,
        id="final-key-beats-criteria",
    ),
    pytest.param('{"score": 7.5}', 7.5, None, id="no-scale"),
    pytest.param('{"points": 8, "max_points": 10}', 8, 10, id="points-keys"),
    pytest.param('Result:\n{"total": 17, "max_score": 20}\nThanks!', 17, 20, id="inline-object"),
    pytest.param('{"score": 7}\n\nFinal score: 7/10', 7, None, id="agrees-with-prose"),
]


@pytest.mark.parametrize(("reply", "score", "scale"), JSON_REPLIES)
def test_reads_json(reply: str, score: float, scale: float | None) -> None:
    reading = read_score(reply, 10)
    assert reading is not None
    assert (reading.score, reading.scale, reading.marker) == (score, scale, "json")


JSON_UNREADABLE = [
    pytest.param('{"score": null}', id="null"),
    pytest.param('{"score": "N/A"}', id="na"),
    pytest.param('{"score": true}', id="bool"),
    pytest.param('{"score": 12, "max_score": 10}', id="over-scale"),
    pytest.param('{"score": -1}', id="negative"),
    pytest.param('{"score": "8/10", "max_score": 20}', id="conflicting-scales"),
    pytest.param('{"score": 7, "grade": 8}', id="disagreeing-keys"),
    pytest.param('{"structure": {"score": 3}, "style": {"score": 1}}', id="criteria-only"),
    pytest.param('{"score": 7, "max": "ten"}', id="bad-scale"),
    pytest.param('```json\n{"score": 9}\n```\nFinal score: 6/10', id="contradicts-prose"),
]


@pytest.mark.parametrize("reply", JSON_UNREADABLE)
def test_unusable_json_gives_none(reply: str) -> None:
    assert read_score(reply, 10) is None


def test_json_without_score_key_falls_back_to_text() -> None:
    reply = 'The student returned:\n```json\n{"name": "Ana", "id": 4}\n```\nFinal score: 6/10'
    assert read_score(reply, 10) == ScoreReading(6, 10, "final-marker", "Final score: 6/10")


def test_evidence_is_the_original_line() -> None:
    reading = read_score("Comentario general.\n\n**Nota final:** 8,5 / 10 — Notable", 10)
    assert reading == ScoreReading(8.5, 10, "final-marker", "**Nota final:** 8,5 / 10 — Notable")


def test_heading_evidence_joins_both_lines() -> None:
    assert read_score("### Nota\n\n8.5", 10) == ScoreReading(8.5, None, "marker", "### Nota 8.5")


def test_contradicting_final_then_last_line_wins_only_at_end() -> None:
    early = "Final score: 6/10\nFinal score: 8/10\n" + FEEDBACK
    assert read_score(early, 10) is None
    assert read_score(FEEDBACK + "Final score: 6/10\nFinal score: 8/10", 10).score == 8


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        pytest.param("Score: " + "9" * 200_000, None, id="endless-number"),
        pytest.param("1/" * 100_000, None, id="endless-fractions"),
        pytest.param("Final score: " * 16_000, None, id="endless-markers"),
        pytest.param("8,5 " * 50_000 + "\nsobre", None, id="endless-decimals"),
        pytest.param("{" * 200_000 + "}", None, id="endless-braces"),
        pytest.param('{"a":' * 50_000 + "1" + "}" * 50_000, None, id="deep-json"),
        pytest.param("```\n" * 50_000, None, id="endless-fences"),
        pytest.param(("Nota" + " " * 1000 + "7 " + "-" * 1000 + "\n") * 100, None, id="long-gaps"),
        pytest.param("Final score:" + " " * 200_000 + "x", None, id="long-whitespace"),
        pytest.param("| " * 100_000 + "Total | 8/10", 8, id="endless-table-cells"),
    ],
)
def test_adversarial_200kb_input(reply: str, score: float | None) -> None:
    assert len(reply) >= 200_000
    reading = read_score(reply, 10)
    assert (reading and reading.score) == score


def test_large_real_reply_reads_final_line() -> None:
    reply = FEEDBACK * 40 + "- Structure: 3/4\n" * 50 + "\n**Final score: 7/10**"
    assert len(reply) > 20_000
    assert read_score(reply, 10) == ScoreReading(7, 10, "final-marker", "**Final score: 7/10**")


# --- what fits the asked scale (rule 8, issue 21) ------------------------------------------


@pytest.mark.parametrize(
    ("score", "written", "asked", "held"),
    [
        (85, None, 100, None),
        (0, None, 100, None),
        (1, None, 100, None),
        (0.5, None, 100, "fraction"),
        (0.85, 100, 100, "fraction"),  # "max_score": 100 copied from the prompt decides nothing
        (0.5, None, 10, "fraction"),
        (0.5, None, 5, None),  # half a point of five is a grade
        (0.5, None, 1, None),
        (8, 10, 100, "out of 10, but"),
        (85, 100, 10, "out of 100, but"),
    ],
)
def test_misfit(score, written, asked, held) -> None:
    reason = misfit(score, written, asked)
    if held is None:
        assert reason is None
    else:
        assert held in reason and "not converted" in reason
