// mnemoweave for OpenCode: long-term memory woven into the chat.
//
// Load it with `mnemoweave install opencode`, by copying or linking this file into
// `.opencode/plugin/` (a project) or `~/.config/opencode/plugin/` (every project), or by
// naming it in opencode.json "plugin" (its absolute path or file:// URL). Plain ESM, node
// built-ins only; it runs in node and in OpenCode's Bun.
//
// Each hook sends one small JSON object to the mnemoweave daemon, `POST
// /v1/hooks/opencode/<event>` with body `{"payload": ...}`, over the Unix socket
// `$MNEMOWEAVE_HOME/daemon.sock` (default `~/.mnemoweave/daemon.sock`), and reads back
// `{"output": null | {"context": text}}`. Payloads (all carry `sessionID`, `directory`,
// `worktree`):
//   chat.message                    + `messageID`, `text` (the user's own text parts)
//                                   -> the context is pushed as one synthetic text part,
//                                      stored `ignored` (so the title request, which reads
//                                      the stored message, leaves it out) and shown to the
//                                      model by experimental.chat.messages.transform, which
//                                      runs for the agent's own requests only
//   session.created                 -> its context is kept for the session's first
//                                      message, in case the weave for it fails
//   session.idle                    + `messages: [{id, text}]`, the assistant messages
//                                      seen since the last idle (from message.updated and
//                                      message.part.updated events; the client's message
//                                      list when no event was seen); a compaction's
//                                      summary message is not one of them
//   session.compacted               -> the daemon distills the session
//   experimental.session.compacting -> the context is added to the compaction context
//
// Budgets (ms, end to end): chat.message 250 (MNEMOWEAVE_HOOK_BUDGET_MS overrides it; the
// user waits on it), session.created 3000, session.idle and session.compacted 5000,
// experimental.session.compacting 2000. It fails open: whatever goes wrong, the chat goes
// on unchanged and one line goes to `$MNEMOWEAVE_HOME/logs/hooks.log`. When it loads, and
// whenever no daemon answers, it starts one, detached (`$MNEMOWEAVE_BIN`, else the command
// recorded at install, else the checkout's `.venv/bin/mnemoweave` two levels above this
// file, else `mnemoweave` on PATH), and never waits for it to warm up, but on a message:
// chat.message waits for a daemon being started at most its own budget (a daemon that is
// warming up takes an event at once, and holds a message while it may be warm within the
// message's budget, then asks for it again: see post). An event no
// daemon took goes to `mnemoweave hook opencode EVENT`, as Claude Code's hooks go: it
// answers a session's start from the store (the brief, scene and nudge need no model; the
// session's first message gets that context when its own weave cannot come), delivers the
// event if a daemon answers by then, and otherwise spools it. A payload still in flight
// when OpenCode exits, or that could not be handed over, is cleaned by `mnemoweave redact
// --json` (secrets and private spans never reach the disk; nothing is spooled when that
// cannot run) and written to `$MNEMOWEAVE_HOME/spool/` as `{"host", "event", "payload"}`
// (a temporary file renamed into place, mode 0600); the daemon stores it later, and turn
// keys make a payload delivered twice count once. What it writes under the data dir is
// its user's only: directories 0700, files 0600.

import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HOST = "opencode";
const INSTALLED_COMMAND = []; // mnemoweave:installed-command
const BUDGETS_MS = {
  "chat.message": 250,
  "session.created": 3000,
  "session.idle": 5000,
  "session.compacted": 5000,
  "experimental.session.compacting": 2000,
};
const DEFAULT_BUDGET_MS = 2000;
const AGAIN_MS = 50; // what a message keeps to ask again a daemon that just became warm
const AGAIN_PAUSE_MS = 5; // between asking a daemon that is becoming warm
const PROBE_MS = 200; // one look at the daemon when the plugin loads
const HAND_OVER_MS = 10000; // one run of `mnemoweave hook` given an event no daemon took
const PRIVATE_DIR = { recursive: true, mode: 0o700 }; // the data dir and what is in it
const PRIVATE_FILE = 0o600;
const SPAWN_EVERY_MS = 10000; // at most one daemon start per process in this window
const REDACT_MS = 10000; // one run of `mnemoweave redact`, before a payload is spooled
const MAX_REDACTED = 256 * 1024 * 1024; // bytes read back from it
const CLIENT_TIMEOUT_MS = 1000; // the message list asked of OpenCode at idle
const MAX_TRACKED = 500; // messages remembered between idles
const MAX_ANSWER = 4 * 1024 * 1024; // bytes read from the daemon
const FENCE_OPEN = '<memory source="mnemoweave"'; // how every context from the daemon opens
// Connection errors that mean nobody listens (node's codes, then Bun's).
const UNREACHABLE = new Set([
  "ENOENT",
  "ECONNREFUSED",
  "ENOTSOCK",
  "FailedToOpenSocket",
  "ConnectionRefused",
]);

function home() {
  const value = process.env.MNEMOWEAVE_HOME;
  if (!value) return path.join(os.homedir(), ".mnemoweave");
  if (value === "~" || value.startsWith("~/")) return path.join(os.homedir(), value.slice(1));
  return value;
}

function budget(event) {
  const override = process.env.MNEMOWEAVE_HOOK_BUDGET_MS || "";
  if (event === "chat.message" && /^\d+$/.test(override)) return Number(override);
  return BUDGETS_MS[event] ?? DEFAULT_BUDGET_MS;
}

function stamp() {
  const d = new Date();
  const two = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T` +
    `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

function log(where, message) {
  try {
    fs.mkdirSync(path.join(where, "logs"), PRIVATE_DIR);
    const line = String(message).split(/\s+/).filter(Boolean).join(" ").slice(0, 500);
    fs.appendFileSync(path.join(where, "logs", "hooks.log"), `${stamp()} ${line}\n`, {
      mode: PRIVATE_FILE,
    });
  } catch {
    // nowhere left to say it
  }
}

let spooled = 0;

// The payload as mnemoweave stores text (secrets redacted, private spans dropped), from
// `mnemoweave redact --json`: the one rule set, in Python, cleans all that reaches the disk.
// Throws when mnemoweave cannot be run (nothing is spooled then).
function scrubbed(payload) {
  const command = daemonCommand();
  const done = spawnSync(command[0], [...command.slice(1), "redact", "--json"], {
    input: JSON.stringify(payload),
    encoding: "utf8",
    timeout: REDACT_MS,
    maxBuffer: MAX_REDACTED,
  });
  if (done.error) throw done.error;
  if (done.status !== 0) {
    const said = String(done.stderr || "").trim().split("\n").at(-1);
    throw new Error(`${command[0]} redact failed (${done.status ?? done.signal}): ${said}`);
  }
  return JSON.parse(done.stdout);
}

// What hook.py's spool() writes: {"host", "event", "payload"}, whole files only, 0600.
function spool(where, event, payload) {
  const record = JSON.stringify({ host: HOST, event, payload: scrubbed(payload) });
  const folder = path.join(where, "spool");
  fs.mkdirSync(folder, PRIVATE_DIR);
  const ns = BigInt(Date.now()) * 1000000n + BigInt(spooled++ % 1000000);
  const name = `${ns}-${process.pid}.json`;
  const temporary = path.join(folder, `.${name}`);
  fs.writeFileSync(temporary, record, { encoding: "utf8", mode: PRIVATE_FILE, flag: "wx" });
  fs.renameSync(temporary, path.join(folder, name));
  return name;
}

// status: the daemon's HTTP status when it refused; unreachable: nothing listens.
function failure(message, status = null, unreachable = false) {
  const error = new Error(message);
  error.status = status;
  error.unreachable = unreachable;
  return error;
}

// One request over the daemon's socket; resolves to the answer's JSON object. A message
// says how long it may wait (seconds, keeping AGAIN_MS to ask again): a daemon warming up
// holds it while it may be warm in time, then asks for it again (error.again).
function post(where, event, payload, timeoutMs, mayWait = event === "chat.message") {
  const socketPath = path.join(where, "daemon.sock");
  return new Promise((resolve, reject) => {
    let settled = false;
    let request = null;
    const settle = (error, value) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) {
        request?.destroy();
        reject(error);
      } else {
        resolve(value);
      }
    };
    const timer = setTimeout(
      () => settle(failure(`the daemon did not answer ${event} in ${timeoutMs} ms`)),
      Math.max(1, timeoutMs),
    );
    let body;
    try {
      const wait = mayWait ? { wait: Math.max(0, timeoutMs - AGAIN_MS) / 1000 } : {};
      body = Buffer.from(JSON.stringify({ ...wait, payload }), "utf8");
    } catch (error) {
      settle(failure(`the payload cannot be sent: ${error.message}`, 400));
      return;
    }
    try {
      request = http.request(
        {
          socketPath,
          path: `/v1/hooks/${HOST}/${encodeURIComponent(event)}`,
          method: "POST",
          agent: false,
          headers: {
            Host: "mnemoweave",
            Connection: "close",
            "Content-Type": "application/json",
            "Content-Length": body.length,
          },
        },
        (response) => {
          const chunks = [];
          let size = 0;
          response.on("data", (chunk) => {
            size += chunk.length;
            if (size > MAX_ANSWER) settle(failure("the daemon's answer is too long"));
            else chunks.push(chunk);
          });
          response.on("error", (error) =>
            settle(failure(`the answer broke off: ${error.message}`)),
          );
          response.on("end", () => {
            let data;
            try {
              data = JSON.parse(Buffer.concat(chunks).toString("utf8"));
            } catch {
              settle(failure("the daemon sent a malformed answer"));
              return;
            }
            const status = response.statusCode || 0;
            if (status < 200 || status >= 300) {
              const said = data && typeof data.error === "string" ? data.error : "";
              const refused = failure(said || `the daemon answered HTTP ${status}`, status);
              refused.again = status === 503 && data?.again === true;
              settle(refused);
            } else if (!data || typeof data !== "object" || Array.isArray(data)) {
              settle(failure("the daemon sent a malformed answer"));
            } else {
              settle(null, data);
            }
          });
        },
      );
      request.on("error", (error) => {
        const nobody = UNREACHABLE.has(error.code);
        const said = nobody ? `no daemon at ${socketPath}` : "the connection to the daemon broke";
        settle(failure(`${said}: ${error.code || error.message}`, null, nobody));
      });
      request.end(body);
    } catch (error) {
      const nobody = UNREACHABLE.has(error.code);
      settle(failure(`no daemon at ${socketPath}: ${error.message}`, null, nobody));
    }
  });
}

function executable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function pluginDir() {
  try {
    return path.dirname(fs.realpathSync(fileURLToPath(import.meta.url)));
  } catch {
    return "";
  }
}

// How to run mnemoweave, without relying on PATH when we can.
function daemonCommand() {
  const override = process.env.MNEMOWEAVE_BIN;
  if (override && executable(override)) return [override];
  if (INSTALLED_COMMAND.length && executable(INSTALLED_COMMAND[0])) return [...INSTALLED_COMMAND];
  const here = pluginDir();
  const checkout = here ? path.resolve(here, "..", "..", ".venv", "bin", "mnemoweave") : "";
  if (checkout && executable(checkout)) return [checkout];
  return ["mnemoweave"];
}

// A daemon holds store.lock ("PID daemon") from its start, while it warms up too.
function daemonStarting(where) {
  try {
    const [pid, role] = fs.readFileSync(path.join(where, "store.lock"), "utf8").trim().split(/\s+/);
    if (role !== "daemon" || !/^\d+$/.test(pid)) return false;
    process.kill(Number(pid), 0);
    return true;
  } catch (error) {
    return error?.code === "EPERM";
  }
}

let started = null; // the daemon this process started last: {at, exited}

// Start `mnemoweave serve` detached, unless this process did a moment ago or one is
// starting already (null then); what we know of the one started ({at, exited}).
function startDaemon(where) {
  if (started && Date.now() - started.at < SPAWN_EVERY_MS) return started;
  if (daemonStarting(where)) return null;
  const command = daemonCommand();
  started = { at: Date.now(), exited: false };
  let out = "ignore";
  try {
    fs.mkdirSync(path.join(where, "logs"), PRIVATE_DIR);
    out = fs.openSync(path.join(where, "logs", "daemon.log"), "a", PRIVATE_FILE);
    const child = spawn(command[0], [...command.slice(1), "--home", where, "serve"], {
      detached: true,
      stdio: ["ignore", out, out],
      env: { ...process.env, MNEMOWEAVE_HOME: where },
    });
    const mine = started;
    child.on("error", (error) => {
      mine.exited = true;
      log(where, `${HOST}: cannot start the daemon with ${command[0]}: ${error.message}`);
    });
    child.on("exit", () => {
      mine.exited = true;
    });
    child.unref();
  } catch (error) {
    started.exited = true;
    log(where, `${HOST}: cannot start the daemon with ${command[0]}: ${error.message}`);
  } finally {
    if (typeof out === "number") fs.closeSync(out);
  }
  return started;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The daemon's answer. When none answers, one is started; only a message waits for it (at
// most its budget): anything else is refused at once as unreachable (see send).
async function deliver(where, event, payload, deadline) {
  try {
    return await posted(where, event, payload, deadline);
  } catch (error) {
    if (!error.unreachable) throw error; // refused, slow or broken: waiting would not help
  }
  const starting = startDaemon(where);
  if (event !== "chat.message") throw failure("no daemon answered; one is starting", null, true);
  let pause = 20;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) throw failure("the daemon did not start within the hook's budget", null, true);
    if (starting?.exited) {
      throw failure("the daemon exited as it started (see logs/daemon.log)", null, true);
    }
    await sleep(Math.min(pause, left));
    pause = Math.min(pause * 2, 200);
    if (deadline - Date.now() <= 0) continue;
    try {
      return await posted(where, event, payload, deadline);
    } catch (error) {
      if (!error.unreachable) throw error;
    }
  }
}

// post(), asked again (not held) while a daemon that is becoming warm says so.
async function posted(where, event, payload, deadline) {
  let mayWait = event === "chat.message";
  for (;;) {
    try {
      return await post(where, event, payload, deadline - Date.now(), mayWait);
    } catch (error) {
      if (!error.again || deadline - Date.now() < AGAIN_PAUSE_MS) throw error;
    }
    mayWait = false;
    await sleep(AGAIN_PAUSE_MS);
  }
}

// Does a daemon answer? Only "nobody listens" is a no: a daemon that is slow or talks
// garbage is there, and waiting would not help.
function answers(where, timeoutMs) {
  return new Promise((resolve) => {
    const request = http.request(
      { socketPath: path.join(where, "daemon.sock"), path: "/v1/daemon", agent: false },
      (response) => {
        response.resume();
        resolve(true);
      },
    );
    request.setTimeout(Math.max(1, timeoutMs), () => {
      request.destroy();
      resolve(true);
    });
    request.on("error", (error) => resolve(!UNREACHABLE.has(error.code)));
    request.end();
  });
}

// Start a daemon when none answers, without waiting for it. Never throws.
async function wake(where) {
  try {
    if (!(await answers(where, PROBE_MS))) startDaemon(where);
  } catch (error) {
    log(where, `${HOST}: could not wake the daemon: ${error?.message || error}`);
  }
}

// An event no daemon took, given to `mnemoweave hook opencode EVENT` (see the top of this
// file); {ok, output}. Throws when that cannot run or fails.
function handOver(where, event, payload) {
  const command = daemonCommand();
  return new Promise((resolve, reject) => {
    let said = "";
    const child = spawn(command[0], [...command.slice(1), "hook", HOST, event], {
      stdio: ["pipe", "pipe", "ignore"],
      env: { ...process.env, MNEMOWEAVE_HOME: where },
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), HAND_OVER_MS);
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => {
      if (said.length < MAX_ANSWER) said += chunk;
    });
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`${command[0]} hook ended with ${code ?? signal}`));
      let output = null;
      try {
        output = said.trim() ? JSON.parse(said) : null;
      } catch {
        output = null;
      }
      resolve({ ok: false, output: output && typeof output === "object" ? output : null });
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(payload));
  });
}

// Payloads on their way: spooled if OpenCode exits before the daemon answered.
const inflight = new Map();
let sending = 0;
process.on("exit", () => {
  for (const { where, event, payload } of inflight.values()) {
    try {
      const name = spool(where, event, payload);
      log(where, `${HOST} ${event}: still in flight at exit; spooled to ${name}`);
    } catch (error) {
      log(where, `${HOST} ${event}: still in flight at exit; could not spool: ${error.message}`);
    }
  }
  inflight.clear();
});

// Send one event; {ok, output}. Never throws.
async function send(event, payload) {
  const where = home();
  const deadline = Date.now() + budget(event);
  const ticket = sending++;
  inflight.set(ticket, { where, event, payload });
  try {
    const answer = await deliver(where, event, payload, deadline);
    const output = answer.output;
    return { ok: true, output: output && typeof output === "object" ? output : null };
  } catch (error) {
    if (error.status !== null && error.status < 500) {
      log(where, `${HOST} ${event}: refused: ${error.message}`);
      return { ok: false, output: null };
    }
    if (error.unreachable) {
      try {
        return await handOver(where, event, payload);
      } catch (handError) {
        log(where, `${HOST} ${event}: ${error.message}; could not hand it over: ${handError.message}`);
      }
    }
    try {
      const name = spool(where, event, payload);
      log(where, `${HOST} ${event}: ${error.message}; spooled to ${name}`);
    } catch (spoolError) {
      log(where, `${HOST} ${event}: ${error.message}; could not spool: ${spoolError.message}`);
    }
    return { ok: false, output: null };
  } finally {
    inflight.delete(ticket);
  }
}

function contextOf(result) {
  const context = result?.output?.context;
  return typeof context === "string" && context ? context : "";
}

// The summary a compaction writes is OpenCode's, not something said in the session.
function summary(info) {
  return info?.summary === true || info?.mode === "compaction" || info?.agent === "compaction";
}

// A context part this plugin added (stored `ignored`, see chat.message).
function ours(part) {
  return (
    part?.type === "text" &&
    part.synthetic === true &&
    part.ignored === true &&
    typeof part.text === "string" &&
    part.text.startsWith(FENCE_OPEN)
  );
}

function said(parts) {
  return (Array.isArray(parts) ? parts : [])
    .filter((p) => p?.type === "text" && !p.synthetic && !p.ignored && typeof p.text === "string")
    .map((p) => p.text)
    .join("\n");
}

// Maps and sets keep their newest MAX_TRACKED entries.
function remember(seen, key, value) {
  seen.delete(key);
  if (seen instanceof Set) seen.add(key);
  else seen.set(key, value);
  while (seen.size > MAX_TRACKED) seen.delete(seen.keys().next().value);
}

function withTimeout(promise, ms) {
  let timer;
  const expired = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

export const MnemoweavePlugin = async (ctx = {}) => {
  const worktree = typeof ctx.worktree === "string" ? ctx.worktree : "";
  const directory = typeof ctx.directory === "string" ? ctx.directory : "";
  const directories = new Map(); // session -> directory from its info
  const starts = new Map(); // session -> context answered at session.created
  const woven = new Set(); // sessions whose first message has been answered
  const messages = new Map(); // message id -> {session, role, parts: Map(part id -> text)}
  const sent = new Set(); // message ids already sent at an idle
  let waking = wake(home()); // what a session's first message waits for: its start

  const common = (sessionID) => ({
    sessionID,
    directory: directories.get(sessionID) || directory,
    worktree,
  });
  const message = (id) => {
    const found = messages.get(id) || { session: "", role: "", summary: false, parts: new Map() };
    remember(messages, id, found);
    return found;
  };

  async function listed(sessionID) {
    // The turn's assistant messages as OpenCode's client lists them (after the last user one).
    const asked = ctx.client.session.messages({ path: { id: sessionID } });
    const answer = await withTimeout(asked, CLIENT_TIMEOUT_MS);
    const all = Array.isArray(answer?.data) ? answer.data : Array.isArray(answer) ? answer : [];
    const last = all.map((m) => m?.info?.role).lastIndexOf("user");
    return all
      .slice(last + 1)
      .filter((m) => m?.info?.role === "assistant" && typeof m.info.id === "string")
      .filter((m) => !summary(m.info))
      .map((m) => ({ id: m.info.id, text: said(m.parts) }));
  }

  async function idle(sessionID) {
    let turn = [];
    for (const [id, seen] of messages) {
      if (seen.session !== sessionID || seen.role !== "assistant") continue;
      if (seen.summary || sent.has(id)) continue;
      const text = [...seen.parts.values()].join("\n");
      if (text.trim()) turn.push({ id, text });
    }
    if (!turn.length && ctx.client?.session?.messages) {
      try {
        turn = (await listed(sessionID)).filter((m) => !sent.has(m.id) && m.text.trim());
      } catch (error) {
        log(home(), `${HOST} session.idle: could not list the messages: ${error.message}`);
      }
    }
    for (const { id } of turn) remember(sent, id);
    for (const [id, seen] of messages) if (seen.session === sessionID) messages.delete(id);
    await send("session.idle", { ...common(sessionID), messages: turn });
  }

  async function onEvent(event) {
    const type = event?.type;
    const props = event?.properties || {};
    if (type === "message.updated") {
      const info = props.info;
      if (info && typeof info.id === "string") {
        const seen = message(info.id);
        seen.session = info.sessionID || seen.session;
        seen.role = info.role || seen.role;
        seen.summary = seen.summary || summary(info);
      }
    } else if (type === "message.part.updated") {
      const part = props.part;
      const text = part?.type === "text" && !part.synthetic && typeof part.text === "string";
      if (text && part.messageID) {
        const seen = message(part.messageID);
        seen.session = part.sessionID || seen.session;
        seen.parts.set(part.id || String(seen.parts.size), part.text);
      }
    } else if (type === "session.created") {
      const info = props.info || {};
      const sessionID = props.sessionID || info.id;
      if (typeof sessionID !== "string" || !sessionID) return;
      if (typeof info.directory === "string" && info.directory) {
        remember(directories, sessionID, info.directory);
      }
      waking = (async () => {
        const context = contextOf(await send("session.created", common(sessionID)));
        if (context && !woven.has(sessionID)) remember(starts, sessionID, context);
      })();
      await waking;
    } else if (type === "session.idle") {
      if (typeof props.sessionID === "string" && props.sessionID) await idle(props.sessionID);
    } else if (type === "session.compacted") {
      if (typeof props.sessionID === "string" && props.sessionID) {
        await send("session.compacted", common(props.sessionID));
      }
    }
  }

  return {
    "chat.message": async (input, output) => {
      try {
        const parts = output?.parts;
        const sessionID = input?.sessionID || output?.message?.sessionID;
        const text = said(parts);
        if (typeof sessionID !== "string" || !sessionID || !text.trim()) return;
        if (!Array.isArray(parts)) return;
        const first = parts.find((p) => typeof p?.messageID === "string");
        const messageID = output?.message?.id || input?.messageID || first?.messageID || "";
        if (!woven.has(sessionID)) await waking;
        const result = await send("chat.message", { ...common(sessionID), messageID, text });
        let context = contextOf(result);
        if (!context && !result.ok && !woven.has(sessionID)) context = starts.get(sessionID) || "";
        remember(woven, sessionID);
        starts.delete(sessionID);
        if (!context) return;
        const last = parts.map((p) => p?.id).filter((id) => typeof id === "string").sort().at(-1);
        parts.push({
          id: `${last || `prt_${Date.now().toString(16)}`}m`,
          sessionID,
          messageID,
          type: "text",
          synthetic: true,
          ignored: true,
          text: context,
        });
      } catch (error) {
        log(home(), `${HOST} chat.message: ${error?.message || error}`);
      }
    },
    event: async ({ event } = {}) => {
      try {
        await onEvent(event);
      } catch (error) {
        log(home(), `${HOST} event ${event?.type}: ${error?.message || error}`);
      }
    },
    "experimental.chat.messages.transform": async (_input, output) => {
      try {
        for (const message of Array.isArray(output?.messages) ? output.messages : []) {
          if (!Array.isArray(message?.parts)) continue;
          message.parts = message.parts.map((part) => (ours(part) ? { ...part, ignored: false } : part));
        }
      } catch (error) {
        log(home(), `${HOST} experimental.chat.messages.transform: ${error?.message || error}`);
      }
    },
    "experimental.session.compacting": async (input, output) => {
      try {
        const sessionID = input?.sessionID;
        if (typeof sessionID !== "string" || !sessionID || !Array.isArray(output?.context)) return;
        const context = contextOf(await send("experimental.session.compacting", common(sessionID)));
        if (context) output.context.push(context);
      } catch (error) {
        log(home(), `${HOST} experimental.session.compacting: ${error?.message || error}`);
      }
    },
  };
};
