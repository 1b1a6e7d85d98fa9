"""The prompt hook answers first and stores after: the turn goes in once the answer is out
(by the daemon's worker, or by the next request, which runs what is left first), a store
that fails is spooled, and stopping the daemon loses nothing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from running import start_daemon

from mnemoweave import Engine
from mnemoweave.daemon.hooks import Hosts
from mnemoweave.daemon.routes import Context
from mnemoweave.daemon.spool import replay_spool
from mnemoweave.hosts import adapters
from mnemoweave.store.damage import StoreDamaged
from mnemoweave.store.db import DB_NAME

ROOT = Path(__file__).resolve().parents[2]
PAYLOADS = ROOT / "tests" / "e2e" / "payloads" / "claude-code"


def payload(event: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((PAYLOADS / f"{event}.json").read_text())
    return data | changes


def stored(home: Path) -> list[str]:
    db = sqlite3.connect(home / DB_NAME)
    try:
        return [row[0] for row in db.execute("SELECT text FROM turns ORDER BY id")]
    finally:
        db.close()


def test_the_answer_does_not_wait_for_the_store(home):
    with Engine(home) as engine:
        engine.remember("Uploads retry three times", project="/p")
        ctx = Context(engine)
        prompt = payload("UserPromptSubmit", prompt="How often do uploads retry?", cwd="/p")
        answer = Hosts(ctx).hook(ctx, "claude-code", "UserPromptSubmit", prompt)
        assert "Uploads retry three times" in json.dumps(answer)
        assert stored(home) == [] and ctx.later  # answered; the turn (and the record) wait
        ctx.settle()
        assert stored(home) == ["How often do uploads retry?"] and not ctx.later


def test_a_store_that_fails_after_the_answer_is_spooled_and_replayed(home, monkeypatch):
    with Engine(home) as engine:
        ctx = Context(engine)
        prompt = payload("UserPromptSubmit", prompt="Why do uploads hang?", cwd="/p")
        real = engine.handle

        def damaged(item):
            raise StoreDamaged("the store is damaged (test)")

        monkeypatch.setattr(engine, "handle", damaged)
        Hosts(ctx).hook(ctx, "claude-code", "UserPromptSubmit", prompt)
        ctx.settle()
        assert stored(home) == [] and len(list((home / "spool").glob("*.json"))) == 1
        monkeypatch.setattr(engine, "handle", real)
        assert replay_spool(engine) == 1
        assert stored(home) == ["Why do uploads hang?"]


def test_the_next_request_and_a_stop_see_every_answered_turn(home):
    daemon = start_daemon(home)
    try:
        for number in range(3):
            prompt = payload("UserPromptSubmit", prompt=f"question {number}", cwd="/p")
            daemon.request("POST", "/v1/hooks/claude-code/UserPromptSubmit", {"payload": prompt})
            found = daemon.call("GET", f"/v1/turns?session={prompt['session_id']}")
            assert [t["text"] for t in found][-1] == f"question {number}"
        last = payload("UserPromptSubmit", prompt="the last one, then a stop", cwd="/p")
        daemon.request("POST", "/v1/hooks/claude-code/UserPromptSubmit", {"payload": last})
    finally:
        assert daemon.stop() == 0
    assert stored(home)[-1] == "the last one, then a stop"
    assert len(stored(home)) == 4  # each once


class Counting:
    """A fake model that counts what it embeds."""

    name, dim = "counting", 8

    def __init__(self, symmetric: bool) -> None:
        self.symmetric = symmetric
        self.embedded: list[str] = []

    def embed(self, texts, *, query=False):
        self.embedded += list(texts)
        return np.full((len(texts), self.dim), 1 / np.sqrt(self.dim), dtype=np.float32)


@pytest.mark.parametrize("symmetric", [True, False])
def test_a_prompt_is_embedded_once_when_the_model_embeds_queries_as_passages(home, symmetric):
    with Engine(home) as engine:
        model = Counting(symmetric)
        engine.use_embedder(model)
        prompt = payload("UserPromptSubmit", prompt="add a test for the upload client", cwd="/p")
        adapters.handle(engine, "claude-code", "UserPromptSubmit", prompt)
        assert stored(home) == ["add a test for the upload client"]
        expected = 1 if symmetric else 2  # a model with prefixes embeds each form once
        assert model.embedded == ["add a test for the upload client"] * expected


def test_a_turn_seen_before_opens_no_write_transaction(home, monkeypatch):
    import mnemoweave.capture.writes

    opened = []
    real = mnemoweave.capture.writes.transaction

    def counted(db):
        opened.append(1)
        return real(db)

    monkeypatch.setattr(mnemoweave.capture.writes, "transaction", counted)
    with Engine(home) as engine:
        first = engine.ingest("s", "user", "the same line", key="k1")
        again = engine.ingest("s", "user", "the same line", key="k1")
    assert (first.action, again.action, again.id) == ("new", "duplicate", first.id)
    assert len(opened) == 1  # the transcript follower finding a hook's turn again writes nothing


def test_a_prompt_is_cleaned_and_segmented_once(home, monkeypatch):
    import uuid

    import mnemoweave.text

    said = f"add a test for the upload client {uuid.uuid4().hex}"
    counts = {"clean": 0, "tokens": 0}
    for name, real in (("clean", mnemoweave.text.clean), ("tokens", mnemoweave.text._tokens)):

        def counted(text, *args, _name=name, _real=real, **kwargs):
            counts[_name] += text == said
            return _real(text, *args, **kwargs)

        monkeypatch.setattr(mnemoweave.text, f"{'_' if name == 'tokens' else ''}{name}", counted)
    with Engine(home) as engine:
        engine.remember("Uploads use httpx with a 10 s timeout", project="/p")
        prompt = payload("UserPromptSubmit", prompt=said, cwd="/p")
        adapters.handle(engine, "claude-code", "UserPromptSubmit", prompt)
    assert stored(home) == [said]
    assert counts == {"clean": 1, "tokens": 1}  # the key, the weave and the store share them


def test_what_a_hook_weave_records_is_written_after_the_answer(home):
    with Engine(home) as engine:
        fact = engine.remember("Uploads retry three times", project="/p").id
        ctx = Context(engine)
        prompt = payload("UserPromptSubmit", prompt="How often do uploads retry?", cwd="/p")
        Hosts(ctx).hook(ctx, "claude-code", "UserPromptSubmit", prompt)
        assert engine.get(fact).access_count == 0  # the answer opened no write transaction
        ctx.settle()
        assert engine.get(fact).access_count == 1
        again = Hosts(ctx).hook(ctx, "claude-code", "UserPromptSubmit", prompt)
        assert "Uploads retry three times" not in json.dumps(again)  # the session has it
