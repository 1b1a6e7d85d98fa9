"""Sanity: what a person sees in ordinary use, at every store size.

The cases (`--data`, default bench/data/sanity.json) are written for this benchmark:
- memories, each with a direct question in its language and one in the other language.
  Each is asked in stores of 1, 10, 100, 1,000 and 10,000 memories (`--sizes`): 1 holds the
  memory alone, 10 holds ten of them, larger stores hold every memory of the split plus
  filler memories (fillers.py) up to the size. A question is answered when the prompt's
  weave (no session: the relevance decision alone) holds its memory as knowledge;
- off-topic prompts, sent to the same stores: every knowledge line they get is counted;
- echoes: an earlier session asked something (and got bare replies too); a later session
  asks it again. An echo is a woven line that holds the prompt's own earlier copy, or a
  bare reply without its question; the earlier answer reaching the prompt is reported too;
- edits: a user states a rule with filler, the card is accepted with a reviewer's clean
  text; a later prompt must get that text and never the raw turn, and after a second edit
  (`edit`) the next prompt of the same session gets the new text.

`.venv/bin/python bench/run.py sanity [--split dev|check|all] [--sizes 1,10,100] --json`
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from fillers import fillers, unrelated
from harness import load_embedders, progress
from metrics import mean
from mnemoweave import Engine
from mnemoweave.model import SessionEvent
from mnemoweave.recall.exchanges import echoes
from mnemoweave.recall.weave import Weave
from mnemoweave.text import bare, normalise
from reach import fresh_engine

DATA = Path(__file__).resolve().parent / "data" / "sanity.json"
SIZES = (1, 10, 100, 1000, 10000)
PROJECT = "github.com/acme/sanity"
GROUP = 10  # memories in a store of 10


def _store(engine: Engine, memories: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Write the memories; returns memory ref -> case id (fillers map to "")."""
    rows = list(memories)
    written = engine.remember_many(
        {"text": m["text"], "kind": m["kind"], "project": PROJECT} for m in rows
    )
    return {w.id: m.get("id", "") for w, m in zip(written, rows, strict=True) if w.id}


def _knowledge(woven: Weave) -> list[str]:
    return [line.ref for line in woven.knowledge]


def _stores(cases: Sequence[dict[str, Any]], size: int, pool: list[dict[str, str]]):
    """(memories of one store, the cases asked of it) for every store of `size`."""
    if size == 1:
        return [([case], [case]) for case in cases]
    if size <= GROUP:
        groups = [cases[i : i + size] for i in range(0, len(cases), size)]
        return [(list(group), list(group)) for group in groups if len(group) == size]
    return [([*cases, *pool[: max(0, size - len(cases))]], list(cases))]


def recall(
    embedders: Sequence[Any],
    cases: Sequence[dict[str, Any]],
    offtopic: Sequence[dict[str, Any]],
    sizes: Sequence[int],
    pool: list[dict[str, str]],
) -> dict[str, Any]:
    """Direct and cross-language recall, and off-topic lines, per store size."""
    report: dict[str, Any] = {}
    for size in sizes:
        direct: dict[str, list[float]] = defaultdict(list)
        cross: list[float] = []
        lines: list[int] = []
        misses: list[dict[str, str]] = []
        for memories, asked in _stores(cases, size, pool):
            with fresh_engine(embedders) as engine:
                ids = _store(engine, memories)
                ref_of = {case: ref for ref, case in ids.items() if case}
                for case in asked:
                    for kind in ("direct", "cross"):
                        woven = engine.weave(case[kind], project=PROJECT)
                        hit = ref_of[case["id"]] in _knowledge(woven)
                        if kind == "direct":
                            direct[case["lang"]].append(float(hit))
                        else:
                            cross.append(float(hit))
                        if not hit:
                            misses.append({"id": case["id"], "kind": kind, "prompt": case[kind]})
                if size == 1 and memories[0] is not cases[0]:
                    continue  # off-topic prompts go to one store of each size
                for prompt in offtopic:
                    lines.append(len(engine.weave(prompt["text"], project=PROJECT).knowledge))
        progress(f"sanity: size {size} done")
        report[str(size)] = {
            "direct_recall": mean([hit for hits in direct.values() for hit in hits]),
            "direct_by_lang": {lang: mean(hits) for lang, hits in direct.items()},
            "cross_recall": mean(cross),
            "offtopic_lines_per_prompt": mean([float(n) for n in lines]),
            "offtopic_prompts_with_lines": mean([float(n > 0) for n in lines]),
            "misses": misses,
        }
    return report


def echo_check(embedders: Sequence[Any], cases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Earlier sessions asked, later ones ask again: count echoes, and answers that reach."""
    echoed, answered, found = [], [], []
    with fresh_engine(embedders) as engine:
        refs: dict[str, list[str]] = {}
        for number, case in enumerate(cases):
            session = f"before-{case['id']}"
            engine.handle(SessionEvent("start", session, ts=1.7e9 + number, project=PROJECT))
            written = engine.ingest_many(
                {"session": session, "role": t["role"], "text": t["text"], "project": PROJECT}
                for t in case["turns"]
            )
            refs[case["id"]] = [w.ref for w in written]
            engine.handle(SessionEvent("end", session, project=PROJECT))
        for case in cases:
            woven = engine.weave(case["later"], project=PROJECT)
            said = {ref: t for ref, t in zip(refs[case["id"]], case["turns"], strict=True)}
            bad = [line.text for line in woven.knowledge if _echo(line, case["later"], said)]
            echoed.append(len(bad))
            answer = refs[case["id"]][case["answer_turn"]]
            answered.append(
                float(any(answer in (line.ref, *line.also) for line in woven.knowledge))
            )
            if bad:
                found.append({"id": case["id"], "lines": bad})
    return {
        "echoes": sum(echoed),
        "prompts_with_echoes": mean([float(n > 0) for n in echoed]),
        "earlier_answer_reached": mean(answered),
        "echoed": found,
    }


def _echo(line: Any, prompt: str, said: dict[str, dict[str, str]]) -> bool:
    """A line that shows the prompt's earlier copy (the user's own words), or a bare reply
    with nothing else."""
    shown = normalise(line.text)
    copies = [t for t in said.values() if t["role"] == "user" and echoes(t["text"], prompt)]
    if any(normalise(t["text"]) in shown for t in copies):
        return True
    parts = [said[ref] for ref in (line.ref, *line.also) if ref in said]
    return len(parts) == 1 and parts[0]["role"] == "assistant" and bare(parts[0]["text"])


def edit_check(embedders: Sequence[Any], cases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A card accepted with a clean text: the prompt that needs it gets that text, in the
    brief or the weave, never the raw turn; a later edit reaches the same session's next
    prompt."""
    kept, raw_shown, reedited = [], [], []
    failures = []
    for case in cases:
        with fresh_engine(embedders) as engine:
            engine.handle(SessionEvent("start", "first", ts=1.7e9, project=PROJECT))
            said = engine.ingest("first", "user", case["said"], project=PROJECT).ref
            engine.ingest("first", "assistant", case["reply"], project=PROJECT)
            engine.handle(SessionEvent("end", "first", project=PROJECT))
            cards = [c for c in engine.pending(PROJECT) if said in c.evidence]
            if not cards:
                card_ref = None
                memory = engine.remember(
                    case["edited"], kind=case["kind"], project=PROJECT, evidence=[said]
                ).ref
            else:
                card_ref = cards[0].id
                written = engine.review(card_ref, "accept", summary=case["edited"])
                if written.action == "held":
                    written = engine.review(
                        card_ref, "accept", summary=case["edited"], keep_both=True
                    )
                memory = written.ref
            engine.handle(SessionEvent("start", "later", project=PROJECT))
            start = engine.weave("", session="later", project=PROJECT, record=True)
            woven = engine.weave(case["prompt"], session="later", project=PROJECT, record=True)
            refs = [
                r
                for w in (start, woven)
                for ls in w.tiers.values()
                for x in ls
                for r in (x.ref, *x.also)
            ]
            texts = [x.text for w in (start, woven) for ls in w.tiers.values() for x in ls]
            kept.append(float(memory in refs))
            raw = said in refs or any(normalise(case["said"]) in normalise(t) for t in texts)
            raw_shown.append(float(raw))
            engine.edit(memory, text=case["edited"] + " (v2)")
            after = engine.weave(case["prompt"], session="later", project=PROJECT, record=True)
            reedited.append(float(any("(v2)" in x.text for x in after.knowledge)))
            if not kept[-1] or raw or not reedited[-1]:
                failures.append(
                    {"id": case["id"], "card": card_ref, "start": start.text, "woven": woven.text}
                )
    return {
        "edited_woven": mean(kept),
        "raw_turn_woven": mean(raw_shown),
        "second_edit_reaches_session": mean(reedited),
        "failures": failures,
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, default=DATA, help="the cases (sanity.json)")
    parser.add_argument("--split", choices=("dev", "check", "all"), default="all")
    parser.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="store sizes, comma-separated"
    )
    parser.add_argument("--verbose", action="store_true", help="keep the misses")


def run(args: argparse.Namespace) -> dict[str, Any]:
    data = json.loads(args.data.read_text(encoding="utf-8"))
    cases = [m for m in data["memories"] if args.split in ("all", m["split"])]
    sizes = [int(size) for size in args.sizes.split(",") if size.strip()]
    prompts = [p for m in data["memories"] for p in (m["direct"], m["cross"])]
    prompts += [p["text"] for p in data["offtopic"]]
    pool = unrelated(list(fillers(max(sizes) * 2)), prompts)
    embedders = load_embedders(args.embedder, args.models)
    report: dict[str, Any] = {"split": args.split, "cases": len(cases)}
    report["by_size"] = recall(embedders, cases, data["offtopic"], sizes, pool)
    report["echo"] = echo_check(embedders, data["echoes"])
    report["edit"] = edit_check(embedders, data["edits"])
    sized = report["by_size"].values()
    report["direct_recall_min"] = min(s["direct_recall"] for s in sized)
    report["cross_recall_min"] = min(s["cross_recall"] for s in sized)
    small = [s for size, s in report["by_size"].items() if int(size) <= 1000]
    report["offtopic_lines_up_to_1000"] = max(s["offtopic_lines_per_prompt"] for s in small)
    if not args.verbose:
        for s in report["by_size"].values():
            s.pop("misses")
        report["echo"].pop("echoed")
        report["edit"].pop("failures")
    return report
