"""Statements: a turn's text cut into the sentences and clauses a card may quote, and each
cleaned of the discourse around it.

- `sentences`: a text cut at its sentence ends (not inside inline code nor after a step
  number, nor after "i.e." or "e.g."), code blocks and bullets' markers dropped, fragments
  too short to say anything left out;
- `stated`: a sentence without the discourse that opens or closes it ("Also, ...", "Pitfall
  we hit today: ...", "另外，...", "..., don't forget this.", "..., can you look?");
- `clauses`: a sentence holding two statements cut apart (at a semicolon or ", and", or a
  Chinese comma between two rules that each name their own subject), unless the second
  leans on the first ("...; always map them ...", "never X; do Y instead");
- `own_words`: a user message without the material it carries ("Rewrite the following:" and
  the text to rewrite);
- `summary_of` joins statements into a summary that splits back into the same sentences,
  and `traceable` checks a summary is found in its evidence.
What is left of a sentence is always a piece of it, so a card stays traceable.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mnemoweave.learn.worth import asks, names_work
from mnemoweave.text import cjk_count, normalise, stopwords

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
# A sentence ends at a line break, at 。！？!?, or at a period before a space, except after a
# step number ("Release: 1. bump the version, 2. tag it" is one sentence).
_BREAK = re.compile(r"(?<=[。！？!?])|(?<=[.])(?<!\bi\.e\.)(?<!\be\.g\.)(?<!\bvs\.)(?=\s)")
_STEP_NUMBER = re.compile(r"(?:^|[:：;；,，(（]\s*)\d{1,2}\.$")
_BULLET = re.compile(r"^\s*(?:[-*•+]|\d{1,2}[.)、])\s+")
_CLOSED_CJK = re.compile(r"[。！？]$")
# Discourse that opens a sentence without saying anything of its own ("Also, ...", "Pitfall
# we hit today: ...", "另外，...", "踩坑：..."), and reminders that close one ("..., don't
# forget this."): the card states the memory, not the conversation. Words that can open
# content ("remember to ...", "so that ...") count only before a comma or colon.
_OPENER = re.compile(
    r"^(?:[^\w\s`]+\s*)?(?:(?:(?:also|oh,? and|btw|by the way|fyi|one more thing|heads[- ]up|please"
    r"|(?:and|oh) (?=also|btw|please|remember|don'?t forget)"
    r"|(?:two|three|a few|a couple of|some) (?:rules|conventions|things|notes)[^:：.]{0,40}[:：]"
    r"|[两几三]条[^：:。]{0,10}[：:]"
    r"|(?:a )?(?:pitfall|gotcha)(?: we hit| i hit)?(?: today| yesterday)?|另外|对了|还有|顺便说一下"
    r"|顺便|另外再说一下|提醒一下|今天踩了个坑|踩了个坑|踩坑记录|踩坑|记住|别忘了)\s*[,，:：]?"
    r"|(?:hey|hi|hello|morning|good morning|你好|嗨)\s*[,，!！.]"
    r"|(?:quick (?:one|question|thing)|context for|quick orientation for|跟你说下|说一下"
    r"|先介绍一下)[^:：.。]{0,30}[:：]"
    r"|(?:ok(?:ay)?|so|well|alright) then\b"
    r"|(?:and|so|ok(?:ay)?|well|anyway|remember|don'?t forget|note|好的|那个|嗯|对|是的)"
    r"\s*[,，:：])\s*)+",
    re.IGNORECASE,
)
_CLOSER = re.compile(
    r"[,，;；]?\s*(?:and )?(?:(?:please )?don'?t forget (?:this|that|it)|remember (?:this|that)"
    r"|别忘了|记住了?|千万记住)\s*[.!。！]*$"
    r"|[,，]\s*(?:can|could|would) you (?:please )?(?:look|check|take a look|have a look|help"
    r"|fix)\b[^.?!]{0,30}\?$",
    re.IGNORECASE,
)
_CLOSED = re.compile(r"[.!?]$")


def _pieces(line: str) -> list[str]:
    """A line cut at its sentence ends, but not inside inline code nor after a step number."""
    code = [match.span() for match in _INLINE_CODE.finditer(line)]
    pieces, start = [], 0
    for match in _BREAK.finditer(line):
        end = match.start()
        inside = any(left < end < right for left, right in code)
        if not inside and not _STEP_NUMBER.search(line[start:end].rstrip()):
            pieces.append(line[start:end])
            start = end
    pieces.append(line[start:])
    return pieces


def sentences(text: str) -> list[str]:
    """The sentences of a text worth a card: code blocks and bullets' markers dropped,
    fragments too short to say anything left out."""
    out = []
    for line in _FENCE.sub("\n", text).splitlines():
        for piece in _pieces(line):
            piece = _BULLET.sub("", piece).strip()
            if _says_enough(piece, 2):
                out.append(piece)
    return out


# A request to work on a text the message carries ("Rewrite the following:", "summarize this
# article", "帮我润色下面这段"), or a prompt written for the assistant ("act as ..."): what
# follows is material, not what the user states.
_ON_TEXT = re.compile(
    r"\b(?:re-?write|summari[sz]e|paraphrase|translate|improve|edit|proofread|continue|expand"
    r"|shorten|condense|polish|correct|review|critique|analy[sz]e|read|extract|reply to"
    r"|respond to|memori[sz]e|make (?:it|this)|what does (?:it|this)|key points|feedback on"
    r"|web search results)\b|总结|翻译|润色|改写|重写|续写|扩写|缩写|校对|精简|概括|摘要",
    re.IGNORECASE,
)
_INTRODUCES = re.compile(r"[:：]\s*$")  # "... the following:"
_POINTS_AT = re.compile(
    r"\b(?:this|these|the following|following|below|above|here(?:'s| is| are)|it)\b"
    r"|下面|以下|这段|这篇|上面",
    re.IGNORECASE,
)
_PROMPT = re.compile(
    r"\b(?:act as|imagine you are|pretend (?:to be|you are)|ignore (?:all )?(?:the )?previous"
    r" instructions)\b|扮演",
    re.IGNORECASE,
)
_FIRST_SENTENCE = re.compile(r"^(.{8,300}?[?:：!.。？！])\s+(?=\S)", re.DOTALL)
MATERIAL_WORDS = 100


def own_words(text: str) -> str:
    """A user message without the material it carries: when its first or last line (or its
    first sentence) is a request for work on a text and the rest is long (`MATERIAL_WORDS`
    words, or twice as many CJK characters), only that request is the user's own."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    frames = [(lines[0], lines[1:]), (lines[-1], lines[:-1])] if len(lines) > 1 else []
    first = _FIRST_SENTENCE.match(text.strip())
    if first:
        frames.append((first.group(1), [text.strip()[first.end() :]]))
    for frame, rest in frames:
        introduces = _INTRODUCES.search(frame)
        points = introduces or _POINTS_AT.search(frame)
        asks_for = _PROMPT.search(frame) or (_ON_TEXT.search(frame) and points)
        request = asks(frame) or introduces
        if len(frame) <= 300 and request and asks_for and _long("\n".join(rest)):
            return frame
    return text


def _long(text: str) -> bool:
    return len(text.split()) + cjk_count(text) // 2 >= MATERIAL_WORDS


# Words a statement may open with once the discourse before it is dropped: capitalised then
# (a name of code keeps its case).
_OPENING_WORDS = {"always", "never", "don't", "use", "avoid", "make", "keep", "prefer"}


def stated(text: str) -> str:
    """A sentence without the discourse that opens or closes it (what is left is still a
    piece of the sentence, so a card stays traceable to its evidence); the sentence as it
    was when nothing would be left."""
    opened = _OPENER.sub("", text)
    bare_text = _CLOSER.sub("", opened).strip()
    if len(bare_text) < 4:
        return text
    if _CLOSER.search(opened):
        bare_text = closed(bare_text)
    return capitalised(bare_text) if opened != text else bare_text


def capitalised(text: str) -> str:
    """A statement cut from a longer sentence, its first word capitalised when it is a word
    and not a name of code."""
    first = re.match(r"[a-z]+(?:'[a-z]+)?(?=[\s,])", text)
    if first and not cjk_count(text) and first.group() in stopwords() | _OPENING_WORDS:
        return text[0].upper() + text[1:]
    return text


def closed(text: str) -> str:
    """A statement ended as a sentence."""
    if re.search(r"[.!?。！？]$", text):
        return text
    return text + ("。" if cjk_count(text) else ".")


def summary_of(parts: Sequence[str]) -> str:
    """Sentences joined into one summary that splits back into the same sentences: after a
    closed sentence a space (nothing after a Chinese one), after one without closing
    punctuation (a heading, a list item) a line break, so it is not run into the next."""
    out = ""
    for part in parts:
        if not out:
            out = part
        elif _CLOSED_CJK.search(out):
            out += part
        elif _CLOSED.search(out) and not _STEP_NUMBER.search(out):
            out += " " + part
        else:
            out += "\n" + part
    return out


def traceable(summary: str, evidence: Sequence[str]) -> bool:
    """Whether every sentence of `summary` occurs in the evidence texts (normalised)."""
    source = "\n".join(normalise(text) for text in evidence)
    parts = [normalise(s) for s in sentences(summary)] or [normalise(summary)]
    return all(part and part in source for part in parts)


# Where one statement ends and the next begins inside a sentence: a semicolon, or ", and"
# before a clause of its own; not before one that points back ("...; always map them ...").
_CLAUSE_BREAK = re.compile(r"\s*[;；]\s*(?:and\s+)?|,\s+and\s+")
_POINTS_BACK = re.compile(
    r"^(?:so|because|since|otherwise|or else)\b"
    r"|^[^,]*\b(?:it|its|them|they|their|this|these|those)\b"
    r"|^(?:否则|不然|所以|因为)|^[^，]*(?:它|这样|这些|其)",
    re.IGNORECASE,
)


# A clause without a subject of its own, after a bare semicolon: what to do instead.
_IMPERATIVE = re.compile(
    r"(?:always|never|don'?t|do not|avoid|make sure|use|prefer|open|put|keep|run|add|call|write"
    r"|pass|set|pin|map|wrap|return|go|send|log|check|ask|move|create|only)\b",
    re.IGNORECASE,
)


def clauses(text: str) -> list[str]:
    """A sentence cut where one statement ends and another begins: at a semicolon, or at
    ", and", when both sides say something of their own and the second does not point back
    to the first. Only a sentence about the user's work is cut (rules and facts of a project;
    "I can commit to 3 times a week, and I prefer the gym" is one thought), and never inside
    inline code or brackets."""
    if not names_work(text):
        return [text]
    code = [match.span() for match in _INLINE_CODE.finditer(text)]
    out, start = [], 0
    for match in _CLAUSE_BREAK.finditer(text):
        before = text[: match.start()]
        inside = before.count("(") + before.count("（") > before.count(")") + before.count("）")
        if inside or any(left < match.start() < right for left, right in code):
            continue
        left, right = text[start : match.start()], text[match.end() :]
        rest = stated(re.split(r"[;；]|,\s+and\s+", right, maxsplit=1)[0])
        instead = match.group().strip() == ";" and _IMPERATIVE.match(rest)  # "never X; do Y"
        if (
            _says_enough(stated(left), 4)
            and _says_enough(rest, 4)
            and not _POINTS_BACK.search(rest)
            and not instead
        ):
            out.append(left)
            start = match.end()
    out.append(text[start:])
    return [piece for part in out for piece in _rules_apart(part)]


# A Chinese rule with its own subject before its rule word ("日志里不要打印 token").
_OWN_RULE = re.compile(r"^[^，,]{2,}?(?:不要|不能|不准|不许|禁止|必须|一律|务必|只能|统一用)")


def _rules_apart(text: str) -> list[str]:
    """A Chinese sentence cut at a comma between two rules that each name their own subject
    ("日志里不要打印 token，用 logging 不要用 print"); a clause that leans on the one
    before it ("...，禁止通过 setter 传") stays with it."""
    if not cjk_count(text):
        return [text]
    pieces = re.split(r"(?<=[，,])", text)
    out = [pieces[0]]
    for piece in pieces[1:]:
        before = re.split(r"[，,]", out[-1].rstrip("，, "))[-1].strip()
        if _OWN_RULE.match(before) and _OWN_RULE.match(piece.strip()):
            out[-1] = out[-1].rstrip("，, ")
            out.append(piece)
        else:
            out[-1] += piece
    return out


def _says_enough(text: str, latin_words: int) -> bool:
    """Whether a piece of text is long enough to say something: four CJK characters, or
    `latin_words` Latin words."""
    return cjk_count(text) >= 4 or len(re.findall(r"[A-Za-z]{2,}", text)) >= latin_words
