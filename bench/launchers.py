"""The launchers hosts run, in a checkout of any revision a benchmark compares: the Claude
Code plugin's `scripts/mnemoweave` (`hook HOST EVENT`, `mcp`), or, in revisions before the
plugin held its own, `hooks/mnemoweave-hook` and `hooks/mnemoweave-mcp`."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_LAUNCHER = Path("plugins/claude-code/scripts/mnemoweave")


def command(tree: Path, verb: str) -> list[str]:
    """What runs `verb` (`hook`, then HOST EVENT; `mcp`) in the checkout `tree`."""
    if (tree / PLUGIN_LAUNCHER).exists():
        return [str(tree / PLUGIN_LAUNCHER), verb]
    return [str(tree / "hooks" / f"mnemoweave-{verb}")]


def launcher_paths(rev: str) -> list[str]:
    """The paths of revision `rev` that hold its launchers (for `git archive`)."""
    old = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{rev}:hooks"], capture_output=True, timeout=60
    )
    return ["plugins", "hooks"] if old.returncode == 0 else ["plugins"]
