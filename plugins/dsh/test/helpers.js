// Shared by the bridge tests: recorded payloads, a fake Cordis context, a throw-away data
// dir and a fake daemon (a node HTTP server on a Unix socket). Importing it starts nothing.

import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const HERE = path.dirname(fileURLToPath(import.meta.url))

/** A recorded payload (a fresh copy each time). */
export function recorded(name) {
  return JSON.parse(fs.readFileSync(path.join(HERE, 'payloads', name), 'utf8'))
}

/** A data dir under the system temp dir (short enough for a Unix socket path). */
export function makeHome() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mwdsh-'))
  if (path.join(home, 'daemon.sock').length > 100) throw new Error(`${home}: too long for a socket`)
  return home
}

/** A Cordis context that only records listeners. */
export function fakeContext() {
  const listeners = new Map()
  return {
    listeners,
    on(event, listener) {
      listeners.set(event, listener)
      return () => listeners.delete(event)
    },
  }
}

/** The default decision of a pre-step: the claimed messages, then the downstream ones. */
export function preStepCall(changes = {}) {
  const call = { ...recorded('dsh/agent-pre-step.json'), ...changes }
  const decision = { kind: 'enter', messages: [...call.messages, ...call.downstream] }
  const { agent, messages, turn, step } = call
  const payload = { agent, messages, turn, step, signal: new AbortController().signal }
  return { payload, decision, next: async () => decision }
}

/**
 * A fake daemon on `home`/daemon.sock. `answer(req)` returns [status, body] or undefined
 * to never answer. Records every request as {method, url, body}.
 */
export async function fakeDaemon(home, answer = defaultAnswer) {
  const requests = []
  const hanging = new Set()
  const server = http.createServer((req, res) => {
    const chunks = []
    req.on('data', (chunk) => chunks.push(chunk))
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8')
      const seen = { method: req.method, url: req.url, body: text ? JSON.parse(text) : undefined }
      requests.push(seen)
      const reply = answer(seen)
      if (reply === undefined) return void hanging.add(res)
      const [status, body] = reply
      const data = JSON.stringify(body)
      const length = Buffer.byteLength(data)
      res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': length })
      res.end(data)
    })
  })
  await new Promise((resolve) => server.listen(path.join(home, 'daemon.sock'), resolve))
  return {
    requests,
    hooks: () => requests.filter((r) => r.url.startsWith('/v1/hooks/')),
    async close() {
      for (const res of hanging) res.destroy()
      server.closeAllConnections?.()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

export const CONTEXT = {
  'session-start': '<memory source="mnemoweave">\n## scene        /tmp/PROJECT\n</memory>',
  'pre-step': '<memory source="mnemoweave">\n## knowledge    [fact] Uploads retry three times (m_1, now)\n</memory>',
}

export function defaultAnswer({ method, url }) {
  if (method === 'GET' && url === '/v1/daemon') return [200, { result: { pid: 1 } }]
  const event = url.split('/').pop()
  if (CONTEXT[event]) return [200, { output: { context: CONTEXT[event] } }]
  return [200, { output: null }]
}

/** The files a spool dir holds (dot names are files still being written). */
export function spooled(home) {
  try {
    return fs.readdirSync(path.join(home, 'spool')).sort()
  } catch {
    return []
  }
}

export function logLines(home) {
  try {
    return fs.readFileSync(path.join(home, 'logs', 'hooks.log'), 'utf8').trim().split('\n')
  } catch {
    return []
  }
}
