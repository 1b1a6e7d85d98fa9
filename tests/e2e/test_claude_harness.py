"""The Claude Code harness itself: the real CLI, no mnemoweave plugin, a fake model."""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from .claude import CLAUDE_CODE_VERSION, ClaudeHarness, make_plugin, request_texts
from .fake_anthropic import FakeAnthropic

PAYLOADS = Path(__file__).resolve().parent / "payloads" / "claude-code"
RECORD_PAYLOADS = os.environ.get("MNEMOWEAVE_E2E_RECORD_PAYLOADS") == "1"

COMMON_KEYS = {"session_id", "transcript_path", "cwd", "hook_event_name"}
TOOL_KEYS = {"tool_name", "tool_input", "tool_use_id"}
EVENT_KEYS = {
    "SessionStart": {"source"},
    "UserPromptSubmit": {"prompt", "prompt_id", "permission_mode"},
    "PreToolUse": TOOL_KEYS,
    "PostToolUse": TOOL_KEYS | {"tool_response", "duration_ms"},
    "Stop": {"stop_hook_active", "last_assistant_message"},
    "PreCompact": {"trigger", "custom_instructions"},
    "PostCompact": {"trigger", "compact_summary"},
    "SessionEnd": {"reason"},
}

MARKER_HOOK = """\
import json
import sys

json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {
    "hookEventName": "UserPromptSubmit", "additionalContext": "MARKER-123"}}))
"""

PROBE_HOOK = """\
import json
import os
import sys

payload = json.load(sys.stdin)
with open(os.environ["PROBE_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps({"event": sys.argv[1], "payload": payload}) + "\\n")
"""


def _command_hook(script: str, *args: str) -> dict[str, Any]:
    command = " ".join(['python3 "${CLAUDE_PLUGIN_ROOT}/hooks/' + script + '"', *args])
    return {"hooks": [{"type": "command", "command": command, "timeout": 10}]}


def test_claude_replies_with_the_fake_text(claude: ClaudeHarness, fake_anthropic: FakeAnthropic):
    fake_anthropic.reply = "PONG-FROM-THE-FAKE"
    result = claude.run("hello there")
    assert result.rc == 0, result
    assert result.reply == "PONG-FROM-THE-FAKE"
    assert result.json is not None
    assert result.json["is_error"] is False


def test_the_prompt_reaches_the_model(run_claude, claude_code):
    result = run_claude("please remember the word PELICAN-42")
    assert result.rc == 0, result
    (body,) = result.bodies
    assert body["stream"] is True and body["tools"]
    assert "please remember the word PELICAN-42" in result.model_text
    user_text = "\n".join(
        t.get("text", "") for t in body["messages"][0]["content"] if isinstance(t, dict)
    )
    assert "PELICAN-42" in user_text
    (post,) = [r for r in result.requests if r["method"] == "POST"]
    assert post["headers"]["user-agent"].startswith(f"claude-cli/{claude_code.version}")


def test_a_plugin_hook_context_reaches_the_model(claude: ClaudeHarness, tmp_path: Path):
    plugin = make_plugin(
        tmp_path / "marker-plugin",
        "marker",
        {"UserPromptSubmit": [_command_hook("marker.py")]},
        files={"hooks/marker.py": MARKER_HOOK},
    )
    result = claude.run("what do you know about me?", "--plugin-dir", str(plugin))
    assert result.rc == 0, result
    assert "MARKER-123" in result.injected_text
    assert "UserPromptSubmit hook additional context: MARKER-123" in result.model_text
    (transcript,) = claude.transcripts()
    assert "hook_additional_context" in transcript.read_text()


def test_a_tool_call_round_trips_through_the_fake_server(claude: ClaudeHarness):
    result = claude.run("USE_TOOL now", "--allowedTools", "Bash(echo:*)")
    assert result.rc == 0, result
    first, second = result.bodies
    assert "USE_TOOL now" in "\n".join(request_texts(first, system_prompt=False))
    assert second["messages"][-2]["content"][0]["type"] == "tool_use"
    tool_results = [
        block
        for block in second["messages"][-1]["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    assert tool_results and "TOOL-OK" in json.dumps(tool_results)
    assert result.reply == "OK-FAKE"


def test_each_run_is_a_new_session_in_the_same_home(claude: ClaudeHarness):
    first, second = claude.run_sessions("the secret is ALBATROSS-7", "what was the secret?")
    assert first.rc == 0 and second.rc == 0, (first, second)
    assert first.session_id != second.session_id
    assert "ALBATROSS-7" in first.model_text
    assert "ALBATROSS-7" not in second.model_text
    assert len(claude.transcripts()) == 2


def test_the_fake_server_is_local_and_bounded():
    with FakeAnthropic("BOUNDED", max_requests=2) as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        body = json.dumps(
            {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
        ).encode()

        def post() -> tuple[int, dict[str, Any]]:
            request = urllib.request.Request(
                server.base_url + "/v1/messages",
                data=body,
                headers={"content-type": "application/json", "x-api-key": "sk-fake"},
            )
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    return response.status, json.load(response)
            except urllib.error.HTTPError as exc:
                return exc.code, json.load(exc)

        status, reply = post()
        assert status == 200 and reply["content"] == [{"type": "text", "text": "BOUNDED"}]
        assert post()[0] == 200
        status, error = post()
        assert status == 400 and error["type"] == "error"
        assert len(server.requests) == 2 and server.refused == 1
        assert server.messages()[0]["messages"][0]["content"] == "hi"
        assert "x-api-key" not in server.requests[0]["headers"]
    with pytest.raises(RuntimeError):
        _ = server.port


def _placeholders(value: Any, replacements: list[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        for old, new in replacements:
            value = value.replace(old, new)
        return value
    if isinstance(value, list):
        return [_placeholders(v, replacements) for v in value]
    if isinstance(value, dict):
        return {k: _placeholders(v, replacements) for k, v in value.items()}
    return value


def _cwd_slug(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def test_hook_payloads_match_the_recorded_fixtures(claude: ClaudeHarness, tmp_path: Path):
    events = list(EVENT_KEYS)
    plugin = make_plugin(
        tmp_path / "probe-plugin",
        "probe",
        {event: [{"matcher": "*", **_command_hook("probe.py", event)}] for event in events},
        files={"hooks/probe.py": PROBE_HOOK},
    )
    log = tmp_path / "probe.jsonl"
    probe_env = {"PROBE_LOG": str(log)}
    common = ("--plugin-dir", str(plugin))
    used_tool = claude.run(
        "USE_TOOL probe the hooks", *common, "--allowedTools", "Bash(echo:*)", env=probe_env
    )
    assert used_tool.rc == 0, used_tool
    compacted = claude.run("/compact keep the tabs", "-c", *common, env=probe_env)
    assert compacted.rc == 0, compacted

    seen: dict[str, list[dict[str, Any]]] = {}
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        seen.setdefault(entry["event"], []).append(entry["payload"])
    assert set(events) <= set(seen), sorted(seen)
    sources = [p["source"] for p in seen["SessionStart"]]
    assert sources == ["startup", "resume", "compact"], sources
    assert {p["session_id"] for ps in seen.values() for p in ps} == {used_tool.session_id}
    assert seen["PostToolUse"][0]["tool_response"]["stdout"] == "TOOL-OK"
    assert seen["PreCompact"][0]["trigger"] == "manual"
    assert seen["PreCompact"][0]["custom_instructions"] == "keep the tabs"

    live = {event: seen[event][0] for event in events}
    slug = Path(live["SessionStart"]["transcript_path"]).parent.name
    replacements = [
        (slug, _cwd_slug("/tmp/PROJECT")),
        (str(claude.home), "/tmp/HOME"),
        (str(claude.cwd), "/tmp/PROJECT"),
        (str(claude.tmpdir), "/tmp/TMP"),
        (str(plugin), "/tmp/PLUGIN"),
    ]
    if RECORD_PAYLOADS:
        PAYLOADS.mkdir(parents=True, exist_ok=True)
        for event, payload in live.items():
            text = json.dumps(_placeholders(payload, replacements), indent=2) + "\n"
            (PAYLOADS / f"{event}.json").write_text(text)
    for event, payload in live.items():
        recorded = json.loads((PAYLOADS / f"{event}.json").read_text())
        assert COMMON_KEYS | EVENT_KEYS[event] <= set(payload), event
        if claude.claude.version == CLAUDE_CODE_VERSION:
            assert set(recorded) == set(payload), (event, sorted(recorded), sorted(payload))


@pytest.mark.parametrize("event", list(EVENT_KEYS))
def test_recorded_payloads_have_the_host_keys(event: str):
    payload = json.loads((PAYLOADS / f"{event}.json").read_text())
    assert payload["hook_event_name"] == event
    assert COMMON_KEYS | EVENT_KEYS[event] <= set(payload)
    assert payload["transcript_path"].startswith("/tmp/HOME/.claude/projects/-tmp-PROJECT/")
    assert payload["cwd"] == "/tmp/PROJECT"
