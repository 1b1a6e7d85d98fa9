"""The docs site documents every CLI command and setting, builds without a warning, and the
README stays a short front page whose test command is what CI runs."""

import os
import subprocess
import sys
from pathlib import Path

from mnemoweave.cli.main import cli
from mnemoweave.config import Config

ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = ROOT / "docs"


def test_every_cli_command_is_in_the_docs():
    reference = (DOCS / "cli.md").read_text(encoding="utf-8")
    missing = [name for name in cli.commands if f"| `{name}" not in reference]
    assert not missing, f"docs/cli.md lacks: {missing}"


def test_every_setting_is_in_the_docs():
    table = (DOCS / "configuration.md").read_text(encoding="utf-8")
    missing = [name for name in Config().to_dict() if f"`{name}`" not in table]
    assert not missing, f"docs/configuration.md lacks: {missing}"


def test_readme_is_short_and_its_test_command_is_what_ci_runs():
    assert len(README.splitlines()) <= 200
    ci = (ROOT / ".ci" / "run").read_text()
    assert ".venv/bin/python -m pytest -q" in README and ".venv/bin/python -m pytest -q" in ci
    assert "./setup.sh --dev" in README and "./setup.sh --dev" in ci


def test_the_docs_site_builds_without_a_warning(tmp_path):
    """Strict: a broken link or anchor, or a page left out of the nav, fails the build."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ | {"NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "cli" / "index.html").exists()
