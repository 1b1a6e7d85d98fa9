/* Small helpers: times and ages, numbers, sizes, safe links. */
import { LANG } from "./labels.js";

const rtf = new Intl.RelativeTimeFormat(LANG, { numeric: "auto" });
const UNITS = [
  ["year", 31536000],
  ["month", 2592000],
  ["week", 604800],
  ["day", 86400],
  ["hour", 3600],
  ["minute", 60],
  ["second", 1],
];

export function age(ts) {
  const seconds = ts - Date.now() / 1000;
  const abs = Math.abs(seconds);
  for (const [unit, size] of UNITS) {
    if (abs >= size || unit === "second") return rtf.format(Math.round(seconds / size), unit);
  }
  return "";
}

export function localTime(ts) {
  return new Date(ts * 1000).toLocaleString(LANG === "zh" ? "zh-CN" : undefined);
}

export function duration(seconds) {
  const s = Math.round(seconds);
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const parts = [];
  if (d) parts.push(`${d}d`);
  if (h) parts.push(`${h}h`);
  if (m) parts.push(`${m}m`);
  parts.push(`${s % 60}s`);
  return parts.slice(0, 3).join(" ");
}

export function humanBytes(n) {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = n;
  let unit = -1;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

export function clip(text, n) {
  const s = String(text ?? "");
  return s.length > n ? `${s.slice(0, n)}…` : s;
}

export function fmtNum(v) {
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toFixed(3);
  if (Array.isArray(v)) return v.map(fmtNum).join(", ");
  if (v === null || v === undefined) return "—";
  return String(v);
}

export function safeUrl(url) {
  try {
    const parsed = new URL(String(url));
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
  } catch {
    return null;
  }
}

export function describeWritten(w) {
  if (!w || typeof w !== "object") return String(w ?? "");
  const parts = [w.action, w.id].filter(Boolean).join(" ");
  return w.reason ? `${parts} — ${w.reason}` : parts;
}

export function isTyping(target) {
  if (!target || !target.tagName) return false;
  if (target.isContentEditable) return true;
  const tag = target.tagName;
  if (tag === "TEXTAREA" || tag === "SELECT") return true;
  if (tag === "INPUT") return !["checkbox", "radio", "button", "submit", "reset"].includes(target.type);
  return false;
}
