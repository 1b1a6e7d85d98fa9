/* The Sessions page: sessions, their turns, and what was woven before each prompt. */
import { html, useState } from "./vendor/preact-htm.js";
import { ALL, PAGE_SIZE, RECORD_ID, api, enc, qs } from "./api.js";
import { t } from "./labels.js";
import { Id, KindBadge, Loading, LongText, Pager, ProjectName, ProjectOptions, Time, TurnView, titleAdds, useLoad } from "./shared.js";
import { clip, localTime } from "./util.js";

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

export function SessionsPage() {
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
