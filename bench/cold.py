"""Cold commands: `mnemoweave search` and `mnemoweave status` run with no daemon.

What a user waits for when they type a command before any daemon runs (or with none
installed): the CLI process opens the store in-process, loads what the command needs
(the embedding model and the vector index for a hybrid search, jieba's dictionary for a
Chinese query) and exits. Each call is timed from spawn to exit (exit code 0 checked) in
the project dir of its query, on a data dir holding N memories (corpus.py), with the
dev queries rotated: English and Chinese queries are reported apart, since only a
Chinese one segments words with jieba.

The run first calls each command once unmeasured (bytecode compiled, jieba's dictionary
table built: what the first command after installing pays once), then alternates the
measured calls. With --baseline REV, the same calls run with that revision's package on
the same data dir, interleaved with the current code's, so both see the same machine.

Setup (temporary root, HOME, models copy, bytecode cache) is shared with hooks.py.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

from corpus import prompts, rotate
from harness import progress
from hooks import (
    cli_ms,
    configure,
    load,
    machine,
    mnemoweave_cli,
    prepare,
    short_root,
    subprocess_env,
)
from metrics import percentiles
from mnemoweave.text import cjk_count

TARGET_MS = 1000.0  # a cold `search` or `status`


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--size", type=int, default=1000, help="memories in the data dir")
    parser.add_argument("--calls", type=int, default=10, help="measured calls per command")
    parser.add_argument(
        "--baseline",
        default=None,
        metavar="REV",
        help="also time git revision REV's package on the same data dir, interleaved "
        "(reported under `baseline`)",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.mode != "default":
        raise SystemExit("cold: --mode does not apply (a search uses the configured retrieval)")
    return measure(args.size, args.limit or args.calls, args.embedder, args.models, args.baseline)


def measure(
    size: int, calls: int, embedder: str, models: Path, baseline: str | None
) -> dict[str, Any]:
    root = short_root()
    try:
        old_code, projects, names, _ = prepare(root, embedder, models, baseline, "cold")
        home = root / "h"
        chosen = configure(home, names)
        loaded = load(home, root / "models", size, projects, chosen)
        env = subprocess_env(root, home, chosen)
        versions = {"current": env}
        if old_code is not None:
            versions["baseline"] = env | {"PYTHONPATH": str(old_code / "core")}
        queries = prompts(projects, loaded["ids"])
        english = [p for p in queries if not cjk_count(p.text)]
        chinese = [p for p in queries if cjk_count(p.text)]
        commands = {
            "search_en": [([*mnemoweave_cli(), "search", p.text], p.cwd) for p in english],
            "search_zh": [([*mnemoweave_cli(), "search", p.text], p.cwd) for p in chinese],
            "status": [([*mnemoweave_cli(), "status"], english[0].cwd)],
        }
        for version_env in versions.values():  # bytecode, jieba's table: paid once per install
            for cases in commands.values():
                cli_ms(cases[0][0], version_env, cases[0][1])
        timings: dict[str, dict[str, list[float]]] = {
            v: {c: [] for c in commands} for v in versions
        }
        for command, cases in commands.items():
            progress(f"cold: {command}, {calls} calls per version")
            for argv, cwd in rotate(cases, calls):
                for version, version_env in versions.items():
                    timings[version][command].append(cli_ms(argv, version_env, cwd)[0])
        report = {
            "benchmark": "cold",
            "memories": loaded["memories"],
            "retrieval": loaded["retrieval"],
            "calls": calls,
            "target_ms": TARGET_MS,
            "machine": machine(),
            "current": summary(timings["current"]),
        }
        if baseline:
            report["baseline"] = {"rev": baseline, **summary(timings["baseline"])}
            report["speedup_p50"] = {
                command: round(
                    report["baseline"][command]["p50_ms"] / report["current"][command]["p50_ms"], 2
                )
                for command in commands
            }
        return report
    finally:
        shutil.rmtree(root, ignore_errors=True)


def summary(timings: dict[str, list[float]]) -> dict[str, Any]:
    return {
        command: {f"{k}_ms": _rounded(v) for k, v in percentiles(values).items()}
        for command, values in timings.items()
    }


def _rounded(ms: float | None) -> float:
    assert ms is not None, "no timed calls"
    return round(ms, 1)
