// mnemoweave for DeepSeek Harness (dsh): a Cordis plugin that bridges dsh sessions to the
// mnemoweave daemon.
//
//   agent/session-start  -> POST session-start; its scene and nudge go in with agent.inject()
//   agent/pre-step       -> POST pre-step with the user messages entering the step; the weave
//                           for the last one enters the step right after them
//   session/event        -> collects the turn's user and assistant text; on turn/end POST
//                           turn-end (stored, then the session is distilled)
//   session/disposed     -> POST session-end
//
// The daemon listens on $MNEMOWEAVE_HOME/daemon.sock (default ~/.mnemoweave/daemon.sock).
// When it loads and at each session start it wakes the daemon (starts one when none
// answers); a step waits for that wake, at most WAKE_MS from it, before its own budget runs,
// so a cold start still weaves the first prompt. A daemon still warming up answers at once
// and spools what it is sent; a step says how long it may wait for it instead, and is asked
// again once the daemon is warm.
// Every call is bounded and fails open: nothing is ever thrown into dsh, a step keeps its
// messages, and what the daemon did not take is logged (logs/hooks.log) and spooled
// (spool/, the records mnemoweave's own hooks write) for the daemon to store when it runs,
// once `mnemoweave redact` has cleaned it (secrets and private spans never reach the disk).
// What it writes under the data dir is its user's only: directories 0700, files 0600.
// Standard library only.

import { spawn, spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const name = 'mnemoweave'
export const HOST = 'dsh'

/** Milliseconds each call may take end to end; the pre-step is the one the user waits on. */
export const BUDGETS = {
  'session-start': 3000,
  'pre-step': 250,
  'turn-end': 2000,
  'session-end': 1000,
}
const MAX_TEXT = 400_000 // characters sent of one message (the daemon keeps 200,000)
const MAX_MESSAGES = 20 // user messages kept of one turn (the latest)
const MAX_ANSWER = 8 * 1024 * 1024 // bytes read of one answer
const PROBE_MS = 200 // one look at a daemon that is starting
const WAKE_MS = 3000 // how long a step waits for a daemon being woken
const AGAIN_MS = 50 // what a pre-step keeps to ask again a daemon that just became warm
const AGAIN_PAUSE_MS = 5 // between asking a daemon that is becoming warm
const SPAWN_EVERY_MS = 30_000 // a daemon is started at most this often per data dir
const HERE = path.dirname(fileURLToPath(import.meta.url))
const PRIVATE_DIR = { recursive: true, mode: 0o700 } // the data dir and what is in it
const PRIVATE_FILE = 0o600

// --- where things are ------------------------------------------------------------------

/** The data dir: $MNEMOWEAVE_HOME, else ~/.mnemoweave. */
export function dataDir(env = process.env) {
  const value = env.MNEMOWEAVE_HOME
  if (!value) return path.join(os.homedir(), '.mnemoweave')
  return value === '~' || value.startsWith('~/') ? path.join(os.homedir(), value.slice(1)) : value
}

/** The event's budget: the plugin config's, else (pre-step) $MNEMOWEAVE_HOOK_BUDGET_MS as
 * for the hooks, else BUDGETS. */
export function budget(event, env = process.env, configured = {}) {
  if (Number.isFinite(configured[event])) return configured[event]
  const override = env.MNEMOWEAVE_HOOK_BUDGET_MS ?? ''
  if (event === 'pre-step' && /^\d+$/.test(override)) return Number(override)
  return BUDGETS[event] ?? 2000
}

/** How to run mnemoweave: $MNEMOWEAVE_BIN, the checkout's .venv, else `mnemoweave` on PATH. */
export function daemonCommand(env = process.env) {
  if (env.MNEMOWEAVE_BIN) return env.MNEMOWEAVE_BIN
  const venv = path.join(HERE, '..', '..', '.venv', 'bin', 'mnemoweave')
  try {
    fs.accessSync(venv, fs.constants.X_OK)
    return venv
  } catch {
    return 'mnemoweave'
  }
}

// --- what may be written to disk: what mnemoweave would store ------------------------------

const REDACT_MS = 10_000 // one run of `mnemoweave redact`
const MAX_REDACTED = 256 * 1024 * 1024 // bytes read back from it

/** The payload as mnemoweave stores text (secrets redacted, private spans dropped), from
 * `mnemoweave redact --json`: the one rule set, in Python, cleans all that reaches the disk.
 * Throws when mnemoweave cannot be run (nothing is spooled then). */
export function scrubbed(payload, command = daemonCommand()) {
  const done = spawnSync(command, ['redact', '--json'], {
    input: JSON.stringify(payload),
    encoding: 'utf8',
    timeout: REDACT_MS,
    maxBuffer: MAX_REDACTED,
  })
  if (done.error) throw done.error
  if (done.status !== 0) {
    const said = (done.stderr ?? '').trim().split('\n').at(-1)
    throw new Error(`${command} redact failed (${done.status ?? done.signal}): ${said}`)
  }
  return JSON.parse(done.stdout)
}

// --- the log and the spool ---------------------------------------------------------------

const pad = (n) => String(n).padStart(2, '0')

/** One line in logs/hooks.log (the hooks' format); never throws. */
export function log(where, message) {
  try {
    fs.mkdirSync(path.join(where, 'logs'), PRIVATE_DIR)
    const d = new Date()
    const stamp =
      `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}` +
      `T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
    const line = String(message).split(/\s+/).filter(Boolean).join(' ').slice(0, 500)
    fs.appendFileSync(path.join(where, 'logs', 'hooks.log'), `${stamp} ${line}\n`, {
      mode: PRIVATE_FILE,
    })
  } catch {
    // nowhere left to say it
  }
}

/** JSON as Python's json.dumps(value, ensure_ascii=False) writes it (", " and ": "). */
export function pyJson(value) {
  if (value === null || value === undefined) return 'null'
  if (Array.isArray(value)) return `[${value.map(pyJson).join(', ')}]`
  if (typeof value === 'object') {
    const entries = Object.entries(value).filter(([, item]) => item !== undefined)
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}: ${pyJson(item)}`).join(', ')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

// Epoch nanoseconds, as time.time_ns() names spool files (ordered, unique in this process).
const EPOCH_NS = BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint()

/** Keep a payload the daemon did not take (0600, secrets redacted), for the daemon to
 * replay: spool/<ns>-<pid>.json, written whole under a dot name, then renamed. */
export function spool(where, host, event, payload, command = daemonCommand()) {
  const record = pyJson({ host, event, payload: scrubbed(payload, command) })
  const folder = path.join(where, 'spool')
  fs.mkdirSync(folder, PRIVATE_DIR)
  for (let attempt = 0; ; attempt++) {
    const file = `${EPOCH_NS + process.hrtime.bigint() + BigInt(attempt)}-${process.pid}.json`
    let fd
    try {
      fd = fs.openSync(path.join(folder, `.${file}`), 'wx', PRIVATE_FILE)
    } catch (error) {
      if (error.code === 'EEXIST' && attempt < 100) continue
      throw error
    }
    try {
      fs.writeFileSync(fd, record, 'utf8')
    } finally {
      fs.closeSync(fd)
    }
    fs.renameSync(path.join(folder, `.${file}`), path.join(folder, file))
    return path.join(folder, file)
  }
}

// --- the daemon ---------------------------------------------------------------------------

/** The daemon could not be reached, did not answer in time, or refused (status). */
export class DaemonError extends Error {
  constructor(message, { status = null, absent = false, cancelled = false, again = false } = {}) {
    super(message)
    this.status = status
    this.absent = absent // nothing listens on the socket (a daemon may be started)
    this.cancelled = cancelled // the caller's signal aborted the call
    this.again = again // a daemon that was warming up is warm now: ask again
  }
}

/** One API call over the data dir's socket, within `timeoutMs`; the answer's JSON object. */
export function request(where, method, urlPath, body, timeoutMs, signal) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? '' : JSON.stringify(body)
    const what = `${method} ${urlPath}`
    let done = false
    const finish = (error, value) => {
      if (done) return
      done = true
      clearTimeout(timer)
      signal?.removeEventListener?.('abort', onAbort)
      if (error) reject(error)
      else resolve(value)
    }
    const req = http.request({
      socketPath: path.join(where, 'daemon.sock'),
      agent: false,
      method,
      path: urlPath,
      headers: {
        Host: 'mnemoweave',
        Connection: 'close',
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(data),
      },
    })
    const onAbort = () => {
      finish(new DaemonError(`${what} was cancelled`, { cancelled: true }))
      req.destroy()
    }
    const timer = setTimeout(() => {
      finish(new DaemonError(`the daemon did not answer ${what} in ${timeoutMs / 1000}s`))
      req.destroy()
    }, Math.max(1, timeoutMs))
    req.on('error', (error) => {
      const absent = ['ENOENT', 'ECONNREFUSED'].includes(error.code)
      const socket = path.join(where, 'daemon.sock')
      finish(new DaemonError(`no daemon at ${socket}: ${error.code ?? error.message}`, { absent }))
    })
    req.on('response', (res) => {
      const chunks = []
      let size = 0
      res.on('data', (chunk) => {
        size += chunk.length
        if (size > MAX_ANSWER) {
          finish(new DaemonError('the daemon sent an answer too large to read'))
          req.destroy()
        } else chunks.push(chunk)
      })
      res.on('error', (error) => {
        finish(new DaemonError(`reading the answer failed: ${error.message}`))
      })
      res.on('end', () => {
        let answer
        try {
          const text = Buffer.concat(chunks).toString('utf8')
          answer = text ? JSON.parse(text) : {}
        } catch {
          return finish(new DaemonError('the daemon sent a malformed answer'))
        }
        const status = res.statusCode ?? 0
        if (status < 200 || status >= 300) {
          const said = answer && typeof answer.error === 'string' ? answer.error : ''
          const message = said || `the daemon answered HTTP ${status}`
          const again = status === 503 && answer?.again === true
          return finish(new DaemonError(message, { status, again }))
        }
        if (answer === null || typeof answer !== 'object' || Array.isArray(answer)) {
          return finish(new DaemonError('the daemon sent a malformed answer'))
        }
        finish(null, answer)
      })
    })
    if (signal?.aborted) return onAbort()
    signal?.addEventListener?.('abort', onAbort, { once: true })
    req.end(data)
  })
}

const spawned = new Map() // data dir -> when a daemon was last started for it

/** Start `mnemoweave serve` detached (at most every SPAWN_EVERY_MS), output to the daemon
 * log; true when a start was attempted. */
export function startDaemon(where, command = daemonCommand()) {
  const last = spawned.get(where)
  if (last !== undefined && Date.now() - last < SPAWN_EVERY_MS) return false
  spawned.set(where, Date.now())
  let out
  try {
    fs.mkdirSync(path.join(where, 'logs'), PRIVATE_DIR)
    out = fs.openSync(path.join(where, 'logs', 'daemon.log'), 'a', PRIVATE_FILE)
    const child = spawn(command, ['--home', where, 'serve'], {
      detached: true,
      stdio: ['ignore', out, out],
      env: { ...process.env, MNEMOWEAVE_HOME: where },
    })
    child.on('error', (error) => log(where, `dsh: could not start ${command}: ${error.message}`))
    child.unref()
    return true
  } catch (error) {
    log(where, `dsh: could not start ${command}: ${error.message}`)
    return false
  } finally {
    if (out !== undefined) fs.closeSync(out)
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

async function answers(where, deadline) {
  while (Date.now() < deadline) {
    try {
      const wait = Math.min(PROBE_MS, deadline - Date.now())
      await request(where, 'GET', '/v1/daemon', undefined, wait)
      return true
    } catch {
      await sleep(Math.min(50, Math.max(0, deadline - Date.now())))
    }
  }
  return false
}

/** Start a daemon when none answers and wait until one does, at most WAKE_MS. Never throws. */
export async function wake(where, command = daemonCommand()) {
  const deadline = Date.now() + WAKE_MS
  try {
    await request(where, 'GET', '/v1/daemon', undefined, PROBE_MS)
  } catch (error) {
    if (!(error instanceof DaemonError) || !error.absent) return
    startDaemon(where, command)
    await answers(where, deadline)
  }
}

/**
 * Post one event to the daemon within its budget; the `output` it answers, or null.
 * Never throws: when no daemon listens one is started (unless `start` is false) and waited
 * for what is left of the budget; a refusal (4xx) is logged; anything else is logged and
 * the payload spooled. A cancelled call (the signal) is dropped quietly.
 */
export async function deliver(where, event, payload, options = {}) {
  const { budgetMs, start = true, command, signal } = options
  const deadline = Date.now() + (budgetMs ?? budget(event))
  const urlPath = `/v1/hooks/${HOST}/${event}`
  const left = () => Math.max(1, deadline - Date.now())
  // A pre-step says how long it may wait (seconds, keeping AGAIN_MS to ask again): a daemon
  // warming up holds it while it may be warm in time, then asks for it again (error.again).
  const ask = async () => {
    let wait = event === 'pre-step'
    for (;;) {
      const held = wait ? { wait: Math.max(0, left() - AGAIN_MS) / 1000 } : {}
      try {
        return await request(where, 'POST', urlPath, { ...held, payload }, left(), signal)
      } catch (error) {
        if (!(error instanceof DaemonError) || !error.again || left() < AGAIN_PAUSE_MS) throw error
      }
      wait = false
      await sleep(AGAIN_PAUSE_MS)
    }
  }
  try {
    let answer
    try {
      answer = await ask()
    } catch (error) {
      if (!(error instanceof DaemonError) || !error.absent || !start) throw error
      startDaemon(where, command)
      if (!(await answers(where, deadline))) {
        throw new DaemonError('no daemon answered within the budget')
      }
      answer = await ask()
    }
    const output = answer.output
    return output === undefined ? null : output
  } catch (error) {
    if (error instanceof DaemonError && error.cancelled) return null
    if (error instanceof DaemonError && error.status !== null && error.status < 500) {
      log(where, `${HOST} ${event}: refused: ${error.message}`)
      return null
    }
    try {
      const file = spool(where, HOST, event, payload, command)
      log(where, `${HOST} ${event}: ${error.message}; spooled to ${path.basename(file)}`)
    } catch (problem) {
      log(where, `${HOST} ${event}: ${error.message}; could not spool: ${problem.message}`)
    }
    return null
  }
}

// --- dsh shapes -----------------------------------------------------------------------------

/** The text blocks of a message's content (tool calls, reasoning and images are not text). */
export function textOf(content) {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content
    .filter((block) => block && block.type === 'text' && typeof block.text === 'string')
    .map((block) => block.text)
    .join('\n')
}

const cut = (text) => (text.length > MAX_TEXT ? text.slice(0, MAX_TEXT) : text)

/** What a person typed: a prompt or steering (not injected context, tool results or ours). */
export function typedText(message) {
  if (!message || typeof message !== 'object') return ''
  const kind = message.source?.kind
  if (kind !== undefined && kind !== 'user' && kind !== 'human') return ''
  const shown = message.envelope?.displayContent // the prompt without baked-in contexts
  return cut(textOf(Array.isArray(shown) ? shown : message.content).trim())
}

function sessionOf(session) {
  const id = typeof session?.id === 'string' ? session.id : ''
  const header = session?.header ?? {}
  return {
    id,
    cwd: typeof header.cwd === 'string' ? header.cwd : undefined,
    subagent: header.origin === 'subagent',
  }
}

function identity(session) {
  const { id, cwd } = session
  return cwd === undefined ? { session_id: id } : { session_id: id, cwd }
}

/** A user-role context message as dsh's createUserMessage makes one (id, role, content,
 * source), from this plugin. */
export function contextMessage(text) {
  const content = Object.freeze([Object.freeze({ type: 'text', text })])
  const source = Object.freeze({ kind: 'plugin', plugin: name, form: 'recall' })
  return Object.freeze({ id: randomUUID(), role: 'user', content, source })
}

// --- the bridge ----------------------------------------------------------------------------

/**
 * The listeners, bound to one configuration:
 *   home         data dir (default $MNEMOWEAVE_HOME or ~/.mnemoweave)
 *   startDaemon  start `mnemoweave serve` when none answers (default true)
 *   command      the mnemoweave executable (default daemonCommand())
 *   budgets      milliseconds per event, over BUDGETS
 */
export function createBridge(config = {}) {
  const where = () => config.home ?? dataDir()
  const budgets = config.budgets && typeof config.budgets === 'object' ? config.budgets : {}
  const turns = new Map() // session id -> { users: [], assistant: '' } of the open turn
  const pending = new Map() // session id -> start context that agent.inject() could not take
  const inflight = new Set()
  let waking = Promise.resolve() // what a step waits for
  const wakeDaemon = () => {
    if (config.startDaemon !== false) waking = wake(where(), config.command)
  }

  const track = (promise) => {
    inflight.add(promise)
    promise.finally(() => inflight.delete(promise)).catch(() => {})
    return promise
  }
  const send = (event, payload, signal) =>
    deliver(where(), event, payload, {
      budgetMs: budget(event, process.env, budgets),
      start: config.startDaemon !== false,
      command: config.command,
      signal,
    })
  const contextIn = (output) =>
    output && typeof output.context === 'string' && output.context.trim() ? output.context : ''
  const failed = (what, error) => log(where(), `${HOST} ${what}: ${error?.stack ?? error}`)

  function sessionStart(first, second) {
    try {
      const positional = !(first && typeof first === 'object' && 'agent' in first)
      const given = positional ? { agent: first, source: second } : first
      const agent = given.agent
      const session = sessionOf(agent?.session ?? { id: agent?.id })
      if (!session.id || session.subagent) return
      const source = typeof given.source === 'string' ? given.source : given.source?.kind
      const payload = { ...identity(session), ...(typeof source === 'string' ? { source } : {}) }
      wakeDaemon()
      track(
        send('session-start', payload).then((output) => {
          const text = contextIn(output)
          if (!text) return
          if (typeof agent?.inject !== 'function') return void pending.set(session.id, text)
          try {
            agent.inject(contextMessage(text))
          } catch (error) {
            failed('session-start: inject', error)
          }
        }),
      )
    } catch (error) {
      failed('session-start', error)
    }
  }

  async function addMemory(payload, decision) {
    if (!decision || decision.kind !== 'enter' || !Array.isArray(decision.messages)) return decision
    const { agent, signal } = payload ?? {}
    if (signal?.aborted) return decision
    const session = sessionOf(agent?.session ?? { id: agent?.id })
    if (!session.id || session.subagent) return decision
    const claimed = Array.isArray(payload.messages) ? payload.messages : []
    const typed = claimed.map(typedText).filter(Boolean)
    const start = pending.get(session.id)
    if (!typed.length && !start) return decision
    pending.delete(session.id)
    const extra = start ? [contextMessage(start)] : []
    if (typed.length) {
      await waking
      const body = {
        ...identity(session),
        turn: Number.isInteger(payload.turn) ? payload.turn : 0,
        step: Number.isInteger(payload.step) ? payload.step : 0,
        messages: typed.map((text) => ({ role: 'user', text })),
      }
      const text = contextIn(await track(send('pre-step', body, signal)))
      if (signal?.aborted) return decision
      if (text) extra.push(contextMessage(text))
    }
    if (!extra.length) return decision
    const last = decision.messages.findLastIndex((message) => claimed.includes(message))
    return { ...decision, messages: decision.messages.toSpliced(last + 1, 0, ...extra) }
  }

  async function preStep(payload, next) {
    const decision = await next()
    try {
      return await addMemory(payload, decision)
    } catch (error) {
      failed('pre-step', error)
      return decision
    }
  }

  function sessionEvent(rawSession, event) {
    try {
      const session = sessionOf(rawSession)
      if (!session.id || session.subagent || !event || typeof event.type !== 'string') return
      const data = event.data ?? {}
      const open = () => {
        if (!turns.has(session.id)) turns.set(session.id, { users: [], assistant: '' })
        return turns.get(session.id)
      }
      if (event.type === 'user/message' || event.type === 'steering/message') {
        const message = data.message && !data.content ? data.message : data
        const text = typedText(message)
        if (text) open().users = [...open().users, text].slice(-MAX_MESSAGES)
      } else if (event.type === 'assistant/message') {
        const message = data.message ?? data
        const text = cut(textOf(message.content).trim())
        if (text) open().assistant = text
      } else if (event.type === 'turn/end') {
        const turn = turns.get(session.id) ?? { users: [], assistant: '' }
        turns.delete(session.id)
        const reason = typeof data.reason === 'string' ? data.reason : data.reason?.kind
        const messages = turn.users.map((text) => ({ role: 'user', text }))
        if (turn.assistant) messages.push({ role: 'assistant', text: turn.assistant })
        track(
          send('turn-end', {
            ...identity(session),
            turn: Number.isInteger(data.turn) ? data.turn : 0,
            ...(typeof reason === 'string' ? { reason } : {}),
            messages,
          }),
        )
      }
    } catch (error) {
      failed('session/event', error)
    }
  }

  function sessionDisposed(rawSession) {
    try {
      const session = sessionOf(rawSession)
      turns.delete(session.id)
      pending.delete(session.id)
      if (!session.id || session.subagent) return
      track(send('session-end', identity(session)))
    } catch (error) {
      failed('session/disposed', error)
    }
  }

  /** Resolves when every call made so far has settled (for tests and shutdown). */
  const settled = async () => {
    while (inflight.size) await Promise.allSettled([...inflight])
  }

  return { sessionStart, preStep, sessionEvent, sessionDisposed, settled, wakeDaemon }
}

/** Cordis entry point: listen to dsh's agent and session events (returns nothing). */
export function apply(ctx, config) {
  mount(ctx, config)
}

/** What apply does, returning the bridge (its `settled()` waits for calls in flight). */
export function mount(ctx, config) {
  const bridge = createBridge(config && typeof config === 'object' ? config : {})
  const listen = (event, listener) => {
    try {
      ctx.on(event, listener)
    } catch (error) {
      const problem = error?.message ?? error
      log(config?.home ?? dataDir(), `${HOST}: could not listen to ${event}: ${problem}`)
    }
  }
  bridge.wakeDaemon()
  listen('agent/session-start', (first, second) => bridge.sessionStart(first, second))
  listen('agent/pre-step', (payload, next) => bridge.preStep(payload, next))
  listen('session/event', (session, event) => bridge.sessionEvent(session, event))
  listen('session/disposed', (session) => bridge.sessionDisposed(session))
  return bridge
}
