"""The memory_review tool's answers: decide a pending card (accept, held when it clashes
with a memory, or reject), or propose and apply a consolidation run, in a few lines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mnemoweave.errors import InvalidInput

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

from mnemoweave.recall.weave import fenced


def review_answer(
    engine: Engine,
    project: str,
    decision: str,
    ref: str,
    accepting: dict[str, Any],
    *,
    keep_both: bool,
    scope: str,
    why: str,
) -> str:
    """`accepting`: summary, kind, title and replaces, as given (empty when not)."""
    edits = any(accepting.values()) or keep_both or scope != "card"
    if decision in ("propose", "apply"):
        if edits or why:
            raise InvalidInput(f"{decision} takes no card options (apply: id=r_N)")
        if decision == "propose":
            return _proposal(engine.consolidate_propose(project=project))
        done = engine.consolidate_apply(ref)
        return f"{ref}: applied {', '.join(done['applied']) or 'nothing'}"
    if decision == "reject":
        if edits:
            raise InvalidInput("summary, kind, title, scope, replaces and keep_both go with accept")
        rejected: str = engine.review(ref, "reject", why=why).line()
        return rejected
    if why:
        raise InvalidInput("why goes with reject")
    result = engine.review(
        ref,
        "accept",
        kind=accepting["kind"],
        summary=accepting["summary"] or None,
        title=accepting["title"] or None,
        project={"card": None, "project": project, "global": ""}[scope],
        replaces=accepting["replaces"].strip() or None,
        keep_both=keep_both,
    )
    if result.action == "held":
        return f"{ref} held: {result.reason}"
    replaced = accepting["replaces"].strip()
    retired = f"; {replaced} superseded by {result.id}" if replaced else ""
    return f"{ref} accepted: {result.line()}{retired}"


def _proposal(run: dict[str, Any]) -> str:
    lines = []
    for name, item in run["items"].items():
        refs = list(item.get("texts") or {}) or item.get("refs") or [item.get("id")]
        lines.append(f"{name} {item['type']}: {' '.join(str(r) for r in refs)}")
    head = f"{run['run']}: {len(lines)} item(s); apply with decision=apply id={run['run']}"
    return head + ("\n" + fenced(lines) if lines else "")
