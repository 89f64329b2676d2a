"""The LLM session: cached replies, forced regrades, call records, bounded concurrency."""

from __future__ import annotations

import threading
import time

import pytest

from app.llm import LLMClient, LLMNotConfiguredError, LLMSettings
from app.llm.jsonreply import parse_json_reply
from app.llm.session import MAX_MESSAGE_CHARS, MAX_PROMPTS_CHARS, LLMSession, ReplyCache
from app.llm.slots import ServerSlots

MESSAGES = [{"role": "user", "content": "Grade this."}]


@pytest.fixture
def client(fake_llm):
    settings = LLMSettings(base_url=fake_llm.url, model="m", backoff_base=0.01)
    with LLMClient(settings, slots=ServerSlots(fake_llm.url, 8)) as client:
        yield client


def test_unchanged_request_is_answered_from_the_cache(fake_llm, client, tmp_path):
    fake_llm.set_default("Final score: 7/10")
    cache = ReplyCache(tmp_path)
    first = LLMSession(client, model="m", cache=cache)
    assert first.complete(MESSAGES).content == "Final score: 7/10"
    second = LLMSession(client, model="m", cache=cache)
    assert second.complete(MESSAGES).content == "Final score: 7/10"
    assert len(fake_llm.requests) == 1
    assert second.provenance()["cache_hits"] == 1 and second.provenance()["llm_calls"] == 0
    # Any change of text or parameters is a different key.
    second.complete(MESSAGES, temperature=0.0)
    second.complete([{"role": "user", "content": "Grade that."}])
    assert len(fake_llm.requests) == 3


def test_a_fresh_session_replays_only_replies_received_since_it_was_asked_for(
    fake_llm, client, tmp_path
):
    """A regrade asks again what was cached before it; a retry of that same regrade (one of its
    calls failed) replays what the regrade already received and asks only the rest."""
    fake_llm.set_default(lambda body: "reply to " + body["messages"][0]["content"])
    cache = ReplyCache(tmp_path)
    other = [{"role": "user", "content": "the other question"}]
    LLMSession(client, model="m", cache=cache).complete(MESSAGES)
    LLMSession(client, model="m", cache=cache).complete(other)
    asked = time.time()
    regrade = LLMSession(client, model="m", cache=cache, fresh_since=asked)
    regrade.complete(MESSAGES)
    assert len(fake_llm.requests) == 3  # the cached reply was older than the regrade

    retry = LLMSession(client, model="m", cache=cache, fresh_since=asked)
    retry.complete(MESSAGES)
    retry.complete(other)
    assert len(fake_llm.requests) == 4  # only the question the regrade had not received
    assert [c["cached"] for c in retry.provenance()["calls"]] == [True, False]


def test_calls_are_recorded_for_provenance(fake_llm, client):
    fake_llm.reply("a", usage={"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12})
    fake_llm.reply("b", usage={"prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 23})
    session = LLMSession(client, model="m", seed=7)
    session.complete(MESSAGES)
    session.complete(MESSAGES, json_mode=True, max_tokens=50)
    record = session.provenance()
    assert record["llm_calls"] == 2 and record["total_tokens"] == 35
    assert record["calls"][0]["seed"] == 7 and record["calls"][0]["temperature"] == 0.1
    assert record["calls"][1]["json_mode"] is True and record["calls"][1]["max_tokens"] == 50
    assert len(record["calls"][0]["prompt_hash"]) == 64
    assert fake_llm.requests[0]["seed"] == 7


def test_each_distinct_prompt_is_kept_once_in_order_and_bounded(fake_llm, client, tmp_path):
    fake_llm.set_default("ok")
    cache = ReplyCache(tmp_path)
    LLMSession(client, model="m", cache=cache).complete(MESSAGES)
    session = LLMSession(client, model="m", cache=cache)
    session.complete(MESSAGES)  # from the cache: still the prompt the reply answered
    session.complete(MESSAGES, temperature=0.5)  # the same prompt with other parameters
    for letter in "abcdefghijkl":  # twelve long prompts: more than the budget holds
        session.complete(
            [{"role": "system", "content": "s"}, {"role": "user", "content": letter * 150_000}]
        )
    kept = session.prompts()
    assert [p["prompt_hash"] for p in kept] == list(
        dict.fromkeys(c.prompt_hash for c in session.calls)
    )
    assert len(kept) == 13 and kept[0]["messages"] == MESSAGES

    system, user = kept[1]["messages"]
    assert system == {"role": "system", "content": "s"}
    assert user["content"].startswith("a" * 100) and user["content"].endswith("a" * 100)
    assert f"{150_000 - MAX_MESSAGE_CHARS} characters not kept" in user["content"]
    sizes = [sum(len(m["content"]) for m in p["messages"]) for p in kept]
    assert sum(sizes) <= MAX_PROMPTS_CHARS
    dropped = [i for i, p in enumerate(kept) if not p["messages"]]
    assert dropped and dropped == list(range(dropped[0], len(kept)))  # the latest ones


def test_concurrency_is_bounded(fake_llm, client):
    active, peak = 0, 0
    lock = threading.Lock()

    def slow(_body):
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.15)
        with lock:
            active -= 1
        return "done"

    fake_llm.set_default(slow)
    session = LLMSession(client, model="m", max_concurrency=3)
    messages = [[{"role": "user", "content": f"q{i}"}] for i in range(9)]
    started = time.monotonic()
    replies = session.map(lambda m: session.complete(m).content, messages)
    assert replies == ["done"] * 9
    assert peak == 3
    assert time.monotonic() - started < 9 * 0.15  # it did run in parallel


def test_unconfigured_session_refuses_clearly():
    with pytest.raises(LLMNotConfiguredError):
        LLMSession(None).complete(MESSAGES)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"score": 8}', {"score": 8}),
        (
            'Here you go:\n```json\n{"score": 8, "note": "a } in text"}\n```',
            {"score": 8, "note": "a } in text"},
        ),
        ('Sure! {"a": {"b": [1, 2]}} Hope it helps.', {"a": {"b": [1, 2]}}),
        ("[1, 2, 3]", [1, 2, 3]),
    ],
)
def test_json_is_found_in_chatty_replies(reply, expected):
    assert parse_json_reply(reply) == expected


def test_reply_without_json_is_an_error():
    with pytest.raises(ValueError):
        parse_json_reply("I think the score is eight.")


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("[" * 100_000, None),  # nested deeper than the JSON parser recurses: no JSON
        ('{"a": ' * 50_000 + "1" + "}" * 50_000 + ' then {"score": 3}', {"score": 3}),
    ],
)
def test_a_hostile_nesting_depth_is_no_json_not_a_crash(reply: str, expected) -> None:
    """A model reply is untrusted text: a RecursionError would end the grading job."""
    if expected is None:
        with pytest.raises(ValueError):
            parse_json_reply(reply)
    else:
        assert parse_json_reply(reply) == expected
