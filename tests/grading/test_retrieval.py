"""Chunking and ranking of reference passages (app.grading.retrieval)."""

from __future__ import annotations

import pytest

from app.grading.retrieval import Passage, chunk, rank, terms

REFERENCE = {
    "photosynthesis": (
        "Photosynthesis happens in the chloroplasts of plant cells. Chlorophyll absorbs "
        "sunlight, water is split and oxygen is released, and carbon dioxide is fixed into "
        "glucose in the Calvin cycle using the ATP and NADPH made by the light reactions."
    ),
    "revolution": (
        "The French Revolution began in 1789 with the storming of the Bastille. The Estates "
        "General became the National Assembly, feudal privileges were abolished and the "
        "Declaration of the Rights of Man proclaimed liberty and equality before the law."
    ),
    "injection": (
        "SQL injection happens when user input is pasted into a query string. Attackers "
        "close the quote and add conditions or statements; parameterised queries keep the "
        "values apart from the SQL text so the database never runs them as code."
    ),
    "inflacion": (
        "La inflación es la subida generalizada y sostenida de los precios. Se mide con el "
        "índice de precios al consumo y reduce el poder adquisitivo de los salarios y del "
        "ahorro; el banco central sube los tipos de interés para frenarla."
    ),
}


def _passages() -> list[Passage]:
    """One passage per topic: chunk size well above each paragraph's length."""
    passages = []
    for text in REFERENCE.values():
        found = chunk(text, words=200, overlap=0)
        assert len(found) == 1
        passages.append(Passage(len(passages), 0, found[0].end_word, found[0].text))
    return passages


def _words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


def test_windows_overlap_and_cover_the_text():
    passages = chunk(_words(11), words=4, overlap=1)
    assert [(p.start_word, p.end_word) for p in passages] == [(0, 4), (3, 7), (6, 10), (9, 11)]
    assert [p.index for p in passages] == [0, 1, 2, 3]
    assert passages[1].text == "w3 w4 w5 w6"
    assert passages[-1].text == "w9 w10"


def test_no_window_lies_inside_the_previous_one():
    passages = chunk(_words(7), words=4, overlap=1)
    assert [(p.start_word, p.end_word) for p in passages] == [(0, 4), (3, 7)]
    assert chunk(_words(3), words=4, overlap=2)[0].text == "w0 w1 w2"


def test_passage_text_keeps_the_original_layout():
    text = "Title\n\nFirst   line.\nSecond line.\n\nThird paragraph here."
    passages = chunk(text, words=4, overlap=0)
    assert passages[0].text == "Title\n\nFirst   line.\nSecond"
    assert passages[1].text == "line.\n\nThird paragraph here."


@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_empty_text_has_no_passages(text):
    assert chunk(text) == []


@pytest.mark.parametrize(("words", "overlap"), [(0, 0), (10, 10), (10, -1)])
def test_impossible_windows_are_refused(words, overlap):
    with pytest.raises(ValueError):
        chunk("some words here", words=words, overlap=overlap)


def test_case_and_accents_are_folded():
    assert terms("Índice ÍNDICE indice") == terms("indice indice indice")
    assert terms("Energía") == terms("energia") == terms("ENERGIA")
    assert terms("l'aigua") == terms("L’AIGUA") == terms("aigua")  # elided article dropped


def test_stop_words_are_dropped_in_each_language():
    assert terms("the and of which la de los que els amb per") == []


def test_word_forms_meet():
    assert len(set(terms("normalized normalization normalización"))) == 1
    assert terms("indexes") == terms("index")
    assert terms("consumidores") == terms("consumidor")


@pytest.mark.parametrize(
    ("submission", "topic"),
    [
        ("My essay explains how plants use sunlight and chlorophyll to make glucose.", 0),
        ("In 1789 the people stormed the Bastille and abolished feudal privileges.", 1),
        ("I fixed the login by using parameterized queries instead of pasting input.", 2),
        ("Cuando suben los precios, los salarios compran menos: eso es la inflacion.", 3),
    ],
)
def test_the_passage_on_the_submissions_topic_ranks_first(submission, topic):
    ranked = rank(submission, _passages(), top_k=4)
    assert ranked[0].passage.index == topic
    assert ranked[0].rank == 1
    assert [r.score for r in ranked] == sorted((r.score for r in ranked), reverse=True)


def test_only_passages_sharing_words_are_returned():
    ranked = rank("chlorophyll sunlight glucose", _passages(), top_k=4)
    assert [r.passage.index for r in ranked] == [0]
    assert rank("zebra xylophone", _passages(), top_k=4) == []


def test_top_k_limits_the_result():
    query = "photosynthesis revolution injection inflación"
    assert len(rank(query, _passages(), top_k=2)) == 2
    assert rank(query, _passages(), top_k=0) == []
    assert rank(query, [], top_k=4) == []


def test_ties_keep_document_order():
    same = "Newton's second law: force equals mass times acceleration."
    passages = [Passage(i, 0, 8, same) for i in range(3)]
    ranked = rank("force and acceleration", passages, top_k=3)
    assert [r.passage.index for r in ranked] == [0, 1, 2]
    assert [r.rank for r in ranked] == [1, 2, 3]


def test_the_real_chunks_of_a_long_reference_are_searchable():
    reference = "\n\n".join(REFERENCE.values()) * 5
    passages = chunk(reference, words=40, overlap=10)
    best = rank("Bastille 1789 National Assembly", passages, top_k=3)
    assert best and all("Bastille" in r.passage.text for r in best)
