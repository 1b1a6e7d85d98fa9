"""The memory proxy is a host of the registry (hosts/proxy.py): its payloads become turns and
session events, a prompt is answered with the weave before it is stored, and a bad payload
is refused with a clear error."""

import pytest

from mnemoweave.errors import InvalidInput
from mnemoweave.hosts import adapters


def turns(*said: tuple[str, str, str]) -> list[dict[str, str]]:
    return [{"role": role, "text": text, "key": key} for role, text, key in said]


def test_a_prompt_is_woven_first_and_stored_after(engine):
    engine.remember("The staging database is pg-stage-7", project="github.com/org/app")
    payload = {
        "session": "s1",
        "project": "github.com/org/app",
        "turns": turns(("user", "what is the staging database called?", "k1")),
    }
    handled = adapters.respond(engine, "proxy", "prompt", payload)
    assert "pg-stage-7" in handled.answer["context"]
    assert "staging database called" not in handled.answer["context"]  # not quoted back
    assert [t.text for t in engine.rehydrate(session="s1")] == []  # stored after the answer
    adapters.store(engine, handled)
    (stored,) = engine.rehydrate(session="s1")
    assert (stored.role, stored.host, stored.project) == ("user", "proxy", "github.com/org/app")


def test_a_reply_stores_the_exchange_once_and_idle_distills(engine):
    said = turns(("user", "Always run the linter before a commit.", "p"), ("assistant", "OK.", "a"))
    assert adapters.handle(engine, "proxy", "reply", {"session": "s1", "turns": said}) is None
    assert adapters.handle(engine, "proxy", "reply", {"session": "s1", "turns": said}) is None
    assert [(t.role, t.text) for t in engine.rehydrate(session="s1")] == [
        ("user", "Always run the linter before a commit."),
        ("assistant", "OK."),
    ]
    assert adapters.handle(engine, "proxy", "idle", {"session": "s1"}) is None
    assert [card.summary for card in engine.pending()] == ["Always run the linter before a commit."]


@pytest.mark.parametrize(
    ("event", "payload", "said"),
    [
        ("ask", {"session": "s1"}, "unknown proxy event 'ask'"),
        ("idle", {"session": " "}, "empty session"),
        ("reply", {"session": "s1", "turns": "hello"}, "'turns' must be a list"),
        ("reply", {"session": "s1", "turns": ["hello"]}, "must be a JSON object"),
        ("reply", {"session": "s1", "turns": turns(("robot", "hi", "k"))}, "unknown role"),
        ("reply", {"session": "s1", "turns": [{"role": "user", "text": 3}]}, "'text'"),
    ],
)
def test_a_bad_payload_is_refused_and_stores_nothing(engine, event, payload, said):
    with pytest.raises(InvalidInput, match=said):
        adapters.handle(engine, "proxy", event, payload)
    assert engine.status()["counts"]["turns"] == 0
