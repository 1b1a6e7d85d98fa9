"""Hostile input: whatever a hook payload or a request body holds, the daemon answers 200
or a clear 400 (never a 500), the hook process exits 0 silently, and the store stays sound.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from running import raw_request

from mnemoweave import hook
from mnemoweave.hosts import claude_code

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=12,
)
KEYS = ("session_id", "prompt", "cwd", "source", "last_assistant_message", "tool_name",
        "tool_input", "tool_response", "tool_use_id", "transcript_path")  # fmt: skip
PAYLOADS = st.dictionaries(st.sampled_from(KEYS), JSON | st.text(), max_size=6) | JSON
SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def post_raw(home, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
    return raw_request(home, "POST", path, body)


@SETTINGS
@given(event=st.sampled_from(claude_code.EVENTS), payload=PAYLOADS)
def test_any_payload_is_answered_or_refused_clearly(shared_daemon, event, payload):
    body = json.dumps({"payload": payload}).encode()
    status, answer = post_raw(shared_daemon.home, f"/v1/hooks/claude-code/{event}", body)
    assert status in (200, 400), answer
    if status == 400:
        assert set(answer) == {"error"} and "\n" not in answer["error"]
    else:
        assert answer["output"] is None or "hookSpecificOutput" in answer["output"]


@SETTINGS
@given(body=st.binary(max_size=300))
def test_any_bytes_are_refused_clearly(shared_daemon, body):
    status, answer = post_raw(shared_daemon.home, "/v1/hooks/claude-code/Stop", body)
    assert status == 400 and "error" in answer


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"[" * 100_000 + b"]" * 100_000, 400),
        (b'{"payload": ' + b"[" * 5_000 + b"]" * 5_000 + b"}", 400),
        (json.dumps({"payload": {"session_id": "s\ud800", "prompt": "x\ud800y"}}).encode(), 200),
    ],
    ids=["nested-body", "nested-payload", "lone-surrogates"],
)
def test_deep_nesting_is_refused_and_lone_surrogates_stored(shared_daemon, body, expected):
    status, answer = post_raw(shared_daemon.home, "/v1/hooks/claude-code/UserPromptSubmit", body)
    assert status == expected, answer


@pytest.mark.parametrize("k", [0, 1001, 2**61, 2**63 - 1])
def test_a_search_asking_for_too_many_hits_is_refused(shared_daemon, k):
    body = json.dumps({"query": "anything", "k": k}).encode()
    status, answer = post_raw(shared_daemon.home, "/v1/search", body)
    assert (status, answer) == (400, {"error": f"-k must be between 1 and 1000, got {k}"})


def test_path_like_projects_stay_names(shared_daemon):
    for cwd in ("../../etc", "/tmp/../../etc/passwd", "~root", "C:\\Windows\\..\\x"):
        payload = {"session_id": "paths", "prompt": f"where am I: {cwd}", "cwd": cwd}
        status, _ = post_raw(
            shared_daemon.home,
            "/v1/hooks/claude-code/UserPromptSubmit",
            json.dumps({"payload": payload}).encode(),
        )
        assert status == 200
    turns = shared_daemon.call("GET", "/v1/turns?session=paths")
    assert {t["project"] for t in turns} <= {"", "/etc/passwd"}  # names, never opened
    checks = shared_daemon.call("POST", "/v1/doctor", {})
    assert all(check["ok"] for check in checks), checks


@SETTINGS
@given(raw=st.binary(max_size=200) | JSON.map(lambda v: json.dumps(v).encode()))
def test_the_hook_process_exits_0_silently_on_anything(tmp_path_factory, monkeypatch, raw):
    home = tmp_path_factory.mktemp("h")
    monkeypatch.setenv("MNEMOWEAVE_HOME", str(home))
    monkeypatch.setenv("MNEMOWEAVE_HOOK_BUDGET_MS", "0")
    monkeypatch.setenv("MNEMOWEAVE_BIN", "/bin/false")  # no daemon will ever answer
    out = io.StringIO()
    assert hook.run("claude-code", "UserPromptSubmit", io.BytesIO(raw), out) == 0
    assert out.getvalue() == ""


@SETTINGS
@given(raw=st.binary(max_size=200) | PAYLOADS.map(lambda v: json.dumps(v).encode()))
def test_the_hook_process_sends_anything_to_a_daemon_and_prints_only_json(
    shared_daemon, monkeypatch, raw
):
    monkeypatch.setenv("MNEMOWEAVE_HOME", str(shared_daemon.home))
    monkeypatch.setenv("MNEMOWEAVE_HOOK_BUDGET_MS", "20000")
    out = io.StringIO()
    assert hook.run("claude-code", "UserPromptSubmit", io.BytesIO(raw), out) == 0
    assert out.getvalue() == "" or isinstance(json.loads(out.getvalue()), dict)
    assert not list((shared_daemon.home / "spool").glob("*.json"))  # nothing failed
