"""The memories and prompts of the latency benchmarks (hooks, scale): a coding agent's store.

Targets are the bilingual dev cards (`data/dev_memories.jsonl`) in their projects: what the
prompts (`data/dev_queries.jsonl`, en and zh; `none` ones should weave no knowledge) should
find. Fillers are the labelled turns of `data/classify_*.jsonl` that are not small talk,
then generated bilingual engineering notes (facts, pitfalls, decisions, procedures,
preferences, owners, goals) over 20 projects and the global scope, endlessly. `fill`
stores the targets plus fillers until a store holds N memories, topping up what merged
away as a near-duplicate, so that N is the number of memories stored, not of writes.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from datasets import CARD_KINDS

DATA = Path(__file__).resolve().parent / "data"
CHUNK = 1000  # memories per transaction (a batch checks itself for near-duplicates)

DEV_PROJECTS = ("orchard", "tern", "queqiao", "ferry")
OTHER_PROJECTS = (
    "ledger", "pika", "nimbus", "quill", "atlas", "bramble", "cinder", "dune",
    "ember", "fjord", "gale", "harbor", "iris", "juniper", "kestrel", "lumen",
)  # fmt: skip
GLOBAL_SHARE = 0.08
T = TypeVar("T")

COMPONENTS = (
    ("the upload service", "上传服务"),
    ("the billing worker", "计费 worker"),
    ("the auth middleware", "鉴权中间件"),
    ("the search indexer", "搜索索引器"),
    ("the CI pipeline", "CI 流水线"),
    ("the nightly export job", "夜间导出任务"),
    ("the admin dashboard", "管理后台"),
    ("the payment webhook", "支付回调"),
    ("the rate limiter", "限流器"),
    ("the notification queue", "通知队列"),
    ("the image resizer", "图片缩放服务"),
    ("the GraphQL gateway", "GraphQL 网关"),
    ("the session store", "会话存储"),
    ("the feature-flag client", "功能开关客户端"),
    ("the CSV importer", "CSV 导入器"),
    ("the PDF renderer", "PDF 渲染服务"),
    ("the audit log writer", "审计日志写入器"),
    ("the cron scheduler", "定时任务调度器"),
    ("the mobile sync API", "移动端同步接口"),
    ("the migration runner", "数据库迁移脚本"),
    ("the cache warmer", "缓存预热任务"),
    ("the email sender", "邮件发送服务"),
    ("the websocket hub", "WebSocket 推送中心"),
    ("the SSO login flow", "单点登录流程"),
    ("the metrics exporter", "指标导出器"),
    ("the backup script", "备份脚本"),
    ("the i18n loader", "多语言加载器"),
    ("the order API", "订单接口"),
    ("the build cache", "构建缓存"),
    ("the report generator", "报表生成器"),
)
TOOLS = (
    "httpx", "Celery", "Redis", "PostgreSQL 15", "SQLite", "Kafka", "RabbitMQ", "nginx",
    "gRPC", "FastAPI", "Django", "SQLAlchemy", "Alembic", "pytest", "ruff", "mypy",
    "Docker Compose", "Kubernetes", "Helm", "Terraform", "GitHub Actions", "Sentry",
    "Prometheus", "ClickHouse", "DuckDB", "MinIO", "Elasticsearch", "tokio", "axum",
    "protobuf", "Vite", "React", "pnpm", "Playwright", "boto3", "Pydantic", "uvicorn",
    "gunicorn", "Temporal", "OpenTelemetry",
)  # fmt: skip
ERRORS = (
    ("ConnectionResetError", "ConnectionResetError"),
    ("a 502 from the load balancer", "负载均衡返回的 502"),
    ("`database is locked`", "`database is locked`"),
    ("OOMKilled", "OOMKilled"),
    ("a TLS handshake timeout", "TLS 握手超时"),
    ("`too many open files`", "`too many open files`"),
    ("a deadlock on the orders table", "订单表死锁"),
    ("413 Request Entity Too Large", "413 Request Entity Too Large"),
    ("`context deadline exceeded`", "`context deadline exceeded`"),
    ("UnicodeDecodeError on GBK input", "GBK 输入导致的 UnicodeDecodeError"),
    ("duplicate key errors", "主键冲突"),
    ("a silent data truncation", "数据被静默截断"),
    ("stale reads from the replica", "从库读到旧数据"),
    ("flaky timeouts in CI", "CI 里偶发超时"),
)
CONDITIONS = (
    ("the payload is over 10 MB", "请求体超过 10 MB"),
    ("two workers start at the same moment", "两个 worker 同时启动"),
    ("the cache is cold after a deploy", "发布后缓存是冷的"),
    ("the runner's clock drifts", "构建机时钟漂移"),
    ("a filename contains spaces", "文件名里有空格"),
    ("the VPN drops", "VPN 断开"),
    ("Postgres runs autovacuum", "Postgres 在跑 autovacuum"),
    ("a batch has more than 5,000 rows", "一批超过 5000 行"),
    ("the upstream returns chunked responses", "上游返回分块响应"),
    ("the user's locale is zh_CN", "用户的 locale 是 zh_CN"),
    ("the disk is over 90% full", "磁盘使用超过 90%"),
    ("DNS resolution is slow", "DNS 解析很慢"),
)
FIXES = (
    ("retry with exponential backoff and jitter", "加上带抖动的指数退避重试"),
    ("stream the body instead of buffering it", "改成流式读取而不是整块缓冲"),
    ("take a Postgres advisory lock first", "先拿 Postgres advisory lock"),
    ("raise the connection pool size", "调大连接池"),
    ("pin the client library to the previous minor version", "把客户端库锁回上一个小版本"),
    ("set an explicit read timeout", "显式设置读超时"),
    ("decode with errors='replace' and log the bad bytes", "用 errors='replace' 解码并记录坏字节"),
    ("move the work into a background task", "把这部分工作挪到后台任务"),
    ("split the batch into chunks of 500", "把批次拆成每批 500 条"),
    ("read from the primary for that request", "这个请求改为读主库"),
    ("add an idempotency key", "加幂等键"),
)
REASONS = (
    ("it cut p95 latency in half", "p95 延迟减半"),
    ("the old one is no longer maintained", "旧的已经没人维护"),
    ("it supports async natively", "它原生支持异步"),
    ("the licence of the old one changed", "旧库的许可证变了"),
    ("ops already runs it for other teams", "运维已经在给别的团队跑它"),
    ("it halves the memory footprint", "内存占用减半"),
    ("its error messages are much clearer", "它的报错信息清楚得多"),
    ("it has first-class typing", "它的类型支持完善"),
)
PREFERENCES = (
    ("type hints on every public function", "所有公开函数都写类型注解"),
    ("small commits with imperative subjects", "小提交，提交信息用祈使句"),
    ("no print statements, only the logger", "不要 print，一律用 logger"),
    ("tests next to the code they cover", "测试文件和被测代码放在一起"),
    ("f-strings rather than format()", "用 f-string 而不是 format()"),
    ("dataclasses over plain dicts", "用 dataclass 而不是裸字典"),
    ("early returns instead of nested ifs", "多用提前返回，少嵌套 if"),
    ("English comments and Chinese user-facing text", "注释写英文，面向用户的文案写中文"),
    ("no new dependencies without asking first", "加新依赖前先问一声"),
    ("table-driven tests", "表驱动的测试"),
)
ASPECTS = (
    ("its database schema", "它的表结构"),
    ("the public API", "对外接口"),
    ("the retry policy", "重试策略"),
    ("the alert thresholds", "告警阈值"),
    ("the deploy order", "发布顺序"),
    ("the on-disk format", "落盘格式"),
)
PEOPLE = ("Lena", "Marco", "Priya", "Tomás", "Aiko", "王磊", "陈静", "刘洋", "赵敏", "Sven")
COMMANDS = (
    "make lint", "pnpm test", "cargo test --all", "go test ./...", "pytest -x -q",
    "docker compose up -d db", "alembic upgrade head", "terraform plan", "ruff check --fix",
    "npm run build", "kubectl rollout status deploy/api", "helm upgrade --install api ./chart",
    "./scripts/smoke.sh", "make migrate", "uv sync --frozen",
)  # fmt: skip
SETTINGS = ("MAX_RETRIES", "POOL_SIZE", "BATCH_SIZE", "TIMEOUT_S", "CACHE_TTL", "WORKERS")
DASHBOARDS = ("Grafana", "Sentry", "the status page", "Kibana", "the Datadog board")

# timeouts, pitfalls, decisions, procedures, config, preferences, owners, goals
FAMILY_WEIGHTS = (3, 3, 2, 1.5, 2, 1.2, 1, 0.3)


def _note(rng: random.Random, number: int) -> tuple[str, str]:
    """One generated engineering note: (kind, text), English or Chinese."""
    zh = rng.random() < 0.5

    def pick(pairs: Sequence[tuple[str, str]]) -> str:
        return rng.choice(pairs)[zh]

    c, (t, t2) = pick(COMPONENTS), rng.sample(TOOLS, 2)
    date = f"{rng.randint(2023, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    seconds, retries = rng.choice((3, 5, 8, 10, 15, 20, 30, 45, 60, 90)), rng.randint(1, 6)
    path = f"{rng.choice(('config', 'deploy', 'src/settings', 'etc'))}/{number % 97}.toml"
    family = rng.choices(range(8), FAMILY_WEIGHTS)[0]
    if family == 0:
        kind = "fact"
        en = f"{c} calls {t} with a {seconds} s timeout and {retries} retries (#{number})."
        cn = f"{c}调用 {t} 时超时设为 {seconds} 秒、最多重试 {retries} 次（#{number}）。"
    elif family == 1:
        kind, e, cond, fix = "conclusion", pick(ERRORS), pick(CONDITIONS), pick(FIXES)
        en = f"Pitfall: {c} fails with {e} when {cond}; fix: {fix} (#{number})."
        cn = f"踩坑：{c}在{cond}时报 {e}，解决办法是{fix}（#{number}）。"
    elif family == 2:
        kind, reason = "conclusion", pick(REASONS)
        en = f"Decision (ADR-{number}, {date}): {c} uses {t} over {t2}: {reason}."
        cn = f"决定（ADR-{number}，{date}）：{c}改用 {t} 而不是 {t2}，因为{reason}。"
    elif family == 3:
        kind, first, then = "skill", rng.choice(COMMANDS), rng.choice(COMMANDS)
        board = rng.choice(DASHBOARDS)
        en = f"To ship {c} (runbook {number}): `{first}`, then `{then}`, then check {board}."
        cn = f"发布{c}（手册 {number}）：先跑 `{first}`，再跑 `{then}`，最后看 {board}。"
    elif family == 4:
        kind, key, value = "fact", rng.choice(SETTINGS), rng.randint(2, 500)
        en = f"{c} reads {path}; {key} defaults to {value} and the environment wins."
        cn = f"{c}的配置在 {path}，{key} 默认 {value}，用环境变量覆盖时以环境变量为准。"
    elif family == 5:
        kind, preference = "pref", pick(PREFERENCES)
        en = f"In {c} code the user wants {preference} (review of PR #{number})."
        cn = f"写{c}相关的代码时，用户要求{preference}（PR #{number} 的评审意见）。"
    elif family == 6:
        kind, person, aspect = "fact", rng.choice(PEOPLE), pick(ASPECTS)
        en = f"{person} owns {c} since {date}; ask before changing {aspect}."
        cn = f"{c}从 {date} 起归{person}负责，改{aspect}之前先找他确认。"
    else:
        kind = "mission"
        en = f"Current goal: move {c} to {t} by {date} with no downtime."
        cn = f"当前目标：{date} 之前把{c}迁到 {t}，全程不能停机。"
    return kind, cn if zh else en


def _jsonl(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines()]


def _scope(rng: random.Random, projects: dict[str, str]) -> str:
    if rng.random() < GLOBAL_SHARE:
        return ""
    return projects[rng.choice((*DEV_PROJECTS, *OTHER_PROJECTS))]


def targets(projects: dict[str, str]) -> list[dict[str, Any]]:
    """The dev cards, in their projects (dirs): what the prompts should find."""
    return [
        {
            "text": m["text"],
            "kind": CARD_KINDS[m["kind"]],
            "project": projects[m["project"]] if m["project"] else "",
            "tags": [m["kind"]],
        }
        for m in _jsonl("dev_memories.jsonl")
    ]


def fillers(projects: dict[str, str], seed: int = 7) -> Iterator[dict[str, Any]]:
    """Other memories, endlessly: the labelled turns worth keeping, then generated notes."""
    rng = random.Random(seed)
    for row in _jsonl("classify_train.jsonl") + _jsonl("classify_heldout.jsonl"):
        if row["kind"] != "chat":
            yield {"text": row["text"], "kind": row["kind"], "project": _scope(rng, projects)}
    number = 1000
    while True:
        number += 1
        kind, text = _note(rng, number)
        yield {"text": text, "kind": kind, "project": _scope(rng, projects)}


@dataclass(frozen=True)
class Prompt:
    text: str
    cwd: str
    relevant: tuple[str, ...]  # engine ids (m_N) that answer it; empty: nothing should


def prompts(projects: dict[str, str], ids: dict[int, str], seed: int = 7) -> list[Prompt]:
    """The dev queries as prompts from their project's dir, shuffled once."""
    dev = {m["id"]: position for position, m in enumerate(_jsonl("dev_memories.jsonl"))}
    rows = _jsonl("dev_queries.jsonl")
    random.Random(seed).shuffle(rows)
    return [
        Prompt(
            q["query"],
            projects[q["project"]],
            tuple(ids[dev[key]] for key in q["relevant"] if dev[key] in ids),
        )
        for q in rows
    ]


def rotate(items: Sequence[T], count: int, start: int = 0) -> list[T]:
    """`count` items (prompts, commands) taken in turn from `start`, round and round."""
    return [items[(start + i) % len(items)] for i in range(count)]


def fill(engine: Any, n: int, projects: dict[str, str]) -> tuple[dict[int, str], list[Any]]:
    """Store the targets, then fillers, until `engine` holds `n` new memories.

    Returns the engine ids of the stored targets (by position in the dev set) and the
    rows stored, in order (their text and project: what a baseline indexes).
    """
    rows = targets(projects)[:n]
    written = engine.remember_many(rows)
    ids = {i: w.id for i, w in enumerate(written) if w.action == "new"}
    stored = [row for row, w in zip(rows, written, strict=True) if w.action == "new"]
    more = fillers(projects)
    for _ in range(20 + n // CHUNK):  # each round tops up what merged away before
        if len(stored) >= n:
            break
        batch = [next(more) for _ in range(min(CHUNK, n - len(stored)))]
        written = engine.remember_many(batch)
        stored += [row for row, w in zip(batch, written, strict=True) if w.action == "new"]
    return ids, stored


# --- what a woven context found ------------------------------------------------------------


def knowledge_of(context: str | None) -> str:
    """The knowledge tier's lines of a woven block ('' when it has none)."""
    if not context or "\n## knowledge\n" not in context:
        return ""
    tier = context.split("\n## knowledge\n", 1)[1]
    return tier.split("\n## ", 1)[0].split("\n</memory>", 1)[0]


def cites(knowledge: str, refs: Sequence[str]) -> bool:
    return any(f"({ref}," in knowledge or f"({ref})" in knowledge for ref in refs)


@dataclass
class Tally:
    """Latencies and what the calls printed."""

    ms: list[float]
    calls: int = 0
    context: int = 0
    expected: int = 0
    knowledge: int = 0
    relevant: int = 0
    offtopic: int = 0
    offtopic_knowledge: int = 0
    started: int = 0  # sessions whose start carried context (the brief)

    def add(self, ms: float, context: str | None, prompt: Prompt, start: str | None = None) -> None:
        self.ms.append(ms)
        self.calls += 1
        self.context += context is not None
        self.started += start is not None
        tier = knowledge_of(context)
        if prompt.relevant:
            self.expected += 1
            self.knowledge += bool(tier)
            # what the model holds: the prompt's knowledge, or any line its session began with
            self.relevant += cites(tier, prompt.relevant) or cites(start or "", prompt.relevant)
        else:
            self.offtopic += 1
            self.offtopic_knowledge += bool(tier)

    def rates(self) -> dict[str, float | None]:
        def share(part: int, whole: int) -> float | None:
            return round(part / whole, 3) if whole else None

        return {
            "context_rate": share(self.context, self.calls),
            "start_context_rate": share(self.started, self.calls),
            "context_hit_rate": share(self.knowledge, self.expected),
            "relevant_hit_rate": share(self.relevant, self.expected),
            "offtopic_knowledge_rate": share(self.offtopic_knowledge, self.offtopic),
        }
