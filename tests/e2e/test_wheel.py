"""A wheel that works without the checkout: built from a copy of the checkout, installed into
a fresh virtualenv in a fresh HOME, it holds everything the hosts read (the plugins, the
marketplace, the web page, SKILL.md, manifest.json, the launcher); its first `install`
builds the embedding model into the (empty) shared cache, `install opencode` puts the
plugin in a project, and the real OpenCode CLI weaves a memory stored with it.

The wheel is installed without its dependencies: they come from this test's interpreter (a
path in the fresh venv, as ../bundle_copy.py's provide_venv does), so no package index is
needed to install it; building it is (pip fetches the build backend, as `./setup.sh`)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

from bundle_copy import copy_worktree, run
from mnemoweave import __version__
from mnemoweave.hosts import client

from .daemons import stored_turns, wait_for, wait_for_daemon

FACT = "Release notes are written in English and 中文."
SHIPPED = [
    "mnemoweave/bundle/SKILL.md",
    "mnemoweave/bundle/manifest.json",
    "mnemoweave/bundle/.claude-plugin/marketplace.json",
    "mnemoweave/bundle/plugins/claude-code/.claude-plugin/plugin.json",
    "mnemoweave/bundle/plugins/claude-code/.mcp.json",
    "mnemoweave/bundle/plugins/claude-code/hooks/hooks.json",
    "mnemoweave/bundle/plugins/claude-code/skills/mnemoweave/SKILL.md",
    "mnemoweave/bundle/plugins/opencode/mnemoweave.js",
    "mnemoweave/bundle/plugins/dsh/index.js",
    "mnemoweave/bundle/plugins/dsh/cordis.patch.yml",
    "mnemoweave/bundle/.agents/plugins/marketplace.json",
    "mnemoweave/bundle/plugins/codex/.codex-plugin/plugin.json",
    "mnemoweave/bundle/plugins/codex/hooks/hooks.json",
    "mnemoweave/bundle/plugins/gemini/gemini-extension.json",
    "mnemoweave/bundle/plugins/gemini/hooks/hooks.json",
    "mnemoweave/web/index.html",
]
LAUNCHER = "mnemoweave/bundle/plugins/claude-code/scripts/mnemoweave"


def build_wheel(tmp_path: Path) -> Path:
    source = copy_worktree(tmp_path / "source")
    dist = tmp_path / "dist"
    env = os.environ | {"HOME": str(tmp_path / "build-home")}  # pip's cache too
    run([sys.executable, "-m", "build", "--wheel", "--outdir", dist, source], tmp_path, env, 600)
    (wheel,) = dist.glob("mnemoweave-*.whl")
    assert wheel.name.startswith(f"mnemoweave-{__version__}-py3-none-any")
    return wheel


def fresh_venv(where: Path, wheel: Path) -> Path:
    """A new virtualenv with the wheel installed (its dependencies: this interpreter's)."""
    run([sys.executable, "-m", "venv", where], where.parent)
    python = where / "bin" / "python"
    run([python, "-m", "pip", "install", "--no-deps", "--no-index", wheel], where.parent)
    purelib = run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], where.parent
    ).stdout.strip()
    Path(purelib, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return Path(purelib)


def test_the_wheel_works_without_the_checkout(opencode, fake_openai, tmp_path):
    wheel = build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert not [name for name in SHIPPED if name not in names], sorted(names)
        licence = f"mnemoweave-{__version__}.dist-info/licenses/LICENSE"
        legacy = f"mnemoweave-{__version__}.dist-info/LICENSE"  # setuptools before PEP 639
        text = archive.read(licence if licence in names else legacy).decode()
        assert "Apache License" in text and "Version 2.0, January 2004" in text
        mode = archive.getinfo(LAUNCHER).external_attr >> 16
        assert mode & stat.S_IXUSR  # the launcher stays executable

    site = fresh_venv(tmp_path / "venv", wheel)
    assert (site / LAUNCHER).stat().st_mode & stat.S_IXUSR
    program = tmp_path / "venv" / "bin" / "mnemoweave"
    ours = str(Path(sys.executable).parent)
    path = [str(program.parent)] + [
        p for p in os.environ.get("PATH", os.defpath).split(os.pathsep) if p != ours
    ]
    models = tmp_path / "models"  # an empty shared cache: the first use builds into it
    extra = {"PATH": os.pathsep.join(path), "MNEMOWEAVE_MODELS": str(models)}
    env = opencode.env(extra)

    def mw(*args: str, cwd: Path = opencode.cwd) -> str:
        out: str = run([program, *args], cwd, env, 300).stdout
        return out

    said = mw("install", "opencode", "--scope", "project")
    assert "building the embedding model into the shared cache, once: use-m3" in said, said
    assert (models / "use-m3").is_dir()
    plugin = (opencode.cwd / ".opencode" / "plugin" / "mnemoweave.js").read_text()
    assert str(tmp_path / "venv" / "bin" / "python") in plugin  # it runs the installed program
    assert str(Path(__file__).resolve().parents[2]) not in plugin  # nothing of the checkout

    settings = mw("install", "claude-code")  # into the fresh HOME's settings
    assert "hooks installed into" in settings, settings
    dsh = mw("install", "dsh", "--profile", "web")
    assert f"add {site / 'mnemoweave' / 'bundle' / 'plugins' / 'dsh'}" in dsh, dsh

    assert mw("remember", FACT, "--kind", "pref").startswith("new m_")
    with open(tmp_path / "daemon.out", "ab") as out:  # the installed program's daemon
        subprocess.Popen(
            [program, "serve"], env=env, stdout=out, stderr=out, start_new_session=True
        )
    wait_for_daemon(opencode.mnemoweave_home, tmp_path / "daemon.out")
    result = opencode.run("Draft the release notes.", env=extra)
    assert result.rc == 0, result
    assert FACT in result.user_text, result.user_text
    wait_for(
        lambda: ("user", "Draft the release notes.") in stored_turns(env, str(result.session_id))
    )
    holder = client.lock_holder(opencode.mnemoweave_home)
    assert holder and holder[1] == client.DAEMON_ROLE, holder
    serving = Path(f"/proc/{holder[0]}/cmdline").read_bytes().split(b"\0")
    assert serving[0].decode() == str(tmp_path / "venv" / "bin" / "python"), serving
