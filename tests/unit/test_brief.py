"""The brief: what a session of a project starts with (brief.py, weave.py)."""

from dataclasses import replace

from mnemoweave.hosts import adapters
from mnemoweave.model import SessionEvent

P = "/srv/uploader"
RULES = [
    f"Service {name} logs JSON lines and keeps request ids in every {thing} it writes."
    for name in ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")
    for thing in ("record", "event", "span", "trace", "line")
]  # 30 rules of one plain sentence (12-13 words)


def refs(woven, tier):
    return [line.ref for line in woven.tiers.get(tier, ())]


def test_a_project_with_30_rules_of_ordinary_length_gets_all_of_them(engine):
    written = [engine.remember(rule, kind="pref", project=P).id for rule in RULES]
    start = engine.weave("", session="s", project=P, record=True)
    assert sorted(refs(start, "brief")) == sorted(written)
    assert start.tokens <= engine.config.brief_budget + engine.config.weave_budget


def test_the_brief_holds_rules_decisions_pins_and_global_preferences_only(engine):
    rule = engine.remember(
        "Never push to main; every change goes through a PR", kind="pref", project=P
    ).id
    pitfall = engine.remember(
        "Uploads hung until httpx got a 10s timeout", kind="conclusion", project=P
    ).id
    pinned = engine.remember(
        "The staging database is pg-stage-7", kind="fact", importance=5, project=P
    ).id
    mine = engine.remember("以后代码注释都用英文", kind="pref", project="").id
    engine.remember("The docs build with mkdocs", kind="fact", project=P)  # a plain fact
    engine.remember("Deploys go out on Fridays", kind="conclusion", project="")  # global
    engine.remember("Tabs in Makefiles", kind="pref", project="/srv/other")  # another project
    old = engine.remember("Uploads retry five times", kind="conclusion", project=P).id
    new = engine.remember("Uploads retry three times, on 5xx only", kind="conclusion", project=P).id
    engine.supersede(old, new)
    gone = engine.remember("Use black for formatting", kind="pref", project=P).id
    engine.forget(gone)
    start = engine.weave("", session="s", project=P)
    assert set(refs(start, "brief")) == {rule, pitfall, pinned, mine, new}


def test_the_brief_ranks_by_importance_feedback_and_use_then_newest(engine):
    first = engine.remember("Older rule about commit messages", kind="pref", project=P).id
    second = engine.remember("Newer rule about branch names", kind="pref", project=P).id
    used = engine.remember("Rule that prompts keep needing", kind="pref", project=P).id
    liked = engine.remember("Rule a reviewer marked useful", kind="pref", project=P).id
    top = engine.remember("Pinned rule", kind="pref", project=P, importance=5).id
    engine.feedback(liked, "useful")
    engine.db.execute("UPDATE memories SET access_count = 4 WHERE id = ?", (int(used[2:]),))
    engine.db.execute("UPDATE memories SET updated = 1 WHERE id = ?", (int(first[2:]),))
    start = engine.weave("", session="s", project=P)
    assert refs(start, "brief") == [top, liked, used, second, first]
    engine.config = replace(engine.config, brief_budget=60)  # room for one line or two
    assert refs(engine.weave("", session="t", project=P), "brief")[:1] == [top]


def test_proposals_follow_the_memories_most_confident_first_and_capped(engine):
    engine.remember("Never push to main", kind="pref", project=P)
    for number, text in enumerate(
        (
            "From now on, every migration gets a dry run first.",
            "We decided to move the storage client to httpx because uploads hung.",
            "以后 commit message 都用英文写。",
        )
    ):
        engine.ingest(f"s{number}", "user", text, project=P)
        engine.distill(session=f"s{number}")
    cards = engine.pending(P)
    assert len(cards) == 3
    start = engine.weave("", session="new", project=P)
    proposed = refs(start, "proposed")
    by_confidence = sorted(cards, key=lambda c: (-c.confidence, -int(c.id[2:])))
    assert proposed == [c.id for c in by_confidence]
    text = start.text
    assert text.index("## brief") < text.index("## proposed, not yet reviewed")
    engine.config = replace(engine.config, brief_proposals=1)
    assert refs(engine.weave("", session="other", project=P), "proposed") == proposed[:1]


def test_the_brief_goes_in_once_until_a_compaction_and_lines_are_not_repeated(engine):
    rule = engine.remember("Uploads use httpx with a 10 second timeout", kind="pref", project=P).id
    start = engine.weave("", session="s", project=P, record=True)
    assert refs(start, "brief") == [rule]
    prompt = engine.weave(
        "what timeout do uploads use with httpx", session="s", project=P, record=True
    )
    assert rule not in [line.ref for line in prompt.knowledge]  # given at the start
    assert engine.weave("", session="s", project=P, record=True).text == ""
    engine.handle(SessionEvent("pre_compact", "s", project=P))
    assert refs(engine.weave("", session="s", project=P, record=True), "brief") == [rule]


def test_a_host_without_a_start_gets_the_brief_with_its_first_prompt(engine):
    rule = engine.remember("以后代码注释都用英文", kind="pref", project="").id
    first = engine.weave("add a docstring to the uploader", session="s", record=True)
    assert refs(first, "brief") == [rule]
    assert "brief" not in engine.weave("and another one", session="s", record=True).tiers


def test_every_claude_code_start_gets_the_brief_its_session_lacks(engine):
    rule = engine.remember("Never push to main on Fridays", kind="pref").id
    payload = {"session_id": "s", "cwd": "/nowhere", "hook_event_name": "SessionStart"}
    for source in ("startup", "clear", "compact"):
        answer = adapters.handle(
            engine, "claude-code", "SessionStart", payload | {"source": source}
        )
        assert "Never push to main" in answer["hookSpecificOutput"]["additionalContext"], source
    resumed = adapters.handle(engine, "claude-code", "SessionStart", payload | {"source": "resume"})
    assert resumed is None and rule  # the resumed session holds it already


def test_a_brief_budget_of_zero_gives_no_brief(engine):
    engine.remember("Never push to main", kind="pref", project=P)
    engine.config = replace(engine.config, brief_budget=0)
    start = engine.weave("", session="s", project=P, record=True)
    assert "brief" not in start.tiers and "Never push to main" in start.text  # as a nudge
