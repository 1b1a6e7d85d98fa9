"""Secrets and private spans: after a whole session (hooks, transcript, distill, review,
export, a refused payload and a spooled one), no planted secret is in any file of the
data dir, and no `<private>` span either."""

from __future__ import annotations

import io
import json
from pathlib import Path

from running import start_daemon

from mnemoweave import client, hook
from mnemoweave.files import write_files

ROOT = Path(__file__).resolve().parents[2]
PAYLOADS = ROOT / "tests" / "e2e" / "payloads" / "claude-code"

# (what the user says around it, the secret part that must never be stored)
SECRETS = [
    ("the Anthropic key is {}", "sk-ant-api03-" + "Zq8v" * 20 + "-AA"),
    ("OPENAI_API_KEY={}", "sk-proj-" + "Xc4LmN8pQ2" * 5),
    ("AWS key id {} in the CI vars", "AKIAZ3MF7QWERTYU5XYZ"),
    ("aws_secret_access_key = {}", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzk8sPq2vT"),
    ("push with {} please", "ghp_" + "a1B2c3D4e5" * 4),
    ("the slack bot token: {}", "xoxb-" + "123456789012-" + "Ab3dEf6hIj9kLm"),
    ("maps key {}", "AIza" + "SyB3x9Kq-7Lm2Np4Rt6Vw8Yz0AbCdEfGhIj"),
    ("stripe {} for the test", "sk_live_" + "51HqLyjWDarjtT1zdp7dc"),
    ("Authorization: Bearer {}", "dG9rZW4tdGhhdC1pcy1sb25nLWVub3VnaA"),
    (
        "the session cookie was {}",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6y",
    ),
    ("connect to postgres://admin:{}@db.internal:5432/app", "S3cr3tP4ssw0rd"),
    ("in .env: DB_PASSWORD={}", "hunter2hunter2hunter2"),
    ("and SECRET_KEY='{}'", "django-insecure-8f#k2!qz%x&w1"),
    (
        "the deploy key:\n{}",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB"
        "\n-----END OPENSSH PRIVATE KEY-----",
    ),
]
PRIVATE = "my salary is 12345 zorblax"


def payload(event: str, **changes) -> dict:
    return json.loads((PAYLOADS / f"{event}.json").read_text()) | changes


def run_hook(event: str, data: dict) -> str:
    out = io.StringIO()
    assert hook.run("claude-code", event, io.BytesIO(json.dumps(data).encode()), out) == 0
    return out.getvalue()


def needles(secret: str) -> list[bytes]:
    """The secret, and for a private key its body: neither may be found anywhere."""
    lines = [line for line in secret.splitlines() if "-----" not in line] or [secret]
    return [line.encode() for line in lines]


def test_no_planted_secret_or_private_span_is_in_any_file(home, monkeypatch, tmp_path):
    monkeypatch.setenv("MNEMOWEAVE_HOME", str(home))
    monkeypatch.setenv("MNEMOWEAVE_BIN", "/bin/false")  # the spooled case: no daemon yet
    monkeypatch.setenv("MNEMOWEAVE_HOOK_BUDGET_MS", "0")
    said = [template.format(secret) for template, secret in SECRETS]
    run_hook("UserPromptSubmit", payload("UserPromptSubmit", prompt=said[0]))  # spooled
    assert list((home / "spool").glob("*.json"))
    monkeypatch.delenv("MNEMOWEAVE_BIN")
    monkeypatch.setenv("MNEMOWEAVE_HOOK_BUDGET_MS", "5000")
    daemon = start_daemon(home)
    try:
        run_hook("SessionStart", payload("SessionStart"))
        for text in said[1:]:
            prompt = f"From now on remember this: {text} <private>{PRIVATE}</private>"
            run_hook("UserPromptSubmit", payload("UserPromptSubmit", prompt=prompt))
            answer = f"Noted, I will always use it. {text}"
            run_hook("Stop", payload("Stop", last_assistant_message=answer))
        run_hook("Stop", {"session_id": 7, "prompt": said[2]})  # refused, logged
        run_hook("SessionEnd", payload("SessionEnd"))
        for card in daemon.call("GET", "/v1/cards?limit=100"):
            daemon.call("POST", f"/v1/cards/{card['id']}/review", {"decision": "accept"})
        daemon.call("POST", "/v1/memories", {"text": f"{said[3]} <private>{PRIVATE}</private>"})
        write_files(home / "export", daemon.call("GET", "/v1/export"))
        session = payload("Stop")["session_id"]
        stored = daemon.call("GET", f"/v1/turns?session={session}&limit=500")
        assert len(stored) >= len(said)  # the session really was stored
        assert any("[REDACTED:" in turn["text"] for turn in stored)
    finally:
        daemon.stop()
    assert client.running(home) is False
    files = [path for path in home.rglob("*") if path.is_file()]
    assert any(path.suffix == ".md" for path in files)  # the export is among them
    leaks = {
        str(path.relative_to(home)): needle.decode()[:24]
        for path in files
        for template, secret in SECRETS
        for needle in [*needles(secret), PRIVATE.encode()]
        if needle in path.read_bytes()
    }
    assert not leaks, leaks
