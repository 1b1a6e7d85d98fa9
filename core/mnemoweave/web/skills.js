/* The Skills page. */
import { html } from "./vendor/preact-htm.js";
import { api } from "./api.js";
import { t } from "./labels.js";
import { Loading, Time, useLoad } from "./shared.js";
import { fmtNum, safeUrl } from "./util.js";

export function SkillsPage() {
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
