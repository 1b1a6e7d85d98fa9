"""The dsh bridge's own tests (node's test runner, plugins/dsh/test/)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
PLUGIN = ROOT / "plugins" / "dsh"
NODE = shutil.which("node")
WITHIN = 180  # seconds for node's whole run

pytestmark = [pytest.mark.slow, pytest.mark.skipif(NODE is None, reason="node is not installed")]


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
    failed = done.stdout[done.stdout.find("not ok") :] if "not ok" in done.stdout else done.stdout
    assert done.returncode == 0, failed[:4000] + done.stderr[-2000:]
    assert "# fail 0" in summary and "# pass 0" not in summary
    assert not (tmp_path / "mw").exists()  # the tests used their own data dirs
