"""`./setup.sh --host ...` installs the hooks in the same one shot.

setup.sh runs in a copy of the checkout (the checkout_copy fixture), never in the checkout:
there it would compile into core/ and reinstall the checkout's .venv whenever its stamp
differs (another pyproject.toml, an install without --dev). The copy's .venv is provided
offline and marked installed (as in ../e2e/test_first_hour.py), so setup.sh runs for real
from there on: compile, model build (a no-op on the session's built models), doctor, and
the host install into a tmp HOME. untouched_checkout fails the test if the checkout changed."""

import json
import shlex
from pathlib import Path

from bundle_copy import run
from mnemoweave.hook import ENTRY

ROOT = Path(__file__).resolve().parents[2]


def setup(bundle: Path, *args: str, env: dict[str, str], timeout: float):
    return run(["./setup.sh", *args], bundle, env, timeout, check=False)


def test_setup_installs_into_claude_code(
    real_models, checkout_copy, setup_env, checkout_state, untouched_checkout, mnemoweave_home
):
    # MNEMOWEAVE_MODELS (real_models) is in os.environ: the model build is a no-op
    assert not checkout_copy.resolve().is_relative_to(ROOT)
    assert setup_env["MNEMOWEAVE_HOME"] == str(mnemoweave_home)
    home = Path(setup_env["HOME"])
    fresh = checkout_state(checkout_copy)
    run = setup(checkout_copy, "--dev", "--host", "claude-code", env=setup_env, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    # what untouched_checkout compares does see setup's writes, in the bundle it ran in
    assert checkout_state(checkout_copy) != fresh
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    commands = [
        h["command"] for groups in settings["hooks"].values() for g in groups for h in g["hooks"]
    ]
    entry = f"-S -c {shlex.quote(ENTRY)} "
    assert len(commands) == 6 and all(entry in c and " claude-code " in c for c in commands)
    bad = setup(checkout_copy, "--host", "emacs", env=setup_env, timeout=60)
    assert bad.returncode == 2 and "unknown host 'emacs'" in bad.stderr


def test_setup_says_what_it_does_and_what_to_run_next_or_nothing_when_quiet(
    real_models, checkout_copy, setup_env, untouched_checkout
):
    program = checkout_copy / ".venv" / "bin" / "mnemoweave"
    program.rename(program.with_name("mnemoweave-real"))
    program.write_text(  # a doctor that takes 13 s: the step says it still runs
        '#!/bin/sh\n[ "$1" = doctor ] && sleep 13\n'
        f'exec "{program.with_name("mnemoweave-real")}" "$@"\n'
    )
    program.chmod(0o755)
    said = setup(checkout_copy, "--dev", env=setup_env, timeout=600)  # installed: no pip
    assert said.returncode == 0, said.stdout[-2000:] + said.stderr[-2000:]
    steps = [line for line in said.stdout.splitlines() if line.startswith("==> ")]
    assert "==> recording the program for the Claude Code plugin (mnemoweave install)" in steps
    assert "    ... still checking (10 s)" in said.stdout
    assert steps[-1] == "==> ready. Next:"
    assert f'claude plugin marketplace add "{checkout_copy}"' in said.stdout.replace(
        str(checkout_copy.resolve()), str(checkout_copy)
    )
    recorded = (Path(setup_env["MNEMOWEAVE_HOME"]) / "program").read_text().splitlines()
    assert recorded[1] == str(checkout_copy / "core")
    quiet = setup(checkout_copy, "--dev", "--quiet", env=setup_env, timeout=600)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
