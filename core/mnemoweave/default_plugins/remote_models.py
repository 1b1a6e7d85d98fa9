"""The optional remote models, registered through the registry as any plugin's are: the
embedder `openai` (any OpenAI-compatible /v1/embeddings: OpenAI, Ollama, LM Studio, vLLM)
and the distiller `llm` (any OpenAI-compatible /v1/chat/completions). Neither is used
unless chosen (`embedder = "openai"`, `distiller = "llm"`); see remote.py for keys, what
leaves the machine, and failures.

`mnemoweave model build openai` asks the endpoint once, for the model's dimension, and
records the endpoint and model (never the key) in the model's folder: the embedder counts
as built while the config names that endpoint and model, so naming another one means
building again, and the daemon then embeds the store anew in the background.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mnemoweave.config import load_config
from mnemoweave.embed.base import BuildResult, EmbedderSpec
from mnemoweave.errors import InvalidInput
from mnemoweave.hookspecs import hookimpl
from mnemoweave.model import MEMORY_KINDS, Card, Turn
from mnemoweave.remote import RemoteError, cleaned, endpoint, fell_back, key, post

if TYPE_CHECKING:
    import numpy as np

    from mnemoweave.engine import Engine

EMBEDDER = "openai"
DISTILLER = "llm"
RECORD = "remote.json"  # in the model's folder: the endpoint and model it was built for
RELEVANT_COSINE = 0.55  # not calibrated per model: a middling on-topic cosine
PROBE = "What dimension are your vectors?"
CONFIDENCE = 0.8  # of an LLM's card: it quoted the turns, as a card must


class RemoteEmbedder:
    """Vectors from an OpenAI-compatible /embeddings endpoint (queries and passages alike)."""

    name = EMBEDDER
    remote = True  # Engine.searching and the daemon's remote work treat it apart
    symmetric = True

    def __init__(self, url: str, model: str, dim: int, key_reference: str) -> None:
        self.url, self.model, self.dim, self.key_reference = url, model, dim, key_reference

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        import numpy as np

        url = endpoint(self.url, "/embeddings")
        body = {"model": self.model, "input": cleaned(list(texts))}
        answer = post(url, body, key("embed_api_key", self.key_reference))
        try:
            rows = sorted(answer["data"], key=lambda row: row["index"])
            vectors = np.array([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError):
            raise RemoteError(f"{url} answered JSON without the embeddings") from None
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise RemoteError(f"{url} answered {len(vectors)} embeddings for {len(texts)} texts")
        if self.dim and vectors.shape[1] != self.dim:
            raise RemoteError(f"{url} answered {vectors.shape[1]} dimensions, not {self.dim}")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if not np.all(np.isfinite(vectors)) or not np.all(norms > 0):
            raise RemoteError(f"{url} answered an empty or broken vector")
        normalised: np.ndarray = vectors / norms
        return normalised


def _configured() -> tuple[str, str, str]:
    config = load_config()
    if not config.embed_url or not config.embed_model:
        raise InvalidInput("the openai embedder needs embed_url and embed_model in config.toml")
    return config.embed_url, config.embed_model, config.embed_api_key


def _build(model_dir: Path, force: bool) -> BuildResult:
    url, model, reference = _configured()
    start = time.perf_counter()
    dim = int(RemoteEmbedder(url, model, 0, reference).embed([PROBE]).shape[1])
    model_dir.mkdir(parents=True, exist_ok=True)
    record = {"url": url, "model": model, "dim": dim}
    (model_dir / RECORD).write_text(json.dumps(record) + "\n", encoding="utf-8")
    return BuildResult(EMBEDDER, model_dir, True, None, time.perf_counter() - start)


def _recorded(model_dir: Path) -> dict[str, Any] | None:
    try:
        found = json.loads((model_dir / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _is_built(model_dir: Path) -> bool:
    config = load_config()
    found = _recorded(model_dir) or {}
    return (found.get("url"), found.get("model")) == (config.embed_url, config.embed_model)


def _load(model_dir: Path) -> RemoteEmbedder:
    found = _recorded(model_dir)
    if found is None:
        raise InvalidInput(f"the openai embedder is not built in {model_dir}")
    return RemoteEmbedder(found["url"], found["model"], found["dim"], load_config().embed_api_key)


@hookimpl
def register_embedders(register: Callable[[EmbedderSpec], None]) -> None:
    register(
        EmbedderSpec(
            name=EMBEDDER,
            dim=0,  # the endpoint's model says, when built
            description="any OpenAI-compatible /v1/embeddings (embed_url, embed_model); "
            "remote, off by default",
            build=_build,
            load=_load,
            is_built=_is_built,
            relevant_cosine=RELEVANT_COSINE,
        )
    )


# --- the llm distiller ------------------------------------------------------------------------

INSTRUCTIONS = (
    "You read turns of a conversation between a developer (user) and a coding assistant and "
    "propose memory cards: what is worth remembering across sessions (a preference or rule, a "
    "fact about the user, a standing goal, a decision and its reason, a pitfall and its fix, "
    "a fact about the project). Never questions, one-off requests, progress reports or "
    "general knowledge. Answer with JSON only: "
    '{"cards": [{"kind": "pref|pers|mission|conclusion|fact|skill", "title": "a few words", '
    '"statement": "...", "topics": ["..."], "evidence": ["t_12"]}]}. The statement must be '
    "copied word for word from one or more turns (whole sentences, nothing added, nothing "
    "reworded); evidence lists the ids of the turns it is copied from. No cards: "
    '{"cards": []}.'
)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


def ask(turns: Sequence[Turn], url: str, model: str, key_reference: str) -> list[Card]:
    """The cards the model proposes for one session's turns; RemoteError when it cannot be
    asked or answers something else than the cards asked for."""
    said = cleaned([f"{turn.id} {turn.role}: {turn.text}" for turn in turns])
    body = {
        "model": model,
        "temperature": 0,
        "messages": [
            {"role": "system", "content": INSTRUCTIONS},
            {"role": "user", "content": "\n\n".join(said)},
        ],
    }
    where = endpoint(url, "/chat/completions")
    answer = post(where, body, key("llm_api_key", key_reference))
    try:
        content = answer["choices"][0]["message"]["content"]
        found = json.loads(_FENCE.sub("", content.strip()))["cards"]
        if not isinstance(found, list):
            raise TypeError
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        raise RemoteError(f"{where} answered no cards in the JSON asked for") from None
    ids = {turn.id for turn in turns}
    project = turns[0].project if turns else ""
    return [card for item in found if (card := _card(item, ids, project)) is not None]


def _card(item: Any, ids: set[str | None], project: str) -> Card | None:
    """One proposed card, or None when it is not one (an unknown kind, no statement,
    evidence outside the turns read)."""
    if not isinstance(item, dict) or item.get("kind") not in MEMORY_KINDS:
        return None
    statement, evidence = item.get("statement"), item.get("evidence")
    if not isinstance(statement, str) or not statement.strip() or not isinstance(evidence, list):
        return None
    if not evidence or not all(isinstance(ref, str) and ref in ids for ref in evidence):
        return None
    topics = [t for t in item.get("topics") or [] if isinstance(t, str) and t.strip()]
    title = item["title"] if isinstance(item.get("title"), str) else ""
    return Card(
        id="",
        summary=statement.strip(),
        suggested_kind=item["kind"],
        evidence=tuple(sorted(set(evidence), key=lambda ref: int(ref[2:]))),
        confidence=CONFIDENCE,
        project=project,
        topic=", ".join(topics) or title.strip(),
    )


def llm(turns: Sequence[Turn], engine: Engine) -> list[Card]:
    """The `llm` distiller: the remote model's cards, or the built-in distiller's when the
    model cannot be asked (logged)."""
    from mnemoweave.learn.distill import extractive

    config = engine.config
    try:
        if not config.llm_url or not config.llm_model:
            raise RemoteError("llm_url and llm_model are not set")
        return ask(turns, config.llm_url, config.llm_model, config.llm_api_key)
    except RemoteError as exc:
        fell_back("distilling with the llm distiller", exc)
        return extractive(turns, engine)


llm.remote = True  # type: ignore[attr-defined]  # not asked while hooks wait (distill.run)


@hookimpl
def register_distillers(register: Any) -> None:
    register(DISTILLER, llm)
