"""The team server's front: a member's token, then the body's length, are checked before
the body is read; the token alone decides the member, its team and the authors. The
server runs for real on loopback, with Chroma in its process on a temporary directory."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mnemoweave.team import members
from mnemoweave.team.records import Records
from mnemoweave.team.server import pack
from mnemoweave.team.service import MAX_BODY, TeamHTTPServer, chroma_client

WITHIN = 5.0  # seconds any answer may take
DIM = 4


class Team:
    def __init__(self, path: Path, port: int) -> None:
        self.path, self.port = path, port
        self.alice = members.add(path, "alice", "acme")
        self.bob = members.add(path, "bob", "acme")
        self.zed = members.add(path, "zed", "beta")


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    path = tmp_path / "server"
    members.add(path, "nobody", "acme")  # the directory exists before the server reads it
    server = TeamHTTPServer("127.0.0.1", 0, members.Members(path), Records(chroma_client(path)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Team(path, server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def _send(port: int, head: str, body: bytes = b"") -> tuple[int, dict[str, Any]]:
    """One raw request (headers as written, then `body`); the status and JSON answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=WITHIN) as conn:
        conn.sendall(head.encode() + b"\r\n" + body)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = conn.recv(65536)
            if not chunk:
                break
            answer += chunk
    status = int(answer.split(b" ", 2)[1])
    return status, json.loads(answer.split(b"\r\n\r\n", 1)[1] or b"{}")


def _head(length: str, token: str, path: str = "/v1/team/join", method: str = "POST") -> str:
    return (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\nContent-Length: {length}\r\n"
    )


def call(
    port: int, token: str, path: str, body: dict[str, Any] | None = None
) -> tuple[int, dict[str, Any]]:
    data = json.dumps(body).encode() if body is not None else b""
    method = "POST" if body is not None else "GET"
    return _send(port, _head(str(len(data)), token, path, method), data)


def record(text: str, project: str = "github.com/acme/app", **extra: Any) -> dict[str, Any]:
    vector = pack(extra.pop("vector", [1.0, 0.0, 0.0, 0.0]))
    given = {"project": project, "kind": "fact", "text": text, "created": 1.7e9}
    return given | {"vector": vector} | extra


def joined(team: Team, token: str) -> None:
    assert call(team.port, token, "/v1/team/join", {"model": "m", "dim": DIM})[0] == 200


def test_the_token_names_the_member_and_its_team(team):
    status, answer = call(team.port, team.alice, "/v1/team")
    assert status == 200 and (answer["team"], answer["member"]) == ("acme", "alice")
    assert call(team.port, team.zed, "/v1/team")[1]["team"] == "beta"


@pytest.mark.parametrize(
    ("length", "token", "status"),
    [
        (str(96 << 20), "wrong", 401),  # 96 MB announced, never read
        ("5", "", 401),
        ("-1", None, 400),
        ("12abc", None, 400),
        (str(MAX_BODY + 1), None, 413),
    ],
)
def test_a_bad_token_or_length_is_refused_before_the_body_is_read(team, length, token, status):
    head = _head(length, team.alice if token is None else token)
    got, answer = _send(team.port, head)  # no body follows: reading one would wait for it
    assert got == status and answer["error"]
    assert call(team.port, team.alice, "/v1/team")[1]["records"] == 0  # nothing made


def test_a_chunked_body_is_refused(team):
    head = _head("4", team.alice) + "Transfer-Encoding: chunked\r\n"
    assert _send(team.port, head)[0] == 411


def test_a_revoked_token_is_refused_at_its_next_request(team):
    assert call(team.port, team.bob, "/v1/team")[0] == 200
    members.remove(team.path, "bob")
    status, answer = call(team.port, team.bob, "/v1/team")
    assert status == 401 and answer == {"error": "unknown or revoked token"}
    assert call(team.port, team.alice, "/v1/team")[0] == 200


def test_the_server_sets_the_authors_and_a_member_reads_only_its_team(team):
    joined(team, team.alice)
    forged = record("the cache is flushed on deploy", authors=["mallory"], updated=9e9)
    status, answer = call(
        team.port, team.alice, "/v1/team/publish", {"model": "m", "records": [forged]}
    )
    assert status == 200, answer
    changes = call(team.port, team.alice, "/v1/team/changes?since=0")[1]["records"]
    assert [(r["text"], r["authors"]) for r in changes] == [
        ("the cache is flushed on deploy", ["alice"])
    ]
    assert changes[0]["updated"] < 9e9
    joined(team, team.zed)
    assert call(team.port, team.zed, "/v1/team/changes?since=0")[1]["records"] == []
    # zed retracting acme's record touches nothing: it names no team, its own has none
    cid = changes[0]["cid"]
    assert call(team.port, team.zed, "/v1/team/retract", {"model": "m", "cids": [cid]})[1] == {
        "retracted": 0
    }
    # nor can bob take alice off it
    joined(team, team.bob)
    assert call(team.port, team.bob, "/v1/team/retract", {"model": "m", "cids": [cid]})[1] == {
        "retracted": 0
    }
    assert call(team.port, team.alice, "/v1/team")[1]["records"] == 1


def test_chromas_own_api_is_not_served(team):
    for path in ("/api/v2/heartbeat", "/api/v2/tenants/default_tenant/databases"):
        status, answer = call(team.port, team.alice, path)
        assert status == 404 and "no such call" in answer["error"]


@pytest.mark.parametrize(
    ("given", "error"),
    [
        (record("fine", vector=[1.0, 2.0]), "'vector' must be 4 finite float32 values"),
        (record("fine", vector=[1.0, float("nan"), 0.0, 0.0]), "'vector' must be 4 finite"),
        (record("fine") | {"vector": [1.0, 0.0, 0.0, 0.0]}, "'vector' must be 4 finite"),
        (record("token ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"), "looks like a secret"),
        (record("fine", project="ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"), "secret"),
        (record("fine") | {"kind": "chat"}, "unknown kind"),
        (record("fine") | {"created": float("nan")}, "created"),
    ],
)
def test_a_bad_record_is_refused_whole_and_named(team, given, error):
    joined(team, team.alice)
    status, answer = call(
        team.port, team.alice, "/v1/team/publish", {"model": "m", "records": [record("ok"), given]}
    )
    assert status == 400 and error in answer["error"]
    assert "ghp_" not in answer["error"]
    assert call(team.port, team.alice, "/v1/team")[1]["records"] == 0


def test_a_member_with_another_model_is_refused(team):
    joined(team, team.alice)
    status, answer = call(team.port, team.bob, "/v1/team/join", {"model": "other", "dim": DIM})
    assert status == 409 and "uses the embedding model m, this machine other" in answer["error"]
    status, answer = call(
        team.port, team.bob, "/v1/team/publish", {"model": "other", "records": [record("x")]}
    )
    assert status == 409


def test_the_members_file_keeps_no_token(team):
    kept = (team.path / members.FILE).read_text()
    assert team.alice not in kept and members.digest(team.alice) in kept
    assert oct((team.path / members.FILE).stat().st_mode & 0o777) == "0o600"
    assert oct(team.path.stat().st_mode & 0o777) == "0o700"
    with pytest.raises(Exception, match="already a member"):
        members.add(team.path, "alice", "beta")
