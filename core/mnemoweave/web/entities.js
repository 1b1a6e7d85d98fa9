/*
 * The Entities page: what the memories are about (services, libraries, files, people...),
 * read from the store's knowledge graph. #/entities lists them, #/entities/<name> shows one:
 * its names and aliases, its relations, the memories and turns naming it, and a small
 * neighbourhood graph drawn as SVG (Preact elements, presentation attributes and classes
 * only: no inline style, no markup from stored text).
 */
import { html, useEffect, useState } from "./vendor/preact-htm.js";
import { ALL, api, enc, qs } from "./api.js";
import { entityKindLabel, t } from "./labels.js";
import { Id, KindBadge, Loading, ProjectName, ProjectOptions, Time, TurnView, useApp, useLoad } from "./shared.js";
import { clip } from "./util.js";

const LIMIT = 200; // entities the list asks for (the API's default)
const TEXT_REF = /^[mt]_\d+$/; // what /v1/entities?ref= reads (a memory or a turn)
const RELATION_TYPES = ["uses", "replaced_by", "depends_on", "pinned_to", "rule_about", "fixed_by"];

/** The hash of an entity's page (the API finds an entity by any of its names or its key). */
export function entityHref(name) {
  return `#/entities/${enc(String(name ?? ""))}`;
}

function EntityKind({ kind }) {
  if (!kind) return null;
  return html`<span class=${`badge entity-kind ekind-${kind}`} title=${kind}>${entityKindLabel(kind)}</span>`;
}

function memoryCount(n) {
  return t(n === 1 ? "memoryCountOne" : "memoryCount", n ?? 0);
}

function sharedText(a, b, n) {
  return t(n === 1 ? "sharedOne" : "sharedMany", a, b, n);
}

function turnCount(n) {
  return `${n ?? 0} ${t(n === 1 ? "turn" : "turns")}`;
}

/** A label's {0}, {1}, {2} replaced by nodes (links, names): the pieces, text kept as text. */
function fill(template, parts) {
  return String(template)
    .split(/(\{\d\})/)
    .filter((piece) => piece !== "")
    .map((piece) => {
      const slot = /^\{(\d)\}$/.exec(piece);
      return slot ? parts[Number(slot[1])] : piece;
    });
}

/** "Celery replaced by RQ": a relation as a sentence of the page's language. Other entities
 * are links to their pages when `isSelf` is given; a pinned version is shown as code. */
function RelationText({ relation, isSelf }) {
  const end = (name, version) => {
    if (name === null || name === undefined || name === "") return html`<span class="muted">—</span>`;
    if (version) return html`<code class="version">${String(name)}</code>`;
    if (!isSelf || isSelf(name)) return html`<strong class="rel-end">${String(name)}</strong>`;
    return html`<a class="rel-end" href=${entityHref(name)}>${String(name)}</a>`;
  };
  const type = String(relation.type || "");
  const template = RELATION_TYPES.includes(type) ? t(`rel_${type}`) : t("rel_other");
  const parts = [end(relation.source), end(relation.target, type === "pinned_to"), type.replace(/_/g, " ")];
  return html`<span class="relation-text">${fill(template, parts)}</span>`;
}

/** One line per distinct relation (type, source, target), with every memory stating it;
 * past when no active memory states it any more. Current ones first, newest first. */
function groupRelations(relations) {
  const groups = new Map();
  for (const r of relations || []) {
    const key = JSON.stringify([r.type, r.source, r.target]);
    const group = groups.get(key) || { type: r.type, source: r.source, target: r.target, evidence: [], past: true, ts: r.ts };
    if (r.evidence && !group.evidence.includes(r.evidence)) group.evidence.push(r.evidence);
    group.past = group.past && Boolean(r.past);
    group.ts = Math.max(Number(group.ts) || 0, Number(r.ts) || 0);
    groups.set(key, group);
  }
  const all = [...groups.values()];
  return [...all.filter((g) => !g.past), ...all.filter((g) => g.past)];
}

function PastBadge() {
  return html`<span class="badge past" data-test="past">${t("past")}</span>`;
}

function RecordLink({ id }) {
  return TEXT_REF.test(String(id)) ? html`<a class="id" href=${`#/memories/${enc(id)}`}>${id}</a>` : html`<${Id} id=${id} />`;
}

// ---------------------------------------------------------------------------------------
// The neighbourhood graph: the entity in the middle, its neighbours on a circle around it.

const G = { width: 560, height: 360, cx: 280, cy: 180, radius: 122, node: 9 };

/** A rough width of `text` at the graph's font size (CJK characters are wider). */
function textWidth(text) {
  let width = 0;
  for (const ch of String(text)) width += /[\u2e80-\u9fff\uac00-\ud7af\uff00-\uffef]/.test(ch) ? 13 : 7.4;
  return width;
}

function edgeWidth(shared, most) {
  if (most <= 1) return 1.5;
  return 1.5 + (3.5 * (Math.max(1, shared) - 1)) / (most - 1);
}

/** Where a neighbour's label goes: outside its node, away from the middle. */
function labelPlace(x, y, cos, sin) {
  const gap = G.node + 6;
  if (sin < -0.8) return { x, y: y - gap, anchor: "middle" };
  if (sin > 0.8) return { x, y: y + gap + 2, anchor: "middle" };
  return cos >= 0 ? { x: x + gap, y, anchor: "start" } : { x: x - gap, y, anchor: "end" };
}

export function NeighbourGraph({ entity }) {
  const neighbours = (entity.neighbours || []).filter((n) => n && n.key);
  if (!neighbours.length) return html`<p class="muted small" data-test="no-neighbours">${t("noNeighbours")}</p>`;
  const most = Math.max(1, ...neighbours.map((n) => Number(n.shared) || 1));
  const nodes = neighbours.map((n, i) => {
    const angle = -Math.PI / 2 + (2 * Math.PI * i) / neighbours.length;
    const cos = Math.cos(angle);
    const sin = Math.sin(angle);
    const x = G.cx + G.radius * cos;
    const y = G.cy + G.radius * sin;
    return { ...n, shared: Number(n.shared) || 1, x, y, label: labelPlace(x, y, cos, sin) };
  });
  const centreName = clip(entity.name, 22);
  const centreWidth = Math.min(G.width - 20, textWidth(centreName) + 24);
  return html`
    <svg
      class="entity-graph"
      data-test="entity-graph"
      viewBox=${`0 0 ${G.width} ${G.height}`}
      preserveAspectRatio="xMidYMid meet"
      aria-label=${t("neighbourhoodOf", entity.name)}
    >
      <g class="edges">
        ${nodes.map((n) => {
          const mx = G.cx + (n.x - G.cx) * 0.58;
          const my = G.cy + (n.y - G.cy) * 0.58;
          return html`
            <g key=${n.key} class="edge-group" data-test="entity-edge" data-id=${n.key} data-shared=${n.shared}>
              <title>${sharedText(entity.name, n.name, n.shared)}</title>
              <line class="edge" x1=${G.cx} y1=${G.cy} x2=${n.x} y2=${n.y} stroke-width=${edgeWidth(n.shared, most).toFixed(2)} />
              ${most > 1 &&
              html`<text class="edge-label" x=${mx} y=${my} text-anchor="middle" dominant-baseline="central">${n.shared}</text>`}
            </g>
          `;
        })}
      </g>
      <g class="node centre" data-test="entity-centre" data-id=${entity.key}>
        <title>${entity.name}</title>
        <rect x=${G.cx - centreWidth / 2} y=${G.cy - 15} width=${centreWidth} height="30" rx="15" ry="15" />
        <text x=${G.cx} y=${G.cy} text-anchor="middle" dominant-baseline="central">${centreName}</text>
      </g>
      ${nodes.map(
        (n) => html`
          <a key=${n.key} class=${`node neighbour ekind-${n.kind || "name"}`} href=${entityHref(n.name)}
            data-test="entity-node" data-id=${n.key} data-shared=${n.shared}>
            <title>${`${n.name} (${entityKindLabel(n.kind)}) · ${sharedText(entity.name, n.name, n.shared)}`}</title>
            <circle cx=${n.x} cy=${n.y} r=${G.node} />
            <text x=${n.label.x} y=${n.label.y} text-anchor=${n.label.anchor} dominant-baseline="central">${clip(n.name, 18)}</text>
          </a>
        `,
      )}
    </svg>
  `;
}

// ---------------------------------------------------------------------------------------
// The list, and one entity.

function EntityRow({ entity }) {
  return html`
    <a class="row entity-row" data-test="entity-row" data-id=${entity.key} href=${entityHref(entity.name)}>
      <span class="entity-name" title=${entity.name}>${entity.name}</span>
      <${EntityKind} kind=${entity.kind} />
      <span class="spacer"></span>
      <span class="counts muted small">
        <span data-test="memory-count">${memoryCount(entity.memories)}</span>
        ${entity.turns ? html` · <span data-test="turn-count">${turnCount(entity.turns)}</span>` : null}
      </span>
    </a>
  `;
}

function EntityList({ project, filter }) {
  const list = useLoad(() => api("GET", `/v1/entities${qs({ project, limit: LIMIT })}`), [project]);
  const all = Array.isArray(list.data) ? list.data : [];
  const needle = filter.trim().toLowerCase();
  const shown = needle
    ? all.filter((e) => String(e.name).toLowerCase().includes(needle) || String(e.key).includes(needle))
    : all;
  return html`
    <div class="results">
      ${list.loading && !list.data && html`<${Loading} />`}
      ${!list.loading && shown.length === 0 && html`<p class="empty">${all.length ? t("noResults") : t("noEntities")}</p>`}
      <ul class="entity-rows">
        ${shown.map((e) => html`<li key=${e.key}><${EntityRow} entity=${e} /></li>`)}
      </ul>
      ${all.length >= LIMIT && html`<p class="muted small">${t("entitiesCapped", LIMIT)}</p>`}
    </div>
  `;
}

function Section({ title, count, children, test }) {
  return html`
    <section class="panel entity-section" data-test=${test}>
      <h2>${title}${count !== undefined && html` <span class="count">${count}</span>`}</h2>
      ${children}
    </section>
  `;
}

function EntityDetail({ name, project }) {
  const { clearError } = useApp();
  useEffect(() => clearError(), [name, clearError]); // another entity's error is not this one's
  const found = useLoad(() => api("GET", `/v1/entities/${enc(name)}${qs({ project })}`), [name, project]);
  const e = found.data;
  if (!e) {
    return found.loading
      ? html`<${Loading} />`
      : html`<p class="empty" data-test="entity-missing">${t("noEntity")}</p>`;
  }
  const own = new Set([e.key, e.name, ...(e.names || []).map((n) => n.name)].map((s) => String(s ?? "").toLowerCase()));
  const isSelf = (n) => own.has(String(n).toLowerCase());
  const relations = groupRelations(e.relations);
  const stated = new Map((e.timeline || []).map((item) => [item.memory, item.relations || []]));
  const memories = e.memories || [];
  const turns = e.turns || [];
  const active = memories.filter((m) => !m.past).length;
  return html`
    <article class="entity-detail" data-test="entity-detail" data-id=${e.key}>
      <header class="entity-head">
        <h1 data-test="entity-title">${e.name}</h1>
        <${EntityKind} kind=${e.kind} />
        <code class="id" title=${t("entityKey")}>${e.key}</code>
        <span class="spacer"></span>
        <span class="muted small">${memoryCount(active)}${memories.length > active ? ` (+${memories.length - active} ${t("past")})` : ""}</span>
      </header>
      <div class="entity-grid">
        <div class="entity-main">
          <${Section} title=${t("names")} test="entity-names">
            <dl class="kv">
              <div class="kv-row"><dt>${t("names")}</dt><dd>
                ${(e.names || []).length
                  ? e.names.map(
                      (n) => html`<span key=${n.name} class="chip" data-test="entity-alias-name" title=${t("namedIn", n.texts)}
                        >${n.name} <span class="muted small">×${n.texts}</span></span>`,
                    )
                  : html`<span class="muted">—</span>`}
              </dd></div>
              <div class="kv-row"><dt>${t("aliases")}</dt><dd>
                ${(e.aliases || []).length
                  ? e.aliases.map(
                      (a) => html`<span key=${a.key} class="chip" data-test="entity-alias" data-id=${a.key}
                        >${a.key}${a.origin && html` <span class="muted small">(${a.origin})</span>`}</span>`,
                    )
                  : html`<span class="muted">—</span>`}
              </dd></div>
            </dl>
          <//>

          <${Section} title=${t("relations")} count=${relations.length} test="entity-relations">
            ${relations.length === 0
              ? html`<p class="muted small">${t("noRelations")}</p>`
              : html`<ul class="plain relations">
                  ${relations.map(
                    (r) => html`
                      <li key=${JSON.stringify([r.type, r.source, r.target])} class=${`relation${r.past ? " past" : ""}`}
                        data-test="entity-relation" data-type=${r.type} data-past=${r.past ? "true" : "false"}>
                        <${RelationText} relation=${r} isSelf=${isSelf} />
                        ${r.past && html` <${PastBadge} />`}
                        <span class="muted small evidence-ids">${r.evidence.map((id) => html`<${RecordLink} key=${id} id=${id} /> `)}</span>
                      </li>
                    `,
                  )}
                </ul>`}
          <//>

          <${Section} title=${t("entityMemories")} count=${memories.length} test="entity-memories">
            ${memories.length === 0
              ? html`<p class="muted small">${t("noMemories")}</p>`
              : html`<ul class="plain entity-memories">
                  ${memories.map(
                    (m) => html`
                      <li key=${m.id} class=${`entity-memory${m.past ? " past" : ""}`} data-test="entity-memory" data-id=${m.id}
                        data-past=${m.past ? "true" : "false"}>
                        <a class="memory-link" href=${`#/memories/${enc(m.id)}`}>${m.title || m.id}</a>
                        <div class="row-meta muted small">
                          <${KindBadge} kind=${m.kind} />
                          ${m.past && html`<span class=${`badge status status-${m.status}`} data-test="past">${t(`status_${m.status}`)}</span>`}
                          <${ProjectName} project=${m.project} />
                          <${Time} ts=${m.created} compact />
                          <${Id} id=${m.id} />
                        </div>
                        ${(stated.get(m.id) || []).length > 0 &&
                        html`<div class="muted small stated">
                          ${t("states")}${" "}
                          ${stated.get(m.id).map((r, i) => html`<span key=${i}>${i ? "; " : ""}<${RelationText} relation=${r} /></span>`)}
                        </div>`}
                      </li>
                    `,
                  )}
                </ul>`}
          <//>

          <${Section} title=${t("entityTurns")} count=${turns.length} test="entity-turns">
            ${turns.length === 0
              ? html`<p class="muted small">${t("noEntityTurns")}</p>`
              : turns.map(
                  (tn) => html`
                    <div key=${tn.id} class="entity-turn">
                      <${TurnView} turn=${tn} test="entity-turn" />
                      ${tn.session && html`<div class="muted small turn-session">${t("session")} <${Id} id=${tn.session} /></div>`}
                    </div>
                  `,
                )}
          <//>
        </div>
        <div class="entity-side">
          <${Section} title=${t("neighbourhood")} count=${(e.neighbours || []).length} test="entity-neighbourhood">
            <${NeighbourGraph} entity=${e} />
            ${(e.neighbours || []).length > 0 &&
            html`<p class="muted small">${t("graphHint")}</p>`}
          <//>
        </div>
      </div>
    </article>
  `;
}

export function EntitiesPage({ arg }) {
  const [project, setProject] = useState(ALL);
  const [filter, setFilter] = useState("");
  const scope = project === ALL ? undefined : project;
  return html`
    <section class="page entities">
      <div class="toolbar">
        ${arg && html`<a class="back" data-test="entities-back" href="#/entities">${t("allEntities")}</a>`}
        <label>${t("project")}
          <select data-test="project" value=${project} onChange=${(e) => setProject(e.target.value)}>
            <${ProjectOptions} withAll />
          </select>
        </label>
        ${!arg &&
        html`<input type="search" data-test="entity-filter" placeholder=${t("filterEntities")} value=${filter}
          onInput=${(e) => setFilter(e.target.value)} />`}
      </div>
      ${arg ? html`<${EntityDetail} name=${arg} project=${scope} />` : html`<${EntityList} project=${scope} filter=${filter} />`}
    </section>
  `;
}

/** The entities a memory or turn names, as links to their pages (a memory's detail panel). */
export function EntityLinks({ refId, version }) {
  const ok = TEXT_REF.test(String(refId));
  const found = useLoad(() => (ok ? api("GET", `/v1/entities${qs({ ref: refId })}`) : Promise.resolve([])), [refId, version]);
  if (!found.data) return found.loading ? html`<span class="muted small">${t("loading")}</span>` : html`<span class="muted">—</span>`;
  const list = Array.isArray(found.data) ? found.data : [];
  if (!list.length) return html`<span class="muted" data-test="memory-entities">—</span>`;
  return html`
    <span class="entity-links" data-test="memory-entities">
      ${list.map(
        (e) => html`<a key=${e.key} class="chip entity-chip" data-test="memory-entity" data-id=${e.key}
          href=${entityHref(e.name)} title=${entityKindLabel(e.kind)}>${e.name}</a>`,
      )}
    </span>
  `;
}
