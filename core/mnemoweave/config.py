"""Where mnemoweave keeps its data, and its settings.

Settings come from defaults < `$MNEMOWEAVE_HOME/config.toml` < `MNEMOWEAVE_*` environment
< explicit overrides (CLI flags). This module is the one place that resolves the data dir.
"""

from __future__ import annotations

import logging
import os
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from mnemoweave.errors import InvalidInput

log = logging.getLogger("mnemoweave.config")


def data_dir() -> Path:
    """The data dir: `$MNEMOWEAVE_HOME`, else `~/.mnemoweave`."""
    home = os.environ.get("MNEMOWEAVE_HOME")
    return Path(home).expanduser() if home else Path.home() / ".mnemoweave"


def shared_cache() -> Path:
    """What every data dir shares, built from installed packages and never from anyone's
    data (the models, unless `$MNEMOWEAVE_MODELS` says otherwise; jieba's dictionary
    table): `$XDG_CACHE_HOME/mnemoweave`, else `~/.cache/mnemoweave`."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", "")).expanduser()
    return (cache if cache.is_absolute() else Path.home() / ".cache") / "mnemoweave"


def use_data_dir(home: str | None) -> None:
    """`--home`: make `home` the data dir of this process and of those it starts (None:
    keep the environment's). An empty path is refused, never taken as the current dir."""
    if home is None:
        return
    if not home.strip():
        raise InvalidInput("--home: give a directory (the path is empty)")
    os.environ["MNEMOWEAVE_HOME"] = str(Path(home))


@dataclass(frozen=True)
class Config:
    """Every setting, with its default."""

    trash_days: int = 30
    """Days a forgotten memory stays in the trash before `purge --expired` removes it."""
    default_importance: int = 3
    """Importance (1-5) given to a memory when none is stated."""
    search_k: int = 10
    """Hits returned by `search` when `-k` is not given."""
    classifier: str = "builtin"
    """Registered turn classifier used when no plugin's classify_turn answers."""
    distiller: str = "extractive"
    """Registered distiller that turns stored turns into candidate cards ("llm": a remote
    model, see llm_url; off by default)."""
    embedder: str = "use-m3"
    """Main embedding model for semantic search ("none": lexical only)."""
    embed_url: str = ""
    """The `openai` embedder's API root, any OpenAI-compatible /v1/embeddings (OpenAI,
    Ollama, LM Studio, vLLM), e.g. http://localhost:11434/v1 ("": none)."""
    embed_model: str = ""
    """The model the `openai` embedder asks for, e.g. nomic-embed-text."""
    embed_api_key: str = ""
    """Where its key is: env:NAME or file:PATH, never the key itself ("": no key)."""
    llm_url: str = ""
    """The `llm` distiller's API root, any OpenAI-compatible /v1/chat/completions."""
    llm_model: str = ""
    """The model the `llm` distiller asks for."""
    llm_api_key: str = ""
    """Where its key is: env:NAME or file:PATH, never the key itself ("": no key)."""
    second_embedder: str = ""
    """Optional second model, e.g. one strong across languages ("": none)."""
    weight_lexical: float = 1.0
    """Fusion weight of BM25 for candidates in the query's language."""
    weight_dense: float = 0.45
    """Fusion weight of the main model for candidates in the query's language."""
    weight_second: float = 0.0
    """Fusion weight of the second model for candidates in the query's language."""
    cross_dense: float = 1.4
    """Fusion weight of the main model for candidates in another language."""
    cross_second: float = 0.0
    """Fusion weight of the second model for candidates in another language."""
    weight_entity: float = 0.3
    """Fusion weight of the knowledge graph: the share of a query's entities (weighted by
    rarity) a memory names, in any language; above 0 such memories join the candidates and
    hold the prompt's words that named the entity (0: the graph is left out of recall)."""
    min_cosine: float = 0.2
    """Dense candidates below this cosine are dropped (unrelated text is never a hit)."""
    candidates: int = 50
    """Candidates each channel contributes before fusion."""
    context_weight: float = 0.5
    """Share of the previous turn's score a turn inherits (answers follow their questions)."""
    context_expand: int = 20
    """How many of the best turns bring the turn that follows them into the candidates."""
    weave_budget: int = 600
    """Token budget of the woven context (CJK characters count one each)."""
    brief_budget: int = 1000
    """Token budget of the brief a session starts with: the project's rules, conventions,
    decisions and pitfalls, then proposals not yet reviewed (on top of `weave_budget`)."""
    brief_proposals: int = 20
    """Pending cards the brief shows at most, most confident first."""
    memory_gate: float = 0.50
    """Relevance score (0-1, see relevance.py) a reviewed memory needs to be woven."""
    weave_gate: float = 0.94
    """Relevance score one exchange of an earlier session must reach for a prompt to get
    earlier sessions' exchanges (a memory reaching `memory_gate` does too)."""
    weave_line_gate: float = 0.94
    """Relevance score each exchange needs to be woven, once a prompt gets them (at most
    `weave_gate`)."""
    max_memories: int = 0
    """Active memories the store keeps at most (0: no limit). Past it, a write trashes the
    least valuable (importance, recalls, feedback, decay); preferences and importance-5
    memories are never evicted (upkeep/capacity.py)."""
    half_life_project_days: float = 364.0
    """Memory decay of a project's memories: one never recalled loses half its recency
    strength in this time (52 weeks; recalls lengthen it, see retrieve.strength)."""
    half_life_global_days: float = 84.0
    """Memory decay of global memories (12 weeks). Preferences and importance-5 memories
    never decay."""
    decay_floor: float = 0.5
    """Share of a memory's score that never decays."""
    dedup_threshold: float = 0.9
    """Cosine at or above which a new memory counts as a near-duplicate of an existing one."""
    dedup_action: str = "merge"
    """What a near-duplicate does: merge (into the existing memory) or skip (store nothing)."""
    daemon_idle_minutes: float = 30.0
    """Minutes without a request after which `mnemoweave serve` stops (0: never)."""
    daemon_port: int = 0
    """Loopback TCP port the daemon also serves on, token required (0: the socket only)."""
    consolidate_idle: bool = True
    """Once a day, when the daemon has been quiet a while, propose a consolidation and turn
    its duplicates and clashes into review cards (nothing is applied without a decision)."""
    proxy_upstream: str = ""
    """API root `mnemoweave proxy` forwards to when --upstream is not given ("": none); when
    set, the daemon also runs the proxy while it serves."""
    proxy_port: int = 8788
    """Loopback port of `mnemoweave proxy` when --port is not given (0: any free port)."""
    proxy_token: str = ""
    """Token local clients of `mnemoweave proxy` must send in X-Mnemoweave-Token ("": none)."""
    team_url: str = ""
    """The team's server (`team serve`), e.g. https://memory.example.com ("": no team)."""
    team_token: str = ""
    """This member's token, issued by `team member add` (sent to `team_url` only)."""
    team_name: str = ""
    """The team the token must belong to ("": whichever the server says)."""
    team_projects: tuple[str, ...] = ()
    """Project keys whose every memory is shared with the team (env: comma-separated)."""
    team_sync_seconds: float = 60.0
    """How often the daemon pulls the team's memories and pushes yours (also at a session start)."""
    team_allow_insecure: bool = False
    """Allow a plain-http team_url that is not loopback (the token then travels in clear)."""

    def models(self) -> list[str]:
        """The embedding models in use, main then second; none when lexical-only."""
        if self.embedder == "none":
            return []
        return [name for name in (self.embedder, self.second_embedder) if name]

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


_CHOICES = {"dedup_action": ("merge", "skip")}


_BOOLS = {"true": True, "1": True, "yes": True, "on": True}
_BOOLS |= {"false": False, "0": False, "no": False, "off": False}


def _coerce(name: str, value: Any, kind: type) -> Any:
    if kind is tuple:  # a list of strings: a TOML array, or comma-separated text (env)
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
            raise InvalidInput(f"setting {name}: expected a list of strings, got {value!r}")
        return tuple(item.strip() for item in items if item.strip())
    if kind is bool and not isinstance(value, bool):
        if str(value).strip().lower() not in _BOOLS:
            raise InvalidInput(f"setting {name}: expected true or false, got {value!r}")
        return _BOOLS[str(value).strip().lower()]
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"setting {name}: expected {kind.__name__}, got {value!r}") from None


KEY_REFERENCES = ("env:", "file:")  # how a key setting says where the key is (remote.key)


def check_key_reference(setting: str, value: str) -> str:
    """A key setting's value: '' or a reference (env:NAME, file:PATH), never the key; the
    refusal does not repeat the value."""
    if value and not value.startswith(KEY_REFERENCES):
        raise InvalidInput(
            f"setting {setting}: give a reference to the key, env:NAME or file:PATH, "
            "not the key itself (it would sit in config.toml in clear)"
        )
    return value


# Settings that no longer exist: ignored with a warning, so an older config.toml still loads.
RETIRED = {
    "team_author": "the team server names each author from their token",
    "half_life_days": "decay has one half-life per scope: half_life_project_days and "
    "half_life_global_days",
}


def load_config(home: Path | None = None, **overrides: Any) -> Config:
    """Build the effective Config for a data dir."""
    home = home or data_dir()
    values: dict[str, Any] = {}
    path = home / "config.toml"
    if path.is_file():
        try:
            values.update(tomllib.loads(path.read_text(encoding="utf-8")))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"{path}: not valid TOML ({exc})") from None
    known = {f.name: f for f in fields(Config)}
    for name in sorted(set(values) & set(RETIRED)):
        log.warning("%s: %s is no longer a setting (%s); ignored", path, name, RETIRED[name])
        values.pop(name)
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise InvalidInput(f"{path}: unknown setting(s): {', '.join(unknown)}")
    for name in known:
        env = os.environ.get(f"MNEMOWEAVE_{name.upper()}")
        if env is not None:
            values[name] = env
    values.update({k: v for k, v in overrides.items() if v is not None})
    typed = {n: _coerce(n, v, type(getattr(Config, n))) for n, v in values.items()}
    for name in ("embed_api_key", "llm_api_key"):
        check_key_reference(name, typed.get(name, ""))
    for name, allowed in _CHOICES.items():
        if name in typed and typed[name] not in allowed:
            raise InvalidInput(
                f"setting {name}: use one of {', '.join(allowed)}, got {typed[name]!r}"
            )
    if typed.get("max_memories", 0) < 0:
        raise InvalidInput(
            f"setting max_memories: use 0 (no limit) or more, got {typed['max_memories']}"
        )
    for name in ("half_life_project_days", "half_life_global_days"):
        if name in typed and not typed[name] > 0:
            raise InvalidInput(f"setting {name}: use a number of days above 0, got {typed[name]}")
    if not 0 <= typed.get("daemon_port", 0) <= 65535:
        raise InvalidInput(
            f"setting daemon_port: use 0 (off) or a port 1-65535, got {typed['daemon_port']}"
        )
    if not 0 <= typed.get("proxy_port", 8788) <= 65535:
        raise InvalidInput(
            f"setting proxy_port: use a port 1-65535 (or 0 for any), got {typed['proxy_port']}"
        )
    for name in ("brief_budget", "brief_proposals"):
        if typed.get(name, 0) < 0:
            raise InvalidInput(f"setting {name}: use 0 or more, got {typed[name]}")
    if typed.get("team_sync_seconds", 60.0) <= 0:
        raise InvalidInput("setting team_sync_seconds: use a number of seconds above 0")
    return replace(Config(), **typed)
