"""Loaders: each benchmark file becomes stores of documents plus the queries asked of them.

A `Doc` is one retrievable item (a turn or a memory) under the dataset's own key; a
`Query` names the keys that count as relevant. Data is read at run time from wherever the
command line points (LoCoMo is CC BY-NC: it must stay outside the project).
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any

from mnemoweave.text import language


@dataclass(frozen=True)
class Doc:
    """One retrievable item: a turn (session, ts) or a memory (project, kind, tags)."""

    key: str
    text: str
    session: str = ""
    ts: float | None = None
    project: str = ""
    kind: str = "fact"
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Query:
    """A question, the keys that answer it, and the group it is reported under."""

    id: str
    text: str
    relevant: tuple[str, ...]
    group: str = ""
    project: str | None = None


@dataclass(frozen=True)
class Store:
    """What one memory store holds (a conversation, a question's haystack, a user)."""

    name: str
    docs: tuple[Doc, ...]
    queries: tuple[Query, ...]


def _read_json(path: Path) -> Any:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _utc(moment: datetime) -> float:
    return moment.replace(tzinfo=UTC).timestamp()


# --- LoCoMo ------------------------------------------------------------------------------

# In the order the shared README reports them.
LOCOMO_CATEGORIES = {4: "single-hop", 1: "multi-hop", 2: "temporal", 3: "open-domain"}
ADVERSARIAL = "adversarial"  # category 5, reported separately
_DIA_ID = re.compile(r"D(\d+):0*(\d+)")
_SESSION = re.compile(r"session_(\d+)")


def parse_evidence(evidence: Iterable[str]) -> tuple[str, ...]:
    """Dialogue ids in evidence strings, normalised to "D<session>:<turn>", repeats dropped.

    Every `D(\\d+):0*(\\d+)` match counts, so "D8:6; D9:17" gives two ids and "D30:05" gives
    "D30:5"; strings without a match ("D", "D:11:26") give none.
    """
    found = (f"D{s}:{t}" for text in evidence for s, t in _DIA_ID.findall(text))
    return tuple(dict.fromkeys(found))


def parse_locomo_date(text: str) -> float:
    """'1:56 pm on 8 May, 2023' -> epoch seconds (read as UTC)."""
    return _utc(datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y"))


def _locomo_docs(sample_id: str, conversation: dict[str, Any]) -> list[Doc]:
    numbers = sorted(
        int(match.group(1))
        for name in conversation
        if (match := _SESSION.fullmatch(name)) and isinstance(conversation[name], list)
    )
    docs = []
    for number in numbers:
        ts = parse_locomo_date(conversation[f"session_{number}_date_time"])
        for turn in conversation[f"session_{number}"]:
            (key,) = parse_evidence([turn["dia_id"]])
            text = f"{turn['speaker']}: {turn['text']}"
            docs.append(Doc(key, text, session=f"{sample_id}/session_{number}", ts=ts))
    return docs


def _locomo_queries(sample_id: str, qa: list[dict[str, Any]]) -> list[Query]:
    queries = []
    for index, item in enumerate(qa):
        relevant = parse_evidence(item["evidence"])
        if relevant:
            group = LOCOMO_CATEGORIES.get(item["category"], ADVERSARIAL)
            queries.append(Query(f"{sample_id}#{index}", item["question"], relevant, group))
    return queries


def load_locomo(path: Path) -> list[Store]:
    """One store per conversation; questions whose evidence parses to nothing are skipped."""
    return [
        Store(
            sample["sample_id"],
            tuple(_locomo_docs(sample["sample_id"], sample["conversation"])),
            tuple(_locomo_queries(sample["sample_id"], sample["qa"])),
        )
        for sample in _read_json(path)
    ]


# --- LongMemEval -------------------------------------------------------------------------


def parse_longmemeval_date(text: str) -> float:
    """'2023/04/29 (Sat) 16:59' -> epoch seconds (read as UTC)."""
    return _utc(datetime.strptime(text.strip(), "%Y/%m/%d (%a) %H:%M"))


def _longmemeval_store(item: dict[str, Any]) -> Store:
    """User turns keyed "<session id>_<1-based turn index>" as in the official scripts.

    Targets are the `has_answer` user turns of the answer sessions; blank turns are left out.
    """
    answer_sessions = set(item["answer_session_ids"])
    docs, targets = [], []
    sessions = zip(
        item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"], strict=True
    )
    for session_id, date, turns in sessions:
        ts = parse_longmemeval_date(date)
        for index, turn in enumerate(turns):
            if turn["role"] != "user" or not turn["content"].strip():
                continue
            key = f"{session_id}_{index + 1}"
            docs.append(Doc(key, turn["content"], session=session_id, ts=ts))
            if turn.get("has_answer") and session_id in answer_sessions:
                targets.append(key)
    query = Query(
        item["question_id"], item["question"], tuple(dict.fromkeys(targets)), item["question_type"]
    )
    return Store(item["question_id"], tuple(docs), (query,))


def load_longmemeval(path: Path) -> list[Store]:
    """One store per scored question: abstention (`_abs`) and target-less questions skipped."""
    stores = (
        _longmemeval_store(item)
        for item in _read_json(path)
        if not item["question_id"].endswith("_abs")
    )
    return [store for store in stores if store.queries[0].relevant]


# --- MemoryBank --------------------------------------------------------------------------


def _memorybank_docs(history: dict[str, list[dict[str, str]]]) -> list[Doc]:
    """Each {query, response} pair is one turn "<query> <response>", keyed "<date>#<i>".

    (Two turns per pair, also allowed by the protocol, scored lower on the dev sets.)
    """
    docs = []
    for date, pairs in history.items():
        ts = _utc(datetime.strptime(date, "%Y-%m-%d"))
        for index, pair in enumerate(pairs):
            text = f"{pair['query']} {pair['response']}".strip()
            if text:
                docs.append(Doc(f"{date}#{index}", text, session=date, ts=ts))
    return docs


def _flat(ids: Iterable[str | list[str]]) -> list[str]:
    """Evidence ids, whether given flat or as a list of alternative sets."""
    return [i for item in ids for i in ([item] if isinstance(item, str) else item)]


def history_language(docs: Iterable[Doc]) -> str:
    """'cn' when a history is mostly Chinese, else 'en' (the gold files' question suffixes)."""
    sample = " ".join(doc.text for doc in islice(docs, 20))
    return "cn" if language(sample) == "zh" else "en"


def load_memorybank(history_path: Path, gold_path: Path, query_lang: str | None) -> list[Store]:
    """One store per user with answerable gold questions, in the gold file's order.

    The user's history is `history[history_key or user]`; the query is `question_<lang>`
    (default: the history's language); relevant = `evidence` plus `evidence_alt`.
    """
    histories = _read_json(history_path)
    by_user: dict[str, list[dict[str, Any]]] = {}
    for record in _read_jsonl(gold_path):
        if record["answerable"]:
            by_user.setdefault(record.get("history_key") or record["user"], []).append(record)
    stores = []
    for user, records in by_user.items():
        docs = _memorybank_docs(histories[user]["history"])
        lang = query_lang or history_language(docs)
        queries = tuple(
            Query(
                r["id"],
                r[f"question_{lang}"],
                tuple(dict.fromkeys(_flat(r["evidence"]) + _flat(r.get("evidence_alt", [])))),
            )
            for r in records
        )
        stores.append(Store(user, tuple(docs), queries))
    return stores


# --- cards -------------------------------------------------------------------------------

CARD_KINDS = {
    "pitfall": "conclusion",
    "decision": "conclusion",
    "procedure": "skill",
    "fact": "fact",
    "pref": "pref",
}


def load_cards(memories_path: Path, queries_path: Path) -> Store:
    """All cards in one store (kind mapped to the engine's, the original kept as a tag)."""
    docs = tuple(
        Doc(
            m["id"],
            m["text"],
            project=m["project"],
            kind=CARD_KINDS[m["kind"]],
            tags=(m["kind"],),
        )
        for m in _read_jsonl(memories_path)
    )
    known = {doc.key for doc in docs}
    queries = []
    for q in _read_jsonl(queries_path):
        unknown = set(q["relevant"]) - known
        if unknown:
            raise ValueError(f"{queries_path}: query {q['id']} names unknown cards {unknown}")
        queries.append(Query(q["id"], q["query"], tuple(q["relevant"]), q["type"], q["project"]))
    return Store("cards", docs, tuple(queries))
