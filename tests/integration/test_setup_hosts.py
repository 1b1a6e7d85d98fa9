"""`./setup.sh --host ...` installs the hooks in the same one shot."""

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_setup_installs_into_claude_code(real_models, tmp_path, mnemoweave_home):
    # MNEMOWEAVE_MODELS (real_models) is in os.environ: the model build is a no-op
    env = {**os.environ, "HOME": str(tmp_path / "home"), "MNEMOWEAVE_HOME": str(mnemoweave_home)}
    run = subprocess.run(
        ["./setup.sh", "--dev", "--host", "claude-code"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    settings = json.loads((tmp_path / "home" / ".claude" / "settings.json").read_text())
    commands = [
        h["command"] for groups in settings["hooks"].values() for g in groups for h in g["hooks"]
    ]
    assert len(commands) == 6 and all("-m mnemoweave.hook claude-code" in c for c in commands)
    bad = subprocess.run(
        ["./setup.sh", "--host", "emacs"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "unknown host 'emacs'" in bad.stderr
