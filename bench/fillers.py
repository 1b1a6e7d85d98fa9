"""Filler memories for stores of any size: what a team's memory holds besides the one a
question is about.

Deterministic (a seeded generator over templates and word pools), in English and Chinese,
of the kinds a coding team keeps (rules, decisions, pitfalls, facts about services), each
text different. A filler that shares most of the content words of a prompt under test is
left out by the caller (`unrelated`), so a store's size, not a second right answer, is
what a benchmark varies.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from typing import Any

from mnemoweave.text import content_terms

SERVICES = (
    "ledger-api",
    "orbit-gateway",
    "lumen-worker",
    "quartz-auth",
    "nimbus-search",
    "harbor-sync",
    "atlas-billing",
    "vega-notify",
    "delta-reports",
    "sierra-export",
    "pulse-metrics",
    "tundra-ingest",
    "coral-cms",
    "falcon-router",
    "ember-scheduler",
    "onyx-media",
    "polar-geo",
    "cobalt-feeds",
    "saffron-catalog",
    "willow-mailer",
)
LIBRARIES = (
    "pydantic",
    "sqlalchemy",
    "celery",
    "fastapi",
    "django",
    "flask",
    "alembic",
    "attrs",
    "structlog",
    "orjson",
    "tenacity",
    "boto3",
    "grpcio",
    "protobuf",
    "numpy",
    "pandas",
    "react-query",
    "zustand",
    "vite",
    "webpack",
    "eslint",
    "prettier",
    "jest",
    "vitest",
    "playwright",
    "cypress",
    "tokio",
    "serde",
    "clap",
    "axum",
    "gin",
    "cobra",
    "viper",
    "zap",
    "gorm",
    "okhttp",
    "retrofit",
    "dagger",
    "koin",
    "riverpod",
)
FILES = (
    "config/settings.py",
    "src/app.ts",
    "cmd/main.go",
    "lib/core/http.dart",
    "Makefile",
    "docker-compose.yml",
    ".github/workflows/ci.yml",
    "pyproject.toml",
    "package.json",
    "src/lib.rs",
    "deploy/values.yaml",
    "scripts/bootstrap.sh",
    "docs/runbook.md",
    "infra/main.tf",
    "src/routes/index.tsx",
    "app/models/user.rb",
)
PEOPLE = (
    "Mara",
    "Idris",
    "Chen Wei",
    "Sofia",
    "Tomasz",
    "Aiko",
    "Ravi",
    "Lena",
    "Okafor",
    "Beatriz",
    "Jonas",
    "Zhou Min",
    "Hana",
    "Mateo",
    "Ingrid",
    "Kwame",
)
ENVS = ("dev", "qa", "preprod", "sandbox", "perf", "demo")
UNITS = ("seconds", "minutes", "retries", "connections", "workers", "MB", "requests per second")
ZH_UNITS = ("秒", "分钟", "次重试", "个连接", "个 worker", "MB", "个并发")
ZH_THINGS = (
    "日志格式",
    "接口文档",
    "错误码",
    "配置项",
    "单元测试",
    "数据迁移",
    "发布流程",
    "灰度开关",
    "监控告警",
    "权限校验",
    "分页参数",
    "时区处理",
    "文件命名",
    "依赖升级",
    "缓存失效",
    "埋点字段",
)
EN_THINGS = (
    "log format",
    "error codes",
    "config keys",
    "unit tests",
    "data migrations",
    "release checklist",
    "rollout flags",
    "alert thresholds",
    "permission checks",
    "pagination params",
    "timezone handling",
    "file naming",
    "dependency bumps",
    "cache invalidation",
    "tracking events",
    "health checks",
)

# (kind, template): pref is a rule or convention, conclusion a decision or a pitfall.
EN_TEMPLATES = (
    ("fact", "{service} reads its {thing} from {file}; change them there, not in code."),
    ("fact", "{person} owns {service}; ask them before touching its {thing}."),
    (
        "conclusion",
        "Pitfall: {library} drops {thing} silently in {service}; pin it and add a test.",
    ),
    (
        "conclusion",
        "We moved {service} from {library} to {library2} because the old one had no {thing}.",
    ),
    ("fact", "In {env}, {service} runs with {n} {unit}; production uses {m}."),
    ("pref", "Never merge changes to {file} without a review from {person}."),
    ("fact", "The {thing} of {service} are documented in {file}."),
    ("fact", "{service} retries failed calls {n} times with jitter, then gives up and logs."),
    ("pref", "Always run `make {verb}` before pushing changes to {service}."),
    ("conclusion", "Decision: {service} keeps {thing} in Postgres, not in {library}."),
    ("pref", "{library} is banned in {service}; use {library2} instead."),
    ("fact", "The {env} cluster recycles {service} pods every {n} {unit}."),
    ("conclusion", "When {service} is slow, check {thing} first; it was the cause {n} times."),
    ("pref", "{person} prefers small PRs for {service}, under {n} lines each."),
    ("pref", "Our {thing} for {service} follow the same style as {file}."),
)
ZH_TEMPLATES = (
    ("pref", "{service} 的{thing}统一放在 {file} 里，不要写死在代码中。"),
    ("fact", "{service} 由 {person} 负责，改{thing}之前先找他确认。"),
    ("conclusion", "踩坑：{library} 在 {service} 里会悄悄吞掉{thing}，版本要锁死并补测试。"),
    ("conclusion", "{service} 从 {library} 换成了 {library2}，原因是旧的不支持{thing}。"),
    ("fact", "{env} 环境里 {service} 配了 {n} {zh_unit}，生产是 {m}。"),
    ("pref", "以后 {file} 的改动必须经过 {person} review 才能合并。"),
    ("fact", "{service} 的{thing}写在 {file} 里。"),
    ("fact", "{service} 调用失败会重试 {n} 次，之后只记日志不再重试。"),
    ("pref", "推送 {service} 的改动之前先跑 make {verb}。"),
    ("conclusion", "决定：{service} 的{thing}存 Postgres，不放 {library}。"),
    ("pref", "{service} 里禁止用 {library}，统一用 {library2}。"),
    ("fact", "{env} 集群每 {n} {zh_unit}重启一次 {service} 的 pod。"),
    ("conclusion", "{service} 变慢时先查{thing}，之前有 {n} 次都是它。"),
    ("pref", "{person} 希望 {service} 的 PR 尽量小，每个不超过 {n} 行。"),
    ("pref", "{service} 的{thing}沿用 {file} 的写法。"),
)
VERBS = ("lint", "check", "verify", "fmt", "typecheck", "audit")
KINDS = ("pref", "conclusion", "fact")


def fillers(n: int, seed: int = 7, kinds: Sequence[str] = KINDS) -> Iterator[dict[str, str]]:
    """`n` distinct filler memories of `kinds`: {"text", "kind", "lang"}, half English,
    half Chinese."""
    rng = random.Random(seed)
    seen: set[str] = set()
    en = [t for t in EN_TEMPLATES if t[0] in kinds]
    zh = [t for t in ZH_TEMPLATES if t[0] in kinds]
    while len(seen) < n:
        chinese = len(seen) % 2 == 1
        kind, template = rng.choice(zh if chinese else en)
        library, library2 = rng.sample(LIBRARIES, 2)
        text = template.format(
            service=rng.choice(SERVICES),
            library=library,
            library2=library2,
            file=rng.choice(FILES),
            person=rng.choice(PEOPLE),
            env=rng.choice(ENVS),
            thing=rng.choice(ZH_THINGS if chinese else EN_THINGS),
            unit=rng.choice(UNITS),
            zh_unit=rng.choice(ZH_UNITS),
            verb=rng.choice(VERBS),
            n=rng.randint(2, 90),
            m=rng.randint(91, 999),
        )
        if text in seen:
            continue
        seen.add(text)
        yield {"text": text, "kind": kind, "lang": "zh" if chinese else "en"}


ACKS = {"en": "Noted, I'll follow that from now on.", "zh": "好的，记下了，以后照这个来。"}


def padding(
    project: str, n: int, start: float, end: float, prompts: Sequence[str], seed: int = 11
) -> list[dict[str, Any]]:
    """`n` more rules and decisions for a project, said in sessions of ten exchanges (the
    user states one, the assistant takes it up) spread between `start` and `end`; none
    shares most of a prompt's content words."""
    found = unrelated(list(fillers(n * 3, seed, ("pref", "conclusion"))), prompts)[:n]
    sessions = []
    per = 10
    count = max(1, (len(found) + per - 1) // per)
    for number in range(count):
        chunk = found[number * per : (number + 1) * per]
        turns = []
        for i, filler in enumerate(chunk):
            key = f"{project}-pad{number}:{2 * i + 1}"
            turns.append({"id": key, "role": "user", "text": filler["text"]})
            turns.append(
                {
                    "id": f"{project}-pad{number}:{2 * i + 2}",
                    "role": "assistant",
                    "text": ACKS[filler["lang"]],
                }
            )
        ts = start + (end - start) * (number + 0.5) / count
        sessions.append({"id": f"{project}-pad{number}", "ts": ts, "turns": turns})
    return sessions


def unrelated(texts: Sequence[dict[str, str]], prompts: Sequence[str]) -> list[dict[str, str]]:
    """The fillers that share at most half of any prompt's content terms (the prompts of a
    benchmark must have one right answer, or none)."""
    wanted = [set(content_terms(prompt)) for prompt in prompts]
    wanted = [terms for terms in wanted if terms]
    kept = []
    for filler in texts:
        have = set(content_terms(filler["text"]))
        if all(len(terms & have) <= len(terms) / 2 for terms in wanted):
            kept.append(filler)
    return kept
