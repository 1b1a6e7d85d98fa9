"""Consolidation: propose what could be tidied, apply what a person picks, roll a run back.

`propose` is read-only for memories: it records a run (`r_N`) holding its items and the
state of every memory they name, as it was then:
- `d1, d2...` clusters of near-duplicates (one project and kind): the others would be
  superseded into the kept one (the most important, then most used, then newest);
- `c1...` pairs that need a decision (conflicts.py): an update is resolved to the newer
  memory; a conflict is only reported, with the command that settles it;
- `h1...` superseded chains (a -> b -> c), reported;
- `s1...` stale memories (low importance, decayed, never recalled): would be trashed.
`apply` carries out a run's items (all, or `only` those named), each in a short
transaction, and refuses, naming the item, when a memory it names changed since the
proposal. Nothing is deleted: superseding and trashing keep every row. Each change writes
an audit row (actor `consolidate r_N`) with the memory's state before and after, and
`rollback` writes every `before` back, newest first, itself audited.

`idle_cards` is what the daemon runs when idle: a proposal over every project whose
clusters and clashes become review cards ("merge m_3 and m_7?"); accepting one applies its
item (a conflict: the newer memory is kept), rejecting it applies nothing, and the same
memories are not asked about twice. Nothing is applied without a decision.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mnemoweave.errors import InvalidInput, NotFound
from mnemoweave.learn import conflicts
from mnemoweave.scope import visible
from mnemoweave.store import audit
from mnemoweave.store import cards as cards_table
from mnemoweave.store import consolidations as runs_table
from mnemoweave.store import memories as memories_table
from mnemoweave.store.db import transaction
from mnemoweave.text import is_near_duplicate
from mnemoweave.upkeep.hygiene import neighbour_pairs, stale

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

UNITS = {"d": 86400.0, "h": 3600.0, "w": 7 * 86400.0}


def parse_since(text: str) -> float:
    """`90d`, `12h`, `2w` -> seconds."""
    value, unit = text.strip()[:-1], text.strip()[-1:].lower()
    if unit not in UNITS or not value.isdigit() or int(value) < 1:
        raise InvalidInput(f"--since takes a count and a unit (90d, 12h, 2w), got {text!r}")
    return int(value) * UNITS[unit]


def _ref(mid: int) -> str:
    return f"m_{mid}"


def _run_id(run: str) -> int:
    if not (run.startswith("r_") and run[2:].isdigit()):
        raise InvalidInput(f"{run!r} is not a consolidation run (r_N, from `consolidate propose`)")
    return int(run[2:])


def _clusters(pairs: list[tuple[str, str]]) -> list[list[str]]:
    parent: dict[str, str] = {}

    def root(ref: str) -> str:
        while parent.setdefault(ref, ref) != ref:
            ref = parent[ref]
        return ref

    for a, b in pairs:
        parent[root(a)] = root(b)
    groups: dict[str, list[str]] = {}
    for ref in parent:
        groups.setdefault(root(ref), []).append(ref)
    return sorted((sorted(g, key=lambda r: int(r[2:])) for g in groups.values()), key=len)


def _chains(links: list[tuple[int, int]]) -> list[list[str]]:
    after = dict(links)
    starts = set(after) - set(after.values())
    chains = []
    for start in sorted(starts):
        chain, seen = [start], {start}
        while chain[-1] in after and after[chain[-1]] not in seen:
            chain.append(after[chain[-1]])
            seen.add(chain[-1])
        if len(chain) > 2:
            chains.append([_ref(mid) for mid in chain])
    return chains


def propose(
    engine: Engine, *, project: str | None = None, since: str = "90d", now: float | None = None
) -> dict[str, Any]:
    """Find what could be tidied in the scope (`project` and global ones; None: all) among
    memories changed within `since`, record it as a run and return it. Changes no memory."""
    now = time.time() if now is None else now
    cutoff = now - parse_since(since)
    rows = {_ref(r["id"]): r for r in memories_table.active_in(engine.db, visible(project))}
    recent = {ref for ref, row in rows.items() if row["updated"] >= cutoff}
    near = {
        pair: cosine for pair, cosine in neighbour_pairs(engine, rows).items() if recent & set(pair)
    }
    items: dict[str, dict[str, Any]] = {}
    threshold = engine.config.dedup_threshold
    dup_pairs = [
        pair
        for pair, cosine in near.items()
        if is_near_duplicate(rows[pair[0]]["body"], rows[pair[1]]["body"], cosine, threshold)
    ]
    for number, cluster in enumerate(_clusters(dup_pairs), 1):
        keep = max(
            cluster,
            key=lambda r: (rows[r]["importance"], rows[r]["access_count"], rows[r]["updated"]),
        )
        items[f"d{number}"] = {
            "type": "duplicates",
            "keep": keep,
            "merge": [r for r in cluster if r != keep],
            "texts": {r: rows[r]["body"] for r in cluster},
        }
    clustered = {ref for pair in dup_pairs for ref in pair}
    number = 0
    for (a, b), cosine in sorted(near.items()):
        if a in clustered and b in clustered:
            continue
        older, newer = sorted((a, b), key=lambda r: (rows[r]["updated"], int(r[2:])))
        verdict = conflicts.detect(rows[older]["body"], rows[newer]["body"], cosine)
        if verdict.kind is None:
            continue
        number += 1
        items[f"c{number}"] = {
            "type": verdict.kind,
            "older": older,
            "newer": newer,
            "resolve": "newer" if verdict.kind == "update" else None,
            "reason": verdict.reason,
            "texts": {older: rows[older]["body"], newer: rows[newer]["body"]},
        }
    links = memories_table.supersessions(engine.db, visible(project))
    for number, chain in enumerate(_chains(links), 1):
        items[f"h{number}"] = {"type": "chain", "refs": chain}
    faded = [s for s in stale(engine, now) if s["id"] in rows and not rows[s["id"]]["access_count"]]
    for number, found in enumerate(faded, 1):
        items[f"s{number}"] = {"type": "stale", "id": found["id"], "text": found["text"]}
    named = {ref for item in items.values() for ref in _changed_by(item, settle=True)}
    report = {
        "scope": project or "",
        "since": since,
        "items": items,
        "seen": {ref: _state(engine, ref) for ref in sorted(named, key=lambda r: int(r[2:]))},
    }
    with transaction(engine.db) as db:
        run = runs_table.create(db, now, project or "", report)
    return {"run": f"r_{run}", "state": "proposed", **report}


def _changed_by(item: dict[str, Any], settle: bool = False) -> list[str]:
    """The memories applying `item` changes (none for what is only reported; `settle`: a
    conflict is resolved to the newer memory, as a person decided)."""
    if item["type"] == "duplicates":
        return [item["keep"], *item["merge"]]
    if item["type"] == "update" or (item["type"] == "conflict" and settle):
        return [item["older"], item["newer"]]
    if item["type"] == "stale":
        return [item["id"]]
    return []


def _state(engine: Engine, ref: str) -> dict[str, Any]:
    state = memories_table.state_of(engine.db, int(ref[2:]))
    if state is None:
        raise NotFound(f"no memory with id {ref}")
    return state


def _load(engine: Engine, run: str) -> dict[str, Any]:
    found = runs_table.get(engine.db, _run_id(run))
    if found is None:
        raise NotFound(f"no consolidation run {run}")
    return found


def apply(
    engine: Engine, run: str, only: Sequence[str] = (), settle: bool = False
) -> dict[str, Any]:
    """Carry out the run's items not applied yet (all, or `only` those), each in its own
    transaction; refuse, naming the item, if a memory it changes is not as the proposal saw
    it. `settle`: conflicts are resolved to the newer memory too (a person's decision)."""
    found = _load(engine, run)
    if found["state"] == "rolled back":
        raise InvalidInput(f"{run} was rolled back: propose again")
    items, seen, done = found["report"]["items"], found["report"]["seen"], found["applied"]
    unknown = sorted(set(only) - set(items))
    if unknown:
        raise InvalidInput(f"{run} has no item {', '.join(unknown)} (it has {', '.join(items)})")
    picked = [name for name in items if not only or name in only]
    chosen = [n for n in picked if n not in done and _changed_by(items[n], settle)]
    if not chosen and any(n in done for n in picked):
        raise InvalidInput(f"{run} was already applied ({', '.join(done)})")
    for name in chosen:
        for ref in _changed_by(items[name], settle):
            if memories_table.state_of(engine.db, int(ref[2:])) != seen[ref]:
                raise InvalidInput(
                    f"{name}: {ref} changed since {run} was proposed; nothing was applied"
                    " (run `mnemoweave consolidate propose` again)"
                )
    actor = f"consolidate {run}"
    for name in chosen:
        with transaction(engine.db) as db:
            _apply_item(db, items[name], name, actor)
    with transaction(engine.db) as db:
        runs_table.mark(db, _run_id(run), "applied", done + chosen)
    reported = [n for n in picked if n not in chosen and n not in done]
    return {"run": run, "applied": chosen, "reported_only": reported}


def _apply_item(db: Any, item: dict[str, Any], name: str, actor: str) -> None:
    """Supersede into the kept (or newer) memory, or trash a stale one; audit every memory
    whose state changed, with its state before and after."""
    now = time.time()
    if item["type"] == "stale":
        steps: list[tuple[str, str | None]] = [(item["id"], None)]
    elif item["type"] == "duplicates":
        steps = [(old, item["keep"]) for old in item["merge"]]
    else:
        steps = [(item["older"], item["newer"])]
    for old, into in steps:
        touched = [old] if into is None else [old, into]
        before = {ref: memories_table.state_of(db, int(ref[2:])) for ref in touched}
        if into is None:
            memories_table.set_status(db, int(old[2:]), "trashed", now)
        else:
            memories_table.supersede(db, int(old[2:]), int(into[2:]), now)
        for ref in touched:
            after = memories_table.state_of(db, int(ref[2:]))
            if after != before[ref]:
                audit.record(
                    db, "consolidate", ref, before[ref], {**(after or {}), "item": name}, actor
                )


def rollback(engine: Engine, run: str) -> dict[str, Any]:
    """Write back what applying `run` changed (every audited `before`, newest first), in one
    transaction, audited as a rollback."""
    found = _load(engine, run)
    if found["state"] != "applied":
        raise InvalidInput(f"{run} was {found['state']}: only an applied run rolls back")
    actor = f"consolidate {run}"
    restored = []
    with transaction(engine.db) as db:
        for row in reversed(audit.by_actor(db, actor)):
            if row["action"] != "consolidate" or row["before"] is None:
                continue
            before = json.loads(row["before"])
            current = memories_table.state_of(db, int(row["target"][2:]))
            if current is None:
                continue  # purged since: nothing to write back
            memories_table.put_state(db, int(row["target"][2:]), before)
            audit.record(db, "rollback", row["target"], current, before, f"rollback {run}")
            restored.append(row["target"])
        runs_table.mark(db, _run_id(run), "rolled back", found["applied"])
    return {"run": run, "restored": sorted(set(restored), key=lambda r: int(r[2:]))}


CARD_TYPES = ("duplicates", "update", "conflict")


def _card_text(item: dict[str, Any]) -> tuple[str, str]:
    """A proposal card's question and the memory whose kind it carries."""
    texts = item["texts"]
    if item["type"] == "duplicates":
        keep, merge = item["keep"], item["merge"]
        others = ", ".join(f"{ref} «{texts[ref]}»" for ref in merge)
        return f"Merge near-duplicates: keep {keep} «{texts[keep]}», retire {others}?", keep
    older, newer = item["older"], item["newer"]
    verb = "updates" if item["type"] == "update" else "contradicts"
    return (
        f"{newer} «{texts[newer]}» {verb} {older} «{texts[older]}»: keep {newer} and retire "
        f"{older}? (reject keeps both)",
        newer,
    )


def idle_cards(engine: Engine, now: float | None = None) -> list[str]:
    """Propose over every project and turn its clusters and clashes into pending cards (one
    per item, never twice for the same question); the ids of the cards made."""
    run = propose(engine, project=None, now=now)
    made = []
    with transaction(engine.db) as db:
        for name, item in run["items"].items():
            if item["type"] not in CARD_TYPES:
                continue
            question, carrier = _card_text(item)
            row = memories_table.get(db, int(carrier[2:]))
            if row is None:
                continue
            card = cards_table.insert_proposal(
                db,
                summary=question,
                kind=row["kind"],
                project=row["project"],
                now=time.time() if now is None else now,
                proposal=f"{run['run']} {name}",
            )
            if card is not None:
                made.append(f"c_{card}")
    return made


def idle_due(engine: Engine, now: float, every: float) -> bool:
    """Whether the last proposal is older than `every` seconds (or there was none) and
    there are memories to look at."""
    last = runs_table.latest(engine.db)
    return (last is None or now - last >= every) and memories_table.count(engine.db) > 1
