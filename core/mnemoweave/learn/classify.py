"""Classify one chat turn (Chinese or English) into the kind of memory it may hold.

Kinds: `pref` (a preference or standing rule), `pers` (a fact about the user), `skill` (a
reusable procedure), `mission` (a goal or task), `conclusion` (a finding, decision or
outcome), `chat` (everything else). A kind's score adds: the weighted regex cues of
`data/classify_rules.txt`; structure (numbered steps, sequence words, questions, length,
role); a learned lexicon of naive-Bayes log-ratios of English words and word pairs and
Chinese characters and character pairs (`data/classify_ngrams.json`, built from the training
turns by `bench/classify.py --build-ngrams`), which decides mostly where no cue fires;
and, with an embedder, similarity to the rules file's prototype sentences.
Deterministic, no network, no heavy imports; well under a millisecond a turn.
"""

from __future__ import annotations

import json
import math
import re
import threading
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from mnemoweave.model import TURN_KINDS, Classification
from mnemoweave.text import cjk_count

KINDS = TURN_KINDS
RULES_FILE = Path(__file__).parents[1] / "data" / "classify_rules.txt"
NGRAMS_FILE = Path(__file__).parents[1] / "data" / "classify_ngrams.json"

CHAT_BASE = 1.0  # what any other kind must out-score; below it a turn is chat
TEMPERATURE = 1.5  # softmax temperature turning scores into a confidence
MAX_CHARS = 2000  # only the head of a long turn is read
NGRAM_WEIGHT = 1.0  # scale of the learned lexicon against the hand-written cues
PROTO_WEIGHT = 8.0  # score per unit of cosine similarity above the mean over kinds


class Rule(NamedTuple):
    pattern: re.Pattern[str]
    weight: float
    triggers: tuple[str, ...]  # the pattern cannot match unless one of these occurs; () = any


@dataclass(frozen=True)
class _Lexicon:
    rules: dict[str, list[Rule]]
    prototypes: dict[str, list[str]]
    ngrams: dict[str, list[float]]  # feature -> log-ratio per kind, in KINDS order


_lock = threading.Lock()
_lexicon: _Lexicon | None = None
_proto_cache: dict[int, tuple[Any, Any, list[str]]] = {}  # id(embedder) -> (embedder, M, kinds)


def load_lexicon(path: Path = RULES_FILE, ngrams: Path = NGRAMS_FILE) -> _Lexicon:
    """Parse the rules file (`[kind]` sections of "WEIGHT REGEX", `[kind.proto]` of sentences)
    and the learned lexicon (absent file: none)."""
    rules: dict[str, list[Rule]] = {kind: [] for kind in KINDS}
    prototypes: dict[str, list[str]] = {kind: [] for kind in KINDS}
    section = None
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            if section.removesuffix(".proto") not in KINDS:
                raise ValueError(f"{path}:{number}: unknown section {line}")
            continue
        if section is None:
            raise ValueError(f"{path}:{number}: rule outside a section")
        if section.endswith(".proto"):
            prototypes[section.removesuffix(".proto")].append(line)
            continue
        weight, _, pattern = line.partition(" ")
        pattern = pattern.strip()
        try:
            compiled = re.compile(pattern)
            rule = Rule(compiled, float(weight), _triggers(pattern))
        except (re.error, ValueError) as error:
            raise ValueError(f"{path}:{number}: bad rule: {error}") from error
        rules[section].append(rule)
    weights: dict[str, list[float]] = {}
    if ngrams.exists():
        data = json.loads(ngrams.read_text(encoding="utf-8"))
        if tuple(data["kinds"]) != KINDS:
            raise ValueError(f"{ngrams}: kinds {data['kinds']} differ from {KINDS}")
        weights = data["weights"]
    return _Lexicon(rules, prototypes, weights)


# A regex search costs microseconds; a substring test, nanoseconds. So each rule gets the
# literal strings one of which every match must contain, when they can be read off the
# pattern, and is skipped when none occurs in the text.

_QUANTIFIERS = ("?", "*", "{")


def _group_end(pattern: str, start: int) -> int:  # the ")" closing the group at `start`
    depth, i = 0, start
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            i = _class_end(pattern, i)
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError(f"unbalanced group in {pattern!r}")


def _class_end(pattern: str, start: int) -> int:  # the "]" closing the class at `start`
    i = start + 1 + (pattern[start + 1 : start + 2] == "^")
    i += pattern[i : i + 1] == "]"
    while pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i


def _branches(pattern: str) -> list[str]:
    """The top-level alternatives of a regex."""
    parts, begin, i = [], 0, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 1
        elif char == "[":
            i = _class_end(pattern, i)
        elif char == "(":
            i = _group_end(pattern, i)
        elif char == "|":
            parts.append(pattern[begin:i])
            begin = i + 1
        i += 1
    parts.append(pattern[begin:])
    return parts


def _branch_literals(branch: str) -> list[str] | None:
    """The most selective set of literals one of which every match of `branch` contains."""
    options: list[list[str]] = []
    run: list[str] = []
    i = 0
    while i < len(branch):
        char = branch[i]
        if char in "\\[(.^$+":
            if run:
                options.append(["".join(run)])
                run = []
            if char == "\\":
                end = i + 1
            elif char == "[":
                end = _class_end(branch, i)
            elif char == "(":
                end = _group_end(branch, i)
                optional = branch[end + 1 : end + 2] in _QUANTIFIERS
                if branch.startswith("(?:", i) and not optional:
                    inner = [_branch_literals(alt) for alt in _branches(branch[i + 3 : end])]
                    if all(inner):
                        options.append([word for words in inner for word in words])  # type: ignore[union-attr]
            else:
                end = i
            i = end + 1
            if branch[i : i + 1] in (*_QUANTIFIERS, "+"):  # the quantifier of what was skipped
                i = (branch.index("}", i) if branch[i] == "{" else i) + 1
                i += branch[i : i + 1] == "?"  # lazy
            continue
        if branch[i + 1 : i + 2] in _QUANTIFIERS:  # an optional character ends the run
            if run:
                options.append(["".join(run)])
                run = []
            i = (branch.index("}", i + 1) if branch[i + 1] == "{" else i + 1) + 1
            i += branch[i : i + 1] == "?"  # lazy
            continue
        run.append(char)
        i += 1
    if run:
        options.append(["".join(run)])
    if not options:
        return None
    return max(options, key=lambda words: min(len(word) for word in words))


def _triggers(pattern: str) -> tuple[str, ...]:
    literals: list[str] = []
    for branch in _branches(pattern):
        found = _branch_literals(branch)
        if not found:
            return ()
        literals += found
    return tuple(dict.fromkeys(literals))


def _get_lexicon() -> _Lexicon:
    global _lexicon
    if _lexicon is None:
        with _lock:
            if _lexicon is None:
                _lexicon = load_lexicon()
    return _lexicon


# --- preparing the text ------------------------------------------------------------------

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]{1,200}`")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffd]")
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_LETTER = re.compile(r"[^\W\d_]")


def _prepare(text: str) -> tuple[str, bool]:
    """Normalised, casefolded head of the text with code masked; and whether it had code."""
    head = unicodedata.normalize("NFKC", text[: MAX_CHARS * 2])[:MAX_CHARS]
    head = _CONTROL.sub(" ", head).translate(_QUOTES)
    masked = _FENCE.sub(" codeblock ", head)
    has_code = masked != head
    masked = _INLINE_CODE.sub("code", masked)
    return " ".join(masked.casefold().split()), has_code


# --- structural features -----------------------------------------------------------------

_NUMBERED = re.compile(r"(?:^|\s)(?:\d{1,2}[.)、]|\(\d{1,2}\)|第[一二三四五六七八九十]步)(?=\s|\S)")
_WORD = re.compile(r"[a-z0-9_]+")
_ARROWS = re.compile(r"→|->|=>|⇒")
_SEQ_EN = re.compile(
    r"\b(?:first(?:ly)?|then|next|after that|afterwards|finally|once (?:it|that|done)|"
    r"and then|lastly)\b"
)
_SEQ_ZH = re.compile(r"首先|先|然后|接着|之后|最后|其次|再(?!说|见|次|也|加上|引入|给)")
_IMPERATIVE_STEP = re.compile(
    r"(?:^|[,;:]\s*|\bthen\s+|\band\s+|\.\s+)(?:run|create|add|copy|drop|bump|tag|push|check|"
    r"open|install|set|restore|stop|start|deploy|wait|revoke|commit|register|mark|hit|compile|"
    r"submit|generate|launch|compare|promote|translate|clear|inspect|call|chown|cherry-pick|"
    r"branch|merge|rebase|build|upload|edit|delete|remove|configure|enable|restart|reload|"
    r"export|import|review|update|patch|watch|roll|get|confirm|dump|rerun|quarantine|"
    r"redeploy|fill|point|snapshot|raise|log in|sign|verify|pin|retry|try|switch|kill|find|"
    r"look up|note|issue|squash|fetch|freeze|silence|rotate|expand|reset|reload|re-run)\b"
)
_QUESTION_START = re.compile(
    r"^(?:what|why|how|which|where|when|who|is|are|does|do|did|can you explain|should (?:we|i)|"
    r"would|any idea|有没有|是不是|为什么|怎么|哪)"
)
_MISSION_ASK = re.compile(
    r"\b(?:can|could|would) you (?:please )?(?!explain|tell|remind|paste|show|clarify)\w+"
    r"|\bcan we (?:do|add|get|make|have|support|switch|move|agree)\b|能不能|能否|可以帮|帮我|麻烦"
)


def _structure(text: str, has_code: bool, role: str) -> dict[str, float]:
    """Score adjustments from the shape of the turn rather than its words."""
    bonus = dict.fromkeys(KINDS, 0.0)
    numbered = len(_NUMBERED.findall(text))
    if numbered >= 2:
        bonus["skill"] += 1.5 + 0.5 * min(numbered, 5)
    if len(_ARROWS.findall(text)) >= 2:
        bonus["skill"] += 3.0
    sequence = len(set(_SEQ_EN.findall(text))) + len(set(_SEQ_ZH.findall(text)))
    if sequence >= 2:
        bonus["skill"] += 1.0 + 0.7 * min(sequence, 4)
    steps = len(_IMPERATIVE_STEP.findall(text))
    if steps >= 3:
        bonus["skill"] += 1.0 + 0.5 * min(steps, 6)
    if has_code:
        bonus["skill"] += 0.5
        bonus["conclusion"] += 0.5
    stripped = text.rstrip(" .!。~")
    question = stripped.endswith("?") or bool(re.search(r"[吗呢么][?]?$", stripped))
    if question or (_QUESTION_START.search(text) and "?" in text):
        asks = bool(_MISSION_ASK.search(text))  # "can you add ...?" is a task, not chat
        bonus["chat"] += 0.5 if asks else 1.5
        bonus["mission"] -= 0.0 if asks else 1.5
        bonus["pref"] -= 0.0 if asks else 2.0  # "could you always ...?" states a rule
        for kind in ("pers", "skill", "conclusion"):
            bonus[kind] -= 2.0
    size = len(_WORD.findall(text)) + cjk_count(text) / 1.5
    if size <= 3:
        bonus["chat"] += 1.0
    elif size >= 12:
        bonus["chat"] -= 0.5
    if role == "assistant":
        bonus["pers"] -= 2.5
        bonus["pref"] -= 1.0
        bonus["mission"] -= 1.0
        bonus["chat"] += 0.3
    return bonus


# --- learned lexicon ---------------------------------------------------------------------

_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_EN_WORD = re.compile(r"[a-z][a-z']*")


def _ngram_features(prepared: str, role: str) -> set[str]:
    words = _EN_WORD.findall(prepared)
    features = {"w:" + word for word in words}
    features.update(f"b:{a}_{b}" for a, b in zip(words, words[1:], strict=False))
    for run in _CJK_RUN.findall(prepared):
        features.update("c:" + char for char in run)
        features.update("z:" + run[i : i + 2] for i in range(len(run) - 1))
    if prepared[:1] and _CJK_RUN.match(prepared[:1]):
        features.add("^" + prepared[:2])
    else:
        features.add("^" + (words[0] if words else ""))
    features.add("role:" + role)
    if prepared.rstrip(" .。!").endswith("?"):
        features.add("Q")
    return features


def ngram_features(text: str, role: str = "user") -> set[str]:
    """The features the learned lexicon scores (used to build it from labelled turns)."""
    return _ngram_features(_prepare(text)[0], role)


def _ngram_scores(prepared: str, role: str, weights: dict[str, list[float]]) -> list[float]:
    """Summed log-ratios of the known features, scaled by 1/sqrt(their number)."""
    rows = [weights[f] for f in _ngram_features(prepared, role) if f in weights]
    if not rows:
        return [0.0] * len(KINDS)
    scale = NGRAM_WEIGHT / math.sqrt(len(rows))
    return [scale * sum(column) for column in zip(*rows, strict=True)]


# --- scoring -----------------------------------------------------------------------------


def scores(text: str, role: str = "user", embedder: Any = None) -> dict[str, float]:
    """Each kind's score: cues, structure, learned lexicon and (with an embedder) prototypes.

    Chat starts at CHAT_BASE, the other kinds at zero.
    """
    prepared, has_code = _prepare(text)
    lexicon = _get_lexicon()
    total = _structure(prepared, has_code, role)
    total["chat"] += CHAT_BASE
    for kind, rules in lexicon.rules.items():
        for rule in rules:
            if rule.triggers and not any(word in prepared for word in rule.triggers):
                continue
            if rule.pattern.search(prepared):
                total[kind] += rule.weight
    for kind, value in zip(KINDS, _ngram_scores(prepared, role, lexicon.ngrams), strict=True):
        total[kind] += value
    if embedder is not None:
        sims = _prototype_scores(text, embedder)
        if sims:
            mean = sum(sims.values()) / len(sims)
            for kind, sim in sims.items():
                total[kind] += PROTO_WEIGHT * (sim - mean)
    return total


def _prototype_scores(text: str, embedder: Any) -> dict[str, float]:
    """Cosine similarity of the text to each kind's nearest prototype sentence."""
    cached = _proto_cache.get(id(embedder))
    if cached is None or cached[0] is not embedder:
        pairs = [
            (kind, s) for kind, sentences in _get_lexicon().prototypes.items() for s in sentences
        ]
        matrix = embedder.embed([sentence for _, sentence in pairs], query=False)
        cached = _proto_cache[id(embedder)] = (embedder, matrix, [kind for kind, _ in pairs])
    _, matrix, kinds = cached
    sims = matrix @ embedder.embed([text[:MAX_CHARS]], query=False)[0]
    best: dict[str, float] = {}
    for kind, sim in zip(kinds, sims, strict=True):
        best[kind] = max(best.get(kind, -1.0), float(sim))
    return best


def _meaningful(text: str) -> bool:
    """Whether the text has any letters (Latin words or CJK) worth reading."""
    sample = text[:MAX_CHARS]
    return cjk_count(sample) > 0 or len(_LETTER.findall(sample)) >= 2


def classify(text: str, role: str = "user", embedder: Any = None) -> Classification:
    """The kind of one turn, said by `role` ("user" or "assistant"), with a confidence.

    `embedder`, when given, needs `.embed(list[str], query=False)` returning L2-normalised
    rows; its similarity to prototype sentences is added to the rule scores.
    """
    if not isinstance(text, str) or not text.strip() or not _meaningful(text):
        return Classification("chat", 0.2)
    by_kind = scores(text, role, embedder)
    kind = max(KINDS, key=lambda k: (by_kind[k], k == "chat"))
    top = by_kind[kind]
    confidence = 1.0 / sum(math.exp((value - top) / TEMPERATURE) for value in by_kind.values())
    return Classification(kind, round(min(0.99, max(0.05, confidence)), 3))
