/* The Memories page: list, search with the explain breakdown, a memory's detail. */
import { html, useEffect, useRef, useState } from "./vendor/preact-htm.js";
import { ALL, KINDS, PAGE_SIZE, STATUSES, api, enc, qs } from "./api.js";
import { EntityLinks } from "./entities.js";
import { kindLabel, t } from "./labels.js";
import { EditBox, EvidenceList, Explain, Id, KindBadge, Loading, Pager, ProjectName, ProjectOptions, saveKeys, Time, titleAdds, useApp, useLoad } from "./shared.js";
import { clip, describeWritten, fmtNum } from "./util.js";

/** Title and body for a row; the title is left out when the body starts with it. */
function memoryText(memory) {
  const body = String(memory.body ?? "");
  return titleAdds(memory.title, body) ? `${String(memory.title).trim()} — ${body}` : body;
}

/** A memory's row in a list: opened by a click or by Enter, marked when selected. */
function OpenRow({ id, variant, selected, onOpen, children }) {
  return html`
    <li
      class=${`row memory-row ${variant}${selected ? " selected" : ""}`}
      data-test="memory-row"
      data-id=${id}
      tabindex="0"
      onClick=${() => onOpen(id)}
      onKeyDown=${(e) => e.key === "Enter" && onOpen(id)}
    >
      ${children}
    </li>
  `;
}

function MemoryRow({ memory, selected, onOpen }) {
  const text = memoryText(memory);
  return html`
    <${OpenRow} id=${memory.id} variant=${`status-${memory.status || "active"}`} selected=${selected} onOpen=${onOpen}>
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
    <//>
  `;
}

function HitRow({ hit, selected, onOpen }) {
  // a team hit lives in the mirror, not the store: nothing to open, its authors shown
  const team = hit.id.startsWith("team:");
  const authors = team && Array.isArray(hit.extra?.authors) ? hit.extra.authors.join(", ") : "";
  return html`
    <${OpenRow} id=${hit.id} variant="hit" selected=${selected} onOpen=${team ? () => {} : onOpen}>
      <div class="row-head">
        <${KindBadge} kind=${hit.kind} />
        ${hit.extra?.earlier && html`<span class="badge status" data-test="earlier" title=${t("earlierThan", hit.extra.earlier.by)}>${t("earlier", hit.extra.earlier.date)}</span>`}
        <${ProjectName} project=${hit.project} />
        <span class="spacer"></span>
        <span class="muted small"><${Time} ts=${hit.created} /></span>
      </div>
      <div class="row-text">${clip(hit.text, 200)}</div>
      <div class="row-meta muted small"><${Id} id=${hit.id} />${authors && ` · ${t("sharedBy")} ${authors}`}</div>
      <${Explain} hit=${hit} />
    <//>
  `;
}

/** Add a memory by hand: kind, text, tags (comma-separated) and scope, checked by the API as
 * `remember` checks it; an error keeps what was typed. */
function AddMemory({ project, onAdded, onClose }) {
  const { report, notify } = useApp();
  const [kind, setKind] = useState("fact");
  const [text, setText] = useState("");
  const [tags, setTags] = useState("");
  const [scope, setScope] = useState(project === ALL ? "" : project);
  const [busy, setBusy] = useState(false);
  const textRef = useRef(null);
  useEffect(() => textRef.current && textRef.current.focus(), []);

  const save = async () => {
    setBusy(true);
    try {
      const given = tags.split(/[,，]/).map((tag) => tag.trim()).filter(Boolean);
      const written = await api("POST", "/v1/memories", { text, kind, tags: given, project: scope });
      notify(describeWritten(written));
      onAdded(written);
    } catch (err) {
      report(err);
    } finally {
      setBusy(false);
    }
  };
  const keys = saveKeys(save, onClose);
  return html`
    <div class="add-memory edit-box" data-test="add-form">
      <div class="toolbar">
        <label>${t("kind")}
          <select data-test="add-kind" value=${kind} onChange=${(e) => setKind(e.target.value)}>
            ${KINDS.map((k) => html`<option key=${k} value=${k}>${kindLabel(k)}</option>`)}
          </select>
        </label>
        <label>${t("project")}
          <select data-test="add-project" value=${scope} onChange=${(e) => setScope(e.target.value)}>
            <${ProjectOptions} />
          </select>
        </label>
      </div>
      <textarea data-test="add-text" ref=${textRef} rows="4" placeholder=${t("addText")} value=${text}
        onInput=${(e) => setText(e.target.value)} onKeyDown=${keys}></textarea>
      <input type="text" data-test="add-tags" placeholder=${t("addTags")} value=${tags}
        onInput=${(e) => setTags(e.target.value)} onKeyDown=${keys} />
      <div class="actions">
        <button class="primary" data-test="add-save" disabled=${busy} onClick=${save}>${t("save")}</button>
        <button data-test="add-cancel" onClick=${onClose}>${t("cancel")}</button>
        <span class="muted small">${t("saveHint")}</span>
      </div>
    </div>
  `;
}

export function MemoriesPage({ arg }) {
  const { report } = useApp();
  const [adding, setAdding] = useState(false);
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
          <span class="spacer"></span>
          ${!adding && html`<button data-test="add-memory" onClick=${() => setAdding(true)}>${t("addMemory")}</button>`}
        </div>
        ${adding &&
        html`<${AddMemory} project=${project} onClose=${() => setAdding(false)} onAdded=${(written) => {
          setAdding(false);
          changed();
          if (written && written.id) open(written.id);
        }} />`}
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
            ${["memories", "turns", "team", "all"].map((s) => html`<option key=${s} value=${s}>${t(`source_${s}`)}</option>`)}
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
        <${Field} label=${t("entities")}><${EntityLinks} refId=${r.id || id} version=${r.updated ?? r.ts} /><//>
      </dl>
      ${isMemory && (r.evidence || []).length > 0 &&
      (showEvidence
        ? html`<div class="evidence-box"><h3>${t("evidence")}</h3><${EvidenceList} id=${r.id || id} /></div>`
        : html`<button class="link" data-test="show-evidence" onClick=${() => setShowEvidence(true)}>${t("showEvidence")}</button>`)}
    </aside>
  `;
}
