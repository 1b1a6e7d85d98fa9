/* The daemon's API: the bearer token, the one-time sign-in code, one request helper. */
import { t } from "./labels.js";

const TOKEN_KEY = "mnemoweave.token";
export const PAGES = ["memories", "entities", "review", "sessions", "skills", "status", "files"];
export const KINDS = ["pref", "pers", "skill", "mission", "conclusion", "fact"];
export const STATUSES = ["active", "superseded", "trashed"];
export const PAGE_SIZE = 50;
export const RECORD_ID = /^[mtc]_\d+$/; // ids /v1/records/{ref} answers
export const ALL = "*"; // project select value meaning "every project" (no project parameter)

export class AuthError extends Error {}

let onUnauthorized = () => {};

/** What the page does when the daemon answers 401 (set once by the shell). */
export function whenUnauthorized(handler) {
  onUnauthorized = handler;
}

export function getToken() {
  try {
    return localStorage.getItem(TOKEN_KEY) || "";
  } catch {
    return "";
  }
}

export function setToken(token) {
  try {
    if (token) localStorage.setItem(TOKEN_KEY, token);
    else localStorage.removeItem(TOKEN_KEY);
  } catch {
    /* storage disabled: the session lasts as long as the page */
  }
}

/** Call the daemon: adds the token and JSON headers; throws Error(error line) on non-2xx. */
export async function api(method, path, body) {
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
export function qs(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null) search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

export const enc = encodeURIComponent;

/** The one-time sign-in code in `#login=CODE`, dropped from the URL at once; or null. */
export function takeLoginCode() {
  if (!location.hash.startsWith("#login=")) return null;
  const raw = location.hash.slice("#login=".length);
  history.replaceState(null, "", "/ui/");
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}
