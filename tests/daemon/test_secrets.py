"""Secrets and private spans through every write path: the corpus of secret formats in
English and Chinese (tests/secrets_corpus.py) goes through the Claude Code hooks (spooled and
live), the transcript follower, the OpenCode and dsh plugins' spools, the API's ingest, batch
ingest and remember, identifiers (a session, host, turn key, project or actor holding a
token is refused), the CLI, import, the MCP tools, distilled cards accepted and rejected
with a reason, skills and their source URLs, and both exports. Afterwards no file under the
data dir (SQLite with its FTS tables and WAL, Chroma, logs, spool) or the exports holds any
of it, not even lower-cased as the full-text index keeps words."""

from __future__ import annotations

import io
import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import pytest
from running import NODE, daemon_env, run_node, start_daemon

from mnemoweave import hook
from mnemoweave.capture.import_export import write_files
from mnemoweave.hosts import client
from mnemoweave.secrets import holds_secret
from mnemoweave.text import clean
from secrets_corpus import CORPUS, rand

ROOT = Path(__file__).resolve().parents[2]
PAYLOADS = ROOT / "tests" / "e2e" / "payloads" / "claude-code"
OPENCODE_DRIVE = ROOT / "tests" / "e2e" / "opencode_drive.mjs"
DSH_DRIVE = Path(__file__).with_name("dsh_drive.mjs")
WITHIN = 120.0

PRIVATE = "my salary is 12345 zorblax"
SAID = [secret.text for secret in CORPUS]
ALL = "\n\n".join(SAID)  # the whole corpus in one text
# A token that starts just before the 300 characters a tool observation keeps: cut first,
# its head would no longer look like a token.
EDGE = "ghp_" + rand(36)
EDGE_COMMAND = "deploy --note " + "n" * 262 + " " + EDGE  # 20 of its characters kept

pytestmark = [pytest.mark.slow, pytest.mark.skipif(NODE is None, reason="node is not installed")]


def needles() -> dict[str, bytes]:
    """What may be found nowhere, by name: each secret, its pieces, and (lower-cased, for
    the full-text index, which keeps alphanumeric runs in lower case and stems words) the
    head of its longest alphanumeric run."""
    found = {"private span": b"zorblax", "clipped token": EDGE[:18].encode()}
    for secret in CORPUS:
        for n, needle in enumerate(secret.needles):
            found[f"{secret.name} #{n}"] = needle.encode()
            run = max(re.findall(r"[A-Za-z0-9]+", needle), key=len)
            if len(run) >= 16:
                found[f"{secret.name} #{n}, indexed"] = run[:-6].lower().encode()
    return found


def leaks(*folders: Path) -> dict[str, str]:
    """file -> the first needle found in it, over every file under `folders` (symlinks,
    such as the models linked in, are not followed: nothing of ours is written there)."""
    found = {}
    wanted = needles()
    for folder in folders:
        for where, _dirs, names in os.walk(folder):
            for name in names:
                path = Path(where, name)
                if path.is_symlink():
                    continue
                data = path.read_bytes()
                lowered = data.lower()
                for what, needle in wanted.items():
                    if needle in (lowered if what.endswith("indexed") else data):
                        found[str(path.relative_to(folder.parent))] = what
                        break
    return found


def payload(event: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((PAYLOADS / f"{event}.json").read_text())
    return data | changes


def run_hook(event: str, data: dict[str, Any]) -> str:
    out = io.StringIO()
    assert hook.run("claude-code", event, io.BytesIO(json.dumps(data).encode()), out) == 0
    return out.getvalue()


def waited(what: str, ready) -> None:
    deadline = time.monotonic() + WITHIN
    while not ready():
        assert time.monotonic() < deadline, f"waited too long for {what}"
        time.sleep(0.1)


def refused_without_echo(daemon, path: str, body: dict[str, Any], token: str) -> None:
    with pytest.raises(client.DaemonError) as got:
        daemon.call("POST", path, body)
    assert got.value.status == 400 and "looks like a secret" in str(got.value), got.value
    assert token not in str(got.value)


def event(kind: str, **properties: Any) -> dict[str, Any]:
    return {"event": {"type": kind, "properties": properties}}


def spool_without_a_daemon(monkeypatch, env: dict[str, str], repo: Path, tmp_path: Path):
    """Every spooling writer, with no daemon to take the payloads."""
    with monkeypatch.context() as nothing_starts:
        nothing_starts.setenv("MNEMOWEAVE_BIN", "/bin/false")
        nothing_starts.setenv("MNEMOWEAVE_HOOK_BUDGET_MS", "0")
        prompt = f"{ALL} <private>{PRIVATE}</private>"
        run_hook("UserPromptSubmit", payload("UserPromptSubmit", prompt=prompt))
        read = {"tool_name": "Read", "tool_input": {"file_path": "/p/.env"}}
        run_hook("PostToolUse", payload("PostToolUse", **read, tool_response={"stdout": ALL}))
    failing = tmp_path / "no-daemon"  # no daemon starts; what is spooled is still cleaned
    real = Path(sys.executable).with_name("mnemoweave")
    failing.write_text(f'#!/bin/sh\n[ "$1" = redact ] && exec "{real}" "$@"\nexit 1\n')
    failing.chmod(0o755)
    answer = {"id": "msg_a1", "sessionID": "ses_secret", "role": "assistant"}
    part = {"id": "prt_1", "messageID": "msg_a1", "sessionID": "ses_secret", "type": "text"}
    steps = [
        event("session.created", sessionID="ses_secret", info={"id": "ses_secret"}),
        {"chat": {"sessionID": "ses_secret", "messageID": "msg_u1", "text": ALL}},
        event("message.updated", sessionID="ses_secret", info=answer),
        event("message.part.updated", sessionID="ses_secret", part={**part, "text": ALL}),
        event("session.idle", sessionID="ses_secret"),
    ]
    spec: dict[str, Any] = {
        "plugin": str(ROOT / "plugins/opencode/mnemoweave.js"),
        "directory": str(repo),
    }
    spec |= {"worktree": str(repo), "messages": [], "steps": steps}
    run_node(OPENCODE_DRIVE, spec, env | {"MNEMOWEAVE_BIN": str(failing)}, WITHIN)
    spec = {"plugin": str(ROOT / "plugins/dsh/index.js"), "home": env["MNEMOWEAVE_HOME"]}
    spec |= {"session": "dsh-secret", "cwd": str(repo), "prompt": ALL, "answer": ALL}
    run_node(DSH_DRIVE, spec, env, WITHIN)


def test_no_secret_of_the_corpus_reaches_any_file(home, real_models, monkeypatch, tmp_path):
    user, repo, exports = tmp_path / "user", tmp_path / "repo", tmp_path / "exports"
    (repo / ".git").mkdir(parents=True)
    (home / "config.toml").unlink()  # the real model: the vector index is written too
    monkeypatch.setenv("HOME", str(user))
    env = daemon_env(home, HOME=str(user))

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mnemoweave", *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=WITHIN,
            env=env,
            cwd=repo,
            check=False,
        )

    def mw(*args: str, stdin: str | None = None) -> str:
        done = run(*args, stdin=stdin)
        assert done.returncode == 0, (args[:2], done.stderr[-2000:])
        return done.stdout

    # 1. No daemon: the Claude Code hook and both JS plugins spool what they could not send.
    spool_without_a_daemon(monkeypatch, env, repo, tmp_path)
    spooled = [json.loads(p.read_text()) for p in (home / "spool").glob("*.json")]
    redacted = {record["host"] for record in spooled if "[REDACTED:" in json.dumps(record)}
    assert redacted == {"claude-code", "opencode", "dsh"}

    # 2. A daemon: the spool is stored, then every other path.
    transcript = user / ".claude" / "projects" / "-tmp-PROJECT" / "transcript-secret.jsonl"
    transcript.parent.mkdir(parents=True)
    said = [(role, text) for text in SAID for role in ("user", "assistant")]
    lines = [
        {
            "type": role,
            "sessionId": "transcript-secret",
            "cwd": str(repo),
            "message": {"role": role, "content": [{"type": "text", "text": text}]},
        }
        for role, text in said
    ]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    daemon = start_daemon(home, HOME=str(user))
    try:
        waited("the spool", lambda: not list((home / "spool").glob("*.json")))
        for session in ("ses_secret", "dsh-secret"):
            assert daemon.call("GET", f"/v1/turns?session={session}"), session

        # the Claude Code hooks, live; the transcript they name is followed
        start = payload("SessionStart")
        run_hook("SessionStart", start | {"transcript_path": str(transcript)})
        for text in SAID:
            prompt = f"From now on remember this: {text} <private>{PRIVATE}</private>"
            run_hook("UserPromptSubmit", payload("UserPromptSubmit", prompt=prompt))
            run_hook("Stop", payload("Stop", last_assistant_message=f"Noted, always: {text}"))
        tool = {"command": EDGE_COMMAND, "description": "deploy"}
        run_hook("PostToolUse", payload("PostToolUse", tool_input=tool, tool_use_id="toolu_edge"))
        write = {"file_path": "/tmp/PROJECT/.env", "content": ALL}
        run_hook("PostToolUse", payload("PostToolUse", tool_name="Write", tool_input=write))
        run_hook("Stop", {"session_id": 7, "prompt": ALL})  # refused, and logged
        run_hook("SessionEnd", payload("SessionEnd"))
        distinct = len({(role, clean(text)) for role, text in said})  # keys are of clean text
        waited(
            "the transcript",
            lambda: (
                len(daemon.call("GET", "/v1/turns?session=transcript-secret&limit=500")) == distinct
            ),
        )

        # the API, the CLI and import
        for n, text in enumerate(SAID):
            daemon.call("POST", "/v1/turns", {"session": "api", "role": "user", "text": text})
            daemon.call("POST", "/v1/memories", {"text": f"{text} <private>{PRIVATE}</private>"})
            daemon.call("POST", "/v1/memories", {"text": f"note {n}", "tags": [text]})
        batch = [{"session": "batch", "role": "assistant", "text": text} for text in SAID]
        daemon.call("POST", "/v1/turns/batch", {"turns": batch})
        mw("remember", "-", stdin=ALL)
        mw("ingest", "--session", "cli", "--role", "user", "-", stdin=ALL)
        imports = tmp_path / "imports"
        imports.mkdir()
        rows = [{"session": "imported", "role": "user", "text": text} for text in SAID]
        (imports / "turns.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        sections = [f"## {secret.name}\n\n{secret.text}\n" for secret in CORPUS]
        (imports / "notes.md").write_text("\n".join(sections))
        mw("import", str(imports))
        mw("import", "claude-code", "--all")

        # identifiers that hold a token are refused whole, without an echo, on every path
        # that takes one (the leak check at the end holds them to the logs too)
        tokens = [s.needles[0] for s in CORPUS if holds_secret(s.needles[0])]
        assert len(tokens) >= 60, len(tokens)
        for token in tokens:
            turn = {"session": "ids", "role": "user", "text": "an ordinary prompt"}
            for field, value in (
                ("session", f"s-{token}"),
                ("host", f"h {token}"),
                ("key", f"claude-code:ids:{token}"),
                ("project", f"/srv/{token}"),
            ):
                refused_without_echo(daemon, "/v1/turns", turn | {field: value}, token)
            note = {"text": "an ordinary note"}
            for field in ("project", "actor"):
                refused_without_echo(daemon, "/v1/memories", note | {field: token}, token)
            prompt = payload("UserPromptSubmit", session_id=f"s-{token}", prompt="hello there")
            run_hook("UserPromptSubmit", prompt)  # answers (exit 0); stores nothing of it
        for token in tokens[:3]:
            for args in (
                ["ingest", "--session", token, "--role", "user", "-"],
                ["remember", "--project", token, "-"],
            ):
                done = run(*args, stdin="an ordinary line")
                assert done.returncode != 0 and "looks like a secret" in done.stderr, done
                assert token not in done.stderr + done.stdout

        # distilled cards: two accepted (one with an edited summary), two rejected with a reason
        daemon.call("POST", "/v1/distill", {})
        cards = [card["id"] for card in daemon.call("GET", "/v1/cards?limit=500")]
        assert len(cards) >= 4, cards
        daemon.call("POST", f"/v1/cards/{cards[0]}/review", {"decision": "accept"})
        edited = {"decision": "accept", "summary": ALL, "title": SAID[0]}
        daemon.call("POST", f"/v1/cards/{cards[1]}/review", edited)
        mw("review", cards[2], "reject", "--why", ALL)

        # skills: steps, and source URLs that carry passwords and tokens
        plain = [s.needles[0] for s in CORPUS if re.fullmatch(r"[A-Za-z0-9_.\-]+", s.needles[0])]
        urls = [f"https://wiki:{p}@wiki.example.com/p?access_token={p}" for p in plain]
        teach = ["skill", "teach", "leaky", "--summary", SAID[0]]
        teach += [arg for text in SAID for arg in ("--step", text)]
        teach += [arg for url in urls for arg in ("--source-url", url)]
        mw(*teach)
        assert "[REDACTED:password]" in mw("skill", "load", "leaky")

        # the MCP tools, in this process, through the daemon
        from mnemoweave.mcp import server as mcp_server

        server = mcp_server.build(str(repo))
        calls = [
            ("memory_remember", {"text": ALL, "kind": "fact"}),
            ("memory_review", {"id": cards[3], "decision": "reject", "why": ALL}),
            (
                "memory_skill",
                {
                    "action": "teach",
                    "name": "leaky-mcp",
                    "summary": SAID[1],
                    "steps": SAID,
                    "source_urls": urls,
                },
            ),
        ]
        for name, arguments in calls:
            anyio.run(server.call_tool, name, arguments)  # raises on a tool error

        # the exports
        mw("export", str(exports))
        write_files(home / "export", daemon.call("GET", "/v1/export"))
        stored = daemon.call("GET", "/v1/turns?session=api&limit=500")
        assert len(stored) == len(SAID) and all("[REDACTED:" in t["text"] for t in stored)
    finally:
        daemon.stop()
    assert client.running(home) is False
    assert any(path.suffix == ".md" for path in exports.iterdir())
    assert not leaks(home, exports)
    with closing(sqlite3.connect(f"file:{home / 'mnemoweave.sqlite'}?mode=ro", uri=True)) as db:
        reasons = [row[0] for row in db.execute("SELECT why FROM cards WHERE why IS NOT NULL")]
        steps = db.execute("SELECT steps, source_urls FROM skills").fetchall()
    assert len(reasons) == 2 and all("[REDACTED:" in why for why in reasons)
    assert len(steps) == 2 and all("[REDACTED:password]" in urls for _, urls in steps)
