"""Which sentences are worth a card, and as what kind, in both languages."""

import pytest

from mnemoweave.learn.worth import (
    FAULT,
    GENERAL,
    TOLD,
    WHERE,
    Worth,
    answering,
    details,
    kind_of,
    names_work,
)


@pytest.mark.parametrize(
    ("text", "classified", "expected"),
    [
        # one-off task requests to the assistant: no card, whatever the classifier says
        ("add a test for the upload client", "mission", None),
        ("fix the flaky login test", "mission", None),
        ("Can we move the emails to a background job?", "mission", None),
        ("Write an 800 word blog post about counting in Spanish.", "mission", None),
        ("I'm looking for some new podcast recommendations.", "pers", None),
        ("给上传模块加注释", "mission", None),
        ("帮我把刚才的改动提交一下", "mission", None),
        ("顺便把发版流程记一下，我每次都忘。", "pref", None),
        ("Your goal is to outline an email sequence for new customers.", "mission", None),
        # standing goals
        ("This quarter we are migrating the uploader to S3.", "mission", "mission"),
        ("我们的目标是下个月上线 v2", "mission", "mission"),
        ("I'm preparing a talk on DuckDB for PyCon in March.", "pers", "mission"),
        ("I'm planning to start running soon.", "mission", None),  # an intention, no goal
        # rules and preferences
        ("合并前必须跑 ruff 检查", "pref", "pref"),
        ("合并前必须跑 ruff 检查", "mission", "pref"),
        ("never commit directly to main", "pref", "pref"),
        ("always run migrations with --dry-run first", "skill", "pref"),
        ("以后提交信息都用英文", "pref", "pref"),
        ("提交信息以后都用英文", "pref", "pref"),
        # 以后 here means "after": no rule, a fault reported (a card only with its fix)
        ("有个问题：iOS 上选完图片以后 App 直接闪退，Android 没事。", "pref", "conclusion"),
        ("不要在循环里打日志，禁止提交调试代码。", "chat", "pref"),
        ("另外，日志里不要打印 token，用 logging 不要用 print。", "chat", "pref"),
        ("Also, don't print tokens in logs; use logging, not print.", "chat", "pref"),
        ("千万记得发版前先备份数据库", "mission", "pref"),
        ("Also, make sure every outbound call has a 10 second timeout.", "chat", "pref"),
        ("这点小问题不要紧，我觉得可以先放着。", "chat", None),
        ("I live in Neovim, so don't bother suggesting VS Code settings.", "pers", "pref"),
        ("I prefer factory_boy factories for test data.", "pref", "pref"),
        ("I like the template, it's straightforward.", "pref", None),  # a reaction
        ("I've never used Docker before.", "pers", "pers"),  # not a rule
        # where the project's things are and what they are made with
        ("FYI, tally's config lives in `~/.config/tally/config.toml`.", "chat", "fact"),
        (
            "qingniao 的后端是 Go 写的，代码在 `server/` 目录；前端在 `miniapp/`，用的 Taro。",
            "chat",
            "fact",
        ),
        ("the config is somewhere, I forget where", "chat", None),  # names nothing of the work
        # decisions
        ("Let's go with Dramatiq, Celery is overkill.", "mission", "conclusion"),
        ("那就从 poetry 换到 uv，CI 也一起改。", "pref", "conclusion"),
        ("I'm thinking of getting a few more tops to go with them.", "mission", None),
        # pitfalls with their fix
        (
            "踩坑：容器里时区不对会导致定时任务错位，解决办法是挂载 /etc/localtime。",
            "skill",
            "conclusion",
        ),
        ("gotcha: the pool deadlocks unless you set max_overflow=0", "chat", "conclusion"),
        # facts about the user: something particular said of themselves
        ("By the way, I've managed to spot 27 different species so far.", "chat", "pers"),
        ("My friend Rachel just moved back to the suburbs.", "conclusion", "pers"),
        ("我上周第一次做了红烧肉。", "chat", "pers"),
        ("I think I'll take your advice to heart.", "pers", None),  # a musing
        ("It was a lot of fun, but a bit chaotic.", "conclusion", None),  # nothing particular
    ],
)
def test_what_the_user_says(text, classified, expected):
    worth = kind_of(text, "user", classified)
    assert (worth and worth.kind) == expected, worth


@pytest.mark.parametrize(
    ("text", "classified", "expected"),
    [
        (
            "Found it: the hang was caused by a missing timeout in `client.py`.",
            "conclusion",
            "conclusion",
        ),
        (
            "原因是 reqwest 默认开了 native-tls，Windows 上会去编 openssl-sys。",
            "conclusion",
            "conclusion",
        ),
        ("Release: 1. bump `version` in Cargo.toml, 2. tag and push it.", "skill", "skill"),
        ("The view in `marts.sql` re-runs its whole query on every read.", "skill", "conclusion"),
        # general knowledge: nothing of the user's work named
        ("The view re-runs its whole query on every read.", "conclusion", None),
        ("Kyoto is famous for its temples and gardens.", "conclusion", None),
        ("做红烧肉的关键是炒糖色，火候要小。", "skill", None),
        # advice, progress reports, echoes
        ("You can use the `vader` method to get a detailed score.", "conclusion", None),
        ("In this code, we've added an image to the `#intro-screen` section.", "conclusion", None),
        ("Done, and I documented it in the man page.", "conclusion", None),
        ("I prefer tabs over spaces in `main.go`.", "pref", None),
        ("It was!", "conclusion", None),
    ],
)
def test_what_the_assistant_says(text, classified, expected):
    """Sentences of a turn that names the user's work (other turns are not read at all)."""
    worth = kind_of(text, "assistant", classified)
    assert (worth and worth.kind) == expected, worth


@pytest.mark.parametrize(
    "did",
    [
        "I moved the client into `main.go`, created once.",
        "Pinned `hashicorp/aws` to `~> 5.31` in all 9 modules under `modules/`.",
        "Renamed in `blog/services.py` and its 6 call sites; tests pass.",
    ],
)
def test_what_the_assistant_did_only_goes_with_a_finding(did):
    worth = kind_of(did, "assistant", "conclusion")
    assert worth == Worth("conclusion", vouched=False, leads=False)


def test_a_progress_report_makes_no_card():
    said = "迁好了：`src/stores/user.ts` 用 `defineStore('user', ...)`，12 处都换好了。"
    assert kind_of(said, "assistant", "conclusion") is None


def test_cues_vouch_for_a_sentence_the_classifier_is_unsure_of():
    assert kind_of("合并前必须跑 ruff 检查", "user", "pref").vouched
    assert not kind_of("I'm pretty rusty on networking.", "user", "pers").vouched


def test_names_of_the_users_work():
    for text in (
        "see `db.py`",
        "profiles.yml points at ~/data/ferry",
        "set max_overflow=0",
        "run it with --dry-run",
        "OBJC_DISABLE_INITIALIZE_FORK_SAFETY",
        "用 locust 压测",
    ):
        assert names_work(text), text
    for text in ("Kyoto is lovely in spring.", "The Canon EOS 80D is a good camera.", "多喝水。"):
        assert not names_work(text), text


def test_details_count_numbers_dates_and_names():
    assert details("I saw a Northern Flicker last weekend, my 32nd species.") == 4
    assert details("I've been cooking a lot lately.") == 0
    assert details("我上周去了两次健身房。") == 2


@pytest.mark.parametrize(
    ("user", "kinds", "expected"),
    [
        ("The `/invoices` endpoint returns 500, can you look?", {"conclusion"}, FAULT),
        ("对了，Prometheus 的告警规则放在哪来着？", set(), WHERE),
        ("I'm new here. Where does auth actually happen?", set(), WHERE),
        ("hi, how do I make a Typer option accept multiple values?", set(), GENERAL),
        ("pytest 的 fixture scope 用 session 和 module 有啥区别？", set(), GENERAL),
        ("always pin actions to a commit SHA, not a tag.", {"pref"}, TOLD),
        ("这个季度的目标是把首页加载时间降到 1.5 秒以内。", {"mission"}, ""),
        ("ok", set(), ""),
    ],
)
def test_what_a_reply_answers(user, kinds, expected):
    assert answering(user, kinds) == expected


@pytest.mark.parametrize(
    ("text", "answered", "expected"),
    [
        # the cause or fix of a fault the user reported, whatever its form
        ("`pd.read_excel` 会把纯数字列推断成 float64。", FAULT, Worth("conclusion", True)),
        (
            "I now copy `requirements.lock` first, then the source.",
            FAULT,
            Worth("conclusion", True),
        ),
        # where the project's things are
        ("在 `monitoring/rules/` 下，按服务分文件。", WHERE, Worth("fact", True)),
        # general knowledge asked for: no card even when it names code
        ('Declare it as `typer.Option([], "--tag")`; Typer collects the flags.', GENERAL, None),
        # carrying out the user's rule: only a measured result is new
        ("Pinned all 7 actions in `.github/workflows/` to full SHAs.", TOLD, None),
        (
            "4 Deployments in `k8s/prod/` had requests lower than limits; I aligned them.",
            TOLD,
            None,
        ),
        ("`stg_stripe__refunds` was joining, so I moved the join.", TOLD, None),
        (
            "整套测试从 3 分 40 秒降到 52 秒，`db_session` 功不可没。",
            TOLD,
            Worth("conclusion", True),
        ),
        # what it will do next, and what it proposes (a card once the user decides)
        ("Next I'll lazy-load the settings in `nav.ts`.", "", None),
        ("好的，我先写 `/api/home`。", FAULT, None),
        # taking up what the user said: their words again
        ("Got it: raising `multipart_chunksize` to 64 MB fixes it.", FAULT, None),
        (
            "I'd propose drift as the local store with a `pending_ops` outbox.",
            "",
            Worth("conclusion", True, alone=False),
        ),
    ],
)
def test_what_the_assistant_says_depends_on_what_it_answers(text, answered, expected):
    assert kind_of(text, "assistant", "chat", answered) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a fault only software has needs no name of the code
        ("Weird bug: dates in the emails are one day off.", "conclusion"),
        ("TestFlight build crashes on launch on iOS 16 only.", "conclusion"),
        ("the `/invoices` endpoint returns 500 when `due_date` is missing", "conclusion"),
        # a request, an intention, a farewell, a feeling, an event: no card
        ("新同事问 staging 环境的配置在哪，我也记不清了，你帮我查一下。", None),
        ("今天先帮我写个脚本，把这 20 张表的建表语句转成 StarRocks 的。", None),
        ("嗯，我再想想，周末有空先翻翻 Rust 的书", None),
        ("I'm off for the long weekend, see you Tuesday", None),
        ("下个月 1 号，有点紧张哈哈", None),
        ("今天终于发版了，累死", None),
        ("好，我去换。", None),
        # an emphatic rule
        ("all money math in Decimal with ROUND_HALF_EVEN, no floats, ever.", "pref"),
    ],
)
def test_what_the_user_says_beyond_rules(text, expected):
    worth = kind_of(text, "user", "mission")
    assert (worth and worth.kind) == expected, worth


@pytest.mark.parametrize(
    ("text", "role", "expected"),
    [
        (
            "worker 在我 mac 上一跑任务就崩，报什么 objc fork 的错",
            "user",
            Worth("conclusion", True, alone=False),
        ),
        ("bundle 大小能不能在 CI 里卡住", "user", None),  # a question, no question mark
        ("Playwright: 2 failures in `card-drag.spec.ts`, looking into it.", "assistant", None),
        # "(64) " is no step number: what it did, which only goes with a finding
        (
            "生成了 `0012_add_sha256.py`：加 `sha256 CHAR(64) NULL` 和一个索引。",
            "assistant",
            Worth("conclusion", False, leads=False),
        ),
    ],
)
def test_faults_questions_and_reports_in_passing(text, role, expected):
    assert kind_of(text, role, "skill") == expected
