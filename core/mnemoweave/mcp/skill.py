"""The memory_skill tool's answers: one action on the skills, in a few lines of text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemoweave.errors import InvalidInput

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

from mnemoweave.recall.weave import fenced, quote

SKILL_ARGUMENTS = {"--summary": "summary", "--step": "steps", "--source-url": "source_urls"}


def skill_answer(
    engine: Engine,
    action: str,
    name: str,
    query: str,
    summary: str,
    steps: list[str],
    triggers: list[str],
    urls: list[str],
) -> str:
    if action == "list":
        known = engine.skills()
        lines = [f"{s.name} — {quote(s.summary)} (used {s.usage_count})" for s in known]
        return fenced(lines) if lines else "no skills yet"
    if action == "check":
        if not (query or name).strip():
            raise InvalidInput("check needs query: the task to check")
        result = engine.check_skill(query or name)
        best = result["best"]
        verdict = f"{result['verdict']} (coverage {result['coverage']})"
        if result["verdict"] == "unknown":
            return f"{verdict} — queued to learn (memory_skill queue)"
        if not best:
            return verdict
        return f"{verdict}: {best['name']}\n" + fenced([quote(best["summary"])])
    if action == "queue":
        lines = []
        if name.strip():
            lines.append(f"closed {quote(engine.close_queued_skill(name)['task'])}")
        entries = engine.skill_queue()
        lines += [f"{e['number']}. {quote(e['task'])} (asked {e['asked']}x)" for e in entries]
        answer = [fenced(lines)] if lines else []
        return "\n".join(answer if entries else [*answer, "the learning queue is empty"])
    if not name.strip():
        raise InvalidInput(f"{action} needs name")
    if action == "load":
        loaded = engine.load_skill(name)
        lines = [f"{loaded.name}: {quote(loaded.summary)}"]
        lines += [f"{n}. {quote(step)}" for n, step in enumerate(loaded.steps, 1)]
        return fenced([*lines, "sources: " + quote(" ".join(loaded.source_urls))])
    try:
        taught = engine.teach_skill(
            name, summary=summary, triggers=triggers, steps=steps, source_urls=urls
        )
    except InvalidInput as exc:  # name the tool's arguments, not the CLI's options
        message = str(exc)
        for option, argument in SKILL_ARGUMENTS.items():
            message = message.replace(option, argument)
        raise InvalidInput(message) from None
    return f"taught {taught.name}: {taught.summary}"
