from mnemoweave.text import (
    clean,
    drop_private,
    estimate_tokens,
    language,
    normalise,
    redact,
    segment,
    tokens,
)

SECRETS = {
    "openai": "sk-proj-AbCdEf0123456789GhIjKlMnOp",
    "anthropic": "sk-ant-api03-AbCdEf0123456789GhIjKlMnOpQrSt",
    "github": "ghp_0123456789abcdefghijABCDEFGHIJklmnop",
    "github-pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv",
    "aws-id": "AKIAIOSFODNN7EXAMPLE",
    "slack": "xoxb-123456789012-abcdefghijkl",
    "google": "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
}


def test_known_token_shapes_are_redacted():
    for name, secret in SECRETS.items():
        out = redact(f"the {name} key is {secret} ok")
        assert secret not in out, name
        assert "[REDACTED:" in out and out.endswith(" ok"), name


def test_assignments_keep_the_name_and_hide_the_value():
    for text, secret in [
        ("password=hunter2", "hunter2"),
        ("DB_PASSWORD: 'correct horse'", "correct horse"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
        ("export API_KEY=abc123def456", "abc123def456"),
        ("client_secret: s3cr3tvalue", "s3cr3tvalue"),
    ]:
        out = redact(text)
        assert secret not in out, text
        assert "[REDACTED:secret]" in out


def test_bearer_url_password_and_private_key_block():
    assert "abcdef123456" not in redact("Authorization: Bearer abcdef123456.xyz")
    out = redact("postgres://app:pa55word@db.local:5432/app")
    assert "pa55word" not in out and "postgres://app:" in out and "@db.local" in out
    block = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----"
    )
    assert redact(f"key:\n{block}\nend") == "key:\n[REDACTED:private-key]\nend"
    assert "b3Bl" not in redact("-----BEGIN RSA PRIVATE KEY-----\nb3BlbnNz never closed")


def test_ordinary_text_is_untouched():
    text = "Use the token bucket algorithm; the password prompt appears on login. 以后用英文。"
    assert redact(text) == text


def test_private_spans_are_dropped_even_unclosed():
    assert drop_private("a <private>b</private> c") == "a  c"
    assert drop_private("a <PRIVATE>\nb\n</Private> c <private>d") == "a  c "
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
