"""The hook process against a stand-in daemon on the data dir's socket: what it prints,
spools and logs for each kind of answer, and what it imports on its common path."""

from __future__ import annotations

import io
import json
import os
import re
import socketserver
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mnemoweave import client, hook

PROMPT = {"session_id": "s1", "cwd": "/tmp", "prompt": "deploy notes"}
CONTEXT = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "ç"}}


@contextmanager
def stand_in(home: Path, answers: list[tuple[int, bytes]]) -> Iterator[list[bytes]]:
    """A daemon that answers each request with the next (status, body): the bodies it got."""
    got: list[bytes] = []

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                head += self.rfile.read(1)
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
            got.append(self.rfile.read(length))
            status, body = answers[min(len(got), len(answers)) - 1]
            self.wfile.write(
                b"HTTP/1.0 %d X\r\nContent-Length: %d\r\n\r\n%s" % (status, len(body), body)
            )

    server = socketserver.UnixStreamServer(client.socket_path(home), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield got
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        os.unlink(client.socket_path(home))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # a short path: a Unix socket's path is limited to about 100 bytes
    short = Path(os.path.realpath("/tmp")) / f"mwh-{os.getpid()}-{id(tmp_path)}"
    short.mkdir()
    monkeypatch.setenv("MNEMOWEAVE_HOME", str(short))
    monkeypatch.setenv("MNEMOWEAVE_HOOK_BUDGET_MS", "5000")
    monkeypatch.delenv("MNEMOWEAVE_HOOK_VIA", raising=False)
    yield short
    subprocess.run(["rm", "-rf", str(short)], check=False, timeout=30)


def run(raw: bytes) -> str:
    out = io.StringIO()
    assert hook.run("claude-code", "UserPromptSubmit", io.BytesIO(raw), out) == 0
    return out.getvalue()


def hooks_log(home: Path) -> str:
    path = home / "logs" / "hooks.log"
    return path.read_text() if path.exists() else ""


def test_the_payload_goes_as_read_and_the_output_comes_back_as_sent(home):
    raw = json.dumps(PROMPT).encode() + b"\n"
    sent = json.dumps({"output": CONTEXT}, ensure_ascii=False).encode()
    with stand_in(home, [(200, sent)]) as got:
        printed = run(raw)
    (body,) = got  # a prompt says how long it may wait for a daemon warming up
    assert re.fullmatch(rb'\{"wait": (\d+\.\d{3}), "payload": (.*)\}', body, re.S)[2] == raw
    assert 4 < json.loads(body)["wait"] < hook.budget(hook.PROMPT)
    assert json.loads(printed) == CONTEXT and "ç" in printed
    with stand_in(home, [(200, b'{"output": null}')]):
        assert run(raw) == ""


def test_an_answer_of_another_shape_is_read_whole(home):
    sent = json.dumps({"result": 1, "output": CONTEXT}).encode()
    with stand_in(home, [(200, sent)]):
        assert json.loads(run(json.dumps(PROMPT).encode())) == CONTEXT


def test_the_plugins_hooks_say_so(home, monkeypatch):
    monkeypatch.setenv("MNEMOWEAVE_HOOK_VIA", "plugin")
    with stand_in(home, [(200, b'{"output": null}')]) as got:
        run(json.dumps(PROMPT).encode())
    sent = json.loads(got[0])
    assert sent.pop("wait") > 0 and sent == {"via": "plugin", "payload": PROMPT}


def test_a_prompt_held_by_a_daemon_warming_up_is_asked_again_when_it_is_warm(home):
    again = b'{"error": "the daemon is warm now: send the hook again", "again": true}'
    sent = json.dumps({"output": CONTEXT}, ensure_ascii=False).encode()
    with stand_in(home, [(503, again), (503, again), (200, sent)]) as got:
        assert json.loads(run(json.dumps(PROMPT).encode())) == CONTEXT
    assert [json.loads(body) for body in got[1:]] == [{"payload": PROMPT}] * 2  # not held
    assert "wait" in json.loads(got[0])


def test_a_refused_payload_is_read_repaired_and_sent_again(home):
    raw = b'{"session_id": "s1", "cwd": "/tmp", "prompt": "deploy \xff notes"}'
    with stand_in(home, [(400, b'{"error": "not UTF-8"}'), (200, b'{"output": null}')]) as got:
        assert run(raw) == ""
    assert json.loads(got[1])["payload"]["prompt"] == "deploy \ufffd notes"
    with stand_in(home, [(400, b'{"error": "unknown host"}')]) as got:
        assert run(json.dumps(PROMPT).encode()) == ""
    assert len(got) == 2 and "refused: unknown host" in hooks_log(home)
    with stand_in(home, [(400, b'{"error": "payload must be an object"}')]) as got:
        assert run(b"null") == ""  # JSON, but nothing a host sends: refused, and said so
    assert len(got) == 2 and hooks_log(home).count("refused:") == 2
    with stand_in(home, [(400, b'{"error": "not JSON"}')]) as got:
        assert run(b"{not json") == ""
    assert len(got) == 1 and "unreadable payload" in hooks_log(home)
    assert not (home / "spool").exists()


def test_a_daemon_that_fails_gets_the_payload_spooled_not_sent_twice(home):
    with stand_in(home, [(500, b'{"error": "internal error"}')]) as got:
        assert run(json.dumps(PROMPT).encode()) == ""
    assert len(got) == 1
    (spooled,) = (home / "spool").glob("*.json")
    assert json.loads(spooled.read_text())["payload"] == PROMPT
    assert "HTTP 500" in hooks_log(home)


def test_the_common_path_imports_no_json_and_no_socket_module(home):
    probe = (
        "import io, sys\n"
        "from mnemoweave import hook\n"
        "out = io.StringIO()\n"
        "hook.run('claude-code', 'UserPromptSubmit', sys.stdin.buffer, out)\n"
        "print(out.getvalue())\n"
        "print(sorted(m for m in ('json', 'socket', 're', 'pathlib') if m in sys.modules))\n"
    )
    sent = json.dumps({"output": CONTEXT}).encode()
    with stand_in(home, [(200, sent)]):
        done = subprocess.run(
            [sys.executable, "-c", probe],
            input=json.dumps(PROMPT).encode(),
            capture_output=True,
            env={**os.environ, "MNEMOWEAVE_HOME": str(home)},
            timeout=60,
        )
    printed, imported = done.stdout.decode().splitlines()
    assert json.loads(printed) == CONTEXT
    assert imported == "[]"


LAUNCHER = Path(__file__).resolve().parents[2] / "hooks" / "mnemoweave-hook"


def test_the_launcher_runs_without_site_and_spools_with_it(home):
    """Hosts start the hook without the site directories (python -S): the common path
    needs only the package, and the spool, which cleans secrets, adds them itself."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"MNEMOWEAVE_HOME": str(home)}
    hook_run = [str(LAUNCHER), "claude-code", "UserPromptSubmit"]
    sent = json.dumps({"output": CONTEXT}).encode()
    with stand_in(home, [(200, sent)]):
        done = subprocess.run(
            hook_run, input=json.dumps(PROMPT).encode(), capture_output=True, env=env, timeout=60
        )
    assert json.loads(done.stdout) == CONTEXT
    key = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
    said = PROMPT | {"prompt": f"deploy notes with {key}"}
    with stand_in(home, [(500, b'{"error": "internal error"}')]):
        done = subprocess.run(
            hook_run, input=json.dumps(said).encode(), capture_output=True, env=env, timeout=60
        )
    assert (done.returncode, done.stdout) == (0, b"")
    (spooled,) = (home / "spool").glob("*.json")
    prompt = json.loads(spooled.read_text())["payload"]["prompt"]
    assert prompt.startswith("deploy notes with [REDACTED:") and key not in prompt
