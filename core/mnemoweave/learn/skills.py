"""Skills: procedures the agent saves on purpose, with their sources.

A skill has a name, a one-line summary (what the weave shows), triggers (when it applies),
steps (loaded on demand) and at least one source URL. `check` tells whether a task is
known, partly known or unknown, with the best match; an unknown one joins the learning
queue (skill_queue.py).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mnemoweave.errors import InvalidInput, NotFound
from mnemoweave.store import audit
from mnemoweave.store import skills as skills_table
from mnemoweave.store.db import transaction
from mnemoweave.text import clean, content_words

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
URL = re.compile(r"^https?://[^\s/$.?#][^\s]*$", re.IGNORECASE)
KNOWN, PARTIAL = 0.6, 0.3  # share of the query's content words a skill covers


@dataclass(frozen=True)
class Skill:
    name: str
    summary: str
    triggers: tuple[str, ...]
    steps: tuple[str, ...]
    source_urls: tuple[str, ...]
    usage_count: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "summary": self.summary,
            "triggers": list(self.triggers),
            "steps": list(self.steps),
            "source_urls": list(self.source_urls),
            "usage_count": self.usage_count,
        }


def _from_row(row: Any) -> Skill:
    return Skill(
        row["name"],
        row["summary"],
        tuple(json.loads(row["triggers"])),
        tuple(json.loads(row["steps"])),
        tuple(json.loads(row["source_urls"])),
        row["usage_count"],
    )


def teach(
    engine: Engine,
    name: str,
    *,
    summary: str,
    triggers: Sequence[str],
    steps: Sequence[str],
    source_urls: Sequence[str],
) -> Skill:
    """Save (or update) a skill; every rule it breaks is reported at once."""
    summary, steps = clean(summary or ""), [clean(step) for step in steps]
    triggers = [clean(trigger) for trigger in triggers]
    source_urls = [clean(url) for url in source_urls]  # a URL may carry a password or a token
    problems = []
    if not NAME.match(name or ""):
        problems.append("name: lowercase letters, digits, '.', '-', '_' (at most 64)")
    if not summary:
        problems.append("--summary: a one-line summary is required")
    if not any(steps):
        problems.append("--step: at least one step is required")
    if not source_urls:
        problems.append("--source-url: at least one source URL is required")
    problems += [
        f"--source-url: not an http(s) URL: {u!r}" for u in source_urls if not URL.match(u)
    ]
    if problems:
        raise InvalidInput("skill refused: " + "; ".join(problems))
    first_line, now = summary.splitlines()[0], time.time()
    with transaction(engine.db) as db:
        skills_table.save(
            db,
            name,
            summary=first_line,
            triggers=[t for t in triggers if t],
            steps=[s for s in steps if s],
            source_urls=source_urls,
            now=now,
        )
        audit.record(db, "teach", f"skill:{name}", after={"summary": first_line})
    return get(engine, name)


def get(engine: Engine, name: str) -> Skill:
    row = skills_table.get(engine.db, name)
    if row is None:
        raise NotFound(f"no skill named {name!r}")
    return _from_row(row)


def load(engine: Engine, name: str) -> Skill:
    """The full skill, counting the use."""
    get(engine, name)
    with transaction(engine.db) as db:
        skills_table.record_use(db, name)
    return get(engine, name)


def listing(engine: Engine) -> list[Skill]:
    return [_from_row(row) for row in skills_table.listing(engine.db)]


def check(engine: Engine, query: str) -> dict[str, Any]:
    """known / partial / unknown: how much of the task's words the best skill covers. An
    unknown task is queued to be learned."""
    if not query.strip():
        raise InvalidInput("the task to check is empty")
    wanted = set(content_words(query))
    best, coverage = None, 0.0
    for skill in listing(engine):
        described = " ".join([skill.name.replace("-", " "), skill.summary, *skill.triggers])
        have = set(content_words(described))
        share = len(wanted & have) / len(wanted) if wanted else 0.0
        if share > coverage:
            best, coverage = skill, share
    verdict = "known" if coverage >= KNOWN else "partial" if coverage >= PARTIAL else "unknown"
    if verdict == "unknown":
        from mnemoweave.learn import skill_queue

        skill_queue.add(engine, query)
    return {
        "verdict": verdict,
        "coverage": round(coverage, 3),
        "best": None if best is None or verdict == "unknown" else best.to_dict(),
    }
