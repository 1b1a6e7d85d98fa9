"""The HTTP API of a real daemon: a round trip through every route, and bad input refused
with a clear message (never a stack trace)."""

from __future__ import annotations

import sqlite3
import time

import pytest

from mnemoweave.capture.file_formats import collect
from mnemoweave.capture.import_export import write_files
from mnemoweave.daemon.routes import ROUTES
from mnemoweave.daemon.wire import decode, encode
from mnemoweave.hosts import client


def refused(daemon, method, path, body=None) -> tuple[int | None, str]:
    with pytest.raises(client.DaemonError) as caught:
        daemon.request(method, path, body)
    return caught.value.status, str(caught.value)


def test_memories_round_trip(shared_daemon):
    d = shared_daemon
    made = d.call(
        "POST",
        "/v1/memories",
        {"text": "Use ruff for linting", "kind": "pref", "project": "api", "tags": ["lint"]},
    )
    assert made["_type"] == "Written" and made["action"] == "new"
    ref = made["id"]
    again = d.call("POST", "/v1/memories", {"text": "use ruff for linting.", "project": "api"})
    assert again["id"] == ref and again["action"] in ("merged", "skipped")
    memory = d.call("GET", f"/v1/records/{ref}")
    assert memory["_type"] == "Memory" and memory["tags"] == ["lint"]
    assert isinstance(memory["created"], float)  # times stay epoch seconds on the wire
    listed = d.call("GET", "/v1/memories?project=api&kind=pref&n=5")
    assert [m["id"] for m in listed] == [ref]
    hits = d.call("POST", "/v1/search", {"query": "ruff linting", "project": "api", "k": 3})
    assert hits[0]["id"] == ref and hits[0]["_type"] == "Hit"
    assert d.call("POST", f"/v1/memories/{ref}/forget")["action"] == "trashed"
    assert [m["id"] for m in d.call("GET", "/v1/memories?status=trashed&project=api")] == [ref]
    assert d.call("POST", f"/v1/memories/{ref}/restore", {"actor": "agent"})["action"] == (
        "restored"
    )
    weighted = d.call("POST", f"/v1/memories/{ref}/feedback", {"verdict": "useful"})
    assert weighted["action"] == "weighted"
    newer = d.call("POST", "/v1/memories", {"text": "Use ruff and mypy", "project": "api"})["id"]
    assert d.call("POST", f"/v1/memories/{ref}/supersede", {"new": newer})["action"] == (
        "superseded"
    )
    assert d.call("POST", f"/v1/records/{newer}/purge")["action"] == "purged"
    assert d.call("POST", "/v1/trash/purge", {}) == []


def test_turns_cards_and_sessions(shared_daemon):
    d = shared_daemon
    assert d.call("POST", "/v1/sessions/s-api/start", {"host": "test", "project": "api"}) is None
    turn = d.call(
        "POST",
        "/v1/turns",
        {
            "session": "s-api",
            "role": "user",
            "project": "api",
            "text": "以后代码注释都用英文",
            "key": "k1",
        },
    )
    assert turn["action"] == "new" and turn["id"].startswith("t_")
    assert (
        d.call("POST", "/v1/turns", {"session": "s-api", "role": "user", "text": "x", "key": "k1"})[
            "action"
        ]
        == "duplicate"
    )
    distilled = d.call("POST", "/v1/distill", {"session": "s-api"})
    assert [c["_type"] for c in distilled] == ["Card"]
    cards = d.call("GET", "/v1/cards?project=api")
    card = next(c for c in cards if turn["id"] in c["evidence"])
    assert card["_type"] == "Card"
    evidence = d.call("GET", f"/v1/records/{card['id']}/evidence")
    assert [t["id"] for t in evidence] == [turn["id"]]
    accepted = d.call("POST", f"/v1/cards/{card['id']}/review", {"decision": "accept"})
    assert accepted["id"].startswith("m_")
    turns = d.call("GET", "/v1/turns?session=s-api&limit=10")
    assert [t["id"] for t in turns] == [turn["id"]]
    assert d.call("GET", "/v1/turns?match=注释")[0]["id"] == turn["id"]
    woven = d.call(
        "POST", "/v1/weave", {"query": "代码注释用什么语言", "session": "s-api", "project": "api"}
    )
    assert woven["_type"] == "Weave" and "以后代码注释都用英文" in woven["text"]
    tiers = decode(woven).tiers  # the session's first weave: the preference is in its brief
    assert accepted["id"] in [line.ref for line in tiers["brief"]]
    assert d.call("POST", "/v1/sessions/s-api/end", {"ts": 1.5e9}) is None
    kind = d.call("POST", "/v1/classify", {"text": "I prefer tabs", "role": "user"})
    assert kind["_type"] == "Classification"


def test_skills_health_and_files(shared_daemon, tmp_path):
    d = shared_daemon
    taught = d.call(
        "POST",
        "/v1/skills",
        {
            "name": "git-release",
            "summary": "Tag and push",
            "steps": ["git tag v1", "git push --tags"],
            "source_urls": ["https://git-scm.com/book"],
        },
    )
    assert taught["_type"] == "Skill" and taught["steps"] == ["git tag v1", "git push --tags"]
    assert (
        d.call("POST", "/v1/skills/check", {"query": "tag and push a git release"})["verdict"]
        == "known"
    )
    assert d.call("POST", "/v1/skills/git-release/load")["usage_count"] == 1
    assert [s["name"] for s in d.call("GET", "/v1/skills")] == ["git-release"]
    status, message = refused(d, "POST", "/v1/skills", {"name": "Bad Name"})
    assert status == 400 and "--summary" in message and "--source-url" in message
    assert d.call("GET", "/v1/status")["counts"]["skills"] == 1
    assert d.call("GET", "/v1/retrieval").startswith("lexical-only")
    assert set(d.call("GET", "/v1/hygiene")) == {"near_duplicates", "stale", "index"}
    checks = d.call("POST", "/v1/doctor", {})
    assert all(c["_type"] == "Check" for c in checks) and all(c["ok"] for c in checks)
    files = d.call("GET", "/v1/export")
    assert "turns.jsonl" in files and all(isinstance(text, str) for text in files.values())
    write_files(tmp_path / "out", files)
    records = [encode(record) for record in collect(tmp_path / "out").records]
    counts = d.call("POST", "/v1/import", {"records": records})
    assert counts["turns"] == 0  # everything was there already
    status, message = refused(d, "POST", "/v1/import", {"records": [{"path": "/etc/passwd"}]})
    assert status == 400


def test_daemon_state_and_openapi(shared_daemon):
    state = shared_daemon.call("GET", "/v1/daemon")
    assert state["pid"] == shared_daemon.pid and state["uptime"] > 0
    assert state["socket"] == str(client.socket_path(shared_daemon.home))
    assert state["requests"]["total"] >= 1
    spec = shared_daemon.request("GET", "/openapi.json")
    assert spec["openapi"].startswith("3.1")
    assert {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops} == {
        (r.method, r.path) for r in ROUTES
    }


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "words"),
    [
        ("POST", "/v1/memories", {"text": ""}, 400, "empty"),
        ("POST", "/v1/memories", {}, 400, "missing field(s): text"),
        ("POST", "/v1/memories", {"text": "x", "colour": "red"}, 400, "unknown field(s) colour"),
        ("POST", "/v1/memories", {"text": 5}, 400, "text: expected string, got 5"),
        ("POST", "/v1/memories", {"text": "x", "kind": "gossip"}, 400, "'gossip' is not one of"),
        ("POST", "/v1/memories", {"text": "x", "tags": ["a", 1]}, 400, "tags[1]"),
        ("POST", "/v1/memories", [1, 2], 400, "must be a JSON object"),
        ("GET", "/v1/memories?n=many", None, 400, "n: expected integer, got 'many'"),
        ("GET", "/v1/memories?n=0", None, 400, "-n must be at least 1"),
        ("GET", "/v1/memories?colour=red", None, 400, "unknown field(s) colour"),
        ("GET", "/v1/records/m_999999", None, 404, "no memory with id m_999999"),
        ("GET", "/v1/records/bogus", None, 400, "not a valid id"),
        ("POST", "/v1/search", {"query": "  "}, 400, "the search query is empty"),
        ("POST", "/v1/sessions/s1/explode", {}, 400, "event: 'explode' is not one of"),
        ("POST", "/v1/cards/c_1/review", {"decision": "accept", "why": "no"}, 400, "why"),
        ("GET", "/v1/nowhere", None, 404, "no route GET /v1/nowhere"),
        ("DELETE", "/v1/memories", None, 405, "use POST, GET"),
        ("POST", "/v1/turns", {"session": "s", "role": "user", "text": "x", "ts": 1e308}, 400,
         "ts must be a time between 1970 and 2200 in epoch seconds, got 1e+308"),
        ("POST", "/v1/turns", {"session": "s", "role": "user", "text": "x", "ts": -float("inf")},
         400, "ts: expected number or null, got -inf"),
        ("POST", "/v1/turns/batch", {"turns": [{"session": "s", "role": "user", "text": "x",
         "ts": -1e15}]}, 400, "ts must be a time between 1970 and 2200"),
        ("POST", "/v1/sessions/s1/start", {"ts": 1e300}, 400, "ts must be a time between"),
        ("GET", "/v1/turns?start=inf", None, 400, "start: expected number or null, got inf"),
        ("POST", "/v1/memories", {"text": "x", "project": "p" * 1000}, 400,
         "a project name is at most 512 characters, got 1000"),
        ("POST", "/v1/turns", {"session": "ghp_" + "Zq8vXc4LmN8pQ2" * 3, "role": "user",
         "text": "x"}, 400, "the session id holds what looks like a secret"),
        ("POST", "/v1/turns", {"session": "s", "role": "user", "text": "x", "key":
         "k-AKIAIOSFODNN7EXAMPLE"}, 400, "the turn key holds what looks like a secret"),
        ("POST", "/v1/turns", {"session": "s", "role": "user", "text": "x", "host":
         "h glpat-" + "a1B2c3D4e5" * 2}, 400, "the host holds what looks like a secret"),
        ("POST", "/v1/memories", {"text": "x", "project": "https://u:hunter2pass@git.example/r"},
         400, "the project holds what looks like a secret"),
        ("POST", "/v1/memories", {"text": "x", "actor": "ci xoxb-" + "1234567890-" * 2 + "abc"},
         400, "the actor holds what looks like a secret"),
        ("POST", "/v1/sessions/s-ghp_" + "Zq8vXc4LmN8pQ2" * 3 + "/start", {}, 400,
         "the session id holds what looks like a secret"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_clearly(shared_daemon, method, path, body, status, words):
    got, message = refused(shared_daemon, method, path, body)
    assert got == status and words in message, message
    assert "Traceback" not in message and "\n" not in message
    if "secret" in words:  # a refused secret is not repeated
        said = [*body.values(), *(part for part in path.split("/") if len(part) > 12)]
        assert not any(v in message for v in said if len(v) > 1)


def test_malformed_json_body(shared_daemon):
    raw = b"POST /v1/memories HTTP/1.1\r\nContent-Length: 5\r\n\r\n{oops"
    where = client.socket_path(shared_daemon.home)
    answer = client._exchange(where, raw, time.monotonic() + 10)
    assert b" 400 " in answer.split(b"\r\n")[0] and b"not valid JSON" in answer


def test_unexpected_failure_is_a_500_with_one_line_logged_in_full(daemon):
    with sqlite3.connect(daemon.home / "mnemoweave.sqlite") as db:
        db.execute("DROP TABLE skills")  # the store is broken under the daemon's feet
    status, message = refused(daemon, "GET", "/v1/skills")
    assert status == 500 and message.startswith("internal error: OperationalError")
    assert "\n" not in message and "Traceback" not in message
    state = daemon.call("GET", "/v1/daemon")
    assert state["requests"]["failed"] >= 1
    assert state["last_error"]["route"] == "GET /v1/skills"
    assert state["last_error"]["message"] == message
    log = (daemon.home / "logs" / "daemon.log").read_text(encoding="utf-8")
    assert "Traceback" in log and "no such table: skills" in log


@pytest.mark.parametrize(
    ("head", "status", "words"),
    [
        (b"POST /v1/memories HTTP/1.1\r\nContent-Length: -3\r\n\r\n", 400, b"Content-Length"),
        (b"POST /v1/memories HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n", 413, b"exceeds"),
    ],
)
def test_bad_content_length_is_refused(shared_daemon, head, status, words):
    where = client.socket_path(shared_daemon.home)
    answer = client._exchange(where, head, time.monotonic() + 10)
    assert f" {status} ".encode() in answer.split(b"\r\n")[0] and words in answer
    assert client.running(shared_daemon.home)
