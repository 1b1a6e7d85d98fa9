/* The Status page: status, projects, the daemon, the hygiene report on request. */
import { html, useState } from "./vendor/preact-htm.js";
import { api } from "./api.js";
import { t } from "./labels.js";
import { Loading, Value, useLoad } from "./shared.js";

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

export function StatusPage() {
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
