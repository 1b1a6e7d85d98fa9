import random

import pytest

from mnemoweave.secrets import redact
from mnemoweave.text import (
    cjk_count,
    clean,
    drop_private,
    estimate_tokens,
    language,
    normalise,
    segment,
    tokens,
)
from secrets_corpus import CORPUS, ORDINARY


@pytest.mark.parametrize("said", CORPUS, ids=lambda said: said.name)
def test_every_secret_of_the_corpus_is_redacted(said):
    out = redact(said.text)
    assert [needle for needle in said.needles if needle in out] == []
    assert "[REDACTED:" in out


def test_the_corpus_has_the_formats_in_english_and_chinese():
    assert len({said.name for said in CORPUS}) == len(CORPUS) >= 60
    assert sum(1 for said in CORPUS if cjk_count(said.text)) >= 20


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_coding_talk_is_left_alone(text):
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "out"),
    [
        ("DB_PASS=s3cr3t-Pa55", "DB_PASS=[REDACTED:secret]"),  # the key's name stays
        ("export ENCRYPTION_KEY=0x1f2e3d4c", "export ENCRYPTION_KEY=[REDACTED:secret]"),
        ("  password: correct horse battery", "  password: [REDACTED:secret]"),  # to the end
        ('token = "correct horse" # note', 'token = "[REDACTED:secret]" # note'),  # the quotes
        (
            '{"password": "a\\"b", "apiKey": "c1d2"}',
            '{"password": "[REDACTED:secret]", "apiKey": "[REDACTED:secret]"}',
        ),
        ("run with api_key=k3y&x=1 then", "run with api_key=[REDACTED:secret]&x=1 then"),
        ("so: PASSPHRASE=correct horse battery", "so: PASSPHRASE=[REDACTED:secret]"),
        ("?password=xq b c&user=me", "?password=[REDACTED:secret]&user=me"),
        ("the token=abc123 is old", "the token=[REDACTED:secret] is old"),  # a token, one word
        ("def login(token: str, password: str):", "def login(token: str, password: str):"),
        ("if not token: return", "if not token: return"),
        ("the secret: 9fK2xQ then", "the secret: [REDACTED:secret] then"),
        ("redis://:pw@cache:6379", "redis://:[REDACTED:password]@cache:6379"),
        ("https://me:p@ss@host/x", "https://me:[REDACTED:password]@host/x"),
        ("mysql -uroot -pS3cret db", "mysql -uroot -p[REDACTED:password] db"),
        ("mysql -p db", "mysql -p db"),  # asks for the password: db is the database
        ("curl -u bob:Pw9 -s x", "curl -u bob:[REDACTED:password] -s x"),
        ("tool --password 'two words' --x", "tool --password '[REDACTED:secret]' --x"),
        ("tool --token $TOKEN", "tool --token $TOKEN"),
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [REDACTED:authorization]"),
        ("Bearer abc123def456", "Bearer [REDACTED:bearer]"),
        ("密码是 hunter2，记住", "密码是 [REDACTED:secret]，记住"),
        ("数据库密码：P@ss w0rd", "数据库密码：[REDACTED:secret]"),
        ("密码是什么？", "密码是什么？"),
        ("a\\n" + "ghp_" + "A1" * 18, "a\\n[REDACTED:github-token]"),  # no word boundary
        ("%3D" + "hf_" + "Zx" * 17, "%3D[REDACTED:huggingface-token]"),
    ],
)
def test_each_rule_replaces_only_the_secret(text, out):
    assert redact(text) == out


def test_a_private_key_block_goes_whole_even_unclosed():
    kind = "OPENSSH PRIVATE KEY"
    block = f"-----BEGIN {kind}-----\nb3BlbnNzaC1rZXk\n-----END {kind}-----"
    assert redact(f"key:\n{block}\nend") == "key:\n[REDACTED:private-key]\nend"
    assert redact("-----BEGIN RSA PRIVATE KEY-----\nb3BlbnNz never closed") == (
        "[REDACTED:private-key]"
    )


def test_the_librarys_findings_are_labelled_by_kind_and_run_to_the_end_of_the_token():
    live = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc" + "Zq8vXc4LmN8pQ2" * 5  # longer than 24
    assert redact(f"stripe {live}.") == "stripe [REDACTED:stripe-key]."
    assert redact("id AKIA" + "Z3MF7QWERTYU5XYZ" + " ok") == "id [REDACTED:aws-access-key] ok"
    random_string = "q9Zr7Lm2Xv8Kp4Tn6Bw1Hy3Jd5Fs0GcE"
    assert redact(f'x = "{random_string}"') == 'x = "[REDACTED:base64-high-entropy-string]"'
    assert redact('x = "abcdefghijklmnopqrstuvwxyz012345"') == (
        'x = "abcdefghijklmnopqrstuvwxyz012345"'  # a sequence, not a key
    )


def test_cleaning_cleaned_text_changes_nothing():
    """Turn keys hash cleaned text: a payload spooled cleaned must key as it did live."""
    pick = random.Random(20261201)
    pieces = [*(said.text for said in CORPUS[::3]), *ORDINARY[::2], " ", "\n", "=", ": ", '"']
    pieces += ["<private>", "</private>", "[REDACTED:x]", "password", "中", "\x00", "\r\n"]
    texts = [s.text for s in CORPUS]
    texts += ["".join(pick.choices(pieces, k=pick.randint(1, 6))) for _ in range(300)]
    for text in texts:
        once = clean(text)
        assert clean(once) == once, text


def test_private_spans_are_dropped_even_unclosed():
    assert drop_private("a <private>b</private> c") == "a  c"
    assert drop_private("a <PRIVATE>\nb\n</Private> c <private>d") == "a  c "
    assert drop_private("a <private >b</private > c < private>d< / private>e") == "a  c e"
    assert clean("<private>only this</private>") == ""
    assert clean("  \x00 keep <private>x</private>") == "keep"


def test_normalise_makes_trivial_variants_equal():
    assert normalise("Use  Tabs.") == normalise("use tabs")
    assert normalise("以后代码注释都用英文，提交信息也用英文。") == normalise(
        "以后代码注释都用英文， 提交信息也用英文"
    )
    assert normalise("use tabs") != normalise("use spaces")


def test_chinese_segmentation_finds_words_inside_sentences():
    words = tokens("以后代码注释都用英文")
    assert "注释" in words and "英文" in words
    assert segment("Hello, World! 你好").split()[:2] == ["hello", "world"]


def test_language_and_token_estimate():
    assert language("以后代码注释都用英文") == "zh"
    assert language("use tabs please") == "en"
    assert language("把 timeout 改成 10 秒 please use httpx client") == "mixed"
    # CJK counts one per character, the rest about four characters per token
    assert estimate_tokens("中文") == 2
    assert estimate_tokens("abcdefgh") == 2
    assert estimate_tokens("中文abcd") == 3
