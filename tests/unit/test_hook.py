"""The hook process against a stand-in daemon on the data dir's socket: what it prints,
spools and logs for each kind of answer, and what it imports on its common path; the
Claude Code plugin's launcher, which finds the program that runs it."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import socketserver
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import mnemoweave
from mnemoweave import hook
from mnemoweave.hook import PROGRAM, PROGRAM_MISSING, package_dir
from mnemoweave.hosts import client

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
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
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
    assert 4 < json.loads(body)["wait"] < hook.budget("UserPromptSubmit")
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


LAUNCHER = Path(__file__).resolve().parents[2] / "plugins/claude-code/scripts/mnemoweave"


def test_the_launcher_runs_without_site_and_spools_with_it(home):
    """Hosts start the hook without the site directories (python -S): the common path
    needs only the package, and the spool, which cleans secrets, adds them itself."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"MNEMOWEAVE_HOME": str(home)}
    hook_run = [str(LAUNCHER), "hook", "claude-code", "UserPromptSubmit"]
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


# --- the Claude Code plugin as its marketplace installs it: a copy in Claude Code's cache,
# with no checkout around it, whose launcher finds the program ($MNEMOWEAVE_BIN, then PATH,
# then the recorded one) or says once how to install it


ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "plugins" / "claude-code"
VENV_BIN = Path(sys.executable).parent
SYSTEM_PATH = "/usr/bin:/bin"


@pytest.fixture
def user(tmp_path: Path, home: Path) -> Path:
    """A HOME whose Claude Code installed the plugin from the marketplace of a clone."""
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "setup.sh").write_text("#!/bin/sh\n")
    plugins = tmp_path / "home" / ".claude" / "plugins"
    shutil.copytree(PLUGIN, plugins / "cache" / "mnemoweave" / "mnemoweave" / "0.1.0")
    known = {
        "other": {"source": {"source": "directory", "path": "/x"}, "installLocation": "/x"},
        "mnemoweave": {
            "source": {"source": "directory", "path": str(clone)},
            "installLocation": str(clone),
        },
    }
    (plugins / "known_marketplaces.json").write_text(json.dumps(known, indent=2))
    return tmp_path / "home"


def launch(user: Path, home: Path, *args: str, path: str = SYSTEM_PATH, stdin: bytes = b""):
    launcher = user / ".claude/plugins/cache/mnemoweave/mnemoweave/0.1.0/scripts/mnemoweave"
    env = {"HOME": str(user), "PATH": path, "MNEMOWEAVE_HOME": str(home)}
    env |= {"MNEMOWEAVE_HOOK_BUDGET_MS": "5000", "CLAUDE_PLUGIN_ROOT": str(launcher.parents[1])}
    return subprocess.run(
        [str(launcher), *args], input=stdin, capture_output=True, env=env, timeout=60
    )


def recorded(home: Path) -> list[str]:
    return (home / PROGRAM).read_text(encoding="utf-8").splitlines()


def test_the_marketplace_lists_the_plugin_whose_version_is_the_package_s():
    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    (entry,) = market["plugins"]
    plugin = (ROOT / entry["source"]).resolve()
    assert plugin == PLUGIN
    manifest = json.loads((plugin / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == entry["name"] == "mnemoweave"
    assert manifest["version"] == mnemoweave.__version__  # (manifest.json's test checks all)
    # what the plugin runs lies inside it
    for declared in ("hooks/hooks.json", ".mcp.json"):
        for command in _commands(json.loads((plugin / declared).read_text())):
            assert "${CLAUDE_PLUGIN_ROOT}/scripts/mnemoweave" in command and ".." not in command


def _commands(value) -> list[str]:
    if isinstance(value, dict):
        found = [value["command"]] if isinstance(value.get("command"), str) else []
        return found + [c for v in value.values() for c in _commands(v)]
    return [c for v in value for c in _commands(v)] if isinstance(value, list) else []


def test_the_installed_plugin_runs_the_program_that_install_recorded(user, home, real_models):
    done = subprocess.run(
        [str(VENV_BIN / "mnemoweave"), "install"],
        env=os.environ | {"MNEMOWEAVE_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and str(home / PROGRAM) in done.stdout, done.stderr
    assert recorded(home)[1:] == [package_dir(), str(VENV_BIN / "mnemoweave")]
    with stand_in(home, [(200, json.dumps({"output": CONTEXT}).encode())]) as got:
        ran = launch(user, home, "hook", "claude-code", "UserPromptSubmit", stdin=PROMPT_BYTES)
    assert (ran.returncode, json.loads(ran.stdout), ran.stderr) == (0, CONTEXT, b"")
    assert json.loads(got[0])["payload"] == PROMPT


PROMPT_BYTES = json.dumps(PROMPT).encode()


def test_a_program_on_path_runs_first_and_records_itself(user, home, tmp_path):
    (home / PROGRAM).write_text("/gone/python\n/gone\n/gone/mnemoweave\n")
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "mnemoweave").symlink_to(VENV_BIN / "mnemoweave")  # as `uv tool install` links
    for _ in range(2):  # then again, as recorded
        with stand_in(home, [(200, json.dumps({"output": CONTEXT}).encode())]):
            ran = launch(
                user,
                home,
                "hook",
                "claude-code",
                "UserPromptSubmit",
                path=f"{folder}:{SYSTEM_PATH}",
                stdin=PROMPT_BYTES,
            )
        assert (ran.returncode, json.loads(ran.stdout), ran.stderr) == (0, CONTEXT, b"")
        assert recorded(home)[1:] == [package_dir(), str(folder / "mnemoweave")]


def test_mnemoweave_bin_comes_first(user, home, tmp_path):
    fake = tmp_path / "fake"
    fake.write_text('#!/bin/sh\necho "fake $*"\n')
    fake.chmod(0o755)
    for args in (("mcp", "--project", "p"), ("hook", "claude-code", "Stop")):
        env = {"MNEMOWEAVE_BIN": str(fake)}
        ran = subprocess.run(
            [str(PLUGIN / "scripts" / "mnemoweave"), *args],
            env={"PATH": SYSTEM_PATH, "HOME": str(user), "MNEMOWEAVE_HOME": str(home)} | env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert (ran.returncode, ran.stdout) == (0, f"fake {' '.join(args)}\n"), ran.stderr


def test_with_no_program_the_first_session_start_says_how_to_install_it(
    user,
    home,
    real_models,
):
    start = json.dumps({"session_id": "s", "cwd": "/tmp", "hook_event_name": "SessionStart"})
    ran = launch(user, home, "hook", "claude-code", "SessionStart", stdin=start.encode())
    assert (ran.returncode, ran.stderr) == (0, b"")
    told = json.loads(ran.stdout)
    said = told["hookSpecificOutput"]["additionalContext"]
    clone = user.parent / "clone"
    assert f"run {clone}/setup.sh (or: uv tool install {clone})" in said
    assert told["systemMessage"] == said and told["hookSpecificOutput"]["hookEventName"] == (
        "SessionStart"
    )
    assert said in (home / "logs" / "hooks.log").read_text()
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):  # once, and never an error
        again = launch(user, home, "hook", "claude-code", event, stdin=start.encode())
        assert (again.returncode, again.stdout, again.stderr) == (0, b"", b"")
    server = launch(user, home, "mcp")
    assert server.returncode == 1 and f"run {clone}/setup.sh" in server.stderr.decode()

    subprocess.run(  # installed: it would be said again if the program went missing
        [str(VENV_BIN / "mnemoweave"), "install"],
        env=os.environ | {"MNEMOWEAVE_HOME": str(home)},
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert not (home / PROGRAM_MISSING).exists()
