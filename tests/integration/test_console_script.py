"""The installed `mnemoweave` executable, run as a user would run it."""

import json
import os
import subprocess
import sys
from pathlib import Path

EXE = Path(sys.executable).parent / "mnemoweave"


def mnemoweave(*args, input=None):
    return subprocess.run(
        [str(EXE), *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ.copy(),
    )


def test_console_script_round_trip(mnemoweave_home):
    assert EXE.is_file(), "run ./setup.sh first: the console script is not installed"
    made = mnemoweave(
        "remember", "部署前先跑 make check，不要直接推 main", "--kind", "pref", "--json"
    )
    assert made.returncode == 0, made.stderr
    ref = json.loads(made.stdout)["id"]
    found = mnemoweave("search", "部署", "--json")
    assert [h["id"] for h in json.loads(found.stdout)["hits"]] == [ref]
    assert (mnemoweave_home / "mnemoweave.sqlite").is_file()
    xdg_cache = Path(os.environ["XDG_CACHE_HOME"])
    assert (xdg_cache / "mnemoweave" / "jieba.sqlite").is_file()  # shared by every data dir
    bad = mnemoweave("get", "m_999")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip() == "Error: no memory with id m_999"
    doctor = mnemoweave("doctor")
    assert doctor.returncode == 0 and "FAIL" not in doctor.stdout


def test_importing_the_package_loads_nothing_heavy():
    code = "import sys, mnemoweave; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    loaded = set(out.stdout.split())
    assert "mnemoweave" in loaded
    heavy = {
        "click",
        "jieba",
        "numpy",
        "chromadb",
        "onnxruntime",
        "tokenizers",
        "sqlite3",
        "pluggy",
        "mcp",
        "watchdog",
    }
    assert not heavy & loaded, heavy & loaded
