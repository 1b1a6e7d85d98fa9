"""Distill: turns -> candidate cards that quote their evidence, never the same evidence twice."""

import json

import pytest
from click.testing import CliRunner

from mnemoweave.cli.main import cli
from mnemoweave.errors import InvalidInput
from mnemoweave.hookspecs import hookimpl
from mnemoweave.learn.distill import extractive
from mnemoweave.learn.statements import sentences, stated, summary_of, traceable
from mnemoweave.model import Card, SessionEvent, Turn
from mnemoweave.text import normalise

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
    # the rule with the reply that took it up (the assistant's echo is no card of its own)
    assert pref.evidence == (refs[0], refs[1])
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

    engine.pm.register(_Inventive())
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
    assert again.exit_code == 0 and again.output.startswith("0 new cards to review")
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
            ("assistant", "The upload hang was caused by `httpx` having no timeout."),
            ("user", "ok"),
            ("assistant", "We decided to deploy the docs site from `docs/` with GitHub Pages."),
            ("user", "thanks"),
            ("assistant", "Setting the `httpx` upload timeout to 10 seconds fixed the hang."),
        ],
    )
    cards = engine.distill()
    assert sorted(card.evidence for card in cards) == [("t_1", "t_5"), ("t_3",)]
    (hang,) = [card for card in cards if card.evidence == ("t_1", "t_5")]
    assert hang.summary == (
        "The upload hang was caused by `httpx` having no timeout. "
        "Setting the `httpx` upload timeout to 10 seconds fixed the hang."
    )


def test_sentences_keep_inline_code_and_step_numbers_whole():
    text = (
        "It fails with `Catalog Error: no table!` but `dbt run` works. "
        "Release: 1. bump the version, 2. tag and push it. My count is at 32. Nice"
    )
    assert sentences(text) == [
        "It fails with `Catalog Error: no table!` but `dbt run` works.",
        "Release: 1. bump the version, 2. tag and push it.",
        "My count is at 32.",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Options:\n- waterfall and river tours\n- scuba diving and snorkeling\n**Note** it is fine",
        "## Setup steps\n1. Install the `uv` tool\n2. Run `uv sync` in the repo. Then test it.",
        "推荐：\n- 先看 `pg_stat_activity`\n- 再查慢日志\n总结一下就是这样。最后再确认。",
        "Use pnpm. It is faster! 以后都用英文。然后发布",
    ],
)
def test_a_summary_splits_back_into_its_sentences_and_is_found_in_its_source(text):
    parts = sentences(text)
    summary = summary_of(parts)
    assert sentences(summary) == parts
    assert traceable(summary, [text])


def test_lists_and_headings_make_cards_the_trace_check_accepts(engine, caplog):
    answer = (
        "The deploy broke because `settings.py` reads `DATABASE_URL` twice:\n"
        "- the first read happens at import time\n"
        "- the second read happens in `get_engine()`\n"
        "Fixed by reading it once in `config.py`."
    )
    _say(engine, [("user", "why did the deploy break?"), ("assistant", answer)])
    with caplog.at_level("WARNING", logger="mnemoweave.learn.distill"):
        cards = engine.distill()
    assert cards and not [r for r in caplog.records if "refused" in r.getMessage()]
    for card in cards:
        assert traceable(card.summary, [answer])


@pytest.mark.parametrize(
    "request_text",
    [
        "add a test for the upload client",
        "fix the flaky login test",
        "给上传模块加注释",
        "Can you rename `upload_v2` to `upload`?",
        "帮我把 /v1/users 的文档也改一下",
    ],
)
def test_a_one_off_task_request_makes_no_card(engine, request_text):
    _say(engine, [("user", request_text), ("assistant", "OK.")])
    assert engine.distill() == []


@pytest.mark.parametrize(
    ("goal", "phrase"),
    [
        ("This quarter we are migrating the uploader to S3.", "migrating the uploader"),
        ("我们的目标是下个月上线 v2。", "下个月上线 v2"),
        ("By Friday the cart page has to work without full page reloads.", "cart page"),
    ],
)
def test_a_standing_goal_is_a_mission(engine, goal, phrase):
    _say(engine, [("user", goal), ("user", "给上传模块加注释")])
    (card,) = engine.distill()
    assert card.suggested_kind == "mission" and phrase in card.summary
    assert card.evidence == ("t_1",)


@pytest.mark.parametrize(
    "rule",
    [
        "合并前必须跑 ruff 检查",
        "never commit directly to main",
        "以后提交信息都用英文",
        "always run migrations with --dry-run first",
        "禁止在生产库上直接改数据，一律走变更单。",
        "From now on, every endpoint must have a test.",
    ],
)
def test_a_rule_is_a_preference_card(engine, rule):
    _say(engine, [("user", rule)])
    (card,) = engine.distill()
    assert (card.suggested_kind, card.summary, card.evidence) == ("pref", rule, ("t_1",))


@pytest.mark.parametrize(
    ("role", "pitfall", "card"),
    [
        (
            "user",
            "踩坑记录：RQ 的 worker 在 macOS 上 fork 会崩，需要设置 "
            "OBJC_DISABLE_INITIALIZE_FORK_SAFETY=YES 才行",
            "RQ 的 worker 在 macOS 上 fork 会崩，需要设置 "
            "OBJC_DISABLE_INITIALIZE_FORK_SAFETY=YES 才行",
        ),
        (
            "user",
            "gotcha: the pool deadlocks unless you set max_overflow=0",
            "The pool deadlocks unless you set max_overflow=0",
        ),
        (
            "user",
            "注意：并发写 SQLite 会导致 database is locked，解决办法是打开 WAL 模式。",
            "注意：并发写 SQLite 会导致 database is locked，解决办法是打开 WAL 模式。",
        ),
        (
            "assistant",
            "Heads up: `pytest-xdist` runs session fixtures once per worker.",
            "`pytest-xdist` runs session fixtures once per worker.",
        ),
    ],
)
def test_a_pitfall_with_its_fix_is_a_conclusion(engine, role, pitfall, card):
    """The card states the pitfall without the cue that marked it one."""
    _say(engine, [(role, pitfall)])
    (proposed,) = engine.distill()
    assert (proposed.suggested_kind, proposed.summary) == ("conclusion", card)


def test_general_advice_makes_no_card_but_facts_about_the_user_make_one(engine):
    _say(
        engine,
        [
            ("user", "I'm planning a trip to Kyoto and was wondering what to pack?"),
            (
                "assistant",
                "Great choice! Here are some tips:\n1. **Layers**: evenings get cool.\n"
                "2. **Shoes**: you will walk a lot, because temples are spread out.\n"
                "Kyoto is famous for its temples, and spring is the best time to visit.",
            ),
            ("user", "By the way, I've been to Japan three times, always in autumn."),
            ("assistant", "You know the country well, then!"),
            ("user", "My sister Emma lives in Osaka, so I'll visit her on the 12th."),
            ("user", "thanks!"),
        ],
    )
    (card,) = engine.distill()
    # the facts, with the reply to the first (a fact said with no answer stands alone)
    assert card.suggested_kind == "pers" and card.evidence == ("t_3", "t_4", "t_5")
    assert "three times" in card.summary and "Emma lives in Osaka" in card.summary


@pytest.mark.parametrize(
    ("said", "card"),
    [
        (
            "Also, from now on never return raw ORM objects.",
            "From now on never return raw ORM objects.",
        ),
        ("oh and don't shell out to `git` anywhere.", "Don't shell out to `git` anywhere."),
        (
            "Pitfall we hit today: `terraform plan` kept showing a diff.",
            "`terraform plan` kept showing a diff.",
        ),
        ("btw, always measure with a release build.", "Always measure with a release build."),
        (
            "另外，日志里不要打印 token，用 logging 不要用 print。",
            "日志里不要打印 token，用 logging 不要用 print。",
        ),
        ("踩坑：presigned URL 15 分钟就过期。", "presigned URL 15 分钟就过期。"),
        ("Never push to main, don't forget this.", "Never push to main."),
        ("Remember to run migrations first.", "Remember to run migrations first."),  # content
        (
            "xingtu 的组件一律用 TypeScript。",
            "xingtu 的组件一律用 TypeScript。",
        ),  # a name keeps its case
    ],
)
def test_a_card_states_the_memory_not_the_conversation(said, card):
    assert stated(said) == card
    assert normalise(card) in normalise(said)  # still a piece of what was said


def test_a_topic_names_the_code_then_the_most_informative_words(engine):
    turns = [
        Turn(
            "s",
            "user",
            "Let's go with Dramatiq, Celery is overkill. Keep Redis as the broker.",
            1.0,
        ),
        Turn(
            "s",
            "user",
            "上传大文件时 `presigned_url` 15 分钟就过期，403 不要重试，要刷新 URL。",
            2.0,
        ),
    ]
    topics = [card.topic for card in extractive(turns, engine)]
    assert any("dramatiq" in t and "celery" in t for t in topics), topics
    assert any(t.startswith("presigned_url") for t in topics), topics


def test_a_reported_fault_is_a_card_only_with_its_cause_or_fix(engine):
    fault = "有个问题：iOS 上选完图片以后 App 直接闪退，Android 没事，`image_picker` 是最新版。"
    cause = "原因是 `Info.plist` 里缺了 `NSPhotoLibraryUsageDescription`，iOS 访问相册时直接崩溃。"
    ids = _say(engine, [("user", fault), ("assistant", cause)])
    (card,) = engine.distill()
    assert card.suggested_kind == "conclusion" and card.evidence == tuple(ids)
    assert "闪退" in card.summary and "NSPhotoLibraryUsageDescription" in card.summary
    _say(engine, [("user", fault.replace("iOS", "iPadOS")), ("assistant", "我看一下。")], "s2")
    assert engine.distill(session="s2") == []  # the fault alone says nothing to keep


@pytest.mark.parametrize(
    ("said", "rules"),
    [
        (
            "oh and two rules: don't log full request bodies, they contain home addresses; "
            "and use `pino`, not `console.log`, in server code.",
            [
                "Don't log full request bodies, they contain home addresses.",
                "Use `pino`, not `console.log`, in server code.",
            ],
        ),
        (
            "branch names always follow `feat/<ticket>-<slug>`, and never squash-merge "
            "release branches, because we tag the original commits.",
            [
                "branch names always follow `feat/<ticket>-<slug>`.",
                "Never squash-merge release branches, because we tag the original commits.",
            ],
        ),
        (
            "记住两条：组件一律用 `<script setup>`，别再写 Options API；状态管理统一用 Pinia。",
            ["组件一律用 `<script setup>`，别再写 Options API。", "状态管理统一用 Pinia。"],
        ),
        (
            "另外，日志里不要打印 token，用 logging 不要用 print。",
            ["日志里不要打印 token。", "用 logging 不要用 print。"],
        ),
    ],
)
def test_a_turn_holding_two_rules_gives_two_cards_citing_it(engine, said, rules):
    (turn,) = _say(engine, [("user", said)])
    cards = engine.distill()
    assert sorted(card.summary for card in cards) == sorted(rules)
    assert all(card.suggested_kind == "pref" and card.evidence == (turn,) for card in cards)
    engine.db.execute("UPDATE turns SET distilled = NULL")
    assert engine.distill() == []  # a second walk proposes neither again


@pytest.mark.parametrize(
    "said",
    [
        "Never commit directly to main; open a PR even for one-liners.",  # what to do instead
        "Never return raw ORM objects; always map them to a schema.",  # points back
        "记得 Fragment 之间传参一律走 arguments，禁止通过构造函数或者 setter 传。",  # no subject
        "除了 `main.go`，不准用 `log.Fatal`，error 一律用 `%w` 包装往上返回。",
    ],
)
def test_one_rule_said_in_two_clauses_stays_one_card(engine, said):
    _say(engine, [("user", said)])
    (card,) = engine.distill()
    assert card.suggested_kind == "pref"


def test_a_pitfall_reads_problem_cause_then_fix_and_its_carrying_out_is_no_card(engine):
    script = [
        (
            "user",
            "hey, morning. Quick one: the `/invoices` endpoint returns 500 when `due_date` "
            "is missing, can you look?",
        ),
        (
            "assistant",
            "`InvoiceOut` declares `due_date: date`, but drafts have it null. "
            "`pl.read_parquet` is not involved. I made it `due_date: date | None = None`.",
        ),
        ("user", "thanks. btw don't use `SELECT *` in any query. It broke the build last time."),
        ("assistant", "Replaced `SELECT *` in 5 queries under `db/queries/`."),
    ]
    ids = _say(engine, script)
    pitfall, rule = sorted(engine.distill(), key=lambda card: card.suggested_kind)
    assert pitfall.suggested_kind == "conclusion" and pitfall.evidence == tuple(ids[:2])
    assert pitfall.summary.startswith("The `/invoices` endpoint returns 500")
    assert pitfall.summary.endswith("I made it `due_date: date | None = None`.")
    assert "can you look" not in pitfall.summary and "`pl.read_parquet`" in pitfall.summary
    assert rule.suggested_kind == "pref" and rule.evidence == tuple(ids[2:])
    assert rule.summary == "Don't use `SELECT *` in any query. It broke the build last time."


def test_general_answers_and_proposals_not_taken_make_no_card(engine):
    script = [
        ("user", "hi, how do I make a Typer option accept multiple values?"),
        ("assistant", 'Declare it as `typer.Option([], "--tag")`; Typer collects the flags.'),
        ("user", "what next?"),
        ("assistant", "I'd propose drift as the local store with a `pending_ops` outbox."),
        ("user", "ok"),
    ]
    _say(engine, script)
    assert engine.distill() == []


def test_a_proposal_the_user_takes_is_a_decision(engine):
    script = [
        ("user", "pantry has to work offline now; what local store would fit?"),
        ("assistant", "I'd propose drift (SQLite) as the local store with a `pending_ops` outbox."),
        ("user", "go with drift, but sum the deltas for quantities instead of last-write-wins."),
    ]
    ids = _say(engine, script)
    (card,) = engine.distill()
    assert card.suggested_kind == "conclusion" and card.evidence == tuple(ids)
    assert "`pending_ops`" in card.summary and "sum the deltas" in card.summary


def test_an_answer_to_where_things_are_is_a_fact(engine):
    script = [
        ("user", "新同事问 staging 的配置在哪，你帮我查一下。"),
        (
            "assistant",
            "staging 的 Helm values 在 `deploy/helm/values-staging.yaml`。"
            "集群是 ACK 上的 `tq-staging`，版本 v1.28。",
        ),
    ]
    ids = _say(engine, script)
    (card,) = engine.distill()
    assert card.suggested_kind == "fact" and card.evidence == tuple(ids)
    assert "`deploy/helm/values-staging.yaml`" in card.summary and "v1.28" in card.summary


_PASTED = (
    "Our approach remains holistic, with the goal of understanding the system needs of the "
    "entire organisation. I have worked with the team for 12 years and my goal is to lead it. "
) * 6


@pytest.mark.parametrize(
    "said",
    [
        "Rewrite the following so it is friendly:\n" + _PASTED,
        "I received this email below, what does it do well?\n\n" + _PASTED,
        "Can you make it shorter? " + _PASTED,
        _PASTED + "\nSummarize the above in three bullets.",
        "请帮我润色下面这段：\n" + "我们一律用 Pinia 管理状态，我的目标是年底前上线新版本。" * 10,
    ],
)
def test_material_carried_for_work_on_it_makes_no_card(engine, said):
    _say(engine, [("user", said), ("assistant", "Here is a version.")])
    assert engine.distill() == []


def test_a_long_message_of_the_users_own_keeps_its_rules(engine):
    rules = "Never call Stripe from a request handler; always go through the billing queue. " * 4
    said = "Please add the refunds endpoint.\nContext for it: " + rules + "We use FastAPI. " * 20
    _say(engine, [("user", said)])
    cards = {card.suggested_kind: card.summary for card in engine.distill()}
    assert cards["pref"].startswith("Never call Stripe from a request handler")
