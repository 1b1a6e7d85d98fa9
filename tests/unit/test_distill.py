"""Distill: turns -> candidate cards that quote their evidence, never the same evidence twice."""

import json

import pytest
from click.testing import CliRunner

from mnemoweave.cli import cli
from mnemoweave.distill import sentences, traceable
from mnemoweave.errors import InvalidInput
from mnemoweave.hookspecs import hookimpl
from mnemoweave.model import Card, SessionEvent
from mnemoweave.plugins import register

CONVERSATION = [
    ("user", "以后代码注释都用英文，commit message 也用英文。"),
    ("assistant", "好的，以后注释都用英文。"),
    ("user", "The integration tests hang forever when Redis is not running."),
    (
        "assistant",
        "Found it. The hang was caused by the Redis client having no connect timeout; "
        "setting socket_connect_timeout=2 fixed it.",
    ),
    ("user", "haha nice, thanks!"),
    ("assistant", "You're welcome!"),
    ("user", "我们决定用 pnpm 代替 npm 管理前端依赖。"),
    ("user", "今天天气不错。"),
]


def _say(engine, script=CONVERSATION, session="s1", project="web"):
    return [engine.ingest(session, role, text, project=project).id for role, text in script]


def test_sentences_split_both_languages_and_skip_code_and_crumbs():
    text = "Use pnpm. It is faster!\n```sh\npnpm install\n```\n- ok\n以后都用英文。谢谢"
    assert sentences(text) == ["Use pnpm.", "It is faster!", "以后都用英文。"]


def test_traceable_means_every_sentence_is_in_the_evidence():
    evidence = ["We will use  PNPM instead of npm.", "以后代码注释都用英文。"]
    assert traceable("we will use pnpm instead of npm", evidence)
    assert traceable("以后代码注释都用英文。We will use pnpm instead of npm.", evidence)
    assert not traceable("We will use yarn instead of npm.", evidence)
    assert not traceable("以后代码注释都用英文。Tabs are better.", evidence)


def test_a_conversation_yields_cards_quoting_their_evidence_and_small_talk_none(engine):
    refs = _say(engine)
    cards = engine.distill()
    texts = {ref: engine.get(ref).text for ref in refs}
    assert cards and all(card.status == "pending" and card.id for card in cards)
    for card in cards:
        assert traceable(card.summary, [texts[ref] for ref in card.evidence])
        assert card.project == "web" and card.topic
    cited = {ref for card in cards for ref in card.evidence}
    small_talk = {refs[4], refs[5], refs[7]}
    assert not cited & small_talk
    (pref,) = [card for card in cards if card.suggested_kind == "pref"]
    assert pref.evidence == (refs[0],)  # the assistant's echo is not a preference
    (fix,) = [card for card in cards if "socket_connect_timeout=2 fixed it" in card.summary]
    assert fix.suggested_kind == "conclusion" and "caused by the Redis client" in fix.summary
    assert any("pnpm" in card.summary for card in cards)
    assert [c.id for c in engine.pending()] == [c.id for c in cards]


def test_rerunning_proposes_nothing_and_decided_evidence_is_never_proposed_again(engine):
    _say(engine)
    first = engine.distill()
    engine.review(first[0].id, "reject", why="not useful")
    engine.review(first[1].id, "accept")
    assert engine.distill() == []
    engine.db.execute("UPDATE turns SET distilled = NULL")  # walk the same history again
    assert engine.distill() == []
    assert engine.db.execute("SELECT count(*) FROM cards").fetchone()[0] == len(first)


def test_the_window_walks_history_by_session_time_and_slices(engine):
    _say(engine, session="old", project="web")
    _say(engine, [("user", "I prefer tabs over spaces in Go files.")], session="new")
    assert [c.evidence for c in engine.distill(session="new")] == [("t_9",)]
    assert engine.distill(since=1e12) == []  # nothing that recent
    first = engine.distill(limit=2)  # the first two turns of "old"
    assert {ref for c in first for ref in c.evidence} <= {"t_1", "t_2"}
    rest = engine.distill(offset=0)
    assert {ref for c in rest for ref in c.evidence} <= {f"t_{i}" for i in range(3, 9)}
    undistilled = engine.db.execute("SELECT count(*) FROM turns WHERE distilled IS NULL")
    assert undistilled.fetchone()[0] == 0
    with pytest.raises(InvalidInput, match="bad window"):
        engine.distill(limit=0)


def test_session_idle_and_end_distill_that_session(engine):
    _say(engine, CONVERSATION[:2], session="a")
    _say(engine, CONVERSATION[2:4], session="b")
    engine.handle(SessionEvent("idle", "a", project="web"))
    assert {c.suggested_kind for c in engine.pending()} == {"pref"}
    engine.handle(SessionEvent("end", "b", project="web"))
    assert {c.suggested_kind for c in engine.pending()} == {"pref", "conclusion"}


class _Inventive:
    """A distiller plugin that writes its own summaries: refused, since they are not quoted."""

    @hookimpl
    def register_distillers(self, register):
        def distill(turns, engine):
            first = turns[0]
            return [
                Card("", "The user loves Rust.", "pref", (first.id,), 0.9, first.project),
                Card("", first.text, "fact", ("t_999",), 0.9, first.project),  # no such turn
                Card("", first.text, "fact", (first.id,), 0.8, first.project),  # quoted: kept
            ]

        register("inventive", distill)


def test_a_plugin_distiller_is_used_but_cannot_invent_or_cite_missing_turns(engine):
    from dataclasses import replace

    register(engine.pm, _Inventive())
    engine.config = replace(engine.config, distiller="inventive")
    _say(engine, CONVERSATION[:1])
    (card,) = engine.distill()
    assert (card.summary, card.evidence) == (CONVERSATION[0][1], ("t_1",))


def test_distill_through_the_cli(engine):
    _say(engine)
    engine.close()
    runner = CliRunner()
    result = runner.invoke(cli, ["distill", "--session", "s1", "--json"])
    assert result.exit_code == 0, result.output
    cards = json.loads(result.output)["cards"]
    assert cards and all(card["id"].startswith("c_") for card in cards)
    again = runner.invoke(cli, ["distill"])
    assert again.exit_code == 0 and again.output.startswith("0 new card(s)")
    bad = runner.invoke(cli, ["distill", "--limit", "0"])
    assert bad.exit_code == 2 and "bad window" in bad.output
    bad_time = runner.invoke(cli, ["distill", "--since", "yesterday-ish"])
    assert bad_time.exit_code == 2


def test_the_reply_right_after_continues_a_topic(engine):
    _say(
        engine,
        [
            ("user", "Let's go with Dramatiq for the email jobs."),
            (
                "assistant",
                "Done: the checkout view now enqueues send_confirmation, which fixed the delay.",
            ),
        ],
    )
    (card,) = engine.distill()
    assert card.evidence == ("t_1", "t_2") and card.suggested_kind == "conclusion"


def test_with_a_model_sentences_on_one_topic_make_one_card_across_turns(engine):
    from dataclasses import replace

    from mnemoweave.embed.fake import HashEmbedder

    engine.use_embedder(HashEmbedder())
    engine._channels = [replace(engine.channels[0], relevant_cosine=0.5)]
    _say(
        engine,
        [
            ("assistant", "The upload hang was caused by httpx having no timeout."),
            ("user", "ok"),
            ("assistant", "We decided to deploy the docs site with GitHub Pages."),
            ("user", "thanks"),
            ("assistant", "Setting the httpx upload timeout to 10 seconds fixed the hang."),
        ],
    )
    cards = engine.distill()
    assert sorted(card.evidence for card in cards) == [("t_1", "t_5"), ("t_3",)]
    (hang,) = [card for card in cards if card.evidence == ("t_1", "t_5")]
    assert hang.summary == (
        "The upload hang was caused by httpx having no timeout. "
        "Setting the httpx upload timeout to 10 seconds fixed the hang."
    )


@pytest.mark.parametrize(
    ("text", "role", "classified", "expected"),
    [
        ("Can we move the emails to a background job?", "user", "mission", None),
        ("帮我把刚才的改动提交一下", "user", "mission", None),
        ("Let's go with Dramatiq, Celery is overkill.", "user", "mission", "conclusion"),
        ("那就从 poetry 换到 uv，CI 也一起改。", "user", "pref", "conclusion"),
        ("以后数据库迁移一律用 Django 生成的 migrations。", "user", "pref", "pref"),
        ("Done, and I documented it in the man page.", "assistant", "conclusion", None),
        (
            "Found it: the hang was caused by a missing timeout.",
            "assistant",
            "conclusion",
            "conclusion",
        ),
        ("The view re-runs its whole query on every read.", "assistant", "skill", "conclusion"),
        ("Release: 1. bump the version, 2. tag and push it.", "assistant", "skill", "skill"),
        ("I prefer tabs over spaces in Go files.", "assistant", "pref", None),
        ("It was!", "assistant", "conclusion", None),
    ],
)
def test_which_sentences_make_cards(text, role, classified, expected):
    from mnemoweave.distill import kind_of

    assert kind_of(text, role, classified) == expected
