"""Benchmark command line: `.venv/bin/python bench/run.py NAME [options] [--json]`.

NAME is one of BENCHMARKS below (see each module). The whole run uses a temporary
MNEMOWEAVE_HOME, so nothing touches ~/.mnemoweave. With --json, stdout carries exactly one
JSON object; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from mnemoweave.embed import models_dir

sys.path.insert(0, str(Path(__file__).resolve().parent))

BENCHMARKS = (
    "locomo",
    "longmemeval",
    "memorybank",
    "cards",
    "classify",
    "dedup",
    "scale",
    "hooks",
    "reliability",
    "distill",
    "cards-quality",
    "e2e",
    "sanity",
    "gate",
    "ui",
    "upkeep",
    "conflicts",
    "proxy",
    "team",
    "cold",
    "startup",
    "stacks",
    "entities",
)
# A benchmark whose module has another name (tests/e2e is a package of its own).
MODULES = {"e2e": "reach", "cards-quality": "cards_quality"}
# Models are read (never written) from the shared models cache; each run has its own data dir.
MODELS = models_dir()
DEFAULT_EMBEDDER = "use-m3"  # the default configuration's model(s): main[,second]


@contextmanager
def temporary_home() -> Iterator[Path]:
    """MNEMOWEAVE_HOME pointed at a fresh directory for the duration, removed afterwards."""
    previous = os.environ.get("MNEMOWEAVE_HOME")
    with tempfile.TemporaryDirectory(prefix="mnemoweave-bench-") as home:
        os.environ["MNEMOWEAVE_HOME"] = home
        try:
            yield Path(home)
        finally:
            if previous is None:
                del os.environ["MNEMOWEAVE_HOME"]
            else:
                os.environ["MNEMOWEAVE_HOME"] = previous


def parse_args(modules: dict[str, ModuleType], argv: list[str] | None) -> argparse.Namespace:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print one JSON object")
    common.add_argument(
        "--limit", type=int, default=None, help="first N conversations / questions / users"
    )
    common.add_argument(
        "--mode",
        default="default",
        help="retrieval mode passed to Engine.search (if it takes one); default: engine's own",
    )
    common.add_argument(
        "--embedder",
        default=DEFAULT_EMBEDDER,
        help=f"embedding model shared by every store, or none (default {DEFAULT_EMBEDDER})",
    )
    common.add_argument(
        "--models",
        type=Path,
        default=MODELS,
        help=f"where built models live (default {MODELS})",
    )
    parser = argparse.ArgumentParser(prog="bench/run.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="name", required=True)
    for name, module in modules.items():
        assert module.__doc__, name
        sub = commands.add_parser(name, parents=[common], help=module.__doc__.splitlines()[0])
        module.add_arguments(sub)
    return parser.parse_args(argv)


def _flatten(report: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in report.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def table(report: dict[str, Any]) -> str:
    """The report as rows `metric  engine  baseline`."""
    engine = _flatten({k: v for k, v in report.items() if k != "baseline"})
    baseline = _flatten(report.get("baseline", {}))
    width = max(map(len, engine))
    lines = [f"{'':{width}}  {'engine':>10}  {'baseline':>10}"]
    for key, value in engine.items():
        other = baseline.get(key, "")
        lines.append(f"{key:{width}}  {value!s:>10}  {other!s:>10}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    with temporary_home():
        # Imported only now, so that mnemoweave never sees the real data dir.
        modules = {name: importlib.import_module(MODULES.get(name, name)) for name in BENCHMARKS}
        args = parse_args(modules, argv)
        importlib.import_module("harness").warm_up()
        started = time.perf_counter()
        report = {"benchmark": args.name, "mode": args.mode, "embedder": args.embedder}
        report |= modules[args.name].run(args)
        report["wall_seconds"] = round(time.perf_counter() - started, 1)
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        print(table(report))


if __name__ == "__main__":
    main()
