"""The README documents every CLI command and stays in step with the code."""

from pathlib import Path

from mnemoweave.cli import cli
from mnemoweave.config import Config

README = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")


def test_every_cli_command_is_in_the_readme():
    missing = [name for name in cli.commands if f"| `{name}" not in README]
    assert not missing, f"README's CLI reference lacks: {missing}"


def test_every_setting_is_in_the_readme():
    missing = [name for name in Config().to_dict() if f"`{name}`" not in README]
    assert not missing, f"README's configuration table lacks: {missing}"


def test_readme_test_command_is_what_ci_runs():
    ci = (Path(__file__).parents[2] / ".ci" / "run").read_text()
    assert ".venv/bin/python -m pytest -q" in README and ".venv/bin/python -m pytest -q" in ci
    assert "./setup.sh --dev" in README and "./setup.sh --dev" in ci
