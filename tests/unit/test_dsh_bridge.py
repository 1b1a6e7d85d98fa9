"""The dsh bridge's own tests (node's test runner, plugins/dsh/test/), and the bridge's
copy of the text cleaning against mnemoweave.text.clean: a spooled payload must be
cleaned exactly as the daemon cleans, or its turn keys would not match."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from mnemoweave.text import clean

ROOT = Path(__file__).parents[2]
PLUGIN = ROOT / "plugins" / "dsh"
NODE = shutil.which("node")
WITHIN = 180  # seconds for node's whole run

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

# Pieces that exercise each secret pattern, the word boundaries, Python's whitespace set,
# case folding and private spans; joined at random into test strings.
PIECES = [
    "sk-ant-api03-",
    "sk-proj-",
    "sk-",
    "A1b2C3d4E5f6G7h8",
    "ghp_" + "a" * 36,
    "github_pat_" + "B" * 22,
    "AKIA" + "ABCDEFGHIJKLMNOP",
    "ASIA" + "0123456789ABCDEF",
    "xoxb-1234567890-abc",
    "AIza" + "x" * 35,
    "sk_live_" + "q" * 16,
    "rk_test_" + "9" * 16,
    "eyJhbGciOiJI.eyJzdWIiOiIx.SflKxwRJSMeK",
    "Bearer ",
    "BEARER ",
    "bearer\t",
    "abcdefgh12345678==",
    "https://",
    "user:",
    "hunter2@",
    "host/db",
    "password",
    "API_KEY",
    "api-key",
    "client_secret",
    "auth-token",
    "token",
    "to\u212aen",
    "pa\u017f\u017fword",
    " = ",
    ":",
    "=",
    '"quoted value"',
    "'single'",
    "value;",
    ",",
    "<private>",
    "</private>",
    "<PRIVATE>",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----",
    "中",
    "é",
    "e\u0301",
    "\u0663",
    "\u00b2",
    "\u216b",
    "_",
    "-",
    ".",
    " ",
    "\t",
    "\n",
    "\r\n",
    "\x00",
    "\x1c",
    "\x1f",
    "\x85",
    "\xa0",
    "\u2028",
    "\u3000",
    "\ufeff",
    "\ud83d",
    "\ude00",
    "\U0001f600",
    "x",
    "Z",
    "0",
]


def node_clean(texts: list[str]) -> list[str]:
    script = (
        "import fs from 'node:fs';"
        f"const {{ clean }} = await import({json.dumps((PLUGIN / 'index.js').as_uri())});"
        "const texts = JSON.parse(fs.readFileSync(0, 'utf8'));"
        "process.stdout.write(JSON.stringify(texts.map(clean)));"
    )
    done = subprocess.run(
        [NODE, "--input-type=module", "-e", script],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_bridges_node_tests_pass(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOWEAVE_")}
    env |= {"HOME": str(tmp_path), "MNEMOWEAVE_HOME": str(tmp_path / "mw")}
    done = subprocess.run(
        [NODE, "--test", "plugins/dsh/test/"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=WITHIN,
        env=env,
        check=False,
    )
    summary = "\n".join(line for line in done.stdout.splitlines() if line.startswith("# "))
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in summary and "# pass 0" not in summary
    assert not (tmp_path / "mw").exists()  # the tests used their own data dirs


def test_the_bridge_cleans_text_exactly_as_the_daemon_does():
    pick = random.Random(20260901)
    texts = ["".join(pick.choices(PIECES, k=pick.randint(1, 12))) for _ in range(3000)]
    texts += [
        "use key sk-ant-api03-" + "A1b2C3d4" * 6 + " <private>my diary</private> please",
        "中sk-ant-api03-AAAAAAAAAAAAAAAAAAAA",
        "éghp_" + "a" * 36,
        "AKIAABCDEFGHIJKLMNOP\u0663",
        "to\u212aen=abc",
        "https://user:hunter2@host/db and ftp://a:b@c",
        "lone \ud800 and \udfff, paired \U0001f600",
        "\x1c\x85 trimmed \ufeff",
        "",
    ]
    got = node_clean(texts)
    # The daemon cleans what it decodes from JSON (where "\ud83d\ude00" is one character).
    want = [clean(json.loads(json.dumps(text))) for text in texts]
    wrong = [(t, g, w) for t, g, w in zip(texts, got, want, strict=True) if g != w]
    assert not wrong, wrong[:5]
