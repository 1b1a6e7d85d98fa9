"""Entities and typed relations in a text, found by rules and no model: code identifiers,
paths, hosts, env vars, flags and commands by their shape; software and companies by a list
of well-known names (data/names.txt) and the project's own packages; people, places and
organisations in Chinese by jieba's part-of-speech tags; capitalised names and component
noun phrases ("the upload client", "计费服务") in both languages.

Each entity has a key that merges the ways it is written: case, separators and a plural
("UploadClient", "upload_client", "upload clients" are one), and the names data/names.txt
gives as one ("Postgres", "PostgreSQL")."""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from mnemoweave.text import cjk_count, stopwords


@dataclass(frozen=True)
class Mention:
    """An entity as one text writes it: where, its key and its kind."""

    name: str
    key: str
    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class Relation:
    """A typed relation the text states, between entity keys (`pinned_to`'s target is a
    version as written; `rule_about` has no source: the text is the rule)."""

    type: str
    source: str
    target: str


@dataclass(frozen=True)
class Found:
    mentions: tuple[Mention, ...]
    relations: tuple[Relation, ...]
    aliases: tuple[tuple[str, str], ...]  # (key, key) the text writes as one thing

    @property
    def keys(self) -> list[str]:
        """The distinct entity keys, in order of first mention."""
        return list(dict.fromkeys(m.key for m in self.mentions))


def _words(text: str) -> list[str]:
    return text.split()


class _Lazy:
    """A pattern compiled when first used: this module's rules take 40 ms to compile, which a
    process that only imports the write path never needs."""

    def __init__(self, pattern: str, flags: int) -> None:
        self.pattern, self.flags = pattern, flags
        self.compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        if self.compiled is None:
            self.compiled = re.compile(self.pattern, self.flags)
        return getattr(self.compiled, name)


def _lazy(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return cast("re.Pattern[str]", _Lazy(pattern, flags))


# --- keys ------------------------------------------------------------------------------

_SEPARATORS = _lazy(r"[\s_\-]+")
_PLURAL_HEADS = {
    "clients": "client",
    "services": "service",
    "workers": "worker",
    "queues": "queue",
    "jobs": "job",
    "servers": "server",
    "endpoints": "endpoint",
    "tables": "table",
    "buckets": "bucket",
    "clusters": "cluster",
    "pages": "page",
    "scripts": "script",
    "modules": "module",
    "pipelines": "pipeline",
    "handlers": "handler",
    "consumers": "consumer",
    "producers": "producer",
    "databases": "database",
    "caches": "cache",
    "tasks": "task",
    "apis": "api",
    "bots": "bot",
    "proxies": "proxy",
    "gateways": "gateway",
    "schedulers": "scheduler",
    "components": "component",
    "plugins": "plugin",
    "topics": "topic",
    "indexes": "index",
    "models": "model",
    "views": "view",
    "routes": "route",
    "tests": "test",
}


def key(name: str) -> str:
    """The form every way of writing one entity shares: NFKC, lowercase, no spaces,
    underscores or hyphens, a plural head made singular, one name of a pair in names.txt.
    Paths, URLs, hosts and flags keep their separators."""
    text = unicodedata.normalize("NFKC", name).strip().strip("`'\"“”‘’").strip()
    text = text.removesuffix("()").lower()
    if text.startswith("-") or "/" in text or ":" in text:
        return text
    words = _SEPARATORS.split(text)
    if len(words) > 1 or words[0] in _PLURAL_HEADS:
        words[-1] = _PLURAL_HEADS.get(words[-1], words[-1])
    joined = "".join(words)
    return _names().same.get(joined, joined)


# --- the list of well-known names ----------------------------------------------------------


@dataclass(frozen=True)
class _Names:
    plain: dict[str, str]  # lowercase name -> as written (matched in any case)
    guarded: dict[str, str]  # lowercase name -> as written (an ordinary word too)
    same: dict[str, str]  # key -> the key of the pair's first name
    pattern: re.Pattern[str]


@functools.cache
def _names() -> _Names:
    from importlib.resources import files

    plain: dict[str, str] = {}
    guarded: dict[str, str] = {}
    same: dict[str, str] = {}
    lines = (files("mnemoweave") / "data" / "names.txt").read_text(encoding="utf-8")
    for line in lines.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        names = [part.strip() for part in line.split("|")]
        first = _bare_key(names[0].lstrip("?"))
        for name in names:
            bare = name.lstrip("?")
            (guarded if name.startswith("?") else plain)[bare.lower()] = bare
            if _bare_key(bare) != first:
                same[_bare_key(bare)] = first
    every = sorted({*plain, *guarded}, key=len, reverse=True)
    alternatives = "|".join(re.escape(name) for name in every)
    pattern = re.compile(
        rf"(?<![\w.@/-])(?:{alternatives})(?![\w@/]|\.\w|-\w)", re.IGNORECASE | re.ASCII
    )
    return _Names(plain, guarded, same, pattern)


def _bare_key(name: str) -> str:
    return "".join(_SEPARATORS.split(unicodedata.normalize("NFKC", name).lower()))


# --- shapes --------------------------------------------------------------------------------

_EXTENSIONS = (
    "py|pyi|ipynb|js|mjs|cjs|ts|tsx|jsx|vue|svelte|json|jsonl|toml|yaml|yml|ini|cfg|conf|env|"
    "md|rst|txt|csv|tsv|lock|sh|bash|zsh|ps1|rs|go|mod|sum|java|kt|kts|gradle|rb|php|cs|c|h|"
    "cc|cpp|hpp|swift|m|sql|html|htm|css|scss|less|xml|proto|tf|tfvars|hcl|dockerfile|log|"
    "db|sqlite|parquet|pdf|png|jpg|jpeg|svg|gif|wasm|so|dll|whl|tar|gz|zip|pem|key|crt|service"
)
_TLDS = (
    "com|net|org|io|dev|internal|local|cn|app|cloud|ai|co|svc|lan|corp|test|example|"
    "localhost|intra|site|tech|xyz|me|us|uk|de|jp"
)
_URL = _lazy(
    r"\b(?:https?|wss?|ftp|s3|gs|redis|postgres(?:ql)?|mysql|mongodb|amqp)://[!#-&*-;=?-\[\]-_a-z|~]+",
    re.A,
)
_PATH = _lazy(
    r"(?<![\w/.:@-])(?:~|\.{1,2})?/?(?:[\w.@*-]+/)+(?:[\w.@*-]*[\w@*]|(?<=/))"
    r"|(?<![\w/.-])(?:[\w-]+\.(?:" + _EXTENSIONS + r")|\.[a-z][\w.-]*rc|\.env(?:\.\w+)?|"
    r"\.gitignore|\.dockerignore|\.gitlab-ci\.yml|Dockerfile|Makefile|Procfile|Justfile|"
    r"Jenkinsfile|Gemfile|Rakefile|Vagrantfile|CODEOWNERS)(?![\w-])",
    re.A,
)
_HOST = _lazy(
    r"\b(?:[a-z0-9][a-z0-9-]*\.)+(?:" + _TLDS + r")(?::\d{2,5})?\b(?!\.\w)"
    r"|\blocalhost(?::\d{2,5})?\b|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{2,5})?\b"
    r"|\b[a-z][a-z0-9-]*\.[a-z0-9.-]*:\d{2,5}\b|\b[a-z][a-z0-9-]*:\d{3,5}\b",
    re.A,
)
_KEBAB = _lazy(
    r"\b([a-z][a-z0-9]*(?:-[a-z0-9]+)+)\s+(?:SDK|library|package|crate|plugin|module|gem|client)\b",
    re.A,
)
_API_PATH = _lazy(r"\b(?:GET|POST|PUT|PATCH|DELETE|HEAD)\s+(/[\w./{}:-]*)", re.A)
_ENV = _lazy(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b", re.A)
_LONG_FLAG = _lazy(r"(?<![\w-])--[a-zA-Z][\w-]*", re.A)
_SHORT_FLAG = _lazy(r"(?<![\w-])-[a-zA-Z][\w-]*", re.A)
_CALL = _lazy(r"\b[A-Za-z_][\w.]*(?=\(\))", re.A)
_DOTTED = _lazy(r"\b[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)+(?::[A-Za-z_]\w*)?\b(?![\w(/-])", re.A)
_CAMEL = _lazy(
    r"\b(?:[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+|[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*|"
    r"[A-Z]{2,}[a-z][A-Za-z0-9]*)(?:-[A-Z][A-Za-z0-9]*)*\b",
    re.A,
)
_SNAKE = _lazy(r"(?<![\w.-])_*[a-z][a-z0-9]*(?:_+[a-z0-9]+)+_*(?![\w-])", re.A)
_VERSION = (
    r"v?\d+(?:\.\d+)*(?:-[\w.]+)?(?:\.x|[a-z]\w*)?(?:\.\*)?"
    r"(?![\w%]|\s*(?:MB|KB|GB|TB|ms|s|秒|分钟|小时|天|个|片|次|条|倍|M|G|K)\b)"
)
_NOT_DOTTED = frozenset({"e.g", "i.e", "etc", "vs", "a.m", "p.m", "u.s"})
_CODE_SPAN = _lazy(r"`([^`\n]+)`")
_FENCED = _lazy(r"```.*?(?:```|$)", re.S)
_SOFTWARE_VERB = _lazy(
    r"\b(?:uses|using|built on|based on|depends on|relies on|requires|switched to|moved to|"
    r"replaced by|via|written in|import|pip install|npm install|instead of|rather than|"
    r"(?:switched|moved|migrated|went) from \S+ to)\s+$",
    re.A,
)
_SOFTWARE_WORDS = _lazy(
    r"(?:librar(?:y|ies)|package|module|crate|gem|framework|lib|sdk|client library)\b|库|包|框架",
    re.IGNORECASE,
)

# code that is not a command line, and programs whose first argument is not a subcommand
_NOT_PROGRAMS = frozenset(
    _words(
        "await return import from def class if for while new let const var print raise yield "
        "with pass else elif try except lambda async fn func pub use mut impl match case select "
        "and or not is in of as true false null none self this"
    )
)
_NO_SUBCOMMANDS = frozenset(
    _words(
        "python python3 node bash sh zsh pytest ruby java cat ls rm cp mv cd echo grep rg curl "
        "wget ssh sudo time env export source chmod chown mkdir touch tail head less more vim "
        "nvim code open ps kill watch xargs find sed awk jq uvicorn gunicorn make npx tsc"
    )
)

# --- words ---------------------------------------------------------------------------------

# capitalised words that name no entity (a sentence's first word is looked at anyway)
_NOT_NAMES = frozenset(
    _words(
        """i i'm i've i'd i'll ok okay yes no hi hey thanks please note todo fixme nb ps
        monday tuesday wednesday thursday friday saturday sunday january february march april
        may june july august september october november december jan feb mar apr jun jul aug
        sep sept oct nov dec english chinese french german
        japanese spanish utc gmt am pm eta tldr faq
        api apis url urls uri json yaml toml csv xml html css http https tcp udp ip dns tls ssl
        ssh? sql nosql orm cpu gpu ram ssd hdd os vm vms ci cd pr prs mr mrs ui ux cli gui sdk
        id ids uuid jwt oauth sso db dbs io oom qps rps ttl lru fifo rest rpc cors csrf xss
        crud etl cdn dns vpn lan wan ide repl regex env dev qa prod pdf png jpeg svg gif utf
        ascii unicode md readme changelog license mit todo wip nb rfc spec p0 p1 p2
        always never please remember ensure avoid prefer maybe hmm also true false none null
        nobody everyone everybody someone somebody anyone anybody everything
        pitfall pitfalls decision decisions rule rules fact facts preference preferences gotcha
        lesson lessons tip tips warning caveat context summary question answer user assistant
        wi-fi
    nothing something anything
        """
    )
)
# upper-case words that are keywords, formats or units rather than names
_NOT_ACRONYMS = frozenset(
    _words(
        """SELECT INSERT UPDATE DELETE FROM WHERE JOIN ALTER TABLE LIMIT INDEX CREATE DROP ORDER
        GROUP BY HAVING VALUES INTO AND OR NOT NULL TRUE FALSE PRIMARY KEY UNIQUE DEFAULT ADD
        COLUMN SET AS ON IN IS LIKE UNION DISTINCT COUNT GET POST PUT PATCH HEAD OPTIONS TIFF
        MP4 MP3 WAV ZIP TAR GZ KB MB GB TB PB MS NS US OK FYI ASAP AFAIK IMO TBD EOF SLA SLO
        SLI KPI QA UAT E2E P50 P90 P95 P99 RPS QPS TPS ETA UTC AM PM TL DR CEO CTO PM PO QA
        LGTM WIP NB PS RE FW AI ML LLM NLP OCR ASR TTS CV RL DL GPU TPU CPU NPU RAM SSD DAG
        ISO MSRV PID TTY LTS EOL RSS LR CVE SHA ACL RBAC MFA OTP QR RT LSP MQTT AMQP SMTP IMAP
        SSE HLS RTMP RTSP WS WSS"""
    )
)
_COMPONENT_HEADS = (  # words that end a component's name; not those that mostly end a
    # kind of thing ("retry loop", "feature flag", "admin node", "dependency layer")
    "service|client|server|worker|queue|job|endpoint|module|api|database|db|cache|pipeline|"
    "bucket|table|cluster|page|bot|script|daemon|proxy|gateway|scheduler|handler|middleware|"
    "consumer|producer|topic|index|dashboard|backend|frontend|app|webhook|cron job|cronjob|"
    "task|store|repo|repository|library|plugin|component|form|screen|view|controller|model|"
    "migration|route|router|sdk|cli|extension|lambda|stream|"
    "collection|chart|verifier|parser|loader|builder|exporter|importer|scanner|crawler|"
    "resolver|validator|serializer|renderer|listener|watcher|poller|uploader|downloader|"
    "dispatcher|orchestrator|collector|aggregator|indexer|notifier|adapter|"
    "manager|provider|registry|widget|modal|dialog|sidebar|navbar|"
    "updater|driver|engine|replica|console|portal|monitor|filter|bridge|simulator|tailer|"
    "writer|reader|buffer|unpacker|planner|feed|site|grid"
)
_IDENTIFIER = _lazy(r"_|\d|[a-z][A-Z]", re.A)
# the words that make a noun phrase one thing ("the upload client", "Hexfall's game server"),
# not a kind of thing ("a one-off script", "each dedicated server", "60 parallel streams")
_DEFINITE = _lazy(r"(?:\b(?:the|our|its|their|his|her|my|your)|(\b[\w.-]+)['’]s)\s+$", re.I | re.A)
_COMPONENT = _lazy(rf"\b({_COMPONENT_HEADS})(s|es)?\b", re.IGNORECASE | re.A)
# words that say which one but name nothing ("the same service", "a new table")
_NOT_MODIFIERS = frozenset(
    _words(
        """the a an this that these those our my your their its his her one two three each every
        any some all no other another same new old main whole entire first last next previous
        right wrong current actual real default separate single different specific own
        existing whole big small large slow fast broken failing failed bad good local remote
        simple custom extra second third such which what whose where whatever
        upstream downstream underlying related relevant corresponding entire public private
        per of in on at to for from by with into onto via across through over under about
        between against without within
        """
    )
)
_ENVIRONMENTS = _lazy(
    r"(?<![\w-])(?:staging|production|prod|pre-?prod|pre-production|sandbox|canary|uat)(?![\w-])",
    re.I | re.A,
)
_DEV = _lazy(  # "deploy to dev", "against dev"; not "dev mode", "dev dependencies"
    r"(?:(?<=\bon )|(?<=\bto )|(?<=\bin )|(?<=\binto )|(?<=\bonto )|(?<=\bfrom )|"
    r"(?<=\bagainst ))dev(?![\w-]| (?:mode|server|build|branch|"
    r"tools?|deps|dependenc|container|machine|loop|env|box))",
    re.A,
)
_ACRONYMS = _lazy(r"(?<![\w.-])[A-Z][A-Z0-9]+(?:-[A-Z][A-Z0-9]+)+(?![\w-])", re.A)
_ZH_ENVIRONMENTS = _lazy(r"(?:预发|生产|测试|开发|灰度|线上|预生产|沙箱)环境|灰度|线上环境")
_ZH_HEADS = (
    "客户端|服务端|服务器|服务|队列|任务|接口|模块|数据库|缓存|表|集群|页面|脚本|网关|"
    "组件|插件|存储桶|桶|管道|流水线|定时任务|后台|前端|中间件|消费者|生产者|机器人|"
    "容器|控制器|看板|平台|引擎|节点|界面|详情页|页|缓冲区|"
    "缓冲|网桥|控制台|端|器"
)
_ZH_HEAD = _lazy(rf"(?:{_ZH_HEADS})")
_ZH_PROPER = frozenset({"nr", "nt"})  # people and organisations (place and other proper
# noun tags mostly fall on ordinary words: 日志 ns, 普通 nz, 令牌 nrt)
_SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏"
    "吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万"
    "钱严覃武戴莫孔向汤欧阳司马上官诸葛"
)
COMMON_ZH = 500  # jieba's count of a word at or above which it is an ordinary word (谢谢 1089)
_LATIN = _lazy(r"(?<![\w.@/-])[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*(?![\w@/]|\.\w)", re.A)
_ZH_MODIFIER_FLAGS = frozenset({"n", "vn", "v", "nz", "j", "l", "ng", "an", "nt", "ns"})
_TITLES = frozenset(_words("主任 老师 总 经理 工 哥 姐 医生 博士 教授 老板 总监 组长"))
_CALLED = frozenset({"nr", "t", "n"})  # 小王 nr, 老周 t; 小于 is a verb
_ZH_NOUNS = frozenset({"n", "vn", "nz", "j", "nt", "ns"})
_ZH_NOT_MODIFIERS = frozenset(
    _words(
        """这个 那个 一个 每个 整个 所有 其他 新的 旧的 当前 默认 之前 以前 现在 我们 他们
        你们 本地 远程 这些 那些 哪个 某个 相关 对应 原来 原有 新 旧 主 该 此 各 用 跑 在 是 有
        把 被 给 让 调用 使用 访问 连接 启动 重启 部署 修改 更新 删除 增加 添加 检查 测试 上线
        迁移 发布 放在 放到 传进 传给 交给 写到 写进 改成 换成 接入 加到 建议 提交 导出 打到 里加
        需要 进入 进到 通过 所有的 各个 这种 那种 改用 换用 改为 必须 已经 直接 一律 一直 总是
        马上 立即 务必 千万 不再 只能 只 都 也 还 就 再 又 先 才 正在 仍然 依然 一定 尽量"""
    )
)

_SENTENCE_START = _lazy(r"(?:^|[.!?;:。！？；：\n]|[-*>]\s|\d\.\s)\s*[\"'(“（]*$")


def _starts_sentence(text: str, start: int) -> bool:
    return bool(_SENTENCE_START.search(text[max(0, start - 6) : start]))


# --- finding mentions -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    kind: str
    name: str
    rank: int  # which wins an overlap of equal length


def _spans(text: str, known: Mapping[str, str], chinese: bool) -> Iterator[_Span]:
    code = [m.span(1) for m in _CODE_SPAN.finditer(text)]
    fenced = [m.span() for m in _FENCED.finditer(text)]

    def in_code(start: int, end: int) -> bool:
        return any(a <= start and end <= b for a, b in (*code, *fenced))

    for m in _URL.finditer(text):
        yield _Span(m.start(), m.end(), "url", m.group().rstrip(".,;:"), 9)
    for m in _HOST.finditer(text):
        yield _Span(m.start(), m.end(), "url", m.group(), 8)
    for m in _PATH.finditer(text):
        name = m.group().rstrip(".")
        if _is_path(name, in_code(m.start(), m.end())):
            yield _Span(m.start(), m.start() + len(name), "file", name, 8)
    for start, end in code:
        token = text[start:end]
        if re.fullmatch(r"[A-Za-z_][\w.-]*[\w]", token) and token.lower() not in _NOT_NAMES:
            yield _Span(start, end, "code", token, 4)
    for m in _KEBAB.finditer(text):
        yield _Span(m.start(1), m.end(1), "code", m.group(1), 4)
    for m in _API_PATH.finditer(text):
        yield _Span(m.start(1), m.end(1), "file", m.group(1), 8)
    for start, end in code:
        if re.fullmatch(r"/[\w.{}:-]+", text[start:end]):
            yield _Span(start, end, "file", text[start:end], 8)
    for m in _ENV.finditer(text):
        yield _Span(m.start(), m.end(), "env", m.group().strip("${}"), 7)
    for m in _LONG_FLAG.finditer(text):
        yield _Span(m.start(), m.end(), "flag", m.group(), 6)
    for m in _SHORT_FLAG.finditer(text):
        if in_code(m.start(), m.end()):
            yield _Span(m.start(), m.end(), "flag", m.group(), 6)
    for m in _CALL.finditer(text):
        yield _Span(m.start(), m.end(), "code", m.group(), 6)
    for m in _DOTTED.finditer(text):
        if m.group().lower() not in _NOT_DOTTED and not re.fullmatch(r"[A-Z]\w*\.[A-Z]", m.group()):
            yield _Span(m.start(), m.end(), "code", m.group(), 5)
    for m in _CAMEL.finditer(text):
        if not re.fullmatch(r"[A-Z]{2,}(?:s|es|ing|ed|d)", m.group()) and not _case_word(m):
            yield _Span(m.start(), m.end(), "code", m.group(), 5)
    for m in _SNAKE.finditer(text):
        if not _case_word(m):
            yield _Span(m.start(), m.end(), "code", m.group(), 5)
    yield from _commands(text, code)
    written_in_chinese = _in_chinese(text)  # read once: every guarded name asks
    yield from _listed(text, known, in_code, written_in_chinese)
    prose = _CODE_SPAN.sub(_blank, _FENCED.sub(_blank, text))  # words, not code or its output
    yield from _capitalised(prose, written_in_chinese)
    for pattern in (_ENVIRONMENTS, _DEV):
        for m in pattern.finditer(prose):
            yield _Span(m.start(), m.end(), "environment", m.group(), 4)
    for m in _ACRONYMS.finditer(prose):  # ESP-IDF
        yield _Span(m.start(), m.end(), "name", m.group(), 3)
    if not written_in_chinese:  # a Chinese text names its components in Chinese
        yield from _components(prose)
    if chinese and cjk_count(text):
        yield from _chinese(prose)


def _case_word(m: re.Match[str]) -> bool:
    """The name of a way of writing names ("snake_case", "camelCase"), not a name."""
    return m.group().lower().replace("_", "").replace("-", "") in _CASE_WORDS


_CASE_WORDS = frozenset({"snakecase", "camelcase", "pascalcase", "kebabcase", "screamingsnakecase"})


def _blank(m: re.Match[str]) -> str:
    return " " * len(m.group())


def _in_chinese(text: str) -> bool:
    """Written in Chinese (more Chinese characters than Latin words), not an English text
    naming a Chinese person."""
    return cjk_count(text) > len(_LATIN_WORD.findall(text))


_LATIN_WORD = _lazy(r"[A-Za-z]+", re.A)


def _is_path(name: str, quoted: bool) -> bool:
    if "/" not in name:
        return True  # a file name with a known extension, or a known file
    if re.fullmatch(r"[\d/.]+|[A-Za-z]{1,4}/[A-Za-z]{1,4}", name):
        return False  # 1/2, I/O, CI/CD, TCP/IP
    last = name.rstrip("/").rsplit("/", 1)[-1]
    return (
        quoted
        or bool(re.fullmatch(r"[\w.-]{2,}/", name))  # a folder: "legacy/", "Pods/"
        or name.startswith(("~", "./", "../", "/"))
        or name.count("/") >= 2
        or bool(re.search(r"\.(?:" + _EXTENSIONS + r")$", last))
        or bool(re.search(r"[-\d.]", name))  # owner/repo-name, a module path
    )


def _commands(text: str, code: list[tuple[int, int]]) -> Iterator[_Span]:
    """A command line in code quotes: its program, with its subcommand when one follows
    (`git rebase`, `docker compose`, `twine upload`; not `python script.py`)."""
    for start, end in code:
        line = text[start:end]
        words = re.match(
            r"(?:sudo\s+)?((?:\./)?[a-z][\w.-]*)(?:(\s+)([a-z][\w:.-]*)(?=\s|$))?", line
        )
        if not words or " " not in line.strip() or words.group(1) in _NOT_PROGRAMS:
            continue
        head, sub = words.group(1), words.group(3)
        if sub and head not in _NO_SUBCOMMANDS:
            name = head + words.group(2) + sub
            yield _Span(start + words.start(1), start + words.end(3), "command", name, 7)
        else:
            yield _Span(start + words.start(1), start + words.end(1), "command", head, 7)


def _listed(text: str, known: Mapping[str, str], in_code: Any, chinese: bool) -> Iterator[_Span]:
    """Well-known names, and names the store already knows (`known`: as the text writes
    them, lowercase -> their entity's kind; `chinese`: the text is written in Chinese)."""
    names = _names()
    for m in names.pattern.finditer(text):
        word, lower = m.group(), m.group().lower()
        built = _BUILT_FOR.match(text, m.end())  # "the JetBrains plugin", "VS Code 插件"
        if built:
            yield _Span(m.start(), built.end(), "component", text[m.start() : built.end()], 10)
        sub = _SUBCOMMAND.match(text, m.end()) if word == lower else None
        if sub:  # a command in prose, as typed: "re-ran the helm upgrade", "跑 dbt run"
            yield _Span(m.start(), sub.end(), "command", text[m.start() : sub.end()], 7)
        if lower in names.plain or _guard_passes(
            text, m.start(), m.end(), names.guarded[lower], in_code, chinese
        ):
            yield _Span(m.start(), m.end(), "software", word, 9)
    for lower, kind in known.items():
        words = [part for part in re.split(r"[\W_]+", lower) if part]
        plain = bool(words) and all(ordinary(part) for part in words)  # "mode", "the node"
        for m in re.finditer(rf"(?<![\w.@/-]){re.escape(lower)}(?![\w@/-])", text, re.I | re.A):
            if not plain or _guard_passes(text, m.start(), m.end(), m.group(), in_code, chinese):
                yield _Span(m.start(), m.end(), kind, m.group(), 8)


_BUILT_FOR = _lazy(r" (?:client|plugin|extension)s?\b| ?(?:插件|客户端|扩展)", re.A)
_SUBCOMMAND = _lazy(
    r" (?:install|uninstall|build|run|test|deps|generate|migrate|deploy|push|pull|rebase|"
    r"commit|merge|clone|fetch|checkout|compose|exec|logs|describe|rollout|delete|apply|"
    r"plan|init|upgrade|sign|fix|lint|format|publish|serve|restart|login|bisect|"
    r"cherry-pick|stash|patch|scale|destroy|seed|db|tidy|vet|add|remove|sync|stop|bench|fmt|"
    r"ssh|flush|validate|audit|doctor|clean)(?![\w-])",
    re.A,
)


def _guard_passes(
    text: str, start: int, end: int, written: str, in_code: Any, chinese: bool
) -> bool:
    """A name that is an ordinary word too counts in code quotes, in Chinese text, written
    as the name is (capitalised, not a sentence's first word), or beside a word saying it
    is software."""
    if in_code(start, end) or chinese:
        return True  # a Latin word in Chinese text is a name
    word = text[start:end]
    if word == written and written[:1].isupper():
        return not _starts_sentence(text, start) or bool(_SUBJECT_OF.match(text, end))
    around = text[max(0, start - 12) : start] + " " + text[end : end + 14]
    return bool(_SOFTWARE_WORDS.search(around) or _SOFTWARE_VERB.search(text[:start]))


_CAPITALISED = _lazy(  # Tomás; not "Shouldn't"
    r"\b[A-Z][a-zß-ÿ]+(?:[ -][A-Z][a-zß-ÿ]+)*(?![\wß-ÿ]|['’]t\b)", re.A
)
_VERSIONISH = _lazy(r"(?:V\d|P\d|\d)\w*", re.A)
_ACRONYM = _lazy(r"(?<![\w.-])[A-Z][A-Z0-9]{1,7}(?![\w-])", re.A)
# what follows a name as the subject of its sentence: a verb, or a pause ("Priya:", "Bob,")
_SUBJECT_OF = _lazy(
    r"(?::|,|\s+(?:here|is|are|was|were|has|had|now|still|also|only|must|should|never|"
    r"always|can|cannot|can't|won't|will|does|did|uses?|used|reads?|writes?|stores?|"
    r"talks?|calls?|runs?|depends?|relies|requires?|needs?|signs?|renders?|keeps?|sends?|"
    r"serves?|builds?|publishes|exposes|listens|returns|wraps|retries|fails|breaks|"
    r"crashes|loads|owns|handles|expects|treats|logs)\b)",
    re.A,
)
# what only people do ("Yuki finishes the refactor", "Hannah asked"): the name is a person's
_HUMAN_VERB = _lazy(
    r"\s+(?:asked|asks|said|says|wants|wanted|thinks|thought|prefers|preferred|suggested|"
    r"reported|pinged|mentioned|agreed|decided|finishes|finished|reviewed|approved|told|"
    r"noticed|proposed|complained|owns)\b",
    re.A,
)
_LOWER_SUBJECT = _lazy(
    r"(?:^|(?<=[.!?;:]\s)|(?<=\n))([a-z][a-z0-9]*(?:[-_][a-z0-9]+)*)(?=\s)", re.A
)
_NUMBERED = _lazy(r"(?<![\w.@/$-])[a-z][a-z0-9]*(?:-[a-z0-9]+)+(?![\w@/]|\.\w|-\w)", re.A)
_LOWER_WORD = _lazy(r"(?<![\w.@/$'’-])[a-z]+(?:-[a-z]+)*(?![\w@/'’]|\.\w|-\w)", re.A)
_OBJECT = _lazy(
    r"\b(?:uses|using|built on|based on|depends on|relies on|requires|switched to|moved to|"
    r"replaced by|via)\s+([a-z][a-z0-9]*(?:-[a-z0-9]+)*)\b(?![-./])",
    re.A,
)
NAME_INFO = 12.0  # nats: a word saying less in general text ("Before", "Found") is no name


def _concept(word: str) -> bool:
    """A common software word with a Chinese equivalent in the glossary ("pipeline")."""
    from mnemoweave.text import stem, translations

    return bool(translations(stem([word.lower()])[0]))


@functools.cache
def _ordinary_words() -> frozenset[str]:
    from importlib.resources import files

    text = (files("mnemoweave") / "data" / "words.txt").read_text(encoding="utf-8")
    return frozenset(
        word for line in text.splitlines() if not line.startswith("#") for word in line.split()
    )


_PREFIX = _lazy(
    r"(?:un|re|pre|sub|over|under|auto|multi|de|non|co|mis|inter|super|micro|meta|post|anti|"
    r"semi|bi|tri)-?"
)
_INFLECTIONS = (
    ("ies", "y"),
    ("es", ""),
    ("s", ""),
    ("ed", ""),
    ("ed", "e"),
    ("ing", ""),
    ("ing", "e"),
    ("er", ""),
    ("ers", ""),
    ("er", "e"),  # profiler, issuer
    ("or", "e"),  # migrator
    ("ion", ""),  # redaction
)


def ordinary(word: str) -> bool:
    """An English or developer's word (data/words.txt), or a form of one, or a stopword."""
    lower = word.lower()
    words = _ordinary_words()
    if lower in words or lower in stopwords():
        return True
    if any(
        lower.endswith(end) and len(lower) - len(end) >= 3 and lower[: -len(end)] + stem in words
        for end, stem in _INFLECTIONS
    ):
        return True
    prefix = _PREFIX.match(lower)  # "unbans", "redelivered", "autogenerate"
    return prefix is not None and len(lower) - prefix.end() >= 4 and ordinary(lower[prefix.end() :])


# short words and prefixes that join English compounds ("re-run", "add-on", "x-ray")
_SHORT = frozenset(
    _words("a an to in on up by of or at as is it be do go no so re co de ex un e x t")
)


def _unknown(word: str) -> bool:
    """A lowercase word that is no ordinary word, in any of its hyphenated parts longer than
    two letters ("inkpress", "paykit-py"; not "re-run", "fine-grained"), or a hyphenated
    one with a short part no compound has ("kelp-ls") or ending in a component's head word
    ("wren-gateway", "search-api")."""
    parts = word.split("-")
    if len(parts) > 1 and (
        _COMPONENT.fullmatch(parts[-1]) or any(len(p) <= 2 and p not in _SHORT for p in parts)
    ):
        return True  # "wren-gateway", "kelp-ls", "ts-node"
    long = [part for part in parts if len(part) > 2]
    return bool(long) and not all(ordinary(part) for part in long)


def _uncommon(word: str) -> bool:
    from mnemoweave.recall import wordinfo

    lower = word.lower()
    return lower not in stopwords() and wordinfo.information(lower) >= NAME_INFO


def _capitalised(text: str, chinese: bool) -> Iterator[_Span]:
    """Names in English text: capitalised words not first in their sentence, a first word
    that is uncommon and the sentence's subject ("Priya: ...", "Gatekeeper is written in
    Go", "driftwood uses FastAPI"), and in Chinese text acronyms that are not common ones
    (TKE, not API)."""
    for m in _CAPITALISED.finditer(text):
        words = m.group().split()
        start = m.start()
        first = _starts_sentence(text, start)
        subject = len(words) == 1 and not words[0].endswith("s") and _uncommon(words[0])
        subject = subject and bool(_SUBJECT_OF.match(text, m.end()))
        subject = subject and not (text[m.end() : m.end() + 1] == ":" and ordinary(words[0]))
        subject = subject and not (words[0].endswith("ing") and ordinary(words[0]))  # Rounding
        if first and not (subject or _unknown(words[0].lower())) and not chinese:
            words, start = words[1:], start + len(words[0]) + 1
        while words and words[0].lower() in _NOT_NAMES | stopwords():
            words, start = words[1:], start + len(words[0]) + 1
        if words:
            name = " ".join(words)
            end = start + len(name)
            kind = "person" if len(words) == 1 and _HUMAN_VERB.match(text, end) else "name"
            yield _Span(start, end, kind, name, 3)
        if len(words) > 1:  # each word too: where a listed name takes one, the rest joins it
            at = start
            for word in words:
                yield _Span(at, at + len(word), "name", word, 3)
                at += len(word) + 1
    for m in _LOWER_SUBJECT.finditer(text):
        plural = m.group(1).endswith("s") and m.group(1).lower() not in _names().plain
        if not plural and _SUBJECT_OF.match(text, m.end()) and _uncommon(m.group(1)):
            yield _Span(m.start(1), m.end(1), "name", m.group(1), 3)
    for m in _LOWER_WORD.finditer(text):  # "inkpress renders", "in paykit-py"
        if len(m.group()) > 2 and _unknown(m.group()):
            end = m.end() + (text[m.end() : m.end() + 1] == "!")  # a macro: println!
            yield _Span(m.start(), end, "name", text[m.start() : end], 3)
    for m in _NUMBERED.finditer(text):  # "ranker-ft-0612", "gpu-a100", "triton-py310"
        parts = m.group().split("-")
        if any(p.isalpha() and len(p) > 2 for p in parts) and not all(
            p.isdigit() or p.isalpha() and (ordinary(p) or p in _SHORT) for p in parts
        ):
            yield _Span(m.start(), m.end(), "name", m.group(), 3)
    for m in _OBJECT.finditer(text):  # "uses timm", "depends on nom"
        if _uncommon(m.group(1)) and not _concept(m.group(1)):
            yield _Span(m.start(1), m.end(1), "name", m.group(1), 3)
    for m in _ACRONYM.finditer(text if chinese else ""):  # in English, mostly a term (ISR)
        word = m.group()
        if (
            word.lower() not in _NOT_NAMES
            and word not in _NOT_ACRONYMS
            and not _VERSIONISH.match(word)
            and not _initialism(word)
            and _uncommon(word)  # MEDIUM, DATE, ARM: a word written in capitals
        ):
            yield _Span(m.start(), m.end(), "name", m.group(), 3)


def _components(text: str) -> Iterator[_Span]:
    """A component named by a noun phrase: one or two words naming which, then a head word
    ("the upload client", "the resize workers"). Where a name or an identifier says which
    ("the Redis cluster", "the invoice_sync job"), that name is the entity."""
    names = _names()
    for m in _COMPONENT.finditer(text):
        modifiers: list[str] = []
        cursor = m.start()
        for _ in range(2):
            if text[:cursor].endswith("   "):  # a code span says which ("`positions` view")
                modifiers = []
                break
            found = re.search(r"([A-Za-z][\w-]*)\s+$", text[:cursor])
            if not found:
                break
            word, lower = found.group(1), found.group(1).lower()
            if lower in _NOT_MODIFIERS or lower in stopwords() or word in _NOT_ACRONYMS:
                break
            if _IDENTIFIER.search(word) or lower in names.plain or lower in names.guarded:
                modifiers = []
                break
            if "-" in lower and _unknown(lower):  # "the genoscope-raw bucket": the name
                break  # says which ("the timesheet importer" is one component)
            if word[:1].isupper() and _starts_sentence(text, found.start()):
                break
            modifiers.insert(0, word)
            cursor = found.start()
        if modifiers and (modifiers[0][:1].isupper() or _ENVIRONMENTS.fullmatch(modifiers[0])):
            continue  # "the Flower dashboard", "the NAT gateway", "the staging server": a
            # product's or a place's part, named by the product or the place
        definite = _DEFINITE.search(text[:cursor])
        owner = definite and definite.group(1)  # "Zephyr's sensor API": a part of Zephyr
        if modifiers and definite and not (owner and owner.lower() in names.plain):
            yield _Span(cursor, m.end(), "component", text[cursor : m.end()], 2)


def _chinese(text: str) -> Iterator[_Span]:
    words = _posseg(text)
    offsets: list[int] = []
    at = 0
    for word, _ in words:
        offsets.append(at)
        at += len(word)
    starts = {o: i for i, o in enumerate(offsets)}
    for i, (word, flag) in enumerate(words):
        proper = flag in _ZH_PROPER and len(word) >= 2 and cjk_count(word) == len(word)
        called = word[:1] in "老小" and word[1:] in _SURNAMES and flag in _CALLED  # 老周, 小王
        called = called or flag == "nr" and len(word) == 2 and word[0] in "阿小"  # 阿飞, 小雨
        after = words[i + 1][0] if i + 1 < len(words) else ""
        titled = flag == "nr" and word in _SURNAMES and after in _TITLES  # 周主任
        if titled or word in ("老", "小") and after in _SURNAMES:  # 小 刘, as jieba cuts it
            yield _Span(offsets[i], offsets[i] + len(word + after), "person", word + after, 3)
        if called or proper and _rare(word) and (flag != "nr" or word[0] in _SURNAMES):
            kind = "person" if called or flag == "nr" else "org"
            yield _Span(offsets[i], offsets[i] + len(word), kind, word, 3)
    for m in _LATIN.finditer(text):  # a Latin word among Chinese is mostly a name
        word = m.group()
        if word.islower() and "-" not in word:
            continue  # checkpoint, prune, rank: as often a word as a name
        if word in _NOT_ACRONYMS or _VERSIONISH.fullmatch(word) or _initialism(word):
            continue  # P99, RT, LSP, GIS
        if word.lower() not in _NOT_NAMES and not _concept(word) and _uncommon(word):
            yield _Span(m.start(), m.end(), "name", word, 3)
    for m in _ZH_ENVIRONMENTS.finditer(text):
        yield _Span(m.start(), m.end(), "environment", m.group(), 4)
    ends = {o + len(w): i for i, (o, (w, _)) in enumerate(zip(offsets, words, strict=True))}
    for m in _ZH_HEAD.finditer(text):
        if m.start() in starts:
            i = starts[m.start()]
        elif m.group() == "器" and m.end() in ends:
            i = ends[m.end()]  # a word ending in 器: 滤波器, 浏览器
        else:
            continue  # inside a word: 服务 in 服务器 is found as 服务器
        phrase = _zh_phrase(text, words, offsets, i)
        if phrase is not None:  # a clause's subject: its whole noun phrase (学习报告任务)
            yield _Span(phrase, m.end(), "component", text[phrase : m.end()], 2)
            continue
        j = i - 1
        while j >= 0 and words[j][0].isspace():
            j -= 1
        if j < 0:
            continue
        if not _zh_modifier(*words[j]):
            continue
        k = j - 1  # a second word naming which: 变异检测任务, 支付回调接口
        if (
            k >= 0
            and _zh_modifier(*words[k])
            and (words[k][1] in _ZH_NOUNS or words[k][1] == words[j][1] == "v")
        ):
            j = k
        start = offsets[j]
        if _zh_subject(text, start):
            yield _Span(start, m.end(), "component", text[start : m.end()], 2)


_ZH_FUNCTION = frozenset({"u", "uj", "ul", "p", "c", "r", "m", "q", "t", "f", "x", "y", "e"})
_ZH_NOT_FIRST = frozenset({"d", "ad", "v", "vd"})  # 直接, 一直; an order's verb: 更新订单服务
PHRASE_CHARS = 6  # the longest noun phrase before a head word read as one name (危急值通知)


def _zh_phrase(
    text: str, words: list[tuple[str, str]], offsets: list[int], head: int
) -> int | None:
    """Where the noun phrase before a head word starts, if it opens a clause: the Chinese
    words up to the clause's start, none a function word, the first no adverb or bare verb
    ("菜单同步任务", "危急值通知任务"; not "直接写任务", "更新订单服务")."""
    k = head
    while k > 0:
        word, flag = words[k - 1]
        if flag in _ZH_FUNCTION or flag == "nr" or cjk_count(word) != len(word):
            break  # a function word, a person, a Latin word
        if word in _ZH_STOPS or _ZH_CLAUSE_START.search(word):
            break  # 的, 在, 是; 说, 提醒: a clause opens after it
        k -= 1
    if k == head or offsets[head] - offsets[k] > PHRASE_CHARS:
        return None
    first, flag = words[k]
    if flag in _ZH_NOT_FIRST or first in _ZH_NOT_MODIFIERS or len(first) < 2 and k + 1 == head:
        return None
    return offsets[k] if _opens_clause(text, offsets[k]) else None


_ZH_STOPS = frozenset(_words("的 了 在 把 被 给 和 与 及 或 是 有 就 都 也 还 要 会 能 先 再 又"))


# where a clause opens: punctuation, a list's mark, a conjunction, a verb of saying ("老周说")
_ZH_CLAUSE_START = _lazy(
    r"(?:^|[：:，,。；;！？!?\n（(、]|[-*>]|\d\.|和|与|及|或|说|提醒|觉得|认为|反馈)\s*$"
)
_ZH_OWNER = _lazy(r"(?<![\w.-])([A-Za-z][\w.-]*|(?:预发|生产|测试|开发|灰度|线上)环境)\s*的$", re.A)


def _opens_clause(text: str, at: int) -> bool:
    return bool(_ZH_CLAUSE_START.search(text[max(0, at - 40) : at]))


def _zh_subject(text: str, start: int) -> bool:
    """A Chinese noun phrase names a component of the project where it opens a clause (its
    subject: "订单服务依赖 Stripe"), or is a project's own part ("inkpress 的渲染服务",
    "预发环境的支付回调接口"); after a verb or a product it is mostly a kind of thing ("用
    Redis 做特征缓存", "ACF Pro 的选项页", "Synapse 管理接口")."""
    if _opens_clause(text, start):
        return True
    owner = _ZH_OWNER.search(text[max(0, start - 40) : start])
    return owner is not None and owner.group(1).lower() not in _names().plain


def _initialism(word: str) -> bool:
    """Two to four capitals ("GIS", "SRE", "HEIC"): as often a term as a product's name, so
    a name only where the list of names holds it."""
    return 2 <= len(word) <= 4 and word.isalpha() and word.isupper()


def _zh_modifier(word: str, flag: str) -> bool:
    return (
        flag in _ZH_MODIFIER_FLAGS
        and word not in _ZH_NOT_MODIFIERS
        and len(word) >= 2
        and cjk_count(word) == len(word)
    )


def _rare(word: str) -> bool:
    from mnemoweave.text import _tokenizer

    return (_tokenizer().FREQ.get(word) or 0) < COMMON_ZH


def prepare() -> None:
    """Load the lists of names and words and jieba's part-of-speech tagger now (about a
    second)."""
    _names()
    _ordinary_words()
    _posseg("预热")


_posseg_lock = threading.Lock()
_posseg_tokenizer: Any = None


def _posseg(text: str) -> list[tuple[str, str]]:
    """jieba's words and part-of-speech tags, over the dictionary the search uses."""
    global _posseg_tokenizer
    with _posseg_lock:
        if _posseg_tokenizer is None:
            import jieba.posseg

            from mnemoweave.text import _tokenizer

            _posseg_tokenizer = jieba.posseg.POSTokenizer(_tokenizer())
        return [(pair.word, pair.flag) for pair in _posseg_tokenizer.cut(text)]


_NOT_USERS = frozenset({"person", "environment", "place"})
_WORDS = frozenset({"name", "component", "environment", "person", "place", "org"})


def _resolve(spans: list[_Span]) -> list[_Span]:
    """Overlapping spans: a shape or a listed name wins over a word or a phrase (a
    capitalised name, a component, an environment), then the longer, then the higher
    rank."""
    taken: list[_Span] = []

    def order(s: _Span) -> tuple[int, int, int, int]:  # rank 10: a name with its head word
        return (s.kind in _WORDS and s.rank < 10, -(s.end - s.start), -s.rank, s.start)

    for span in sorted(spans, key=order):
        if all(span.end <= t.start or span.start >= t.end for t in taken):
            taken.append(span)
    return sorted(taken, key=lambda s: s.start)


_JOINABLE = frozenset({"software", "name", "code"})


def _joined(text: str, spans: list[_Span]) -> list[_Span]:
    """Names written next to each other as one name ("NATS JetStream", "React Query",
    "GitLab Runner") are one."""
    out: list[_Span] = []
    for span in spans:
        last = out[-1] if out else None
        if (
            last is not None
            and span.start == last.end + 1
            and text[last.end] == " "
            and {last.kind, span.kind} <= _JOINABLE
            and re.fullmatch(r"[A-Z][\w. ]*", last.name)
            and re.fullmatch(r"[A-Z][\w.]*", span.name)
        ):
            out[-1] = _Span(last.start, span.end, "name", text[last.start : span.end], last.rank)
        else:
            out.append(span)
    return out


_PROTOCOLS = frozenset({"websocket", "webrtc", "oauth", "openid", "webhook"})


def mentions(
    text: str, known: Mapping[str, str] | None = None, chinese: bool = True
) -> list[Mention]:
    """Every entity mention of `text`, in order (`known`: names the store already knows,
    as the text writes them, lowercase -> kind;
    `chinese`: read Chinese with jieba's part-of-speech tags, which take a second to set up
    and a few milliseconds a sentence)."""
    out = []
    for span in _joined(text, _resolve(list(_spans(text, known or {}, chinese)))):
        k = key(span.name)
        if k in _PROTOCOLS:
            continue  # a protocol is no entity, however it is written
        if k and len(k) > 1 or cjk_count(k):
            out.append(Mention(span.name, k, span.kind, span.start, span.end))
    return out


# --- relations -------------------------------------------------------------------------------

_MARK = "§{}§"
_E = r"§(\d+)§"
_GAP = r"(?:[^§.;!?。；！？\n]{0,40}?)"  # a few words between, inside one clause
_ZGAP = r"(?:[^§.;!?。；！？，,：:\n]{0,12}?)"
# the first mention is the subject: not "A 的 B", "A 里", "Redis key 必须用"
_ZGAP_OWN = r"(?:[^§.;!?。；！？，,：:的里A-Za-z\n]{0,12}?)"
_PATTERNS: list[tuple[str, re.Pattern[str], tuple[int, int]]] = [
    # (type, pattern over the marked sentence, (source group, target group))
    (
        "replaced_by",
        _lazy(
            rf"(?:switch(?:ed|ing)?|mov(?:ed|ing|e)|migrat(?:ed|ing|e)|went|port(?:ed|ing))\s+"
            rf"(?:[\w§]+\s+){{0,3}}?(?:from|off(?: of)?|away from)\s+{_E}{_GAP}\s"
            rf"(?:to|onto|for|in favou?r of)\s+(?:the\s+)?{_E}",
            re.I,
        ),
        (1, 2),
    ),
    (
        "replaced_by",
        _lazy(rf"replac(?:ed|ing|e)\s+(?:the\s+)?{_E}{_GAP}\s(?:with|by)\s+(?:the\s+)?{_E}", re.I),
        (1, 2),
    ),
    (
        "replaced_by",
        _lazy(
            rf"{_E}\s+(?:was|is|has been|got|will be|gets)\s+replaced\s+(?:with|by)\s+"
            rf"(?:the\s+)?{_E}",
            re.I,
        ),
        (1, 2),
    ),
    (
        "replaced_by",
        _lazy(  # "now uses OkHttp instead of X"; not "filters on X instead of Y" (a bug)
            rf"\b(?:uses?|using|used|now|chose|choose|picked|went with|switched to|moved to|"
            rf"prefers?|preferred|through|via|with)\s+(?:the\s+)?{_E}\s+(?:instead of|rather than|"
            rf"in place of)\s+(?:the\s+|raw\s+|plain\s+)?{_E}",
            re.I,
        ),
        (2, 1),
    ),
    ("replaced_by", _lazy(rf"{_E}\s*(?:→|->|=>)\s*{_E}"), (1, 2)),
    ("replaced_by", _lazy(rf"{_E},?\s+(?:which|that)\s+replaced\s+(?:the\s+)?{_E}", re.I), (2, 1)),
    (
        "replaced_by",
        _lazy(rf"{_E}\s+(?:has\s+)?replaced\s+(?:the\s+)?{_E}(?!\s+with)", re.I),
        (2, 1),
    ),
    (
        "replaced_by",
        _lazy(rf"{_E}{_ZGAP_OWN}(?:换成|换为|替换成|替换为|迁移到|迁到|切换到|切到)了?\s*{_E}"),
        (1, 2),
    ),
    (
        "replaced_by",
        _lazy(
            rf"(?:原来|以前|之前|过去|早先)(?:用|是|跑在|用的是)\s*{_E}[^§。；！？\n]{{0,24}}?"
            rf"(?:换成|换为|改用|改成|迁到|迁移到|切到|切换到)了?\s*{_E}"
        ),
        (1, 2),
    ),
    (
        "replaced_by",
        _lazy(rf"从\s*{_E}{_ZGAP}(?:改用|换用|改成|改为|换到|迁移到|迁到|切换到|切到)了?\s*{_E}"),
        (1, 2),
    ),
    (
        "replaced_by",
        _lazy(rf"(?:用|拿|以){_ZGAP}{_E}{_ZGAP}(?:替代|替换|取代|代替)(?:了|掉)?\s*{_E}"),
        (2, 1),
    ),
    ("replaced_by", _lazy(rf"{_E}{_ZGAP}被\s*{_E}\s*(?:替代|替换|取代|代替)"), (1, 2)),
    (
        "replaced_by",
        _lazy(
            rf"(?:不再用|不用|弃用|废弃|去掉|放弃)(?:了)?\s*{_E}[^§。；！？\n]{{0,16}}?(?:改用|换用|改成|改为|换成)\s*{_E}"
        ),
        (1, 2),
    ),
    (
        "depends_on",
        _lazy(
            rf"{_E}(?:\s*\([^()§]*(?:§\d+§[^()§]*)*\))?{_GAP}\s(?:depends on|relies on|requires|"
            rf"needs)\s+(?:the\s+|a\s+)?{_E}",
            re.I,
        ),
        (1, 2),
    ),
    ("depends_on", _lazy(rf"{_E}{_ZGAP_OWN}(?:依赖于?|需要)\s*{_E}"), (1, 2)),
    (
        "uses",
        _lazy(
            rf"{_E}(?:\s*\([^()§]*(?:§\d+§[^()§]*)*\))?\s+(?:now\s+|still\s+|also\s+|only\s+)?"
            rf"(?:uses|used|is built on|"
            rf"is written in|runs on|talks to|calls|wraps|is backed by|reads from|writes to|"
            rf"sends to|stores \w+ in|is served by|renders \w+ (?:\w+ )?with)\s+(?:the\s+)?{_E}",
            re.I,
        ),
        (1, 2),
    ),
    (
        "uses",
        _lazy(
            rf"{_E}(?:\s*[（(][^()（）§]*(?:§\d+§[^()（）§]*)*[)）])?{_ZGAP_OWN}"
            rf"(?<![不再没别改换])(?<!原来|以前|之前|过去|曾经|早先)(?:使用|用的是|是用|用了|用|采用|基于|通过|调用|跑在|部署在|存在|写入|"
            rf"读取|接的是|接入了?|接了)\s*{_E}(?!{_ZGAP}(?:替代|替换|取代|代替|换成|做\s*\S*替|修复|解决|修好|锁定|固定))"
        ),
        (1, 2),
    ),
]
_PIN = [
    _lazy(
        rf"\bpin(?:ned|s|ning)?\s+(?:the\s+)?{_E}\s+(?:to|at)\s+(?:version\s+)?({_VERSION}|[<>=!~]=?\s*{_VERSION})",
        re.I,
    ),
    _lazy(
        rf"{_E}\s+(?:is\s+|stays\s+|must stay\s+)?(?:pinned|locked|held|fixed)\s+(?:to|at)\s+"
        rf"(?:version\s+)?({_VERSION}|[<>=!~]=?\s*{_VERSION})",
        re.I,
    ),
    _lazy(rf"{_E}\s*(==|<=|<|~=|\^|@)\s*({_VERSION})"),
    _lazy(
        rf"{_E}{_ZGAP}(?:版本)?(?:固定在|固定为|锁定在|锁定为|锁在|锁死在|钉在)\s*(?:版本\s*)?({_VERSION}|[<>=!~]=?\s*{_VERSION})"
    ),
    _lazy(rf"(?:固定|锁定|锁死)\s*{_E}\s*(?:的版本)?(?:在|为|到)\s*({_VERSION})"),
]
# a rule's words: those that make one wherever they stand ("X must ...", "必须 ..."), and
# those that make one only when they open a clause, as an order ("Never call X", "不要直接
# ALTER"; not "the cache never evicts")
_MUST = _lazy(
    r"\b(?:must(?:n't| not)?|should never|shall not|only ever)\b|必须|禁止|一律|务必|不准|不许",
    re.I,
)
_ORDER = _lazy(
    r"\b(?:never|always|do not|don't|avoid)\b|(?<!要)不要|不能|别再|千万别|永远不要", re.I
)
_LIST = rf"(?:\s*(?:,|and|和|、|\+|与|及|以及)\s*{_E})"  # more objects of one verb
_FIXED_BY = _lazy(r"\b(?:fixed|solved|resolved|cured)\s+(?:it\s+)?by\b", re.I)
_FIXED_ZH = _lazy(
    rf"(?:通过|靠)(?:改用|使用|用|加|设置)?\s*{_E}[^§。；！？\n]{{0,8}}?(?:修复|解决|修好)"
)
_CLAUSE_END = _lazy(r"[,;:，；：]")
_SET_TO = _lazy(
    r"\b(?:be|stay|remain|set to|equal|point (?:at|to)|exceed|go (?:below|above)|(?:more|less|"
    r"fewer|lower|higher) than)\b|设为|设置为|设成|等于|为$|是$|低于|高于|超过|少于|小于|大于|不足",
    re.I,
)
_RULE_FIRST = _lazy(r"(?:^|[,;:，；：(（])\s*(?:please\s+|以后|今后|所有|任何)?\s*$", re.I)


def _rule_word(text: str) -> bool:
    return bool(_MUST.search(text) or _ORDER.search(text))


def _head(line: str, index: int) -> int:
    """The mention a relation is about where `index` only qualifies it: "A 的 B" is B,
    "B in A" and "B of A" are B."""
    mark = _MARK.format(index)
    at = line.index(mark)
    after = _OWNED.match(line, at + len(mark))
    if after:
        return int(after.group(1))
    before = _OWNER.search(line[:at])
    return int(before.group(1)) if before else index


def _placed(line: str, index: int) -> bool:
    """The mention says where or when ("在 X 里", "在 X 的 macOS runner 上", "Android 上",
    "在 X 之前", "等 X 之后", "until X"), not what."""
    mark = _MARK.format(index)
    at = line.index(mark)
    return (
        any(mark in m.group() for m in _PLACE_ZH.finditer(line))
        or bool(_POSTPOSITION.match(line, at + len(mark)))
        or bool(_CONDITION.search(line[:at]))
    )


_PLACE_ZH = _lazy(r"在[^，。；！？,;\n在]{0,30}?(?:里|中|上|内|下|之前|之后|以前|以后)")
_POSTPOSITION = _lazy(r"\s*(?:上|里)(?![\u4e00-\u9fff])")  # "Android 上 Hermes 必须开启"
_CONDITION = _lazy(
    r"(?:\b(?:until|after|before|unless)|等到?|直到|除非)\s*(?:the\s+)?[`'\"]?$", re.I
)


def _object(line: str, index: int) -> bool:
    """The mention is the object of a preposition ("to SQLite", "on the cluster", "通过
    aws-sdk-s3 写入 MinIO", "把 X 写入 Y"): a means or a place, not the subject of the verb
    after it."""
    before = line[: line.index(_MARK.format(index))]
    return bool(_AFTER_PREPOSITION.search(before) or _PREPOSITION_ZH.search(before))


_AFTER_PREPOSITION = _lazy(
    r"\b(?:to|from|in|into|on|onto|with|of|at|for|by|over|under|inside)\s+"
    r"(?:the\s+|its\s+|their\s+|our\s+|a\s+|an\s+)?$",
    re.I,
)
_PREPOSITION_ZH = _lazy(r"(?:通过|经过|借助|用|把|将|从|向|给|对|跟|与|和|在|往|由)\s*$")
_QUOTED_MARK = _lazy(rf"`({_E})`")
_OWNED = _lazy(rf"\s*的\s*[`'\"“]?{_E}")
_OWNER = _lazy(rf"{_E}\s+(?:in|of|on)\s+(?:the\s+)?$", re.I)


def _problem(key: str) -> bool:
    """An exception's or an error's name: the problem, not what had it."""
    return key.endswith(("exception", "error", "panic", "fault"))


def _first(indexes: list[int], kinds: list[str]) -> int | None:
    """The first mention that is not an environment or a person (a rule or a fix is about
    what is used there, not about the place or whom to ask)."""
    return next((i for i in indexes if kinds[i] not in ("environment", "person")), None)


def _fixed(line: str, keys: list[str], kinds: list[str]) -> list[Relation]:
    """X's problem fixed by Y: "X ... was fixed by (doing something with) Y" (Y: the first
    mention of the clause), "X 的 ... 通过 Y 修复"."""
    out = []
    for m in _FIXED_BY.finditer(line):
        before = [int(i) for i in re.findall(_E, line[: m.start()])][::-1]
        before = [i for i in before if not _problem(keys[i])]
        clause = _CLAUSE_END.split(line[m.end() :], maxsplit=1)[0]
        after = [int(i) for i in re.findall(_E, clause)]
        source, target = _first(before, kinds), _first(after, kinds)
        if source is not None and target is not None and keys[source] != keys[target]:
            out.append(Relation("fixed_by", keys[source], keys[target]))
    for m in _FIXED_ZH.finditer(line):
        target = int(m.group(1))
        before = [int(i) for i in re.findall(_E, line[: m.start()])]
        source = _first(before, kinds)
        source = None if source is None else _head(line, source)  # "A 的 B 死循环": B's
        if source is not None and keys[source] != keys[target]:
            out.append(Relation("fixed_by", keys[source], keys[target]))
    return out


def _rule(line: str, keys: list[str], kinds: list[str]) -> list[Relation]:
    """A must / never rule is about what it constrains: the first thing after its word in
    the clause ("Never call X", "X 禁止直接写 Y": Y), else the clause's subject ("Relay must
    never drop a webhook"); never the place it applies in."""
    if line.rstrip().endswith(("?", "？")):
        return []  # a question states no rule
    rule = _MUST.search(line)
    order = _ORDER.search(line)
    if (
        order
        and _RULE_FIRST.search(line[: order.start()])
        and (not rule or order.start() < rule.start())
    ):
        rule = order
    if rule is None:
        return []
    clause = _CLAUSE_END.split(line[: rule.start()])[-1]
    subject = [int(i) for i in re.findall(_E, clause) if not _placed(line, int(i))]
    rest = _CLAUSE_END.split(line[rule.end() :])[0]
    after = [int(i) for i in re.findall(_E, rest) if not _placed(line, int(i))]
    chosen = _first(after, kinds)
    if chosen is not None:
        chosen = _head(line, chosen)
    if chosen is not None and subject:
        at = rest.index(_MARK.format(chosen))
        value = _SET_TO.search(rest[:at])  # "X must be set to 0.0.0.0": a value of X
        owner = rest[at + len(_MARK.format(chosen)) :].startswith("的")  # "Y 的签名": Y's
        if value or owner:
            chosen = None
    if chosen is None:
        chosen = _first(subject, kinds)
        chosen = None if chosen is None else _head(line, chosen)
    return [] if chosen is None else [Relation("rule_about", "", keys[chosen])]


_SENTENCE = _lazy(r"(?:[^.!?。！？\n]|[.!?](?=[\w(]))+(?:[.!?。！？]+|\n|$)")


def relations(text: str, found: list[Mention]) -> list[Relation]:
    """The typed relations `text` states between its mentions, clause by clause."""
    out: list[Relation] = []
    for sentence in _SENTENCE.finditer(text):
        first = len(out)
        inside = [m for m in found if sentence.start() <= m.start and m.end <= sentence.end()]
        if not inside:
            continue
        marked, cursor = [], sentence.start()
        for index, mention in enumerate(inside):
            marked.append(text[cursor : mention.start])
            marked.append(_MARK.format(index))
            cursor = mention.end
        marked.append(text[cursor : sentence.end()])
        line = _QUOTED_MARK.sub(r"\1", "".join(marked))  # "instead of `X`" reads as of X
        keys = [m.key for m in inside]
        tentative = line.rstrip().endswith(("?", "？")) or bool(_TENTATIVE.search(line))
        for kind, pattern, (source, target) in [] if tentative else _PATTERNS:
            for m in pattern.finditer(line):
                i, j = _head(line, int(m.group(source))), _head(line, int(m.group(target)))
                a, b = keys[i], keys[j]
                if kind == "replaced_by" and "environment" in (inside[i].kind, inside[j].kind):
                    continue  # "the key was replaced by staging's": a place replaces nothing
                if kind == "replaced_by" and inside[i].kind == "env":
                    continue  # "把 ASSET_HOST 切到 https://...": a variable gets a value
                if kind in ("uses", "depends_on") and inside[j].kind == "env":
                    continue  # reading an environment variable is no use of a thing
                if kind in ("uses", "depends_on") and _rule_word(m.group()):
                    continue  # "X 一律用 Y", "X must use Y": a rule about Y, not a use
                subject = kind in ("uses", "depends_on") and _object(line, i)
                if target > source and (inside[i].kind in _NOT_USERS or subject):
                    continue  # "Priya uses ...", "production goes through Teleport", "writes
                    # to SQLite through rusqlite"
                if a != b:
                    out.append(Relation(kind, a, b))
                if kind in ("uses", "depends_on") and target > source:  # "uses A and B"
                    more = re.match(rf"{_LIST}+", line[m.end() :])
                    for index in re.findall(_E, more.group() if more else ""):
                        out.append(Relation(kind, a, keys[int(index)]))
        for pattern in [] if _TENTATIVE.search(line) else _PIN:
            for m in pattern.finditer(line):
                version = m.group(m.lastindex or 2)
                if m.group(2) in ("==", "<=", "<", "~=", "^", "@"):
                    version = (
                        m.group(2) + m.group(3) if m.group(2) not in ("==", "@") else m.group(3)
                    )
                pinned = keys[_head(line, int(m.group(1)))]  # "PHP on the Forge servers"
                out.append(Relation("pinned_to", pinned, version.replace(" ", "")))
        kinds = [m.kind for m in inside]
        if not tentative:
            out += _through(line, keys, kinds)
            out += _fixed(line, keys, kinds)
        out += _rule(line, keys, kinds)
        # a finished switch is a replacement, not a use of the new thing as well ("now uses
        # OkHttp instead of HttpURLConnection")
        new = {r.target for r in out[first:] if r.type == "replaced_by"}
        out[first:] = [r for r in out[first:] if not (r.type == "uses" and r.target in new)]
    return list(dict.fromkeys(out))


# a question or a proposal states no relation ("Should we move off Vercel?", "建议换成 X")
_TENTATIVE = _lazy(
    r"\b(?:should we|could we|can we|shall we|what if|would|might|maybe|consider(?:ing)?|"
    r"propos(?:e|ed|al)|suggest(?:s|ed)?|plan(?:s|ning)? to|thinking about|wants? to|"
    r"I'd|we'd|let's|floated|floats|once we|until we|when we|whether|should|(?<!no )needs? to|"
    r"ha(?:ve|s) to)\b|建议|等我们|等到|需要把|得把|要把|应该|应当|得换|得改|"
    r"要不要|是否|是不是|能不能|可不可以|如果|打算|计划|"
    r"考虑|准备|想把|不如|干脆|提议|提过|提出",
    re.I,
)
_THROUGH = _lazy(rf"\b(?:via|through)\s+(?:the\s+)?{_E}", re.I)


def _through(line: str, keys: list[str], kinds: list[str]) -> list[Relation]:
    """X ... through / via Y: the clause's subject (its first mention, not a person or a
    place) uses Y ("the sync engine persists updates to SQLite through rusqlite")."""
    out = []
    for m in _THROUGH.finditer(line):
        clause = _CLAUSE_END.split(line[: m.start()])[-1]
        before = [int(i) for i in re.findall(_E, clause)]
        if not before or kinds[before[0]] in _NOT_USERS or _object(line, before[0]):
            continue  # "production goes through Teleport", "writes to SQLite through ..."
        at = clause.index(_MARK.format(before[0]))
        if _USED.search(clause[:at]):
            continue  # "the harness uses vLLM through X": vLLM is what is used, no user
        if _PASSIVE.search(clause[at:]):
            continue  # "SuiteSparse is only touched through scikit-sparse": it is used
        a, b = keys[_head(line, before[0])], keys[_head(line, int(m.group(1)))]
        if a != b:
            out.append(Relation("uses", a, b))
    return out


_USED = _lazy(
    r"\b(?:uses|using|used|calls|calling|called|loads|loading|runs|running)\s+(?:the\s+)?$"
)
_PASSIVE = _lazy(r"\b(?:is|are|was|were|been|be|gets?|got)\s+(?:\w+ly\s+|only\s+)*\w+ed\b", re.I)
_ALIAS = _lazy(
    rf"{_E}\s*[(（]\s*(?:aka\s+|a\.k\.a\.?\s+|即|也就是|i\.e\.?,?\s+)?{_E}\s*[)）]"
    rf"|{_E}\s*,?\s*(?:aka|a\.k\.a\.|also called|also known as|即|也叫|又叫|也就是)\s+{_E}",
    re.I,
)


def aliases(text: str, found: list[Mention]) -> list[tuple[str, str]]:
    """Pairs of keys the text gives as one thing: "上传客户端（UploadClient）", "X aka Y"."""
    marked, cursor = [], 0
    for index, mention in enumerate(found):
        marked.append(text[cursor : mention.start])
        marked.append(_MARK.format(index))
        cursor = mention.end
    marked.append(text[cursor:])
    out = []
    for m in _ALIAS.finditer("".join(marked)):
        groups = [g for g in m.groups() if g is not None]
        a, b = found[int(groups[0])].key, found[int(groups[1])].key
        if a != b:
            out.append((a, b))
    return out


def extract(text: str, known: Mapping[str, str] | None = None) -> Found:
    """A text's entity mentions, typed relations and aliases."""
    found = mentions(text, known)
    return Found(tuple(found), tuple(relations(text, found)), tuple(aliases(text, found)))
