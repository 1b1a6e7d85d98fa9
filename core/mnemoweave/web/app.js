/*
 * mnemoweave web UI (Preact + htm, no build step).
 *
 * Served by the daemon under /ui/ with a strict CSP: no inline script or style, no eval,
 * no innerHTML. Every piece of stored text is rendered as a text child (escaped by
 * construction). API contract: see the daemon's web UI contract (ui_contract.md).
 *
 * Stable selectors for browser tests
 * ----------------------------------
 * Global
 *   a[data-nav=memories|review|sessions|skills|status|files]   top navigation links
 *   [data-test=pending-count]      pending card count inside the Review nav link (polled every 5 s)
 *   [data-test=error]              error line (text = the API's error message; empty when none)
 *   [data-test=notice]             success line (e.g. "accept c_1 -> m_7")
 *   [data-test=signin]             sign-in screen (shown on 401 / missing token)
 *   [data-test=signout]            sign-out button
 *   [data-test=next-page] / [data-test=prev-page]   paging (memories list, sessions list)
 * Memories page (#/memories, detail at #/memories/<id>)
 *   select[data-test=project]      "*" = all projects, "" = global only, else a project key
 *   select[data-test=kind]         "" = any kind, else pref|pers|skill|mission|conclusion|fact
 *   select[data-test=status]       active|superseded|trashed
 *   select[data-test=source]       search source: memories|turns|all
 *   input[data-test=search]        Enter runs the search; [data-test=clear-search] ends it
 *   [data-test=memory-row][data-id=<id>]   list rows and search-result rows
 *   [data-test=explain]            explain breakdown inside each search-result row
 *   [data-test=memory-detail][data-id=<id>]  detail panel; [data-test=memory-body] its text
 *   [data-test=forget]             (active memories)   [data-test=restore] (non-active memories)
 *   [data-test=purge] then the in-page [data-test=confirm] ([data-test=cancel] backs out)
 *   [data-test=edit] -> textarea[data-test=edit-text] + [data-test=save] (Ctrl/Cmd+Enter saves,
 *                     Escape cancels)
 *   [data-test=feedback-useful] [data-test=feedback-wrong] [data-test=feedback-outdated]
 *   [data-test=show-evidence] -> [data-test=evidence-turn] rows
 * Review page (#/review)
 *   [data-test=card-row][data-id=<card id>]  (class "focused" on the keyboard-focused card)
 *     input[data-test=select]      selection checkbox
 *     select[data-test=scope]      "" = global, else a project key (default: the card's project)
 *     [data-test=summary]          summary text (the edited text once edited)
 *     [data-test=edit] -> textarea[data-test=edit-text], [data-test=save], [data-test=cancel]
 *     [data-test=evidence]         evidence turns (from /v1/records/<id>/evidence)
 *     [data-test=accept] [data-test=reject]
 *     [data-test=clash][data-id=<m_N>] when an acceptance was held (it clashes with that
 *       memory): [data-test=replace] accepts retiring it, [data-test=keep-both] keeps both
 *   [data-test=select-all] [data-test=accept-selected] [data-test=reject-selected]
 *   keys: j/k move focus, x toggles selection, a accepts, r rejects, e edits; X selects all
 *         (or none), A accepts and R rejects the selected (inactive while typing)
 * Sessions page (#/sessions)
 *   select[data-test=project], [data-test=session-row][data-id=<session>],
 *   [data-test=turn][data-id=<turn id>] ([data-test=more] expands long text),
 *   [data-test=injection] (ids as [data-test=ref][data-id=<ref>] buttons),
 *   [data-test=record-panel] (the record opened from a ref; [data-test=close] closes it)
 * Skills page (#/skills):  [data-test=skill-row][data-id=<name>]
 * Status page (#/status):  [data-test=status-section][data-id=status|daemon|hygiene|projects];
 *   the hygiene report runs on [data-test=run-hygiene]
 * Files page (#/files)
 *   input[type=file][data-test=import-file], [data-test=import-result],
 *   [data-test=export] (runs the export), a[data-test=export-file][download] per file
 */
import {
  html,
  render,
  createContext,
  useCallback,
  useContext,
  useEffect,
  useMemo,
  useRef,
  useState,
} from "./vendor/preact-htm.js";

// ---------------------------------------------------------------------------------------
// Labels: one dictionary, chosen by the browser language.

const LABELS = {
  en: {
    appName: "mnemoweave",
    nav_memories: "Memories",
    nav_review: "Review",
    nav_sessions: "Sessions",
    nav_skills: "Skills",
    nav_status: "Status",
    nav_files: "Files",
    signout: "Sign out",
    signinTitle: "Sign in needed",
    signinText: "This page needs a fresh sign-in link. Run this in a terminal and open the link it prints:",
    signingIn: "Signing in…",
    loading: "Loading…",
    dismiss: "Dismiss",
    networkError: "Cannot reach the mnemoweave daemon. Is it still running?",
    project: "Project",
    allProjects: "All projects",
    global: "Global",
    kind: "Kind",
    anyKind: "Any kind",
    status: "Status",
    status_active: "Active",
    status_superseded: "Superseded",
    status_trashed: "Trashed",
    source: "Search in",
    source_memories: "Memories",
    source_turns: "Turns",
    source_all: "Everything",
    searchPlaceholder: "Search memories… (Enter)",
    clearSearch: "Clear search",
    searchResults: "{0} results for “{1}”",
    searching: "Searching…",
    noMemories: "No memories here.",
    noResults: "Nothing found.",
    prev: "← Previous",
    next: "Next →",
    pageInfo: "{0}–{1}",
    score: "score",
    weight: "weight",
    weightLabel: "Weight",
    recalls: "recalls",
    close: "Close",
    forget: "Forget",
    restore: "Restore",
    purge: "Purge",
    purgeConfirm: "Delete this record for good? This cannot be undone.",
    confirm: "Yes, purge",
    cancel: "Cancel",
    edit: "Edit",
    save: "Save",
    saveHint: "Ctrl+Enter saves, Escape cancels",
    feedback: "Feedback",
    fb_useful: "Useful",
    fb_wrong: "Wrong",
    fb_outdated: "Outdated",
    created: "Created",
    updated: "Updated",
    importance: "Importance",
    accessCount: "Recalled",
    lastAccess: "Last recalled",
    tags: "Tags",
    origin: "Origin",
    supersedes: "Supersedes",
    supersededBy: "Superseded by",
    deletedAt: "Trashed",
    evidence: "Evidence",
    showEvidence: "Show evidence",
    noEvidence: "No evidence turns.",
    role: "Role",
    session: "Session",
    time: "Time",
    host: "Host",
    reviewTitle: "Cards waiting for review",
    reviewHint: "Keys: j/k move · x select · a accept · r reject · e edit · X select all · A/R accept/reject selected",
    noCards: "Nothing to review. New cards appear here as you work.",
    selectAll: "Select all",
    held: "held:",
    clashesWith: "Its memory would clash with",
    acceptReplacing: "Accept, retiring {0}",
    keepBoth: "Keep both",
    proposal: "Tidy-up {0}: accepting applies it (undo: consolidate rollback)",
    acceptSelected: "Accept selected ({0})",
    rejectSelected: "Reject selected ({0})",
    accept: "Accept",
    reject: "Reject",
    scope: "Scope",
    confidence: "confidence",
    topic: "topic",
    edited: "edited",
    noSessions: "No sessions yet.",
    turns: "turns",
    turn: "turn",
    prompt: "woven prompt",
    prompts: "woven prompts",
    pickSession: "Pick a session to see its timeline.",
    woven: "Woven into this prompt",
    wovenBefore: "Woven before the first prompt",
    tokens: "tokens",
    more: "more",
    less: "less",
    openInMemories: "Open in Memories",
    skillsTitle: "Skills",
    noSkills: "No skills yet.",
    triggers: "Triggers",
    steps: "Steps",
    sources: "Sources",
    usage: "used",
    health: "health",
    statusTitle: "Store",
    daemonTitle: "Daemon",
    hygieneTitle: "Hygiene",
    runHygiene: "Check now",
    hygieneHint: "Near-duplicates, stale memories and index drift. It compares every memory with its neighbours, so it can take a while on a large store.",
    projectsTitle: "Projects",
    refresh: "Refresh",
    importTitle: "Import",
    importText: "Import a .jsonl (turns/records) or .md (memories) file.",
    importing: "Importing {0}…",
    importDone: "Imported {0}",
    badFile: "Choose a .jsonl or .md file.",
    exportTitle: "Export",
    exportText: "Export memories (.md) and turns (.jsonl) as downloadable files.",
    exportRun: "Export now",
    exporting: "Exporting…",
    noFiles: "Nothing to export.",
    empty: "empty",
    kind_pref: "preference",
    kind_pers: "persona",
    kind_skill: "skill",
    kind_mission: "mission",
    kind_conclusion: "conclusion",
    kind_fact: "fact",
  },
  zh: {
    appName: "mnemoweave",
    nav_memories: "记忆",
    nav_review: "审阅",
    nav_sessions: "会话",
    nav_skills: "技能",
    nav_status: "状态",
    nav_files: "文件",
    signout: "退出",
    signinTitle: "需要登录",
    signinText: "此页面需要新的登录链接。请在终端运行下面的命令，并打开它打印的链接：",
    signingIn: "正在登录…",
    loading: "加载中…",
    dismiss: "关闭",
    networkError: "无法连接 mnemoweave 守护进程，它还在运行吗？",
    project: "项目",
    allProjects: "全部项目",
    global: "全局",
    kind: "类型",
    anyKind: "任意类型",
    status: "状态",
    status_active: "有效",
    status_superseded: "已被取代",
    status_trashed: "已删除",
    source: "搜索范围",
    source_memories: "记忆",
    source_turns: "对话",
    source_all: "全部",
    searchPlaceholder: "搜索记忆…（回车）",
    clearSearch: "清除搜索",
    searchResults: "“{1}” 的 {0} 条结果",
    searching: "搜索中…",
    noMemories: "这里没有记忆。",
    noResults: "没有找到。",
    prev: "← 上一页",
    next: "下一页 →",
    pageInfo: "{0}–{1}",
    score: "得分",
    weight: "权重",
    weightLabel: "权重",
    recalls: "次召回",
    close: "关闭",
    forget: "遗忘",
    restore: "恢复",
    purge: "彻底删除",
    purgeConfirm: "永久删除这条记录？此操作无法撤销。",
    confirm: "确认删除",
    cancel: "取消",
    edit: "编辑",
    save: "保存",
    saveHint: "Ctrl+Enter 保存，Esc 取消",
    feedback: "反馈",
    fb_useful: "有用",
    fb_wrong: "错误",
    fb_outdated: "过时",
    created: "创建",
    updated: "更新",
    importance: "重要性",
    accessCount: "召回次数",
    lastAccess: "上次召回",
    tags: "标签",
    origin: "来源",
    supersedes: "取代",
    supersededBy: "被取代为",
    deletedAt: "删除于",
    evidence: "证据",
    showEvidence: "显示证据",
    noEvidence: "没有证据对话。",
    role: "角色",
    session: "会话",
    time: "时间",
    host: "主机",
    reviewTitle: "待审阅的卡片",
    reviewHint: "快捷键：j/k 移动 · x 选择 · a 接受 · r 拒绝 · e 编辑 · X 全选 · A/R 接受/拒绝所选",
    noCards: "没有待审阅的卡片。工作时新的卡片会出现在这里。",
    selectAll: "全选",
    held: "暂缓：",
    clashesWith: "它与这条记忆冲突",
    acceptReplacing: "接受并取代 {0}",
    keepBoth: "两条都保留",
    proposal: "整理建议 {0}：接受即执行（可用 consolidate rollback 撤销）",
    acceptSelected: "接受所选（{0}）",
    rejectSelected: "拒绝所选（{0}）",
    accept: "接受",
    reject: "拒绝",
    scope: "范围",
    confidence: "置信度",
    topic: "主题",
    edited: "已编辑",
    noSessions: "还没有会话。",
    turns: "条对话",
    prompts: "次注入",
    turn: "条对话",
    prompt: "次注入",
    pickSession: "选择一个会话查看时间线。",
    woven: "为此提示注入的内容",
    wovenBefore: "第一个提示之前注入的内容",
    tokens: "词元",
    more: "展开",
    less: "收起",
    openInMemories: "在记忆页打开",
    skillsTitle: "技能",
    noSkills: "还没有技能。",
    triggers: "触发条件",
    steps: "步骤",
    sources: "来源",
    usage: "使用次数",
    health: "健康度",
    statusTitle: "存储",
    daemonTitle: "守护进程",
    hygieneTitle: "整理建议",
    runHygiene: "立即检查",
    hygieneHint: "近似重复、过时的记忆与索引偏差。它会把每条记忆与相近的记忆比较，记忆很多时可能需要一些时间。",
    projectsTitle: "项目",
    refresh: "刷新",
    importTitle: "导入",
    importText: "导入 .jsonl（对话/记录）或 .md（记忆）文件。",
    importing: "正在导入 {0}…",
    importDone: "已导入 {0}",
    badFile: "请选择 .jsonl 或 .md 文件。",
    exportTitle: "导出",
    exportText: "把记忆（.md）和对话（.jsonl）导出为可下载的文件。",
    exportRun: "立即导出",
    exporting: "正在导出…",
    noFiles: "没有可导出的内容。",
    empty: "空",
    kind_pref: "偏好",
    kind_pers: "人设",
    kind_skill: "技能",
    kind_mission: "任务",
    kind_conclusion: "结论",
    kind_fact: "事实",
  },
};

const LANG = String(navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
document.documentElement.lang = LANG === "zh" ? "zh-CN" : "en";

/** A label, with {0}, {1}… replaced by the arguments. */
function t(key, ...args) {
  let text = LABELS[LANG][key] ?? LABELS.en[key] ?? key;
  args.forEach((arg, i) => {
    text = text.replace(`{${i}}`, String(arg));
  });
  return text;
}

const kindLabel = (kind) => (kind ? t(`kind_${kind}`) : "");

// ---------------------------------------------------------------------------------------
// API access.

const TOKEN_KEY = "mnemoweave.token";
const PAGES = ["memories", "review", "sessions", "skills", "status", "files"];
const KINDS = ["pref", "pers", "skill", "mission", "conclusion", "fact"];
const STATUSES = ["active", "superseded", "trashed"];
const PAGE_SIZE = 50;
const RECORD_ID = /^[mtc]_\d+$/; // ids /v1/records/{ref} answers
const ALL = "*"; // project select value meaning "every project" (no project parameter)

class AuthError extends Error {}

let onUnauthorized = () => {};

function getToken() {
  try {
    return localStorage.getItem(TOKEN_KEY) || "";
  } catch {
    return "";
  }
}

function setToken(token) {
  try {
    if (token) localStorage.setItem(TOKEN_KEY, token);
    else localStorage.removeItem(TOKEN_KEY);
  } catch {
    /* storage disabled: the session lasts as long as the page */
  }
}

/** Call the daemon: adds the token and JSON headers; throws Error(error line) on non-2xx. */
async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  const options = { method, headers, credentials: "same-origin", cache: "no-store" };
  if (method !== "GET") {
    headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body ?? {});
  }
  let response;
  try {
    response = await fetch(path, options);
  } catch {
    throw new Error(t("networkError"));
  }
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  const message = data && typeof data.error === "string" ? data.error : `HTTP ${response.status}`;
  if (response.status === 401) {
    setToken("");
    onUnauthorized(message);
    throw new AuthError(message);
  }
  if (!response.ok) throw new Error(message.split("\n")[0]);
  return data ? data.result : null;
}

/** A query string from an object; undefined/null values are left out, "" is kept. */
function qs(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null) search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

const enc = encodeURIComponent;

/** The one-time sign-in code in `#login=CODE`, dropped from the URL at once; or null. */
function takeLoginCode() {
  if (!location.hash.startsWith("#login=")) return null;
  const raw = location.hash.slice("#login=".length);
  history.replaceState(null, "", "/ui/");
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

// Taken before anything else runs; a link pasted into an open tab is caught on hashchange.
let LOGIN_CODE = takeLoginCode();

// ---------------------------------------------------------------------------------------
// Small helpers.

const rtf = new Intl.RelativeTimeFormat(LANG, { numeric: "auto" });
const UNITS = [
  ["year", 31536000],
  ["month", 2592000],
  ["week", 604800],
  ["day", 86400],
  ["hour", 3600],
  ["minute", 60],
  ["second", 1],
];

function age(ts) {
  const seconds = ts - Date.now() / 1000;
  const abs = Math.abs(seconds);
  for (const [unit, size] of UNITS) {
    if (abs >= size || unit === "second") return rtf.format(Math.round(seconds / size), unit);
  }
  return "";
}

function localTime(ts) {
  return new Date(ts * 1000).toLocaleString(LANG === "zh" ? "zh-CN" : undefined);
}

function duration(seconds) {
  const s = Math.round(seconds);
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const parts = [];
  if (d) parts.push(`${d}d`);
  if (h) parts.push(`${h}h`);
  if (m) parts.push(`${m}m`);
  parts.push(`${s % 60}s`);
  return parts.slice(0, 3).join(" ");
}

function humanBytes(n) {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = n;
  let unit = -1;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

function clip(text, n) {
  const s = String(text ?? "");
  return s.length > n ? `${s.slice(0, n)}…` : s;
}

function fmtNum(v) {
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toFixed(3);
  if (Array.isArray(v)) return v.map(fmtNum).join(", ");
  if (v === null || v === undefined) return "—";
  return String(v);
}

function safeUrl(url) {
  try {
    const parsed = new URL(String(url));
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
  } catch {
    return null;
  }
}

function describeWritten(w) {
  if (!w || typeof w !== "object") return String(w ?? "");
  const parts = [w.action, w.id].filter(Boolean).join(" ");
  return w.reason ? `${parts} — ${w.reason}` : parts;
}

function isTyping(target) {
  if (!target || !target.tagName) return false;
  if (target.isContentEditable) return true;
  const tag = target.tagName;
  if (tag === "TEXTAREA" || tag === "SELECT") return true;
  if (tag === "INPUT") return !["checkbox", "radio", "button", "submit", "reset"].includes(target.type);
  return false;
}

// ---------------------------------------------------------------------------------------
// Shared state and hooks.

const Ctx = createContext(null);

function useApp() {
  return useContext(Ctx);
}

function parseHash() {
  const hash = location.hash.replace(/^#\/?/, "");
  if (hash.startsWith("login=")) return { page: "memories", arg: "" };
  const [page, ...rest] = hash.split("/");
  if (!PAGES.includes(page)) return { page: "memories", arg: "" };
  let arg = rest.join("/");
  try {
    arg = decodeURIComponent(arg);
  } catch {
    /* keep it raw */
  }
  return { page, arg };
}

function useRoute() {
  const [route, setRoute] = useState(parseHash);
  useEffect(() => {
    const onChange = () => setRoute(parseHash());
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  return route;
}

/** Run `load` when deps change; {data, loading, reload}. Errors go to the error line. */
function useLoad(load, deps) {
  const { report } = useApp();
  const [state, setState] = useState({ data: null, loading: true });
  const [tick, setTick] = useState(0);
  const lastKey = useRef(null);
  useEffect(() => {
    let live = true;
    const key = JSON.stringify(deps);
    const fresh = key !== lastKey.current;
    lastKey.current = key;
    setState((s) => ({ data: fresh ? null : s.data, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (err) => {
        if (!live) return;
        setState((s) => ({ data: s.data, loading: false }));
        report(err);
      },
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  return { ...state, reload };
}

// ---------------------------------------------------------------------------------------
// Small shared components.

function Time({ ts, compact }) {
  if (ts === null || ts === undefined || ts === "" || Number.isNaN(Number(ts))) {
    return html`<span class="muted">—</span>`;
  }
  const n = Number(ts);
  const iso = new Date(n * 1000).toISOString();
  if (compact) return html`<time datetime=${iso} title=${localTime(n)}>${age(n)}</time>`;
  return html`<time datetime=${iso}>${localTime(n)} <span class="muted">(${age(n)})</span></time>`;
}

function Id({ id }) {
  return html`<code class="id">${id}</code>`;
}

function KindBadge({ kind }) {
  if (!kind) return null;
  return html`<span class=${`badge kind-${kind}`} title=${kind}>${kindLabel(kind)}</span>`;
}

function Loading() {
  return html`<p class="muted loading">${t("loading")}</p>`;
}

function ProjectOptions({ withAll, extra }) {
  const { projects } = useApp();
  const keys = new Set(projects.map((p) => p.key));
  const extras = (extra || []).filter((k) => k && !keys.has(k));
  return html`
    ${withAll && html`<option value=${ALL}>${t("allProjects")}</option>`}
    <option value="">${t("global")}</option>
    ${projects
      .filter((p) => p.key !== "")
      .map((p) => html`<option key=${p.key} value=${p.key}>${p.name || p.key}</option>`)}
    ${extras.map((k) => html`<option key=${k} value=${k}>${k}</option>`)}
  `;
}

function ProjectName({ project }) {
  const { projectName } = useApp();
  return html`<span class="project" title=${project || ""}>${projectName(project)}</span>`;
}

function Pager({ offset, count, onOffset }) {
  return html`
    <div class="pager">
      <button data-test="prev-page" disabled=${offset <= 0} onClick=${() => onOffset(Math.max(0, offset - PAGE_SIZE))}>
        ${t("prev")}
      </button>
      <span class="muted">${count ? t("pageInfo", offset + 1, offset + count) : ""}</span>
      <button data-test="next-page" disabled=${count < PAGE_SIZE} onClick=${() => onOffset(offset + PAGE_SIZE)}>
        ${t("next")}
      </button>
    </div>
  `;
}

/** Long text collapsed behind a "more" toggle. */
function LongText({ text, limit = 600, lines = 12, test }) {
  const [open, setOpen] = useState(false);
  const s = String(text ?? "");
  const rows = s.split("\n");
  const long = s.length > limit || rows.length > lines;
  let shown = s;
  if (long && !open) {
    shown = rows.slice(0, lines).join("\n");
    if (shown.length > limit) shown = shown.slice(0, limit);
    shown += " …";
  }
  return html`
    <div class="longtext">
      <div class="text" data-test=${test}>${shown}</div>
      ${long &&
      html`<button class="link" data-test="more" onClick=${() => setOpen(!open)}>
        ${open ? t("less") : t("more")}
      </button>`}
    </div>
  `;
}

function TurnView({ turn, test = "turn", limit, lines }) {
  return html`
    <div class=${`turn role-${turn.role}`} data-test=${test} data-id=${turn.id}>
      <div class="turn-head">
        <span class=${`badge role role-${turn.role}`}>${turn.role}</span>
        <${Id} id=${turn.id} />
        <span class="muted"><${Time} ts=${turn.ts} /></span>
      </div>
      <${LongText} text=${turn.text} limit=${limit} lines=${lines} />
    </div>
  `;
}

function flatten(obj, prefix = "", out = []) {
  for (const [key, value] of Object.entries(obj || {})) {
    const name = prefix ? `${prefix}.${key}` : key;
    if (value && typeof value === "object" && !Array.isArray(value)) flatten(value, name, out);
    else out.push([name, value]);
  }
  return out;
}

function Explain({ hit }) {
  const explain = hit.extra && hit.extra.explain;
  const rows = explain && typeof explain === "object" ? flatten(explain) : [];
  return html`
    <div class="explain" data-test="explain">
      <span class="ex-item"><span class="ex-k">${t("score")}</span> <span class="ex-v">${fmtNum(hit.score)}</span></span>
      ${rows.map(
        ([k, v]) => html`<span class="ex-item" key=${k}><span class="ex-k">${k}</span> <span class="ex-v">${fmtNum(v)}</span></span>`,
      )}
    </div>
  `;
}

// Generic rendering of status-like objects.

const TIME_KEY = /^(ts|created|updated|started|ended|decided|deleted_at|last_access|last_seen|since|.*_at|.*_ts|.*_time)$/;
const SIZE_KEY = /(bytes|_size|^size)$/;

function isTableRows(value) {
  if (!value.length || !value.every((r) => r && typeof r === "object" && !Array.isArray(r))) return false;
  const keys = new Set(value.flatMap((r) => Object.keys(r)));
  return keys.size <= 12 && value.every((r) => Object.values(r).every((v) => v === null || typeof v !== "object" || Array.isArray(v)));
}

function Value({ value, name }) {
  if (value === null || value === undefined) return html`<span class="muted">—</span>`;
  if (Array.isArray(value)) {
    if (!value.length) return html`<span class="muted">${t("empty")}</span>`;
    if (isTableRows(value)) return html`<${Table} rows=${value} />`;
    return html`<ul class="vlist">${value.map((v, i) => html`<li key=${i}><${Value} value=${v} /></li>`)}</ul>`;
  }
  if (typeof value === "object") return html`<${KeyValues} obj=${value} />`;
  if (typeof value === "number") {
    if (name && TIME_KEY.test(name) && value > 1e8) return html`<${Time} ts=${value} />`;
    if (name === "uptime") return html`<span>${duration(value)}</span>`;
    if (name && SIZE_KEY.test(name)) return html`<span>${humanBytes(value)}</span>`;
    return html`<span class="num">${fmtNum(value)}</span>`;
  }
  if (typeof value === "string" && RECORD_ID.test(value)) return html`<${Id} id=${value} />`;
  return html`<span class="str">${String(value)}</span>`;
}

function KeyValues({ obj }) {
  const keys = Object.keys(obj);
  if (!keys.length) return html`<span class="muted">${t("empty")}</span>`;
  return html`
    <dl class="kv">
      ${keys.map(
        (k) => html`<div class="kv-row" key=${k}>
          <dt>${k}</dt>
          <dd><${Value} value=${obj[k]} name=${k} /></dd>
        </div>`,
      )}
    </dl>
  `;
}

function Table({ rows }) {
  const columns = [];
  for (const row of rows) for (const k of Object.keys(row)) if (!columns.includes(k)) columns.push(k);
  return html`
    <div class="table-wrap">
      <table class="data">
        <thead><tr>${columns.map((c) => html`<th key=${c}>${c}</th>`)}</tr></thead>
        <tbody>
          ${rows.map(
            (row, i) => html`<tr key=${i}>
              ${columns.map((c) => html`<td key=${c}><${Value} value=${row[c]} name=${c} /></td>`)}
            </tr>`,
          )}
        </tbody>
      </table>
    </div>
  `;
}

// ---------------------------------------------------------------------------------------
// Memories page.

/** Whether a title says more than the body's start (titles are often its clipped first line). */
function titleAdds(title, body) {
  const head = String(title ?? "").trim().replace(/(…|\.\.\.)$/, "").trim();
  return Boolean(head) && !String(body ?? "").trim().startsWith(head);
}

/** Title and body for a row; the title is left out when the body starts with it. */
function memoryText(memory) {
  const body = String(memory.body ?? "");
  return titleAdds(memory.title, body) ? `${String(memory.title).trim()} — ${body}` : body;
}

function MemoryRow({ memory, selected, onOpen }) {
  const text = memoryText(memory);
  return html`
    <li
      class=${`row memory-row${selected ? " selected" : ""} status-${memory.status || "active"}`}
      data-test="memory-row"
      data-id=${memory.id}
      tabindex="0"
      onClick=${() => onOpen(memory.id)}
      onKeyDown=${(e) => e.key === "Enter" && onOpen(memory.id)}
    >
      <div class="row-head">
        <${KindBadge} kind=${memory.kind} />
        <${ProjectName} project=${memory.project} />
        ${memory.status && memory.status !== "active" && html`<span class="badge status">${t(`status_${memory.status}`)}</span>`}
        <span class="spacer"></span>
        <span class="muted small"><${Time} ts=${memory.updated ?? memory.created} /></span>
      </div>
      <div class="row-text">${clip(text, 200)}</div>
      <div class="row-meta muted small">
        <${Id} id=${memory.id} />
        <span>${t("weight")} ${fmtNum(memory.weight ?? 0)}</span>
        <span>${memory.access_count ?? 0} ${t("recalls")}</span>
      </div>
    </li>
  `;
}

function HitRow({ hit, selected, onOpen }) {
  return html`
    <li
      class=${`row memory-row hit${selected ? " selected" : ""}`}
      data-test="memory-row"
      data-id=${hit.id}
      tabindex="0"
      onClick=${() => onOpen(hit.id)}
      onKeyDown=${(e) => e.key === "Enter" && onOpen(hit.id)}
    >
      <div class="row-head">
        <${KindBadge} kind=${hit.kind} />
        <${ProjectName} project=${hit.project} />
        <span class="spacer"></span>
        <span class="muted small"><${Time} ts=${hit.created} /></span>
      </div>
      <div class="row-text">${clip(hit.text, 200)}</div>
      <div class="row-meta muted small"><${Id} id=${hit.id} /></div>
      <${Explain} hit=${hit} />
    </li>
  `;
}

function MemoriesPage({ arg }) {
  const { report } = useApp();
  const [project, setProject] = useState(ALL);
  const [kind, setKind] = useState("");
  const [status, setStatus] = useState("active");
  const [offset, setOffset] = useState(0);
  const [query, setQuery] = useState("");
  const [source, setSource] = useState("memories");
  const [search, setSearch] = useState(null); // {query, hits|null}

  const list = useLoad(
    () =>
      api(
        "GET",
        `/v1/memories${qs({
          n: PAGE_SIZE,
          offset,
          status,
          kind: kind || undefined,
          project: project === ALL ? undefined : project,
        })}`,
      ),
    [project, kind, status, offset],
  );

  const runSearch = async (overrides = {}) => {
    const p = { query, project, kind, source, ...overrides };
    const q = p.query.trim();
    if (!q) {
      setSearch(null);
      return;
    }
    setSearch({ query: q, hits: null });
    const body = { query: q, k: 20, source: p.source, mode: "hybrid" };
    if (p.project !== ALL) body.project = p.project;
    if (p.kind) body.kind = p.kind;
    try {
      const hits = await api("POST", "/v1/search", body);
      setSearch({ query: q, hits: Array.isArray(hits) ? hits : [] });
    } catch (err) {
      setSearch(null);
      report(err);
    }
  };

  const open = (id) => {
    location.hash = `#/memories/${enc(id)}`;
  };
  const close = () => {
    location.hash = "#/memories";
  };
  const changed = () => {
    list.reload();
    if (search) runSearch({ query: search.query });
  };
  const filter = (setter, key) => (e) => {
    setter(e.target.value);
    setOffset(0);
    if (search && key) runSearch({ [key]: e.target.value, query: search.query });
  };

  const memories = Array.isArray(list.data) ? list.data : [];
  return html`
    <section class=${`page memories${arg ? " with-detail" : ""}`}>
      <div class="main-col">
        <div class="toolbar">
          <label>${t("project")}
            <select data-test="project" value=${project} onChange=${filter(setProject, "project")}>
              <${ProjectOptions} withAll />
            </select>
          </label>
          <label>${t("kind")}
            <select data-test="kind" value=${kind} onChange=${filter(setKind, "kind")}>
              <option value="">${t("anyKind")}</option>
              ${KINDS.map((k) => html`<option key=${k} value=${k}>${kindLabel(k)}</option>`)}
            </select>
          </label>
          <label>${t("status")}
            <select data-test="status" value=${status} onChange=${filter(setStatus)}>
              ${STATUSES.map((s) => html`<option key=${s} value=${s}>${t(`status_${s}`)}</option>`)}
            </select>
          </label>
        </div>
        <div class="toolbar search-bar">
          <input
            type="search"
            data-test="search"
            placeholder=${t("searchPlaceholder")}
            value=${query}
            onInput=${(e) => setQuery(e.target.value)}
            onKeyDown=${(e) => {
              if (e.key === "Enter") {
                e.preventDefault();
                runSearch({ query: e.target.value });
              }
            }}
          />
          <select data-test="source" title=${t("source")} value=${source} onChange=${(e) => {
            setSource(e.target.value);
            if (search) runSearch({ source: e.target.value, query: search.query });
          }}>
            ${["memories", "turns", "all"].map((s) => html`<option key=${s} value=${s}>${t(`source_${s}`)}</option>`)}
          </select>
          ${search &&
          html`<button data-test="clear-search" onClick=${() => {
            setSearch(null);
            setQuery("");
          }}>${t("clearSearch")}</button>`}
        </div>

        ${search
          ? html`
              <div class="results">
                ${search.hits === null
                  ? html`<p class="muted">${t("searching")}</p>`
                  : html`
                      <p class="muted small">${t("searchResults", search.hits.length, search.query)}</p>
                      ${search.hits.length === 0 && html`<p class="empty">${t("noResults")}</p>`}
                      <ul class="rows">
                        ${search.hits.map((h) => html`<${HitRow} key=${h.id} hit=${h} selected=${h.id === arg} onOpen=${open} />`)}
                      </ul>
                    `}
              </div>
            `
          : html`
              <div class="results">
                ${list.loading && !list.data && html`<${Loading} />`}
                ${!list.loading && memories.length === 0 && html`<p class="empty">${t("noMemories")}</p>`}
                <ul class="rows">
                  ${memories.map((m) => html`<${MemoryRow} key=${m.id} memory=${m} selected=${m.id === arg} onOpen=${open} />`)}
                </ul>
                <${Pager} offset=${offset} count=${memories.length} onOffset=${setOffset} />
              </div>
            `}
      </div>
      ${arg && html`<${MemoryDetail} id=${arg} onChanged=${changed} onClose=${close} onOpen=${open} />`}
    </section>
  `;
}

function Field({ label, children }) {
  return html`<div class="kv-row"><dt>${label}</dt><dd>${children}</dd></div>`;
}

function RefLink({ id }) {
  if (!id) return html`<span class="muted">—</span>`;
  return html`<a class="id" href=${`#/memories/${enc(id)}`}>${id}</a>`;
}

function EvidenceList({ id, test = "evidence-turn", limit, lines }) {
  const evidence = useLoad(() => api("GET", `/v1/records/${enc(id)}/evidence`), [id]);
  if (evidence.loading && !evidence.data) return html`<${Loading} />`;
  const turns = Array.isArray(evidence.data) ? evidence.data : [];
  if (!turns.length) return html`<p class="muted small">${t("noEvidence")}</p>`;
  return html`<div class="evidence-list">${turns.map((tn) => html`<${TurnView} key=${tn.id} turn=${tn} test=${test} limit=${limit} lines=${lines} />`)}</div>`;
}

/** A text box that saves with Ctrl/Cmd+Enter and cancels with Escape (memories and cards). */
function EditBox({ value, rows, small, disabled, editRef, onInput, onSave, onCancel }) {
  const size = small ? " small" : "";
  const keys = (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      onSave();
    } else if (e.key === "Escape") {
      e.preventDefault();
      onCancel();
    }
  };
  return html`
    <div class="edit-box">
      <textarea data-test="edit-text" ref=${editRef} rows=${rows} value=${value}
        onInput=${(e) => onInput(e.target.value)} onKeyDown=${keys}></textarea>
      <div class="actions">
        <button class=${"primary" + size} data-test="save" disabled=${disabled} onClick=${onSave}>${t("save")}</button>
        <button class=${size.trim()} data-test="cancel" onClick=${onCancel}>${t("cancel")}</button>
        <span class="muted small">${t("saveHint")}</span>
      </div>
    </div>
  `;
}

function MemoryDetail({ id, onChanged, onClose, onOpen }) {
  const { report, notify } = useApp();
  const rec = useLoad(() => api("GET", `/v1/records/${enc(id)}`), [id]);
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState("");
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [showEvidence, setShowEvidence] = useState(false);
  const editRef = useRef(null);

  useEffect(() => {
    setEditing(false);
    setConfirming(false);
    setShowEvidence(false);
  }, [id]);
  useEffect(() => {
    if (editing && editRef.current) editRef.current.focus();
  }, [editing]);

  const act = async (path, body, after) => {
    setBusy(true);
    try {
      const written = await api("POST", path, body);
      notify(describeWritten(written));
      if (after) after(written);
      else rec.reload();
      onChanged();
    } catch (err) {
      report(err);
    } finally {
      setBusy(false);
    }
  };

  const r = rec.data;
  if (!r) {
    return html`<aside class="detail" data-test="memory-detail" data-id=${id}>
      <div class="detail-head"><${Id} id=${id} /><span class="spacer"></span>
        <button class="link" data-test="close" onClick=${onClose}>${t("close")}</button></div>
      ${rec.loading ? html`<${Loading} />` : null}
    </aside>`;
  }
  const isMemory = r._type === "Memory" || String(r.id || id).startsWith("m_");
  const status = r.status || "active";
  const text = isMemory ? r.body : r.text ?? r.summary ?? r.body ?? "";
  const base = `/v1/memories/${enc(r.id || id)}`;

  const save = () =>
    act(`${base}/edit`, { text: draft }, (written) => {
      setEditing(false);
      if (written && written.id && written.id !== id) onOpen(written.id);
      else rec.reload();
    });

  return html`
    <aside class="detail" data-test="memory-detail" data-id=${r.id || id}>
      <div class="detail-head">
        ${isMemory ? html`<${KindBadge} kind=${r.kind} />` : html`<span class="badge">${r._type || ""}</span>`}
        ${isMemory && html`<span class=${`badge status status-${status}`}>${t(`status_${status}`)}</span>`}
        <${Id} id=${r.id || id} />
        <span class="spacer"></span>
        <button class="link" data-test="close" onClick=${onClose}>${t("close")}</button>
      </div>
      ${titleAdds(r.title, text) && html`<h2 class="detail-title">${r.title}</h2>`}

      ${editing
        ? html`<${EditBox} rows="8" value=${draft} editRef=${editRef} disabled=${busy || !draft.trim()}
            onInput=${setDraft} onSave=${save} onCancel=${() => setEditing(false)} />`
        : html`<div class="body" data-test="memory-body">${text}</div>`}

      <div class="actions">
        ${isMemory && status === "active" && !editing &&
        html`<button data-test="edit" onClick=${() => {
          setDraft(r.body ?? "");
          setEditing(true);
        }}>${t("edit")}</button>`}
        ${isMemory && status === "active" &&
        html`<button data-test="forget" disabled=${busy} onClick=${() => act(`${base}/forget`, {})}>${t("forget")}</button>`}
        ${isMemory && status !== "active" &&
        html`<button data-test="restore" disabled=${busy} onClick=${() => act(`${base}/restore`, {})}>${t("restore")}</button>`}
        <button class="danger" data-test="purge" disabled=${busy || confirming} onClick=${() => setConfirming(true)}>${t("purge")}</button>
      </div>
      ${confirming &&
      html`<div class="confirm-box" role="alertdialog">
        <span>${t("purgeConfirm")}</span>
        <button class="danger" data-test="confirm" disabled=${busy} onClick=${() =>
          act(`/v1/records/${enc(r.id || id)}/purge`, {}, () => {
            setConfirming(false);
            onClose();
          })}>${t("confirm")}</button>
        <button data-test="cancel" onClick=${() => setConfirming(false)}>${t("cancel")}</button>
      </div>`}

      ${isMemory && status === "active" &&
      html`<div class="actions feedback">
        <span class="muted small">${t("feedback")}</span>
        ${["useful", "wrong", "outdated"].map(
          (v) => html`<button key=${v} class="small" data-test=${`feedback-${v}`} disabled=${busy}
            onClick=${() => act(`${base}/feedback`, { verdict: v })}>${t(`fb_${v}`)}</button>`,
        )}
      </div>`}

      <dl class="kv detail-fields">
        ${isMemory
          ? html`
              <${Field} label=${t("project")}><${ProjectName} project=${r.project} /><//>
              <${Field} label=${t("created")}><${Time} ts=${r.created} /><//>
              <${Field} label=${t("updated")}><${Time} ts=${r.updated} /><//>
              <${Field} label=${t("importance")}>${fmtNum(r.importance)}<//>
              <${Field} label=${t("weightLabel")}>${fmtNum(r.weight)}<//>
              <${Field} label=${t("accessCount")}>${fmtNum(r.access_count ?? 0)}<//>
              <${Field} label=${t("lastAccess")}><${Time} ts=${r.last_access} /><//>
              ${r.tags && r.tags.length ? html`<${Field} label=${t("tags")}>${r.tags.map((tag) => html`<span key=${tag} class="chip">${tag}</span>`)}<//>` : null}
              ${r.origin ? html`<${Field} label=${t("origin")}>${typeof r.origin === "object" ? JSON.stringify(r.origin) : String(r.origin)}<//>` : null}
              ${r.supersedes ? html`<${Field} label=${t("supersedes")}><${RefLink} id=${r.supersedes} /><//>` : null}
              ${r.superseded_by ? html`<${Field} label=${t("supersededBy")}><${RefLink} id=${r.superseded_by} /><//>` : null}
              ${r.deleted_at ? html`<${Field} label=${t("deletedAt")}><${Time} ts=${r.deleted_at} /><//>` : null}
              <${Field} label=${t("evidence")}>
                ${(r.evidence || []).length
                  ? (r.evidence || []).map((e) => html`<${Id} key=${e} id=${e} /> `)
                  : html`<span class="muted">—</span>`}
              <//>
            `
          : html`
              ${r.role ? html`<${Field} label=${t("role")}>${r.role}<//>` : null}
              ${r.session ? html`<${Field} label=${t("session")}><${Id} id=${r.session} /><//>` : null}
              <${Field} label=${t("project")}><${ProjectName} project=${r.project} /><//>
              <${Field} label=${t("time")}><${Time} ts=${r.ts ?? r.created} /><//>
              ${r.host ? html`<${Field} label=${t("host")}>${r.host}<//>` : null}
            `}
      </dl>
      ${isMemory && (r.evidence || []).length > 0 &&
      (showEvidence
        ? html`<div class="evidence-box"><h3>${t("evidence")}</h3><${EvidenceList} id=${r.id || id} /></div>`
        : html`<button class="link" data-test="show-evidence" onClick=${() => setShowEvidence(true)}>${t("showEvidence")}</button>`)}
    </aside>
  `;
}

// ---------------------------------------------------------------------------------------
// Review page.

function CardRow({ card, focused, selected, editing, summary, edited, scope, busy, handlers }) {
  const ref = useRef(null);
  const editRef = useRef(null);
  const [draft, setDraft] = useState(summary);
  useEffect(() => {
    if (focused && ref.current && ref.current.scrollIntoView) ref.current.scrollIntoView({ block: "nearest" });
  }, [focused]);
  useEffect(() => {
    if (editing) {
      setDraft(summary);
      if (editRef.current) editRef.current.focus();
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [editing]);

  const save = () => handlers.saveEdit(card.id, draft);
  return html`
    <li
      ref=${ref}
      class=${`card-row${focused ? " focused" : ""}${selected ? " selected" : ""}`}
      data-test="card-row"
      data-id=${card.id}
      onClick=${() => handlers.focus(card.id)}
    >
      <div class="card-main">
        <div class="row-head">
          <input
            type="checkbox"
            data-test="select"
            checked=${selected}
            onClick=${(e) => e.stopPropagation()}
            onChange=${() => handlers.toggle(card.id)}
          />
          <${KindBadge} kind=${card.suggested_kind} />
          <${Id} id=${card.id} />
          ${edited && html`<span class="badge edited">${t("edited")}</span>`}
          <span class="spacer"></span>
          <span class="muted small"><${Time} ts=${card.created} compact /></span>
        </div>
        ${editing
          ? html`<${EditBox} rows="4" small value=${draft} editRef=${editRef}
              onInput=${setDraft} onSave=${save} onCancel=${() => handlers.cancelEdit(card.id)} />`
          : html`<div class="summary" data-test="summary">${summary}</div>`}
        <div class="row-meta muted small">
          ${typeof card.confidence === "number" && html`<span>${t("confidence")} ${fmtNum(card.confidence)}</span>`}
          ${card.topic && html`<span>${t("topic")}: ${card.topic}</span>`}
        </div>
        <div class="actions">
          ${card.proposal
            ? html`<span class="muted small">${t("proposal", card.proposal)}</span>`
            : html`<label class="scope">${t("scope")}
                <select data-test="scope" value=${scope} onClick=${(e) => e.stopPropagation()}
                  onChange=${(e) => handlers.setScope(card.id, e.target.value)}>
                  <${ProjectOptions} extra=${[card.project]} />
                </select>
              </label>`}
          <span class="spacer"></span>
          ${!editing && !card.proposal && html`<button class="small" data-test="edit" onClick=${(e) => {
            e.stopPropagation();
            handlers.startEdit(card.id);
          }}>${t("edit")}</button>`}
          <button class="small danger-soft" data-test="reject" disabled=${busy} onClick=${(e) => {
            e.stopPropagation();
            handlers.reject(card.id);
          }}>${t("reject")}</button>
          <button class="small primary" data-test="accept" disabled=${busy} onClick=${(e) => {
            e.stopPropagation();
            handlers.accept(card.id, editing ? draft : undefined);
          }}>${t("accept")}</button>
        </div>
      </div>
      <div class="card-evidence" data-test="evidence">
        <div class="muted small">${t("evidence")}</div>
        <${EvidenceList} id=${card.id} limit=${320} lines=${5} />
        ${(card.conflicts || []).map(
          (ref) => html`<${Clash} key=${ref} card=${card.id} memory=${ref} busy=${busy} handlers=${handlers} />`,
        )}
      </div>
    </li>
  `;
}

/** A memory the card's acceptance clashed with, beside it: replace it, or keep both. */
function Clash({ card, memory, busy, handlers }) {
  const found = useLoad(() => api("GET", `/v1/records/${enc(memory)}`), [memory]);
  return html`
    <div class="clash" data-test="clash" data-id=${memory}>
      <div class="muted small">${t("clashesWith")} <${Id} id=${memory} /></div>
      <div class="summary">${found.data ? found.data.body : ""}</div>
      <div class="actions">
        <button class="small primary" data-test="replace" disabled=${busy} onClick=${(e) => {
          e.stopPropagation();
          handlers.settle(card, { replaces: memory });
        }}>${t("acceptReplacing", memory)}</button>
        <button class="small" data-test="keep-both" disabled=${busy} onClick=${(e) => {
          e.stopPropagation();
          handlers.settle(card, { keep_both: true });
        }}>${t("keepBoth")}</button>
      </div>
    </div>
  `;
}

function ReviewPage() {
  const { pending, refreshPending, report, notify } = useApp();
  const [removed, setRemoved] = useState(() => new Set());
  const [selected, setSelected] = useState(() => new Set());
  const [edits, setEdits] = useState({});
  const [scopes, setScopes] = useState({});
  const [editingId, setEditingId] = useState(null);
  const [focusedId, setFocusedId] = useState(null);
  const [busy, setBusy] = useState(() => new Set());

  useEffect(() => {
    refreshPending();
  }, [refreshPending]);

  const cards = useMemo(() => (pending || []).filter((c) => !removed.has(c.id)), [pending, removed]);
  const focused = cards.find((c) => c.id === focusedId) ? focusedId : cards.length ? cards[0].id : null;
  const visibleSelected = cards.filter((c) => selected.has(c.id)).map((c) => c.id);

  const scopeOf = (card) => (card.id in scopes ? scopes[card.id] : card.project ?? "");
  const summaryOf = (card) => (card.id in edits ? edits[card.id] : card.summary ?? "");

  const setBusyFor = (id, on) =>
    setBusy((prev) => {
      const next = new Set(prev);
      if (on) next.add(id);
      else next.delete(id);
      return next;
    });

  const forget = (id) => {
    setRemoved((prev) => new Set(prev).add(id));
    setSelected((prev) => {
      const next = new Set(prev);
      next.delete(id);
      return next;
    });
    if (editingId === id) setEditingId(null);
  };

  /** Focus the neighbour of `id` before it leaves the list. */
  const moveFocusFrom = (ids) => {
    const list = cards.map((c) => c.id);
    const idx = list.indexOf(focused);
    if (idx < 0 || !ids.includes(focused)) return;
    const after = list.slice(idx + 1).find((x) => !ids.includes(x));
    const before = list.slice(0, idx).reverse().find((x) => !ids.includes(x));
    setFocusedId(after || before || null);
  };

  /** `settle`: how to accept a card that clashes ({replaces: "m_N"} or {keep_both: true}). */
  const decide = async (id, decision, draft, settle) => {
    const card = cards.find((c) => c.id === id);
    if (!card) return false;
    const body = { decision, ...(settle || {}) };
    if (decision === "accept") {
      body.summary = draft !== undefined ? draft : summaryOf(card);
      body.project = scopeOf(card);
    }
    setBusyFor(id, true);
    try {
      const written = await api("POST", `/v1/cards/${enc(id)}/review`, body);
      if (written.action === "held") {
        notify(`${id}: ${t("held")} ${written.reason || ""}`);
        refreshPending(); // the card comes back naming what it clashes with
        return false;
      }
      forget(id);
      notify(`${id}: ${describeWritten(written)}`);
      return true;
    } catch (err) {
      report(err);
      return false;
    } finally {
      setBusyFor(id, false);
    }
  };

  const decideOne = async (id, decision, draft, settle) => {
    if (await decide(id, decision, draft, settle)) moveFocusFrom([id]);
    refreshPending();
  };

  const decideMany = async (decision) => {
    const ids = visibleSelected.slice();
    if (!ids.length) return;
    moveFocusFrom(ids);
    for (const id of ids) {
      // one at a time, so each card's outcome and error is its own
      // eslint-disable-next-line no-await-in-loop
      await decide(id, decision);
    }
    refreshPending();
  };

  const toggle = (id) =>
    setSelected((prev) => {
      const next = new Set(prev);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });

  const handlers = {
    focus: (id) => setFocusedId(id),
    toggle,
    setScope: (id, value) => setScopes((prev) => ({ ...prev, [id]: value })),
    startEdit: (id) => {
      setFocusedId(id);
      setEditingId(id);
    },
    cancelEdit: () => setEditingId(null),
    saveEdit: (id, text) => {
      setEdits((prev) => ({ ...prev, [id]: text }));
      setEditingId(null);
    },
    accept: (id, draft) => {
      if (draft !== undefined) {
        setEdits((prev) => ({ ...prev, [id]: draft }));
        setEditingId(null);
      }
      decideOne(id, "accept", draft);
    },
    reject: (id) => decideOne(id, "reject"),
    settle: (id, settle) => decideOne(id, "accept", edits[id], settle),
    selectAll: () =>
      setSelected((prev) => (prev.size === cards.length ? new Set() : new Set(cards.map((c) => c.id)))),
    decideSelected: (decision) => decideMany(decision),
  };

  // Keyboard shortcuts read the latest state through a ref.
  const live = useRef(null);
  live.current = { cards, focused, handlers };
  useEffect(() => {
    const onKey = (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey || isTyping(e.target)) return;
      const { cards: list, focused: id, handlers: h } = live.current;
      if (!list.length) return;
      const idx = Math.max(0, list.findIndex((c) => c.id === id));
      const key = e.key;
      if (key === "j" || key === "k") {
        const next = key === "j" ? Math.min(list.length - 1, idx + 1) : Math.max(0, idx - 1);
        h.focus(list[next].id);
      } else if (key === "X") h.selectAll();
      else if (key === "A") h.decideSelected("accept");
      else if (key === "R") h.decideSelected("reject");
      else if (key === "x") h.toggle(list[idx].id);
      else if (key === "a") h.accept(list[idx].id);
      else if (key === "r") h.reject(list[idx].id);
      else if (key === "e") h.startEdit(list[idx].id);
      else return;
      e.preventDefault();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);

  const allSelected = cards.length > 0 && visibleSelected.length === cards.length;
  return html`
    <section class="page review">
      <div class="page-head">
        <h1>${t("reviewTitle")}</h1>
        <span class="muted small">${t("reviewHint")}</span>
      </div>
      <div class="toolbar batch-bar">
        <label class="check">
          <input
            type="checkbox"
            data-test="select-all"
            checked=${allSelected}
            disabled=${!cards.length}
            onChange=${handlers.selectAll}
          />
          ${t("selectAll")}
        </label>
        <button class="primary small" data-test="accept-selected" disabled=${!visibleSelected.length}
          onClick=${() => decideMany("accept")}>${t("acceptSelected", visibleSelected.length)}</button>
        <button class="small danger-soft" data-test="reject-selected" disabled=${!visibleSelected.length}
          onClick=${() => decideMany("reject")}>${t("rejectSelected", visibleSelected.length)}</button>
      </div>
      ${pending === null && html`<${Loading} />`}
      ${pending !== null && cards.length === 0 && html`<p class="empty">${t("noCards")}</p>`}
      <ul class="cards">
        ${cards.map(
          (card) => html`<${CardRow}
            key=${card.id}
            card=${card}
            focused=${card.id === focused}
            selected=${selected.has(card.id)}
            editing=${editingId === card.id}
            summary=${summaryOf(card)}
            edited=${card.id in edits && edits[card.id] !== card.summary}
            scope=${scopeOf(card)}
            busy=${busy.has(card.id)}
            handlers=${handlers}
          />`,
        )}
      </ul>
    </section>
  `;
}

// ---------------------------------------------------------------------------------------
// Sessions page.

// The daemon stamps an injection a moment before it stores the prompt's turn (observed:
// ~0.2 ms earlier), so a user turn starting within this many seconds after an injection is
// the prompt it was woven for.
const INJECTION_SLACK = 1.0;

/**
 * Timeline items: each injection goes after the last user turn whose ts <= its ts, or after
 * the user turn that follows it within INJECTION_SLACK seconds (the prompt it was woven for).
 */
function weaveTimeline(turns, injections) {
  const after = new Map();
  const before = [];
  const users = turns.filter((turn) => turn.role === "user");
  for (const inj of injections) {
    const ts = Number(inj.ts);
    let target = null;
    for (const turn of users) {
      const at = Number(turn.ts);
      if (at > ts + INJECTION_SLACK) break;
      target = turn.id;
      if (at > ts) break; // the prompt this injection was woven for
    }
    if (target === null) before.push(inj);
    else {
      if (!after.has(target)) after.set(target, []);
      after.get(target).push(inj);
    }
  }
  return { after, before };
}

function Injection({ inj, onOpenRef, first }) {
  return html`
    <div class="injection" data-test="injection">
      <div class="muted small">
        ${first ? t("wovenBefore") : t("woven")} · <${Time} ts=${inj.ts} compact />
        ${typeof inj.tokens === "number" && html` · ${inj.tokens} ${t("tokens")}`}
      </div>
      <div class="refs">
        ${(inj.refs || []).map((ref) =>
          RECORD_ID.test(String(ref))
            ? html`<button key=${ref} class="ref id" data-test="ref" data-id=${ref} onClick=${() => onOpenRef(ref)}>${ref}</button>`
            : html`<span key=${ref} class="ref-text id" data-id=${ref}>${String(ref)}</span>`,
        )}
      </div>
    </div>
  `;
}

function Timeline({ session, onOpenRef }) {
  const data = useLoad(async () => {
    const [turns, injections] = await Promise.all([
      api("GET", `/v1/turns${qs({ session, limit: 500 })}`),
      api("GET", `/v1/sessions/${enc(session)}/injections`),
    ]);
    return { turns: turns || [], injections: injections || [] };
  }, [session]);
  if (!data.data) return data.loading ? html`<${Loading} />` : null;
  const { turns, injections } = data.data;
  const { after, before } = weaveTimeline(turns, injections);
  return html`
    <div class="timeline">
      ${before.map((inj, i) => html`<${Injection} key=${`b${i}`} inj=${inj} onOpenRef=${onOpenRef} first />`)}
      ${turns.map(
        (turn) => html`
          <div class="timeline-item" key=${turn.id}>
            <${TurnView} turn=${turn} />
            ${(after.get(turn.id) || []).map((inj, i) => html`<${Injection} key=${i} inj=${inj} onOpenRef=${onOpenRef} />`)}
          </div>
        `,
      )}
    </div>
  `;
}

function RecordPanel({ refId, onClose }) {
  const rec = useLoad(() => api("GET", `/v1/records/${enc(refId)}`), [refId]);
  const r = rec.data;
  return html`
    <aside class="record-panel" data-test="record-panel" data-id=${refId}>
      <div class="detail-head">
        ${r && (r.kind ? html`<${KindBadge} kind=${r.kind} />` : html`<span class="badge">${r.role || r._type || ""}</span>`)}
        <${Id} id=${refId} />
        <span class="spacer"></span>
        <button class="link" data-test="close" onClick=${onClose}>${t("close")}</button>
      </div>
      ${!r && rec.loading && html`<${Loading} />`}
      ${r &&
      html`
        ${titleAdds(r.title, r.body ?? r.text ?? r.summary) && html`<h3>${r.title}</h3>`}
        <${LongText} text=${r.body ?? r.text ?? r.summary ?? ""} limit=${1200} lines=${20} test="record-body" />
        <div class="muted small">
          <${ProjectName} project=${r.project} /> · <${Time} ts=${r.ts ?? r.updated ?? r.created} />
        </div>
        ${String(refId).startsWith("m_") &&
        html`<a class="small" href=${`#/memories/${enc(refId)}`}>${t("openInMemories")}</a>`}
      `}
    </aside>
  `;
}

function SessionsPage() {
  const [project, setProject] = useState(ALL);
  const [offset, setOffset] = useState(0);
  const [session, setSession] = useState(null);
  const [openRef, setOpenRef] = useState(null);
  const list = useLoad(
    () =>
      api("GET", `/v1/sessions${qs({ project: project === ALL ? undefined : project, n: PAGE_SIZE, offset })}`),
    [project, offset],
  );
  const sessions = Array.isArray(list.data) ? list.data : [];
  return html`
    <section class="page sessions">
      <div class="side-col">
        <div class="toolbar">
          <label>${t("project")}
            <select data-test="project" value=${project} onChange=${(e) => {
              setProject(e.target.value);
              setOffset(0);
            }}>
              <${ProjectOptions} withAll />
            </select>
          </label>
        </div>
        ${list.loading && !list.data && html`<${Loading} />`}
        ${!list.loading && sessions.length === 0 && html`<p class="empty">${t("noSessions")}</p>`}
        <ul class="rows">
          ${sessions.map(
            (s) => html`
              <li
                key=${s.id}
                class=${`row session-row${s.id === session ? " selected" : ""}`}
                data-test="session-row"
                data-id=${s.id}
                tabindex="0"
                onClick=${() => {
                  setSession(s.id);
                  setOpenRef(null);
                }}
                onKeyDown=${(e) => e.key === "Enter" && setSession(s.id)}
              >
                <div class="row-head">
                  <${Id} id=${clip(s.id, 28)} />
                  <span class="spacer"></span>
                  <span class="muted small"><${Time} ts=${s.started} compact /></span>
                </div>
                <div class="row-meta muted small">
                  ${s.host && html`<span>${s.host}</span>`}
                  <${ProjectName} project=${s.project} />
                  <span>${s.turns ?? 0} ${t(s.turns === 1 ? "turn" : "turns")}</span>
                  <span>${s.prompts ?? 0} ${t(s.prompts === 1 ? "prompt" : "prompts")}</span>
                </div>
                <div class="muted small">${typeof s.started === "number" ? localTime(s.started) : ""}</div>
              </li>
            `,
          )}
        </ul>
        <${Pager} offset=${offset} count=${sessions.length} onOffset=${setOffset} />
      </div>
      <div class="main-col">
        ${session
          ? html`
              <div class="page-head"><h2><${Id} id=${session} /></h2></div>
              <${Timeline} session=${session} onOpenRef=${setOpenRef} />
            `
          : html`<p class="empty">${t("pickSession")}</p>`}
      </div>
      ${openRef && html`<${RecordPanel} refId=${openRef} onClose=${() => setOpenRef(null)} />`}
    </section>
  `;
}

// ---------------------------------------------------------------------------------------
// Skills page.

function SkillsPage() {
  const list = useLoad(() => api("GET", "/v1/skills"), []);
  const skills = Array.isArray(list.data) ? list.data : [];
  return html`
    <section class="page skills">
      <div class="page-head"><h1>${t("skillsTitle")}</h1></div>
      ${list.loading && !list.data && html`<${Loading} />`}
      ${!list.loading && skills.length === 0 && html`<p class="empty">${t("noSkills")}</p>`}
      <ul class="skill-list">
        ${skills.map(
          (s) => html`
            <li class="skill" key=${s.name} data-test="skill-row" data-id=${s.name}>
              <div class="row-head">
                <strong class="skill-name">${s.name}</strong>
                <span class="spacer"></span>
                <span class="muted small">${t("usage")} ${s.usage_count ?? 0}</span>
                ${s.health !== undefined && s.health !== null &&
                html`<span class="muted small">${t("health")} ${typeof s.health === "object" ? JSON.stringify(s.health) : fmtNum(s.health)}</span>`}
              </div>
              ${s.summary && html`<p class="skill-summary">${s.summary}</p>`}
              ${(s.triggers || []).length > 0 &&
              html`<div class="skill-part"><span class="muted small">${t("triggers")}</span>
                <div>${s.triggers.map((tr, i) => html`<span key=${i} class="chip">${tr}</span>`)}</div></div>`}
              ${(s.steps || []).length > 0 &&
              html`<div class="skill-part"><span class="muted small">${t("steps")}</span>
                <ol class="steps">${s.steps.map((st, i) => html`<li key=${i}>${typeof st === "string" ? st : JSON.stringify(st)}</li>`)}</ol></div>`}
              ${(s.source_urls || []).length > 0 &&
              html`<div class="skill-part"><span class="muted small">${t("sources")}</span>
                <ul class="sources">
                  ${s.source_urls.map((u, i) => {
                    const href = safeUrl(u);
                    return html`<li key=${i}>${href
                      ? html`<a href=${href} target="_blank" rel="noopener noreferrer">${String(u)}</a>`
                      : html`<span class="unsafe-url">${String(u)}</span>`}</li>`;
                  })}
                </ul></div>`}
              ${(s.created || s.updated) &&
              html`<div class="muted small">
                ${t("created")} <${Time} ts=${s.created} compact /> · ${t("updated")} <${Time} ts=${s.updated} compact />
              </div>`}
            </li>
          `,
        )}
      </ul>
    </section>
  `;
}

// ---------------------------------------------------------------------------------------
// Status page.

function StatusSection({ id, title, path }) {
  const data = useLoad(() => api("GET", path), [path]);
  return html`
    <section class="status-section" data-test="status-section" data-id=${id}>
      <div class="page-head">
        <h2>${title}</h2>
        <button class="small" onClick=${data.reload}>${t("refresh")}</button>
      </div>
      ${data.data === null ? (data.loading ? html`<${Loading} />` : null) : html`<${Value} value=${data.data} />`}
    </section>
  `;
}

function StatusPage() {
  return html`
    <section class="page status">
      <${StatusSection} id="status" title=${t("statusTitle")} path="/v1/status" />
      <${StatusSection} id="projects" title=${t("projectsTitle")} path="/v1/projects" />
      <${StatusSection} id="daemon" title=${t("daemonTitle")} path="/v1/daemon" />
      <${HygieneSection} />
    </section>
  `;
}

/** The hygiene report compares every memory with its neighbours (seconds on a large
 * store), so it runs when asked, not when the page opens. */
function HygieneSection() {
  const [asked, setAsked] = useState(false);
  if (asked) return html`<${StatusSection} id="hygiene" title=${t("hygieneTitle")} path="/v1/hygiene" />`;
  return html`
    <section class="status-section" data-test="status-section" data-id="hygiene">
      <div class="page-head">
        <h2>${t("hygieneTitle")}</h2>
        <button class="small" data-test="run-hygiene" onClick=${() => setAsked(true)}>${t("runHygiene")}</button>
      </div>
      <p class="muted small">${t("hygieneHint")}</p>
    </section>
  `;
}

// ---------------------------------------------------------------------------------------
// Files page.

function FilesPage() {
  const { report, notify, reloadProjects } = useApp();
  const [importState, setImportState] = useState(null); // {name, result|null}
  const [files, setFiles] = useState(null); // [{name, url, size}]
  const [exporting, setExporting] = useState(false);
  const urls = useRef([]);

  const revoke = () => {
    urls.current.forEach((u) => URL.revokeObjectURL(u));
    urls.current = [];
  };
  useEffect(() => revoke, []);

  const onFile = async (e) => {
    const input = e.target;
    const file = input.files && input.files[0];
    if (!file) return;
    if (!/\.(jsonl|md)$/i.test(file.name)) {
      report(new Error(t("badFile")));
      input.value = "";
      return;
    }
    setImportState({ name: file.name, result: null });
    try {
      const text = await file.text();
      const result = await api("POST", "/v1/import/file", { name: file.name, text });
      setImportState({ name: file.name, result });
      notify(t("importDone", file.name));
      reloadProjects();
    } catch (err) {
      setImportState(null);
      report(err);
    } finally {
      input.value = "";
    }
  };

  const runExport = async () => {
    setExporting(true);
    try {
      const result = (await api("GET", "/v1/export")) || {};
      revoke();
      const list = Object.entries(result).map(([name, content]) => {
        const text = typeof content === "string" ? content : JSON.stringify(content, null, 2);
        const type = name.endsWith(".jsonl") ? "application/x-ndjson" : name.endsWith(".md") ? "text/markdown" : "text/plain";
        const blob = new Blob([text], { type: `${type};charset=utf-8` });
        const url = URL.createObjectURL(blob);
        urls.current.push(url);
        return { name, url, size: blob.size };
      });
      setFiles(list);
    } catch (err) {
      report(err);
    } finally {
      setExporting(false);
    }
  };

  return html`
    <section class="page files">
      <section class="panel">
        <h2>${t("importTitle")}</h2>
        <p class="muted">${t("importText")}</p>
        <input type="file" data-test="import-file" accept=".jsonl,.md,text/markdown,application/x-ndjson" onChange=${onFile} />
        ${importState &&
        html`<div class="import-result" data-test="import-result">
          ${importState.result === null
            ? html`<p class="muted">${t("importing", importState.name)}</p>`
            : html`<p>${t("importDone", importState.name)}</p><${Value} value=${importState.result} />`}
        </div>`}
      </section>
      <section class="panel">
        <h2>${t("exportTitle")}</h2>
        <p class="muted">${t("exportText")}</p>
        <button class="primary" data-test="export" disabled=${exporting} onClick=${runExport}>
          ${exporting ? t("exporting") : t("exportRun")}
        </button>
        ${files &&
        (files.length
          ? html`<ul class="file-list">
              ${files.map(
                (f) => html`<li key=${f.name}>
                  <a data-test="export-file" href=${f.url} download=${f.name.split("/").pop()}>${f.name}</a>
                  <span class="muted small"> ${humanBytes(f.size)}</span>
                </li>`,
              )}
            </ul>`
          : html`<p class="empty">${t("noFiles")}</p>`)}
      </section>
    </section>
  `;
}

// ---------------------------------------------------------------------------------------
// Shell: sign-in, navigation, error line.

function SignIn({ message }) {
  return html`
    <main class="signin" data-test="signin">
      <div class="panel">
        <h1>${t("signinTitle")}</h1>
        <p>${t("signinText")}</p>
        <pre class="command"><code>mnemoweave ui</code></pre>
        ${message && html`<p class="muted small">${message}</p>`}
      </div>
    </main>
  `;
}

function Nav({ page, pendingCount }) {
  return html`
    <nav class="nav">
      ${PAGES.map(
        (p) => html`
          <a key=${p} href=${`#/${p}`} data-nav=${p} class=${p === page ? "active" : ""} aria-current=${p === page ? "page" : undefined}>
            ${t(`nav_${p}`)}
            ${p === "review" &&
            html` <span class=${`count${pendingCount ? " has" : ""}`} data-test="pending-count">${pendingCount === null ? "…" : pendingCount}</span>`}
          </a>
        `,
      )}
    </nav>
  `;
}

function App() {
  const [auth, setAuth] = useState(() => (LOGIN_CODE !== null ? "login" : getToken() ? "in" : "out"));
  const [authMessage, setAuthMessage] = useState("");
  const route = useRoute();
  const [error, setError] = useState("");
  const [notice, setNotice] = useState("");
  const [projects, setProjects] = useState([]);
  const [pending, setPending] = useState(null);
  const noticeTimer = useRef(null);
  const lastPending = useRef("");

  useEffect(() => {
    onUnauthorized = (message) => {
      setAuthMessage(message || "");
      setAuth("out");
    };
    const signIn = (code) => {
      setAuth("login");
      setToken("");
      api("POST", "/v1/ui/login", { code }).then(
        (result) => {
          if (result && result.token) {
            setToken(result.token);
            setAuthMessage("");
            setAuth("in");
          } else setAuth("out");
        },
        (err) => {
          setAuthMessage(err.message);
          setAuth("out");
        },
      );
    };
    const onHash = () => {
      const code = takeLoginCode();
      if (code !== null) signIn(code);
    };
    window.addEventListener("hashchange", onHash);
    if (LOGIN_CODE !== null) {
      const code = LOGIN_CODE;
      LOGIN_CODE = null;
      signIn(code);
    }
    return () => window.removeEventListener("hashchange", onHash);
  }, []);

  const report = useCallback((err) => {
    if (err instanceof AuthError) return;
    setError(String((err && err.message) || err).split("\n")[0]);
  }, []);
  const notify = useCallback((message) => {
    setNotice(message);
    clearTimeout(noticeTimer.current);
    noticeTimer.current = setTimeout(() => setNotice(""), 8000);
  }, []);

  const refreshPending = useCallback(async () => {
    try {
      const cards = await api("GET", `/v1/cards${qs({ limit: 200 })}`);
      const list = Array.isArray(cards) ? cards : [];
      const key = JSON.stringify(list);
      if (key !== lastPending.current) {
        lastPending.current = key; // re-render only when something changed
        setPending(list);
      }
    } catch (err) {
      report(err);
    }
  }, [report]);

  const reloadProjects = useCallback(async () => {
    try {
      const list = await api("GET", "/v1/projects");
      setProjects(Array.isArray(list) ? list : []);
    } catch (err) {
      report(err);
    }
  }, [report]);

  useEffect(() => {
    if (auth !== "in") return undefined;
    reloadProjects();
    refreshPending();
    const timer = setInterval(refreshPending, 5000);
    return () => clearInterval(timer);
  }, [auth, refreshPending, reloadProjects]);

  useEffect(() => {
    setError("");
    setNotice("");
  }, [route.page]);

  const projectName = useCallback(
    (key) => {
      if (key === "" || key === null || key === undefined) return t("global");
      const p = projects.find((x) => x.key === key);
      return (p && p.name) || key;
    },
    [projects],
  );

  const ctx = useMemo(
    () => ({ report, notify, projects, projectName, pending, refreshPending, reloadProjects }),
    [report, notify, projects, projectName, pending, refreshPending, reloadProjects],
  );

  if (auth === "login") return html`<main class="signin"><p class="muted">${t("signingIn")}</p></main>`;
  if (auth === "out") return html`<${SignIn} message=${authMessage} />`;

  const Page = { memories: MemoriesPage, review: ReviewPage, sessions: SessionsPage, skills: SkillsPage, status: StatusPage, files: FilesPage }[route.page];
  return html`
    <${Ctx.Provider} value=${ctx}>
      <header class="top">
        <a class="brand" href="#/memories">${t("appName")}</a>
        <${Nav} page=${route.page} pendingCount=${pending === null ? null : pending.length} />
        <button class="link signout" data-test="signout" onClick=${() => {
          setToken("");
          setAuthMessage("");
          setAuth("out");
        }}>${t("signout")}</button>
      </header>
      <div class=${`messages${error || notice ? "" : " idle"}`}>
        <div class=${`error-line${error ? "" : " hidden"}`} role="alert">
          <span data-test="error">${error}</span>
          ${error && html`<button class="link" title=${t("dismiss")} onClick=${() => setError("")}>×</button>`}
        </div>
        <div class=${`notice-line${notice ? "" : " hidden"}`} role="status">
          <span data-test="notice">${notice}</span>
        </div>
      </div>
      <main class="content">
        <${Page} key=${route.page} arg=${route.arg} />
      </main>
    <//>
  `;
}

render(html`<${App} />`, document.getElementById("app"));
