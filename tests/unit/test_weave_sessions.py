"""The weave across a host session: what goes in once, what earlier sessions add, what a
compaction resets; and the snippets it cuts from long turns."""

from dataclasses import replace

from mnemoweave.hosts import adapters
from mnemoweave.model import SessionEvent
from mnemoweave.recall.knowledge import weigh
from mnemoweave.recall.snippets import snippet
from mnemoweave.text import estimate_tokens

P = "/srv/uploader"


def refs(woven, tier=None):
    tiers = [tier] if tier else list(woven.tiers)
    return [line.ref for name in tiers for line in woven.tiers.get(name, ())]


def test_a_line_goes_into_a_session_once_until_a_compaction(engine):
    rule = engine.remember("以后代码注释都用英文", kind="pref", project=P).id
    fact = engine.remember("Uploads retry three times with backoff", project=P).id
    start = engine.weave("", session="s", project=P, record=True)
    assert refs(start, "brief") == [rule]  # the session starts with its rules
    first = engine.weave("how often do uploads retry", session="s", project=P, record=True)
    assert refs(first) == [fact]  # the brief is not sent again with every prompt
    again = engine.weave("do uploads retry", session="s", project=P, record=True)
    assert again.text == ""  # both lines are already in the host's context
    other = engine.weave("do uploads retry", session="t", project=P)
    assert set(refs(other)) == {rule, fact}  # another session has received nothing
    engine.handle(SessionEvent("pre_compact", "s", project=P))
    after = engine.weave("do uploads retry", session="s", project=P, record=True)
    assert set(refs(after)) == {rule, fact}  # the compaction dropped them from its context


def test_only_a_recorded_weave_counts_as_received_and_as_recalled(engine):
    fact = engine.remember("Uploads retry three times with backoff", project=P).id
    for _ in range(2):
        assert refs(engine.weave("do uploads retry", session="s", project=P)) == [fact]
    assert engine.get(fact).access_count == 0  # a preview recalls nothing
    engine.weave("do uploads retry", session="s", project=P, record=True)
    assert engine.get(fact).access_count == 1
    assert engine.weave("do uploads retry", session="s", project=P).text == ""


def test_earlier_sessions_reach_the_model_without_review(engine):
    said = engine.ingest(
        "old", "user", "We decided to use httpx with a 10s timeout because uploads hung.", project=P
    ).id
    engine.ingest("old", "assistant", "Done: the client now sets timeout=10.", project=P)
    engine.ingest("now", "user", "the uploads hung again today", project=P)
    woven = engine.weave("the uploads hung again, what do we do", session="now", project=P)
    (line,) = [line for line in woven.knowledge if line.ref == said]  # with its answer
    assert line.label.startswith("past · 20") and line.also == ("t_2",)
    assert line.text.startswith("user: We decided") and "assistant: Done:" in line.text
    assert all(line.ref != "t_3" for line in woven.knowledge)  # never the current session
    assert f"({said}, t_2)" in woven.text


def test_reviewed_memories_come_first_and_their_evidence_is_not_repeated(engine):
    said = engine.ingest("old", "user", "The staging database pg-stage-7 is read-only.", project=P)
    engine.ingest("old", "user", "Staging deploys need the VPN to reach pg-stage-7.", project=P)
    engine.remember("pg-stage-7 is read-only", project=P, evidence=[said.id])
    woven = engine.weave("can I write to the staging database pg-stage-7", session="x", project=P)
    knowledge = refs(woven, "knowledge")
    memories = [ref for ref in knowledge if ref.startswith("m_")]
    assert memories and knowledge[: len(memories)] == memories
    cited = {ref for m in memories for ref in engine.get(m).evidence}
    assert not cited & set(knowledge)


def test_the_scene_is_the_previous_session_then_nothing_then_the_capsule(engine):
    engine.ingest("old", "user", "Please migrate the uploader to async httpx this week.", project=P)
    engine.ingest("old", "assistant", "Migrated; the tests pass.", project=P)
    engine.ingest(
        "elsewhere", "user", "Set up the docs site with mkdocs please.", project="/srv/docs"
    )
    start = engine.weave("", session="new", project=P, record=True)
    assert refs(start, "scene")[0] == "session:old" and "t_1" in refs(start, "scene")
    engine.ingest("new", "user", "Now add retries to the upload client please.", project=P)
    assert "scene" not in engine.weave("retries", session="new", project=P).tiers
    engine.handle(SessionEvent("pre_compact", "new", project=P))
    after = engine.weave("retries", session="new", project=P)
    assert refs(after, "scene")[0] == "session:new" and "t_4" in refs(after, "scene")


def test_a_start_after_compaction_is_seen_before_the_weave(engine):
    rule = engine.remember("Never push to main on Fridays", kind="pref").id
    payload = {"session_id": "s", "cwd": "/nowhere", "hook_event_name": "SessionStart"}
    engine.weave("", session="s", project="", record=True)
    compact = adapters.handle(
        engine, "claude-code", "SessionStart", payload | {"source": "compact"}
    )
    assert "Never push to main" in compact["hookSpecificOutput"]["additionalContext"]
    resumed = adapters.handle(engine, "claude-code", "SessionStart", payload | {"source": "resume"})
    assert resumed is None and rule


def test_opencode_counts_only_what_reaches_the_chat(engine):
    engine.remember("以后代码注释都用英文", kind="pref")
    common = {"sessionID": "ses_1", "directory": "", "worktree": "/"}
    created = adapters.handle(engine, "opencode", "session.created", common)
    assert "以后代码注释都用英文" in created["context"]  # kept by the plugin as a fallback
    message = common | {"messageID": "msg_1", "text": "hello there, what is new"}
    answer = adapters.handle(engine, "opencode", "chat.message", message)
    assert "以后代码注释都用英文" in answer["context"]  # so the first message carries it


def test_zero_score_hits_never_appear(engine):
    engine.remember("uploads use httpx")
    engine.remember("the docs build with mkdocs")
    hits = engine.search("httpx uploads", mode="lexical")
    assert [hit.id for hit in hits] == ["m_1"] and all(hit.score > 0 for hit in hits)


def test_english_words_match_their_other_forms(engine):
    engine.remember("We decided to use httpx because uploads hung")
    assert [hit.id for hit in engine.search("upload client", mode="lexical")] == ["m_1"]
    assert [hit.id for hit in engine.search("hanging uploading", mode="lexical")] == ["m_1"]


def test_a_snippet_is_the_matching_sentence_with_what_fits_around_it():
    text = (
        "We looked at the logs first. Then we checked the proxy settings. "
        "The uploads hung because httpx had no timeout, so we set it to 10 seconds. "
        "After that the nightly job passed. Everyone was happy about it. " * 3
    )
    cut = snippet(text, {"timeout": 3.0, "httpx": 2.0}, 30)
    assert "httpx had no timeout" in cut and estimate_tokens(cut) <= 31
    assert cut.startswith("…") and cut.endswith("…")
    assert snippet("short text", {"x": 1.0}, 30) == "short text"
    chinese = (
        "我们先看了日志。" * 4
        + "上传卡住是因为 httpx 没有设置超时，后来设成了十秒。"
        + "大家都很满意。" * 4
    )
    cut = snippet(chinese, {"超时": 3.0}, 30)
    assert "没有设置超时" in cut and estimate_tokens(cut) <= 31


def test_a_prompt_that_names_nothing_gets_no_knowledge(engine):
    engine.ingest("old", "user", "thanks, that fixed it! 谢谢，辛苦了", project=P)
    engine.ingest("old", "user", "2+2 is 4 and the upload part size is 8 MiB", project=P)
    for prompt in ("thanks!", "谢谢，辛苦了", "What's 2+2?", "ok 好的"):
        assert engine.weave(prompt, session="new", project=P).knowledge == (), prompt
    assert engine.weave("upload part size", session="new", project=P).knowledge


def test_a_prompt_with_one_clear_match_also_gets_its_weaker_ones(engine):
    strong = engine.ingest(
        "a", "user", "The upload worker crashed on macOS because fork is unsafe there", project=P
    ).id
    engine.ingest("a", "assistant", "Set OBJC_DISABLE_INITIALIZE_FORK_SAFETY first.", project=P)
    weak = engine.ingest("b", "user", "The upload worker also runs on macOS laptops", project=P).id
    engine.ingest("b", "assistant", "Right, the same worker image everywhere.", project=P)
    engine.ingest("c", "user", "The docs build with mkdocs and deploy on tag", project=P)
    prompt = "why did the upload worker crash after fork on macOS"
    _, past, _ = weigh(engine, prompt, "now", P)
    score = {w.hit.id: w.score for w in past}
    assert score[strong] > score[weak] > 0

    def woven(gate, line_gate):
        engine.config = replace(engine.config, weave_gate=gate, weave_line_gate=line_gate)
        return refs(engine.weave(prompt, session="now", project=P), "knowledge")

    assert woven(score[strong], score[weak]) == [strong, weak]  # the strong one lets it in
    assert woven(score[strong], score[strong]) == [strong]
    assert woven(score[strong] + 1e-6, score[weak]) == []  # without it, neither is woven


def test_weak_matches_the_weave_does_not_show_are_not_counted_as_recalled(engine):
    shown = engine.remember("Uploads retry three times with backoff", project=P).id
    weak = engine.remember("The retry budget of the billing cron is five", project=P).id
    assert [hit.id for hit in engine.search("uploads retry backoff", touch=False)][:2] == [
        shown,
        weak,
    ]  # search finds both; the gate lets one through
    woven = engine.weave("uploads retry backoff", session="s", project=P, record=True)
    assert refs(woven, "knowledge") == [shown]
    assert (engine.get(shown).access_count, engine.get(weak).access_count) == (1, 0)


def test_a_replayed_spool_stores_and_weaves_for_nobody(engine):
    from mnemoweave import hook
    from mnemoweave.daemon.spool import replay_spool

    fact = engine.remember("Uploads retry three times with backoff", project=P).id
    prompt = {"session_id": "s", "cwd": P, "prompt": "do uploads retry with backoff?"}
    hook.spool(engine.home, "claude-code", "UserPromptSubmit", prompt)
    assert replay_spool(engine) == 1
    assert engine.get("t_1").text == "do uploads retry with backoff?"
    assert engine.get(fact).access_count == 0  # nobody was there to read a weave
    assert engine.weave("do uploads retry", session="s", project=P).tiers  # nothing recorded
