"""An actor (who made a change, kept in the audit log) holding a secret is refused, and
the change with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemoweave import Engine
from mnemoweave.errors import InvalidInput

SLACK = "xoxb-" + "1234567890-" * 2 + "abc"


def test_an_actor_holding_a_secret_refuses_the_change_whole(tmp_path: Path):
    with Engine(tmp_path) as engine:
        with pytest.raises(InvalidInput, match="the actor holds what looks like a secret") as got:
            engine.remember("the deploy switches blue and green", actor=f"ci {SLACK}")
        assert SLACK not in str(got.value)
        assert engine.list_memories(10) == []
        assert engine.db.execute("SELECT count(*) FROM audit").fetchone()[0] == 0
        kept = engine.remember("the deploy switches blue and green", actor="ci")
        assert kept.action == "new"
    assert SLACK.encode() not in (tmp_path / "mnemoweave.sqlite").read_bytes()
