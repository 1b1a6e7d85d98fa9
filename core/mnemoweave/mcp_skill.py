"""The memory_skill tool's answers: one action on the skills, in a few lines of text."""

from __future__ import annotations

from typing import Any

from .errors import InvalidInput

SKILL_ARGUMENTS = {"--summary": "summary", "--step": "steps", "--source-url": "source_urls"}


def skill_answer(
    engine: Any,
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
        lines = [f"{s.name} — {s.summary} (used {s.usage_count})" for s in known]
        return "\n".join(lines) or "no skills yet"
    if action == "check":
        if not (query or name).strip():
            raise InvalidInput("check needs query: the task to check")
        result = engine.check_skill(query or name)
        best = result["best"]
        found = f": {best['name']} — {best['summary']}" if best else ""
        if result["verdict"] == "unknown":
            found = " — queued to learn (memory_skill queue)"
        return f"{result['verdict']} (coverage {result['coverage']}){found}"
    if action == "queue":
        closed = f"closed {engine.close_queued_skill(name)['task']}\n" if name.strip() else ""
        entries = engine.skill_queue()
        lines = [f"{e['number']}. {e['task']} (asked {e['asked']}x)" for e in entries]
        return closed + ("\n".join(lines) or "the learning queue is empty")
    if not name.strip():
        raise InvalidInput(f"{action} needs name")
    if action == "load":
        loaded = engine.load_skill(name)
        lines = [f"{loaded.name}: {loaded.summary}"]
        lines += [f"{n}. {step}" for n, step in enumerate(loaded.steps, 1)]
        return "\n".join([*lines, "sources: " + " ".join(loaded.source_urls)])
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
