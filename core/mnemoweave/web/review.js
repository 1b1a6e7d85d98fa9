/* The Review page: pending cards with their evidence, decided one by one or in a batch. */
import { html, useEffect, useMemo, useRef, useState } from "./vendor/preact-htm.js";
import { api, enc } from "./api.js";
import { t } from "./labels.js";
import { EditBox, EvidenceList, Id, KindBadge, Loading, ProjectOptions, Time, useApp, useLoad } from "./shared.js";
import { describeWritten, fmtNum, isTyping } from "./util.js";

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

export function ReviewPage() {
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
