"""The first hour of a new user, replayed: a fresh clone of this checkout and a fresh HOME,
README's Quick start in order (``./setup.sh``, the demo, connecting Claude Code, then the
"use it for real" commands), and what a user does next inside their own repositories.

The clone is what ``git clone`` of this checkout gives, with its uncommitted edits copied
over (on a clean checkout, as in CI, there are none). Everything it writes lives under the
test's temporary directory: HOME, MNEMOWEAVE_HOME, MNEMOWEAVE_MODELS, XDG dirs and git's
global config. ``./setup.sh`` runs for real except for its ``pip install`` step, which needs
the package index: the clone's ``.venv`` is made beforehand, offline, on the dependencies of
the interpreter running the tests (the clone's ``core`` first on its path, so the clone's
own code runs), and marked installed, so ``setup.sh`` goes on to compile the package, build
the model into the fresh models cache and run ``doctor``. Claude Code is the real CLI against
the fake Anthropic server on 127.0.0.1 (see claude.py).

It asserts the demo's hybrid retrieval and cross-language hit; that inside a repository
``remember`` stores under its project (named by its ``origin``) and ``--global`` globally;
that another checkout with the same origin sees that memory and another repository does
not; that a purged id is not given out again; and that with both the plugin and a settings
install present, a prompt through Claude Code gets exactly one memory block.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from .claude import ClaudeHarness, request_texts
from .daemons import stop_daemons, wait_for
from .fake_anthropic import message_bodies

ROOT = Path(__file__).resolve().parents[2]
BLOCK = '<memory source="mnemoweave"'
SHOWCASE = "what language should code comments be written in"  # the demo's English query
COMMENTS_PREF = "以后代码注释都用英文"


def run(argv, env, cwd, timeout=120.0) -> subprocess.CompletedProcess:
    """One command, bounded; its output on failure."""
    done = subprocess.run(
        [str(a) for a in argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"{argv}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    return done


def fresh_clone(dest: Path, env: dict[str, str]) -> Path:
    """``git clone`` of this checkout, then its uncommitted edits (tracked and new files
    that git does not ignore) copied over, and files deleted in it deleted."""
    run(["git", "clone", "--quiet", ROOT, dest], env, dest.parent)
    listed = run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], env, ROOT
    ).stdout
    for name in filter(None, listed.split("\0")):
        source, target = ROOT / name, dest / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        elif not source.exists() and target.is_file():
            target.unlink()
    return dest


def provide_venv(clone: Path, env: dict[str, str]) -> None:
    """The clone's ``.venv`` without the package index: a venv whose path holds the clone's
    ``core`` and then this interpreter's site-packages (as a path only, so its own editable
    install of another checkout is not read), the ``mnemoweave`` script ``pip install -e``
    writes, and the stamp that tells ``setup.sh`` the install is done."""
    run([sys.executable, "-m", "venv", "--without-pip", clone / ".venv"], env, clone)
    python = clone / ".venv" / "bin" / "python"
    purelib = run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env, clone
    ).stdout.strip()
    ours = sysconfig.get_paths()["purelib"]
    Path(purelib, "mnemoweave-checkout.pth").write_text(f"{clone / 'core'}\n{ours}\n")
    script = clone / ".venv" / "bin" / "mnemoweave"
    script.write_text(
        f"#!{python}\nimport sys\nfrom mnemoweave.cli import main\nsys.exit(main())\n"
    )
    script.chmod(0o755)
    digest = hashlib.sha256((clone / "pyproject.toml").read_bytes()).hexdigest()[:16]
    (clone / ".venv" / ".mnemoweave-installed").write_text(f"{digest} \n")


def repository(path: Path, origin: str, env: dict[str, str]) -> Path:
    path.mkdir(parents=True)
    run(["git", "init", "-q"], env, path)
    run(["git", "remote", "add", "origin", origin], env, path)
    return path


def test_the_first_hour_on_a_fresh_clone(claude_code, fake_anthropic, tmp_path, mnemoweave_home):
    host = ClaudeHarness(claude_code, fake_anthropic, tmp_path / "machine", mnemoweave_home)
    # this interpreter's bin dir (another checkout's `mnemoweave`) off PATH
    ours = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != ours)
    extra = {"PATH": path, "PYTHONPATH": None, "VIRTUAL_ENV": None}
    env = host.env(extra)
    assert not Path(env["MNEMOWEAVE_MODELS"]).exists()  # a models cache nobody built yet
    try:
        _first_hour(host, env, extra, tmp_path)
    finally:
        stop_daemons(mnemoweave_home)


def _first_hour(host: ClaudeHarness, env, extra, tmp_path: Path) -> None:
    clone = fresh_clone(tmp_path / "mnemoweave", env)
    provide_venv(clone, env)
    mw = clone / ".venv" / "bin" / "mnemoweave"

    # Quick start: ./setup.sh, then the demo
    setup = run(["./setup.sh"], env, clone, timeout=300)
    assert "semantic search: hybrid" in setup.stdout, setup.stdout
    assert "ready: try .venv/bin/mnemoweave demo" in setup.stdout
    demo = run([".venv/bin/mnemoweave", "demo"], env, clone).stdout
    assert "retrieval: hybrid" in demo, demo
    showcase = demo.split(f"search {SHOWCASE!r}:", 1)[1].strip().splitlines()[0]
    assert COMMENTS_PREF in showcase, demo  # the Chinese preference for the English query

    # connect Claude Code: the plugin from the checkout; the session's prompt is remembered
    host.cwd = clone
    hello = "Where does the upload module keep its retry settings?"
    first = host.run(hello, "--plugin-dir", "plugins/claude-code", env=extra, timeout=120)
    assert first.rc == 0, first
    wait_for(lambda: ("user", hello) in turns(mw, env, first.session_id))

    # then "use it for real", in the checkout
    said = run([mw, "remember", "以后代码注释都用英文", "--kind", "pref"], env, clone).stdout
    assert said.startswith("new m_"), said
    found = run(
        [mw, "search", "what language should code comments use", "--explain"], env, clone
    ).stdout
    assert COMMENTS_PREF in found, found
    woven = run([mw, "weave", "给上传模块加注释"], env, clone).stdout
    assert BLOCK in woven and COMMENTS_PREF in woven, woven

    # inside a repository of one's own: the project by default, --global on request
    app = repository(tmp_path / "work" / "app", "git@github.com:acme/app.git", env)
    note = "The app's API tests need the staging VPN"
    run([mw, "remember", note], env, app)
    run([mw, "remember", "Keep commits small and focused", "--global"], env, app)
    listed = {m["title"]: m["project"] for m in memories(mw, env, app)}
    assert listed[note] == "github.com/acme/app", listed
    assert listed["Keep commits small and focused"] == "", listed

    # a second clone of it elsewhere (same origin, as the https URL) shares that memory;
    # another repository does not
    second = repository(tmp_path / "elsewhere" / "app", "https://github.com/acme/app", env)
    assert note in hit_texts(mw, env, second, "staging VPN for API tests")
    other = repository(tmp_path / "work" / "other", "git@github.com:acme/other.git", env)
    assert note not in hit_texts(mw, env, other, "staging VPN for API tests")

    # ids are never reused: the newest memory purged, the next one gets a new id
    newest = max(memories(mw, env, app), key=lambda m: number(m["id"]))["id"]
    assert run([mw, "purge", newest], env, app).stdout.strip() == f"purged {newest}"
    after = run([mw, "remember", "Release notes go in CHANGELOG.md"], env, app).stdout.split()
    assert after[0] == "new" and number(after[1]) > number(newest), (newest, after)

    # Claude Code with the plugin from the checkout and a settings install (run from the
    # project, into $HOME/.claude/settings.json): a prompt gets one memory block
    installed = run([mw, "install", "claude-code"], env, app)
    assert (host.home / ".claude" / "settings.json").exists(), installed.stdout
    host.cwd = app
    result = host.run(
        "Do the API tests need the staging VPN?",
        "--plugin-dir",
        str(clone / "plugins" / "claude-code"),
        env=extra,
        timeout=120,
    )
    assert result.rc == 0, result
    *_, last = message_bodies(result.requests)
    texts = request_texts(last)
    blocks = [t for t in texts for _ in range(t.count(BLOCK))]
    assert len(blocks) == 1, texts
    assert note in blocks[0], blocks
    hooks_log = (Path(env["MNEMOWEAVE_HOME"]) / "logs" / "hooks.log").read_text()
    assert "the plugin stands aside" in hooks_log, hooks_log


def memories(mw: Path, env, cwd: Path) -> list[dict]:
    return json.loads(run([mw, "list", "--json"], env, cwd).stdout)["memories"]


def hit_texts(mw: Path, env, cwd: Path, query: str) -> list[str]:
    hits = json.loads(run([mw, "search", query, "--json"], env, cwd).stdout)["hits"]
    return [h["text"] for h in hits]


def turns(mw: Path, env, session: str | None) -> list[tuple[str, str]]:
    """The (role, text) turns stored for a session."""
    found = run([mw, "rehydrate", "--session", str(session), "--json"], env, None)
    return [(t["role"], t["text"]) for t in json.loads(found.stdout)["turns"]]


def number(memory_id: str) -> int:
    return int(memory_id.split("_", 1)[1])
