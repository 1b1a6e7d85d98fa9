"""The turn classifier: kinds in both languages, confidence, odd input, speed, embedder path."""

from __future__ import annotations

import dataclasses
import hashlib
import time

import numpy as np
import pytest

from mnemoweave.learn.classify import (
    KINDS,
    Classification,
    classify,
    load_lexicon,
    ngram_features,
    scores,
)

# None of these sentences is in bench/data/classify_*.jsonl (checked by a test below).
EXAMPLES = [
    # pref
    ("user", "I prefer black over yapf for formatting, please stick with it.", "pref"),
    ("user", "From now on, never amend commits that are already pushed.", "pref"),
    ("user", "以后所有的接口文档都用中文写。", "pref"),
    ("user", "不要在循环里打日志，太吵了。", "pref"),
    # pers
    ("user", "I'm a QA engineer at a logistics company, mostly writing Playwright tests.", "pers"),
    ("user", "I've been doing Android development for seven years.", "pers"),
    ("user", "我是做量化交易的，平时主要写 C++。", "pers"),
    ("user", "我在成都一家医疗公司做后端开发。", "pers"),
    # skill
    (
        "assistant",
        "To cut a beta build: bump the build number, run `fastlane beta`, then post the "
        "TestFlight link in the channel.",
        "skill",
    ),
    (
        "assistant",
        "Steps to rotate the database password:\n1. create the new password in Vault\n"
        "2. update the app config\n3. restart the pods\n4. drop the old password",
        "skill",
    ),
    (
        "assistant",
        "清理 Redis 大 key 的步骤：先用 --bigkeys 扫描，再分批删除，最后观察内存。",
        "skill",
    ),
    ("user", "上线流程：先合并到 release 分支，然后打 tag，最后在发布平台点部署。", "skill"),
    # mission
    ("user", "We need to add two-factor login to the admin panel by Friday.", "mission"),
    (
        "user",
        "Can you refactor the report generator to stream rows instead of loading all?",
        "mission",
    ),
    ("user", "帮我给搜索接口加上缓存，过期时间五分钟。", "mission"),
    ("user", "这周的目标是把支付回调的重试机制做完。", "mission"),
    # conclusion
    (
        "assistant",
        "The timeout was caused by a missing index on orders.user_id; adding it fixed the "
        "slow page.",
        "conclusion",
    ),
    ("user", "We decided to drop the GraphQL layer and keep plain REST.", "conclusion"),
    ("assistant", "原因是线程池满了，请求一直在排队，把队列调大之后就正常了。", "conclusion"),
    ("user", "讨论之后决定，日志平台用 Loki 不用 ELK。", "conclusion"),
    # chat
    ("user", "thanks a lot!", "chat"),
    ("assistant", "Let me open the config file and check.", "chat"),
    ("user", "Which one do you prefer, yarn or npm?", "chat"),
    ("user", "好嘞，收到", "chat"),
    ("assistant", "我先看一下这个函数的调用方。", "chat"),
    ("user", "你更习惯用哪个编辑器？", "chat"),
]


@pytest.mark.parametrize(("role", "text", "kind"), EXAMPLES)
def test_kinds_in_both_languages(role: str, text: str, kind: str) -> None:
    result = classify(text, role=role)
    assert result.kind == kind, (text, result, scores(text, role))
    assert 0.0 < result.confidence <= 1.0


def test_examples_cover_every_kind_in_both_languages() -> None:
    covered = {(kind, any("\u4e00" <= ch <= "\u9fff" for ch in text)) for _, text, kind in EXAMPLES}
    assert covered == {(kind, zh) for kind in KINDS for zh in (False, True)}


def test_examples_are_not_in_the_datasets() -> None:
    from pathlib import Path

    data = Path(__file__).resolve().parents[2] / "bench" / "data"
    texts: set[str] = set()
    for path in data.glob("classify_*.jsonl"):
        texts.update(line for line in path.read_text(encoding="utf-8").splitlines())
    blob = "\n".join(texts)
    for _, text, _ in EXAMPLES:
        assert text not in blob


def test_classification_is_frozen_and_confidence_bounded() -> None:
    result = classify("I prefer tabs.")
    assert isinstance(result, Classification)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.kind = "chat"  # type: ignore[misc]
    for _, text, _ in EXAMPLES:
        for role in ("user", "assistant"):
            confidence = classify(text, role=role).confidence
            assert 0.0 <= confidence <= 1.0


def test_clear_cases_are_more_confident_than_odd_input() -> None:
    assert classify("I prefer pytest over unittest.").confidence > classify("§§§").confidence


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "\x00\x01\x02", "!!!???", "...", "1234", "🙂"])
def test_empty_or_odd_input_is_low_confidence_chat(text: str) -> None:
    result = classify(text)
    assert result.kind == "chat"
    assert result.confidence <= 0.5


def test_short_acknowledgements_are_chat() -> None:
    for text in ("ok", "OK!", "k", "thx", "嗯", "行", "好嘞，谢谢"):
        assert classify(text).kind == "chat", text


def test_questions_about_preferences_are_not_preferences() -> None:
    assert classify("Do I prefer spaces or tabs? I honestly forget.").kind == "chat"
    assert classify("我平时喜欢用什么格式化工具来着？").kind == "chat"


def test_negated_rule_is_still_a_preference() -> None:
    assert classify("Never commit .env files.").kind == "pref"
    assert classify("别往 main 分支直接推代码。").kind == "pref"


@pytest.mark.parametrize(
    "text",
    [
        "合并前必须跑 ruff 检查",
        "never commit directly to main",
        "以后提交信息都用英文",
        "always run migrations with --dry-run first",
        "发布之前一定要先跑冒烟测试。",
        "Every migration must ship with a rollback script.",
    ],
)
def test_a_rule_is_a_confident_preference(text: str) -> None:
    result = classify(text)
    assert result.kind == "pref" and result.confidence >= 0.5, (result, scores(text))


@pytest.mark.parametrize(
    ("role", "text"),
    [
        (
            "user",
            "踩坑记录：RQ 的 worker 在 macOS 上 fork 会崩，需要设置 "
            "OBJC_DISABLE_INITIALIZE_FORK_SAFETY=YES 才行",
        ),
        ("user", "gotcha: the pool deadlocks unless you set max_overflow=0"),
        ("user", "注意：并发写 SQLite 会导致 database is locked，解决办法是打开 WAL 模式。"),
        ("assistant", "Pitfall: the CDN caches 404s for an hour, so purge it after every deploy."),
    ],
)
def test_a_pitfall_with_its_fix_is_a_conclusion(role: str, text: str) -> None:
    result = classify(text, role=role)
    assert result.kind == "conclusion" and result.confidence >= 0.5, (result, scores(text, role))


def test_past_finding_versus_plan() -> None:
    assert classify("Upgrading to Python 3.12 fixed the crash.", "assistant").kind == "conclusion"
    assert classify("We need to upgrade to Python 3.12 next sprint.").kind == "mission"


def test_very_long_and_binary_text_does_not_crash() -> None:
    long_text = "The cache was caused by a bug. " * 20_000 + "```\n" + "x = 1\n" * 5_000
    started = time.perf_counter()
    result = classify(long_text, role="assistant")
    assert time.perf_counter() - started < 0.5
    assert result.kind in KINDS
    binary = bytes(range(256)).decode("latin-1") * 50
    assert classify(binary).kind in KINDS
    assert classify("\ud800 broken surrogate \udfff").kind in KINDS
    unclosed = "Here's the fix:\n```python\ndef f():\n    return 1\n"
    assert classify(unclosed, role="assistant").kind in KINDS


def test_deterministic_and_fast() -> None:
    texts = [text for _, text, _ in EXAMPLES]
    first = [classify(text) for text in texts]
    started = time.perf_counter()
    rounds = 20
    for _ in range(rounds):
        assert [classify(text) for text in texts] == first
    per_turn_ms = (time.perf_counter() - started) * 1000 / (rounds * len(texts))
    assert per_turn_ms < 2.0  # typically ~0.3 ms; slack for slow CI machines


def test_lexicon_loads_every_kind() -> None:
    lexicon = load_lexicon()
    for kind in KINDS:
        assert lexicon.rules[kind], kind
        assert lexicon.prototypes[kind], kind
    assert lexicon.ngrams
    assert all(len(row) == len(KINDS) for row in lexicon.ngrams.values())


def test_bad_rules_file_is_reported(tmp_path) -> None:
    bad = tmp_path / "rules.txt"
    bad.write_text("[pref]\n2.0 (unclosed\n", encoding="utf-8")
    with pytest.raises(ValueError, match="bad rule"):
        load_lexicon(bad, tmp_path / "missing.json")
    bad.write_text("[nonsense]\n", encoding="utf-8")
    with pytest.raises(ValueError, match="unknown section"):
        load_lexicon(bad, tmp_path / "missing.json")


def test_ngram_features_cover_both_scripts() -> None:
    features = ngram_features("以后用 pytest", role="user")
    assert {"c:以", "z:以后", "w:pytest", "^以后", "role:user"} <= features


class FakeEmbedder:
    """Deterministic bag-of-character-trigrams vectors, L2-normalised."""

    name = "fake"
    dim = 64

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts, *, query: bool = False) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for i in range(max(1, len(text) - 2)):
                digest = hashlib.blake2b(text[i : i + 3].encode(), digest_size=2).digest()
                out[row, int.from_bytes(digest, "big") % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        unit: np.ndarray = out / np.maximum(norms, 1e-9)
        return unit


def test_embedder_prototypes_are_blended_and_cached() -> None:
    embedder = FakeEmbedder()
    with_embedder = classify("We need to add SSO to the dashboard this month.", embedder=embedder)
    assert with_embedder.kind == "mission"
    assert 0.0 <= with_embedder.confidence <= 1.0
    calls = embedder.calls
    classify("Thanks!", embedder=embedder)
    assert embedder.calls == calls + 1  # prototypes embedded once, then only the turn
    plain = scores("We need to add SSO to the dashboard this month.")
    blended = scores("We need to add SSO to the dashboard this month.", embedder=embedder)
    assert plain != blended


def test_rule_triggers_never_hide_a_match() -> None:
    """A rule is skipped when none of its trigger literals occurs; that must never skip a
    rule whose regex would have matched."""
    import random

    from mnemoweave.learn.classify import _prepare

    texts = [text for _, text, _ in EXAMPLES]
    words = " ".join(texts).split()
    rng = random.Random(7)
    texts += [" ".join(rng.choice(words) for _ in range(rng.randint(1, 25))) for _ in range(300)]
    lexicon = load_lexicon()
    for text in texts:
        prepared = _prepare(text)[0]
        for rules in lexicon.rules.values():
            for rule in rules:
                if rule.triggers and rule.pattern.search(prepared):
                    assert any(word in prepared for word in rule.triggers), rule.pattern.pattern


def test_triggers_are_read_off_patterns() -> None:
    from mnemoweave.learn.classify import _triggers

    assert _triggers(r"\bi(?:'d| would) rather\b") == (" rather",)
    assert _triggers(r"(?:以后|今后)(?:都|一律)") == ("以后", "今后")
    assert _triggers(r"^(?:please )?prefer\b|\bdon'?t use\b") == ("prefer", "t use")
    assert _triggers(r"\b\w+ed\b") == ("ed",)
    assert _triggers(r"^\w+$|\bok\b") == ()  # a branch with nothing literal: always run
