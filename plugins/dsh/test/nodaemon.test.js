// The bridge with no daemon: it fails open within its budget, and what it could not deliver
// is spooled exactly as mnemoweave's hooks spool (mnemoweave/hook.py spool()).

import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, test } from 'node:test'

import {
  budget,
  dataDir,
  daemonCommand,
  log,
  mount,
  pyJson,
  scrubbed,
  spool,
  startDaemon,
} from '../index.js'
import { fakeContext, logLines, makeHome, preStepCall, recorded, spooled } from './helpers.js'

const T = { timeout: 15_000 }
let home

beforeEach(() => {
  home = makeHome()
})

afterEach(() => {
  fs.rmSync(home, { recursive: true, force: true })
})

function mounted(config = {}) {
  const ctx = fakeContext()
  const bridge = mount(ctx, { home, startDaemon: false, ...config })
  return { bridge, on: (event) => ctx.listeners.get(event) }
}

function readSpool() {
  return spooled(home).map((name) => {
    const file = path.join(home, 'spool', name)
    return { name, mode: fs.statSync(file).mode & 0o777, text: fs.readFileSync(file, 'utf8') }
  })
}

test('a pre-step without a daemon returns the step unchanged and spools its payload', T, async () => {
  const { on } = mounted()
  const { payload, decision, next } = preStepCall()
  const began = Date.now()
  assert.equal(await on('agent/pre-step')(payload, next), decision)
  assert.ok(Date.now() - began < 3000) // it never waits for a daemon to wake (WAKE_MS)
  const [file, ...more] = readSpool()
  assert.deepEqual(more, [])
  assert.match(file.name, /^\d{19}-\d+\.json$/)
  assert.equal(file.name.split('-')[1], `${process.pid}.json`)
  assert.equal(file.mode, 0o600)
  const record = { host: 'dsh', event: 'pre-step', payload: recorded('wire/pre-step.json') }
  assert.equal(file.text, pyJson(record)) // what json.dump(record, ensure_ascii=False) writes
  assert.deepEqual(JSON.parse(file.text), record)
  const line = logLines(home).at(-1)
  assert.match(line, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d dsh pre-step: no daemon at /)
  assert.match(line, /daemon\.sock: ENOENT; spooled to \d{19}-\d+\.json$/)
})

test('every event is spooled when no daemon runs, oldest first by name', T, async () => {
  const { bridge, on } = mounted()
  on('agent/session-start')(recorded('dsh/agent-session-start.json'))
  await bridge.settled()
  const { payload, next } = preStepCall()
  await on('agent/pre-step')(payload, next)
  const { session, events } = recorded('dsh/session-turn.json')
  for (const event of events) on('session/event')(session, event)
  await bridge.settled()
  on('session/disposed')(session)
  await bridge.settled()
  const records = readSpool().map((f) => JSON.parse(f.text))
  assert.deepEqual(
    records.map((r) => [r.event, r.payload]),
    [
      ['session-start', recorded('wire/session-start.json')],
      ['pre-step', recorded('wire/pre-step.json')],
      ['turn-end', recorded('wire/turn-end.json')],
      ['session-end', recorded('wire/session-end.json')],
    ],
  )
})

test('a spooled payload keeps no secret and no private span', T, async () => {
  const { on } = mounted()
  const secret = 'sk-ant-api03-' + 'A1b2C3d4'.repeat(6)
  const call = preStepCall()
  call.payload.messages = [
    {
      ...call.payload.messages[0],
      content: [{ type: 'text', text: `use key ${secret} <private>my diary</private> please` }],
    },
  ]
  await on('agent/pre-step')(call.payload, call.next)
  const files = readSpool()
  assert.equal(files.length, 1)
  for (const file of files) {
    assert.ok(!file.text.includes(secret) && !file.text.includes('my diary'))
    assert.equal(JSON.parse(file.text).payload.messages[0].text, 'use key [REDACTED:api-key]  please')
  }
})

test('what is spooled is cleaned by mnemoweave itself (`mnemoweave redact --json`)', () => {
  const payload = { text: '  token = "abc123"\r\n', n: 3, more: ['a <PRIVATE>hidden', null] }
  assert.deepEqual(scrubbed(payload), { text: 'token = "[REDACTED:secret]"', n: 3, more: ['a', null] })
  assert.throws(() => scrubbed(payload, path.join(home, 'nope')), /ENOENT/)
})

test('pyJson writes what Python json.dumps(ensure_ascii=False) writes', () => {
  const payload = { a: [1, true, null, {}], b: '注释\n"x"\u0001', c: [] }
  assert.equal(
    pyJson({ host: 'dsh', event: 'pre-step', payload }),
    '{"host": "dsh", "event": "pre-step", ' +
      '"payload": {"a": [1, true, null, {}], "b": "注释\\n\\"x\\"\\u0001", "c": []}}',
  )
})

test('spool writes whole files only, under fresh names', () => {
  const first = spool(home, 'dsh', 'turn-end', { session_id: 's' })
  const second = spool(home, 'dsh', 'turn-end', { session_id: 's' })
  assert.notEqual(first, second)
  assert.ok(path.basename(first) < path.basename(second))
  assert.deepEqual(spooled(home), [path.basename(first), path.basename(second)])
})

test('what it writes under the data dir is owner-only, even with umask 022', () => {
  const where = path.join(home, 'fresh') // made by the bridge itself
  const umask = process.umask(0o022)
  try {
    const spooledFile = spool(where, 'dsh', 'turn-end', { session_id: 's' })
    log(where, 'a line')
    assert.ok(startDaemon(where, 'true'))
    const mode = (file) => fs.statSync(file).mode & 0o777
    const logs = path.join(where, 'logs')
    assert.deepEqual([where, logs, path.join(where, 'spool')].map(mode), [0o700, 0o700, 0o700])
    const files = [spooledFile, path.join(logs, 'hooks.log'), path.join(logs, 'daemon.log')]
    assert.deepEqual(files.map(mode), [0o600, 0o600, 0o600])
  } finally {
    process.umask(umask)
  }
})

test('with no daemon it starts one, waits what is left of the budget, then spools', T, async () => {
  const marker = path.join(home, 'started')
  const script = path.join(home, 'fake-mnemoweave')
  const real = daemonCommand() // what cleans the payloads it spools
  const fake = `#!/bin/sh\n[ "$1" = redact ] && exec '${real}' "$@"\necho "$@" >> '${marker}'\n`
  fs.writeFileSync(script, fake, { mode: 0o755 })
  const { bridge, on } = mounted({ startDaemon: true, command: script, budgets: { 'turn-end': 400 } })
  const { session, events } = recorded('dsh/session-turn.json')
  const began = Date.now()
  for (const event of events) on('session/event')(session, event)
  await bridge.settled()
  const took = Date.now() - began
  assert.ok(took >= 350 && took < 3000, `took ${took} ms`)
  for (const event of events.slice(-1)) on('session/event')(session, event) // no second start
  await bridge.settled()
  const deadline = Date.now() + 5000
  while (!fs.existsSync(marker) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
  assert.equal(fs.readFileSync(marker, 'utf8'), `--home ${home} serve\n`)
  assert.equal(readSpool().length, 2)
})

test('a missing mnemoweave executable is logged, never thrown', T, async () => {
  const command = path.join(home, 'nope')
  const { bridge, on } = mounted({ startDaemon: true, command, budgets: { 'session-end': 200 } })
  on('session/disposed')(recorded('dsh/session-disposed.json').session)
  await bridge.settled()
  await new Promise((r) => setTimeout(r, 50))
  assert.ok(logLines(home).some((line) => line.includes('could not start') && line.includes('ENOENT')))
  assert.ok(logLines(home).some((line) => line.includes('could not spool')))
  assert.equal(readSpool().length, 0) // nothing reaches the disk that mnemoweave did not clean
})

test('budgets: the config, else MNEMOWEAVE_HOOK_BUDGET_MS for the pre-step, else defaults', () => {
  assert.equal(budget('pre-step', {}), 250)
  assert.equal(budget('pre-step', { MNEMOWEAVE_HOOK_BUDGET_MS: '900' }), 900)
  assert.equal(budget('turn-end', { MNEMOWEAVE_HOOK_BUDGET_MS: '900' }), 2000)
  assert.equal(budget('pre-step', { MNEMOWEAVE_HOOK_BUDGET_MS: '900' }, { 'pre-step': 40 }), 40)
})

test('where the data dir and the executable are found', () => {
  assert.equal(dataDir({ MNEMOWEAVE_HOME: '/data/mw' }), '/data/mw')
  assert.equal(dataDir({ MNEMOWEAVE_HOME: '~/mw' }), path.join(os.homedir(), 'mw'))
  assert.match(dataDir({}), /\.mnemoweave$/)
  assert.equal(daemonCommand({ MNEMOWEAVE_BIN: '/opt/mw/bin/mnemoweave' }), '/opt/mw/bin/mnemoweave')
  assert.match(daemonCommand({}), /mnemoweave$/)
})
