"""Hooks: spawn-to-exit latency of the Claude Code prompt hook, warm daemon vs cold CLI.

Each call runs what Claude Code runs on UserPromptSubmit: `hooks/mnemoweave-hook
claude-code UserPromptSubmit` (the launcher, which runs `.venv/bin/python -m
mnemoweave.hook`) with the JSON payload on stdin and the project dir as cwd, and is timed
from spawn to exit (exit code 0 checked). Every call has its own session id, so each
stores a new user turn and weaves for it, as in real use; the payload names a transcript
that is not written, so the daemon follows none. The daemon (`mnemoweave serve`) is
started by the benchmark on a data dir already holding N memories (loaded in-process
before it starts: the daemon holds the store lock) and stopped afterwards, whatever
happens. After the hook calls, the same request is sent from this process
(`daemon_request_ms`): the daemon's share of a call, without the process spawn.

The cold path does the same work without a daemon, through the CLI, which then opens the
store in-process: `mnemoweave ingest` (the prompt as a user turn) followed by `mnemoweave
weave PROMPT --session S --project P`, timed together; each part is reported too, and
`speedup_weave_only` compares the warm hook with the weave process alone (a lower bound
of any cold path, since it skips storing the prompt).

Memories: the bilingual dev cards (`data/dev_memories.jsonl`, with their projects: the
prompts' targets), the labelled turns of `data/classify_*.jsonl` that are not small talk,
and generated bilingual engineering notes (facts, pitfalls, decisions, procedures,
preferences, owners, goals) over 20 projects and the global scope, up to N. Prompts: the
dev queries (en and zh; `none` ones should weave no knowledge), rotated.

Everything lives in one temporary directory with a short path (Unix socket paths are
limited): the data dirs, a HOME for every subprocess, the project checkouts, a copy of the
built models, and the bytecode cache (PYTHONPYCACHEPREFIX; PYTHONDONTWRITEBYTECODE is
dropped, so the warm-up calls compile once, as on an ordinary install).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from datasets import CARD_KINDS
from harness import progress
from metrics import percentiles

DATA = Path(__file__).resolve().parent / "data"
REPO = Path(__file__).resolve().parents[1]
LAUNCHER = REPO / "hooks" / "mnemoweave-hook"
EVENT = "UserPromptSubmit"
SOCKET_PATH_MAX = 107  # bytes of a Unix socket path, NUL excluded (Linux)
HOOK_TIMEOUT = 30.0  # seconds one hook process may take before the run fails
CLI_TIMEOUT = 300.0  # seconds one cold CLI process may take
START_TIMEOUT = 180.0  # seconds the daemon may take to load and answer
STOP_TIMEOUT = 30.0
TARGETS = {"warm_p95_ms_at_10000": 80.0, "speedup": 10.0}
CHUNK = 1000  # memories per transaction while loading (a batch checks itself for duplicates)
REQUESTS = 50  # in-process requests after the hook calls, to split daemon time from spawn
STARTED: list[subprocess.Popen[bytes]] = []  # every daemon this process started


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sizes", default="1000,10000", help="memory counts, comma-separated (default 1000,10000)"
    )
    parser.add_argument("--calls", type=int, default=200, help="timed hook calls per size")
    parser.add_argument("--warmup", type=int, default=10, help="untimed hook calls first")
    parser.add_argument("--cold-calls", type=int, default=20, help="timed cold CLI calls")


# --- memories and prompts ------------------------------------------------------------------

DEV_PROJECTS = ("orchard", "tern", "queqiao", "ferry")
OTHER_PROJECTS = (
    "ledger", "pika", "nimbus", "quill", "atlas", "bramble", "cinder", "dune",
    "ember", "fjord", "gale", "harbor", "iris", "juniper", "kestrel", "lumen",
)  # fmt: skip
GLOBAL_SHARE = 0.08

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


# --- the data dirs -------------------------------------------------------------------------


def short_root() -> Path:
    """A fresh directory with a path short enough for `<root>/h<N>/daemon.sock`."""
    base = tempfile.gettempdir()
    if len(os.fsencode(base)) > 40:
        base = "/tmp"
    return Path(tempfile.mkdtemp(prefix="mwh-", dir=base))


def make_projects(root: Path) -> dict[str, str]:
    """A git checkout dir per project (an empty `.git` is enough): name -> project path."""
    projects = {}
    for name in (*DEV_PROJECTS, *OTHER_PROJECTS):
        (root / "src" / name / ".git").mkdir(parents=True)
        projects[name] = str(root / "src" / name)
    return projects


def resolve_models(embedder: str, models: Path, root: Path) -> tuple[list[str], str]:
    """(models to use, mode): built models are copied under `root`; missing -> lexical."""
    if embedder == "none":
        return [], "lexical-only (--embedder none)"
    from mnemoweave.embed import registered

    names, specs = embedder.split(","), registered()
    missing = [n for n in names if n not in specs or not specs[n].is_built(models / n)]
    if missing:
        return [], f"lexical-only (model {', '.join(missing)} not built in {models})"
    for name in names:
        shutil.copytree(models / name, root / "models" / name, symlinks=False)
    return names, f"dense+lexical ({','.join(names)})"


def configure(home: Path, root: Path, names: Sequence[str]) -> dict[str, str]:
    """Point the data dir at the copied models; the settings that choose them, as env."""
    home.mkdir(parents=True)
    if len(os.fsencode(home / "daemon.sock")) > SOCKET_PATH_MAX:
        raise SystemExit(f"{home}: too long a path for the daemon's Unix socket")
    if names:
        (home / "models").mkdir()
        for name in names:
            (home / "models" / name).symlink_to(root / "models" / name)
    chosen = {
        "MNEMOWEAVE_EMBEDDER": names[0] if names else "none",
        "MNEMOWEAVE_SECOND_EMBEDDER": names[1] if len(names) > 1 else "",
    }
    lines = [f'{key[11:].lower()} = "{value}"' for key, value in chosen.items()]
    (home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return chosen


def subprocess_env(root: Path, home: Path, chosen: dict[str, str]) -> dict[str, str]:
    """The caller's environment with a temporary HOME and data dir, this run's models, and
    bytecode cached under `root` as on an ordinary install (never in the checkout)."""
    dropped = ("MNEMOWEAVE_BIN", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in dropped} | chosen
    env["HOME"], env["MNEMOWEAVE_HOME"] = str(root / "home"), str(home)
    env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    return env


@contextmanager
def data_dir(home: Path) -> Iterator[None]:
    """MNEMOWEAVE_HOME set to `home` for the block (the engine finds its models there)."""
    previous = os.environ.get("MNEMOWEAVE_HOME")
    os.environ["MNEMOWEAVE_HOME"] = str(home)
    try:
        yield
    finally:
        if previous is None:
            del os.environ["MNEMOWEAVE_HOME"]
        else:
            os.environ["MNEMOWEAVE_HOME"] = previous


def load(home: Path, n: int, projects: dict[str, str], chosen: dict[str, str]) -> dict[str, Any]:
    """Store the targets plus fillers until `n` memories exist (near-duplicates merge)."""
    from mnemoweave import Engine
    from mnemoweave.config import load_config

    config = replace(
        load_config(home),
        embedder=chosen["MNEMOWEAVE_EMBEDDER"],
        second_embedder=chosen["MNEMOWEAVE_SECOND_EMBEDDER"],
    )
    started = time.perf_counter()
    more = fillers(projects)
    with data_dir(home), Engine(home, config) as engine:
        retrieval = engine.retrieval_mode()
        if len(engine.channels) != len(config.models()):
            raise SystemExit(f"hooks: the models did not load in {home}: {retrieval}")
        written = engine.remember_many(targets(projects)[:n])
        ids = {i: w.id for i, w in enumerate(written) if w.action == "new"}
        count = len(ids)
        for _ in range(20 + n // CHUNK):  # each round tops up what merged away before
            if count >= n:
                break
            written = engine.remember_many(next(more) for _ in range(min(CHUNK, n - count)))
            count += sum(w.action == "new" for w in written)
    return {
        "ids": ids,
        "memories": count,
        "seconds": round(time.perf_counter() - started, 1),
        "retrieval": retrieval,
    }


# --- the daemon ----------------------------------------------------------------------------


def mnemoweave_cli() -> list[str]:
    script = Path(sys.executable).with_name("mnemoweave")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "mnemoweave"]


def _log_tail(home: Path) -> str:
    with suppress(OSError):
        lines = (home / "logs" / "daemon.log").read_text(encoding="utf-8").splitlines()
        return " | ".join(lines[-5:])
    return "(no daemon log)"


def stop_daemon(process: subprocess.Popen[bytes], env: dict[str, str]) -> None:
    """`mnemoweave stop` for the data dir, then SIGKILL to its process group if need be."""
    with suppress(subprocess.TimeoutExpired, OSError):
        subprocess.run(
            [*mnemoweave_cli(), "stop", "--wait", str(STOP_TIMEOUT / 2)],
            env=env,
            capture_output=True,
            timeout=STOP_TIMEOUT,
        )
    try:
        process.wait(timeout=STOP_TIMEOUT / 2)
    except subprocess.TimeoutExpired:
        with suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)


@contextmanager
def daemon(home: Path, env: dict[str, str], timeout: float = START_TIMEOUT) -> Iterator[float]:
    """A warm `mnemoweave serve` for `home` while the block runs; yields its start seconds."""
    from mnemoweave import client

    started = time.monotonic()
    (home / "logs").mkdir(exist_ok=True)
    with open(home / "logs" / "serve.out", "ab") as out:
        process = subprocess.Popen(
            [*mnemoweave_cli(), "serve"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    STARTED.append(process)
    try:
        while not client.running(home, timeout=1.0):
            if process.poll() is not None:
                raise SystemExit(f"the daemon exited with {process.returncode}: {_log_tail(home)}")
            if time.monotonic() - started > timeout:
                raise SystemExit(f"the daemon did not answer in {timeout:g}s: {_log_tail(home)}")
            time.sleep(0.1)
        yield time.monotonic() - started
    finally:
        stop_daemon(process, env)


# --- one call ------------------------------------------------------------------------------


def payload(prompt: Prompt, session: str, user_home: Path) -> dict[str, Any]:
    """A UserPromptSubmit payload as Claude Code sends it (the transcript is not written)."""
    slug = prompt.cwd.replace("/", "-")
    return {
        "session_id": session,
        "transcript_path": str(user_home / ".claude" / "projects" / slug / f"{session}.jsonl"),
        "cwd": prompt.cwd,
        "prompt_id": str(uuid.uuid4()),
        "permission_mode": "default",
        "hook_event_name": EVENT,
        "prompt": prompt.text,
    }


def context_of(stdout: str) -> str | None:
    """The additionalContext the hook printed for Claude Code, or None."""
    if not stdout.strip():
        return None
    try:
        output = json.loads(stdout)["hookSpecificOutput"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(output, dict) or output.get("hookEventName") != EVENT:
        return None
    text = output.get("additionalContext")
    return text if isinstance(text, str) and text else None


def knowledge_of(context: str | None) -> str:
    """The knowledge tier's lines of a woven block ('' when it has none)."""
    if not context or "\n## knowledge\n" not in context:
        return ""
    tier = context.split("\n## knowledge\n", 1)[1]
    return tier.split("\n## ", 1)[0].split("\n</memory>", 1)[0]


def cites(knowledge: str, refs: Sequence[str]) -> bool:
    return any(f"({ref}," in knowledge or f"({ref})" in knowledge for ref in refs)


def call_hook(prompt: Prompt, env: dict[str, str]) -> tuple[float, str]:
    """One hook process, spawn to exit: (milliseconds, stdout). Fails on a non-zero exit."""
    user_home = Path(env["HOME"])
    body = json.dumps(payload(prompt, str(uuid.uuid4()), user_home), ensure_ascii=False)
    started = time.perf_counter()
    done = subprocess.run(
        [str(LAUNCHER), "claude-code", EVENT],
        input=body.encode("utf-8"),
        capture_output=True,
        cwd=prompt.cwd,
        env=env,
        timeout=HOOK_TIMEOUT,
    )
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"the hook exited with {done.returncode}: {done.stderr[-500:]!r}")
    return elapsed, done.stdout.decode("utf-8", "replace")


def cli_ms(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, cwd=cwd, env=env, timeout=CLI_TIMEOUT)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:2])} exited with {done.returncode}: {done.stderr!r}")
    return elapsed, done.stdout.decode("utf-8", "replace")


def call_cold(prompt: Prompt, env: dict[str, str]) -> tuple[float, float, str]:
    """The hook's work without a daemon: (ingest ms, weave ms, woven text)."""
    session, cli = str(uuid.uuid4()), mnemoweave_cli()
    where = ["--session", session, "--project", prompt.cwd]
    ingest, _ = cli_ms(
        [*cli, "ingest", *where, "--role", "user", "--host", "claude-code", prompt.text],
        env,
        prompt.cwd,
    )
    weave, text = cli_ms([*cli, "weave", prompt.text, *where], env, prompt.cwd)
    return ingest, weave, text


# --- runs ----------------------------------------------------------------------------------


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

    def add(self, ms: float, context: str | None, prompt: Prompt) -> None:
        self.ms.append(ms)
        self.calls += 1
        self.context += context is not None
        tier = knowledge_of(context)
        if prompt.relevant:
            self.expected += 1
            self.knowledge += bool(tier)
            self.relevant += cites(tier, prompt.relevant)
        else:
            self.offtopic += 1
            self.offtopic_knowledge += bool(tier)

    def rates(self) -> dict[str, float | None]:
        def share(part: int, whole: int) -> float | None:
            return round(part / whole, 3) if whole else None

        return {
            "context_rate": share(self.context, self.calls),
            "context_hit_rate": share(self.knowledge, self.expected),
            "relevant_hit_rate": share(self.relevant, self.expected),
            "offtopic_knowledge_rate": share(self.offtopic_knowledge, self.offtopic),
        }


def hook_log_lines(home: Path) -> int:
    """Lines the hooks logged (each a failure: timeout, spool, bad payload)."""
    try:
        return len((home / "logs" / "hooks.log").read_text(encoding="utf-8").splitlines())
    except OSError:
        return 0


def request_ms(home: Path, prompt: Prompt, user_home: Path) -> float:
    """The hook's request alone, from this process: what the daemon takes, no spawn."""
    from mnemoweave import client

    body = {"payload": payload(prompt, str(uuid.uuid4()), user_home)}
    started = time.perf_counter()
    client.request(home, "POST", f"/v1/hooks/claude-code/{EVENT}", body, timeout=HOOK_TIMEOUT)
    return (time.perf_counter() - started) * 1000


def warm_run(
    home: Path, env: dict[str, str], asked: Sequence[Prompt], warmup: int
) -> tuple[Tally, list[float], float]:
    """Hook calls against a warm daemon, then the same requests in-process:
    (the timed calls, the requests' ms, daemon start seconds)."""
    tally, requests = Tally([]), []
    with daemon(home, env) as start_seconds:
        for number in range(warmup):
            call_hook(asked[number % len(asked)], env)
        for number, prompt in enumerate(asked):
            ms, stdout = call_hook(prompt, env)
            tally.add(ms, context_of(stdout), prompt)
            if (number + 1) % 50 == 0:
                progress(f"hooks: {number + 1}/{len(asked)} calls")
        for prompt in asked[:REQUESTS]:
            requests.append(request_ms(home, prompt, Path(env["HOME"])))
    return tally, requests, start_seconds


def cold_run(
    home: Path, env: dict[str, str], asked: Sequence[Prompt]
) -> tuple[dict[str, list[float]], Tally]:
    """The same work through the CLI with no daemon: (ms of each part, the totals)."""
    from mnemoweave import client

    if client.running(home) or client.lock_holder(home) is not None:
        raise SystemExit(f"{home} is in use; the cold path needs the store to itself")
    call_cold(asked[-1], env)  # untimed: bytecode cached, models in the OS page cache
    times: dict[str, list[float]] = {"total": [], "ingest": [], "weave": []}
    tally = Tally([])
    for number, prompt in enumerate(asked):
        ingest, weave, woven = call_cold(prompt, env)
        times["ingest"].append(ingest)
        times["weave"].append(weave)
        times["total"].append(ingest + weave)
        tally.add(ingest + weave, woven.strip() or None, prompt)
        progress(f"hooks: cold {number + 1}/{len(asked)}: {ingest + weave:.0f} ms")
    return times, tally


def rotate(items: Sequence[Prompt], count: int, start: int = 0) -> list[Prompt]:
    return [items[(start + i) % len(items)] for i in range(count)]


def summarise(warm: dict[int, Sequence[float]], cold: dict[str, Sequence[float]]) -> dict[str, Any]:
    """The headline: warm p50/p95 per size, cold p50/p95, and cold p50 / warm p50 at the
    largest size (ms)."""
    report: dict[str, Any] = {
        "warm": {str(n): percentiles(ms) for n, ms in sorted(warm.items())},
        "cold": percentiles(cold.get("total", ())),
    }
    largest = report["warm"][str(max(warm))]["p50"] if warm else None
    cold_p50 = report["cold"]["p50"]
    report["speedup"] = round(cold_p50 / largest, 1) if cold_p50 and largest else None
    parts = {name: percentiles(ms) for name, ms in cold.items() if name != "total"}
    if parts:
        report["cold_parts"] = parts
        weave_p50 = parts.get("weave", {}).get("p50")
        report["speedup_weave_only"] = (
            round(weave_p50 / largest, 1) if weave_p50 and largest else None
        )
    return report


def machine() -> dict[str, Any]:
    cpu = ""
    with suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu or platform.processor(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average": [round(load, 2) for load in os.getloadavg()],
    }


def measure(
    sizes: Sequence[int],
    calls: int,
    warmup: int,
    cold_calls: int,
    embedder: str,
    models: Path,
) -> dict[str, Any]:
    """The whole benchmark in a temporary root, removed afterwards."""
    root, load_before = short_root(), [round(load, 2) for load in os.getloadavg()]
    try:
        (root / "home").mkdir()
        projects = make_projects(root)
        names, mode = resolve_models(embedder, models, root)
        progress(f"hooks: {mode}; data under {root}")
        warm: dict[int, list[float]] = {}
        cold: dict[str, list[float]] = {}
        extra: dict[str, dict[str, Any]] = {
            k: {}
            for k in (
                "daemon_request_ms",
                "memories",
                "load_seconds",
                "daemon_start_seconds",
                "hook_failures",
            )
        }
        rates: dict[str, dict[str, Any]] = {}
        retrieval = ""
        for size in sizes:
            home = root / f"h{size}"
            chosen = configure(home, root, names)
            env = subprocess_env(root, home, chosen)
            progress(f"hooks: storing {size} memories")
            loaded = load(home, size, projects, chosen)
            retrieval = loaded["retrieval"]
            extra["memories"][str(size)] = loaded["memories"]
            extra["load_seconds"][str(size)] = loaded["seconds"]
            asked = prompts(projects, loaded["ids"])
            if size == max(sizes) and cold_calls:
                progress(f"hooks: cold CLI at {size} memories")
                cold, cold_tally = cold_run(home, env, rotate(asked, cold_calls, start=calls))
                rates["cold"] = cold_tally.rates()
            progress(f"hooks: warm daemon at {size} memories")
            tally, requests, start_seconds = warm_run(home, env, rotate(asked, calls), warmup)
            extra["daemon_request_ms"][str(size)] = percentiles(requests)
            warm[size] = tally.ms
            extra["daemon_start_seconds"][str(size)] = round(start_seconds, 1)
            extra["hook_failures"][str(size)] = hook_log_lines(home)
            rates[str(size)] = tally.rates()
        report = summarise(warm, cold)
        largest = report["warm"][str(max(sizes))]
        report |= {
            "mode": mode,
            "retrieval": retrieval,
            "machine": machine() | {"load_average_before": load_before},
            "calls": {"warm": calls, "warmup": warmup, "cold": cold_calls},
            "context_hit_rate": {key: r["context_hit_rate"] for key, r in rates.items()},
            "rates": rates,
            **extra,
            "hook_budget_ms": os.environ.get("MNEMOWEAVE_HOOK_BUDGET_MS") or "250 (default)",
            "bytecode": "cached under the run's PYTHONPYCACHEPREFIX (written by the warm-ups)",
            "cold_command": "mnemoweave ingest --session S --project P --role user --host "
            "claude-code PROMPT; mnemoweave weave PROMPT --session S --project P (no daemon)",
            "targets": TARGETS,
            "meets": {
                "warm_p95_at_largest": largest["p95"] is not None
                and largest["p95"] <= TARGETS["warm_p95_ms_at_10000"],
                "speedup": report["speedup"] is not None
                and report["speedup"] >= TARGETS["speedup"],
            },
        }
        return report
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.mode != "default":
        raise SystemExit("hooks: --mode does not apply (the hook uses the daemon's retrieval)")
    sizes = sorted({int(size) for size in args.sizes.split(",")})
    calls = args.limit or args.calls
    return measure(sizes, calls, args.warmup, args.cold_calls, args.embedder, args.models)
