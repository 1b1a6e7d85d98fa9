"""The optional remote models against fake OpenAI-compatible servers on 127.0.0.1: the
`openai` embedder and the `llm` distiller work, send no secret and no key in clear, fall
back to the local path for a call when the server is down, answers garbage, fails or hangs,
and never make a host's hook wait (the daemon's remote work does it off the lock)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_remote import FakeRemote, fake_remote

from mnemoweave import Engine, remote
from mnemoweave.config import load_config
from mnemoweave.daemon.remote_work import RemoteWork
from mnemoweave.daemon.routes import Context
from mnemoweave.embed import build_models
from mnemoweave.errors import InvalidInput

KEY = "sk-test-0123456789abcdef0123456789abcdef"
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token: never sent
BROKEN = ["garbage", "error", "hang", "down"]


@pytest.fixture
def fake() -> Iterator[FakeRemote]:
    with fake_remote() as server:
        yield server


def configure(home: Path, fake: FakeRemote, **settings: str) -> None:
    lines = [f'{name} = "{value}"' for name, value in settings.items()]
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("\n".join(lines) + "\n")


def remote_config(home: Path, fake: FakeRemote, monkeypatch, what: str, **settings: str) -> None:
    """The config naming the fake for `what` ("embed" or "llm"), its key in the environment,
    and calls given up after half a second (the fake hangs for two)."""
    monkeypatch.setenv("TEST_KEY", KEY)
    monkeypatch.setattr(remote, "TIMEOUT", 0.5)
    fake.hang_seconds = 2.0
    given = {f"{what}_url": fake.url, f"{what}_api_key": "env:TEST_KEY"}
    configure(home, fake, **given, **settings)


@pytest.fixture
def embedding(mnemoweave_home: Path, fake: FakeRemote, monkeypatch) -> Iterator[Engine]:
    """An engine whose one model is the remote embedder, built against the fake."""
    remote_config(
        mnemoweave_home, fake, monkeypatch, "embed", embedder="openai",
        embed_model="nomic-embed-text",
    )  # fmt: skip
    (built,) = build_models(["openai"])
    assert built.name == "openai"
    with Engine() as engine:
        assert [channel.name for channel in engine.channels] == ["openai"]
        yield engine


def break_(fake: FakeRemote, how: str) -> None:
    if how == "down":
        fake.server.shutdown()
        fake.server.server_close()
    else:
        fake.mode = how


def test_a_key_in_clear_is_refused_without_being_repeated(mnemoweave_home, fake):
    configure(mnemoweave_home, fake, embed_api_key=KEY)
    with pytest.raises(InvalidInput) as refused:
        load_config(mnemoweave_home)
    assert "env:NAME or file:PATH" in str(refused.value) and KEY not in str(refused.value)


def test_the_remote_embedder_searches_by_meaning_and_sends_no_secret(embedding, fake):
    made = embedding.remember(f"The deploy token is {TOKEN}; deploys run from CI only")
    other = embedding.remember("Code comments are written in English")
    hits = embedding.search("who runs deploys", k=2)
    assert hits[0].id == made.id and "openai" in hits[0].extra["explain"]["dense"]
    sent = fake.sent("/embeddings")
    assert sent and all(r["auth"] == f"Bearer {KEY}" for r in sent)
    texts = [text for r in sent for text in r["body"]["input"]]
    assert any("deploys run from CI" in text for text in texts)
    assert not any(TOKEN in text for text in texts)  # redacted before it left
    assert other.action == "new"


@pytest.mark.parametrize("how", BROKEN)
def test_a_broken_embedder_falls_back_for_the_call(embedding, fake, how, caplog):
    before = embedding.remember("Deploys run from CI only")
    break_(fake, how)
    with caplog.at_level(logging.WARNING, logger="mnemoweave.remote"):
        made = embedding.remember("Uploads retry three times with backoff")
        hits = embedding.search("uploads retry")
    assert made.action == "new" and hits[0].id == made.id  # stored, found lexically
    assert before.action == "new"
    lines = [r.getMessage() for r in caplog.records if r.name == "mnemoweave.remote"]
    assert lines and all("done locally for this call" in line for line in lines)
    assert not any(KEY in line for line in lines)


def test_a_hooks_weave_never_asks_the_remote_model(embedding, fake):
    embedding.remember("Deploys run from CI only")
    asked = len(fake.requests)
    with embedding.deferring(lambda work: None):
        woven = embedding.weave("how do deploys run?", record=True)
    assert len(fake.requests) == asked  # lexical, as the hook must not wait
    assert "Deploys run from CI only" in woven.text


def test_what_hooks_leave_is_embedded_by_the_daemons_remote_work_off_the_lock(embedding, fake):
    ctx = Context(embedding)
    ctx.defer(lambda: embedding.ingest("s1", "user", "We keep the staging DB read-only"))
    asked = len(fake.requests)
    ctx.settle()
    assert len(fake.requests) == asked  # stored, not embedded yet
    assert embedding.channels[0].index.ids("turns") == {}
    work = RemoteWork(ctx)
    while work.step():
        pass
    assert set(embedding.channels[0].index.ids("turns")) == {"t_1"}


def test_a_switch_to_the_remote_embedder_is_lexical_until_the_store_is_embedded(
    mnemoweave_home, fake, monkeypatch
):
    with Engine() as engine:  # lexical: nothing the remote model has seen
        engine.remember_many(
            [{"text": f"fact {n}: service {n} listens on port 80{n}"} for n in range(9)]
        )
    remote_config(
        mnemoweave_home, fake, monkeypatch, "embed", embedder="openai",
        embed_model="nomic-embed-text",
    )  # fmt: skip
    build_models(["openai"])
    with Engine() as engine:
        ctx = Context(engine)
        work = RemoteWork(ctx)
        work.queue.clear()
        with ctx.lock:
            work._plan()
        assert engine.catching_up == {"openai": {"done": 0, "total": 9}}
        assert engine.searching("port of service 3") == []  # lexical meanwhile
        assert engine.status()["catching_up"] == {"openai": {"done": 0, "total": 9}}
        while work.step():
            pass
        assert engine.catching_up == {}
        assert [c.name for c in engine.searching("port of service 3")] == ["openai"]


@pytest.fixture
def distilling(mnemoweave_home: Path, fake: FakeRemote, monkeypatch) -> Iterator[Engine]:
    remote_config(
        mnemoweave_home, fake, monkeypatch, "llm", embedder="none", distiller="llm",
        llm_model="qwen2.5-coder",
    )  # fmt: skip
    with Engine() as engine:
        engine.ingest("s1", "user", "What HTTP client should the uploader use?")
        engine.ingest("s1", "assistant", "httpx streams uploads; requests does not.")
        engine.ingest(
            "s1", "user", f"We decided to use httpx for the uploader. My token is {TOKEN}"
        )
        yield engine


def test_the_llm_distiller_proposes_quoted_cards_for_review(distilling, fake):
    (card,) = distilling.distill(session="s1")
    assert card.summary.startswith("We decided to use httpx for the uploader.")
    assert (card.suggested_kind, card.evidence, card.status) == ("conclusion", ("t_3",), "pending")
    assert card.topic == "http client"
    (sent,) = fake.sent("/chat/completions")
    assert sent["auth"] == f"Bearer {KEY}" and sent["body"]["model"] == "qwen2.5-coder"
    prompt = sent["body"]["messages"][-1]["content"]
    assert "t_3 user: We decided to use httpx" in prompt and TOKEN not in prompt
    assert distilling.list_memories(10) == []  # into pending, never straight into memory


@pytest.mark.parametrize("how", BROKEN)
def test_a_broken_llm_falls_back_to_the_built_in_distiller(distilling, fake, how, caplog):
    break_(fake, how)
    with caplog.at_level(logging.WARNING, logger="mnemoweave.remote"):
        cards = distilling.distill(session="s1")
    assert [c.evidence for c in cards] == [("t_3",)]  # the extractive distiller's card
    (line,) = [r.getMessage() for r in caplog.records if r.name == "mnemoweave.remote"]
    assert line.startswith("distilling with the llm distiller failed (") and KEY not in line


def test_a_session_paused_in_a_hook_is_distilled_by_the_remote_work(distilling, fake):
    from mnemoweave.model import SessionEvent

    ctx = Context(distilling)
    ctx.defer(lambda: distilling.handle(SessionEvent("idle", "s1")))
    ctx.settle()
    assert fake.sent("/chat/completions") == [] and distilling.postponed == {"s1"}
    assert distilling.pending() == []
    assert RemoteWork(ctx).step() is True
    (card,) = distilling.pending()
    assert card.evidence == ("t_3",) and len(fake.sent("/chat/completions")) == 1
