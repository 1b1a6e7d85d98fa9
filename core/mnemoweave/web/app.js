/*
 * mnemoweave web UI (Preact + htm, no build step): the shell (sign-in, navigation, pages).
 *
 * Served by the daemon under /ui/ with a strict CSP: no inline script or style, no eval,
 * no innerHTML. Every piece of stored text is rendered as a text child (escaped by
 * construction). It calls the daemon's /v1 API (core/mnemoweave/daemon/openapi.json); the
 * modules beside this one hold the labels, the API helper and one page each.
 *
 * Stable selectors for browser tests
 * ----------------------------------
 * Global
 *   a[data-nav=memories|entities|review|sessions|skills|status|files]   top navigation links
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
 *   [data-test=earlier]            on a search-result row a newer memory corrects ("earlier · date")
 *   [data-test=memory-detail][data-id=<id>]  detail panel; [data-test=memory-body] its text
 *   [data-test=forget]             (active memories)   [data-test=restore] (non-active memories)
 *   [data-test=purge] then the in-page [data-test=confirm] ([data-test=cancel] backs out)
 *   [data-test=edit] -> textarea[data-test=edit-text] + [data-test=save] (Ctrl/Cmd+Enter saves,
 *                     Escape cancels)
 *   [data-test=add-memory] -> [data-test=add-form]: select[data-test=add-kind],
 *                     select[data-test=add-project] ("" = global), textarea[data-test=add-text],
 *                     input[data-test=add-tags] (comma-separated), [data-test=add-save]
 *                     (Ctrl/Cmd+Enter saves), [data-test=add-cancel] (Escape); a new memory opens
 *   [data-test=feedback-useful] [data-test=feedback-wrong] [data-test=feedback-outdated]
 *   [data-test=show-evidence] -> [data-test=evidence-turn] rows
 *   [data-test=memory-entities] the entities the memory names (GET /v1/entities?ref=<id>):
 *     a[data-test=memory-entity][data-id=<entity key>] links to their entity pages
 * Entities page (#/entities, one entity at #/entities/<URL-encoded name or key>)
 *   select[data-test=project]      as on the Memories page ("*" = all projects)
 *   input[data-test=entity-filter] filters the list by name (in the page)
 *   a[data-test=entity-row][data-id=<entity key>]   list rows (links to the entity's page);
 *     [data-test=memory-count] inside: its active memories ([data-test=turn-count]: turns)
 *   [data-test=entity-detail][data-id=<entity key>] one entity; [data-test=entity-title] its
 *     name; a[data-test=entities-back] back to the list; a missing one shows the API's error
 *     in [data-test=error] and [data-test=entity-missing]
 *   [data-test=entity-names]: [data-test=entity-alias-name] (names as written),
 *     [data-test=entity-alias][data-id=<alias key>]
 *   [data-test=entity-relation][data-type=<type>][data-past=true|false]  one relation as a
 *     sentence ("Celery replaced by RQ"); other entities in it are links; [data-test=past]
 *     marks a past one (no active memory states it)
 *   [data-test=entity-memory][data-id=<m_N>][data-past=true|false]  memories naming it,
 *     newest first, each with a link to #/memories/<m_N>; [data-test=past] on a superseded one
 *   [data-test=entity-turn][data-id=<t_N>]  the latest turns naming it
 *   svg[data-test=entity-graph]    the neighbourhood: [data-test=entity-centre][data-id=<key>]
 *     in the middle, a[data-test=entity-node][data-id=<key>][data-shared=<n>] each neighbour
 *     (a link to its page), [data-test=entity-edge][data-id=<key>] each edge (thicker and
 *     labelled by the memories shared); [data-test=no-neighbours] when there is none
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
import { html, render, useCallback, useEffect, useMemo, useRef, useState } from "./vendor/preact-htm.js";
import { AuthError, PAGES, api, getToken, whenUnauthorized, qs, setToken, takeLoginCode } from "./api.js";
import { EntitiesPage } from "./entities.js";
import { FilesPage } from "./files.js";
import { t } from "./labels.js";
import { MemoriesPage } from "./memories.js";
import { ReviewPage } from "./review.js";
import { SessionsPage } from "./sessions.js";
import { Ctx, useRoute } from "./shared.js";
import { SkillsPage } from "./skills.js";
import { StatusPage } from "./status.js";

// Taken before anything else runs; a link pasted into an open tab is caught on hashchange.
let LOGIN_CODE = takeLoginCode();

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
    whenUnauthorized((message) => {
      setAuthMessage(message || "");
      setAuth("out");
    });
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
  const clearError = useCallback(() => setError(""), []);
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
    () => ({ report, clearError, notify, projects, projectName, pending, refreshPending, reloadProjects }),
    [report, clearError, notify, projects, projectName, pending, refreshPending, reloadProjects],
  );

  if (auth === "login") return html`<main class="signin"><p class="muted">${t("signingIn")}</p></main>`;
  if (auth === "out") return html`<${SignIn} message=${authMessage} />`;

  const Page = { memories: MemoriesPage, entities: EntitiesPage, review: ReviewPage, sessions: SessionsPage, skills: SkillsPage, status: StatusPage, files: FilesPage }[route.page];
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
