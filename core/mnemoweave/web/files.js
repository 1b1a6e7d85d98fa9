/* The Files page: import a file, download an export. */
import { html, useEffect, useRef, useState } from "./vendor/preact-htm.js";
import { api } from "./api.js";
import { t } from "./labels.js";
import { Value, useApp } from "./shared.js";
import { humanBytes } from "./util.js";

export function FilesPage() {
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
