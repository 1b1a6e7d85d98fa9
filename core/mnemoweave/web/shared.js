/* Shared state and hooks, and the small components every page uses. */
import { html, createContext, useCallback, useContext, useEffect, useRef, useState } from "./vendor/preact-htm.js";
import { ALL, PAGES, PAGE_SIZE, RECORD_ID, api, enc } from "./api.js";
import { kindLabel, t } from "./labels.js";
import { age, duration, fmtNum, humanBytes, localTime } from "./util.js";

export const Ctx = createContext(null);

export function useApp() {
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

export function useRoute() {
  const [route, setRoute] = useState(parseHash);
  useEffect(() => {
    const onChange = () => setRoute(parseHash());
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  return route;
}

/** Run `load` when deps change; {data, loading, reload}. Errors go to the error line. */
export function useLoad(load, deps) {
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

export function Time({ ts, compact }) {
  if (ts === null || ts === undefined || ts === "" || Number.isNaN(Number(ts))) {
    return html`<span class="muted">—</span>`;
  }
  const n = Number(ts);
  const iso = new Date(n * 1000).toISOString();
  if (compact) return html`<time datetime=${iso} title=${localTime(n)}>${age(n)}</time>`;
  return html`<time datetime=${iso}>${localTime(n)} <span class="muted">(${age(n)})</span></time>`;
}

export function Id({ id }) {
  return html`<code class="id">${id}</code>`;
}

export function KindBadge({ kind }) {
  if (!kind) return null;
  return html`<span class=${`badge kind-${kind}`} title=${kind}>${kindLabel(kind)}</span>`;
}

export function Loading() {
  return html`<p class="muted loading">${t("loading")}</p>`;
}

export function ProjectOptions({ withAll, extra }) {
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

export function ProjectName({ project }) {
  const { projectName } = useApp();
  return html`<span class="project" title=${project || ""}>${projectName(project)}</span>`;
}

export function Pager({ offset, count, onOffset }) {
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
export function LongText({ text, limit = 600, lines = 12, test }) {
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

export function TurnView({ turn, test = "turn", limit, lines }) {
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

export function Explain({ hit }) {
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

export function Value({ value, name }) {
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

/** A key handler: Ctrl/Cmd+Enter saves, Escape cancels (every form of the page). */
export function saveKeys(onSave, onCancel) {
  return (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      onSave();
    } else if (e.key === "Escape") {
      e.preventDefault();
      onCancel();
    }
  };
}

/** A text box that saves with Ctrl/Cmd+Enter and cancels with Escape (memories and cards). */
export function EditBox({ value, rows, small, disabled, editRef, onInput, onSave, onCancel }) {
  const size = small ? " small" : "";
  const keys = saveKeys(onSave, onCancel);
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


export function EvidenceList({ id, test = "evidence-turn", limit, lines }) {
  const evidence = useLoad(() => api("GET", `/v1/records/${enc(id)}/evidence`), [id]);
  if (evidence.loading && !evidence.data) return html`<${Loading} />`;
  const turns = Array.isArray(evidence.data) ? evidence.data : [];
  if (!turns.length) return html`<p class="muted small">${t("noEvidence")}</p>`;
  return html`<div class="evidence-list">${turns.map((tn) => html`<${TurnView} key=${tn.id} turn=${tn} test=${test} limit=${limit} lines=${lines} />`)}</div>`;
}


/** Whether a title says more than the body's start (titles are often its clipped first line). */

/** Whether a title says more than the start of the body (an automatic title does not). */
export function titleAdds(title, body) {
  const head = String(title ?? "").trim().replace(/(…|\.\.\.)$/, "").trim();
  return Boolean(head) && !String(body ?? "").trim().startsWith(head);
}
