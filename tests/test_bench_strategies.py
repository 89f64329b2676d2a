"""The strategies benchmark's fake replies (bench/bench_strategies.py): each prompt gets a
reply in the shape it asks for, within its cap, so every strategy grades the essay and the
table measures grading, not replies cut short or refused."""

from bench.bench_strategies import fake_client, grade_all, shaped_reply

#: Label: (model calls, grade out of 10). Points 1-7 of the rubric are covered, 8 and 9 not.
EXPECTED = {
    "rubric_eval": (1, 8.0),
    "criteria per_criterion": (10, 8.727273),  # 48 of the 55 positive points
    "criteria one_shot": (1, 8.727273),
    "criteria holistic": (1, 8.0),  # 80 of 100
    "pipeline (summary+analysis)": (3, 8.0),
    "pipeline (final only)": (1, 8.0),
    "criteria_tree (10 AI tests)": (1, 7.78),  # 7 of 9 questions at 100, nothing copied
    "criteria_tree, batch unusable": (11, 7.78),  # then each question on its own
    "ensemble (2 models x 2 runs)": (4, 8.0),  # 80 % of each category, quoted
}


def test_every_strategy_grades_with_replies_within_their_caps() -> None:
    broken_batch = [False]
    with fake_client(0, broken_batch) as client:
        rows = list(grade_all(client, broken_batch, fake=True))
    assert [label for label, _, _ in rows] == list(EXPECTED)
    for label, result, _ in rows:
        calls, score = EXPECTED[label]
        assert (result.outcome.value, result.error) == ("graded", None), label
        assert (result.provenance["llm_calls"], result.score) == (calls, score), label
        for call in result.provenance["calls"]:
            assert call["finish_reason"] == "stop", label
            assert call["completion_tokens"] <= call["max_tokens"], label


def test_the_batch_unusable_row_breaks_only_the_batched_question() -> None:
    broken_batch = [False]
    with fake_client(0, broken_batch) as client:
        rows = {label: result for label, result, _ in grade_all(client, broken_batch, True)}
    tree = rows["criteria_tree, batch unusable"]
    assert tree.raw_replies[0] == "Sorry, I cannot answer in JSON."
    assert all(reply.startswith('{"score": ') for reply in tree.raw_replies[1:])


def test_a_prompt_the_bench_does_not_know_fails_loudly() -> None:
    request = {"messages": [{"content": "Write a poem."}, {"content": "About the sea."}]}
    reply = shaped_reply(request, broken_batch=False)
    assert not isinstance(reply, str) and reply.status_code == 500
