// The bridge against a fake daemon: what it posts for each dsh event, what it adds to a
// step, and that it fails open (within its budget) whatever the daemon does.

import assert from 'node:assert/strict'
import fs from 'node:fs'
import { afterEach, beforeEach, test } from 'node:test'

import { apply, createBridge, deliver, mount } from '../index.js'
import {
  CONTEXT,
  fakeContext,
  fakeDaemon,
  logLines,
  makeHome,
  preStepCall,
  recorded,
  spooled,
} from './helpers.js'

const T = { timeout: 15_000 }
let home
let daemon

beforeEach(() => {
  home = makeHome()
})

afterEach(async () => {
  await daemon?.close()
  daemon = undefined
  fs.rmSync(home, { recursive: true, force: true })
})

// What a step carries is tested with budgets no busy machine exceeds; the tests of the
// budgets themselves set their own.
const ROOMY = { 'session-start': 10_000, 'pre-step': 10_000, 'turn-end': 10_000, 'session-end': 10_000 }

function mounted(config = {}) {
  const ctx = fakeContext()
  const bridge = mount(ctx, { home, startDaemon: false, budgets: ROOMY, ...config })
  return { bridge, on: (event) => ctx.listeners.get(event) }
}

function replayTurn(on) {
  const { session, events } = recorded('dsh/session-turn.json')
  for (const event of events) on('session/event')(session, event)
}

test('a session posts exactly the recorded wire payloads, in order', T, async () => {
  daemon = await fakeDaemon(home)
  const { bridge, on } = mounted()
  const start = recorded('dsh/agent-session-start.json')
  on('agent/session-start')(start)
  const { payload, next } = preStepCall()
  await on('agent/pre-step')(payload, next)
  replayTurn(on)
  on('session/disposed')(recorded('dsh/session-disposed.json').session)
  await bridge.settled()
  const posted = daemon.hooks().map((r) => [r.url, r.body])
  // the pre-step says how long a daemon warming up may hold it: its budget, less a moment
  const { wait, ...step } = posted[1][1]
  assert.ok(wait > 0 && wait <= ROOMY['pre-step'] / 1000, `wait ${wait}`)
  posted[1][1] = step
  assert.deepEqual(posted, [
    ['/v1/hooks/dsh/session-start', { payload: recorded('wire/session-start.json') }],
    ['/v1/hooks/dsh/pre-step', { payload: recorded('wire/pre-step.json') }],
    ['/v1/hooks/dsh/turn-end', { payload: recorded('wire/turn-end.json') }],
    ['/v1/hooks/dsh/session-end', { payload: recorded('wire/session-end.json') }],
  ])
  assert.deepEqual(spooled(home), [])
})

test('the weave enters the step right after the claimed messages', T, async () => {
  daemon = await fakeDaemon(home)
  const { on } = mounted()
  const { payload, decision, next } = preStepCall()
  decision.startsRequestSeries = true
  const result = await on('agent/pre-step')(payload, next)
  assert.equal(result.kind, 'enter')
  assert.equal(result.startsRequestSeries, true)
  const [claimed, ours, snapshot] = result.messages
  assert.equal(claimed, payload.messages[0])
  assert.equal(snapshot, decision.messages[1])
  assert.equal(result.messages.length, 3)
  assert.match(ours.id, /^[0-9a-f-]{36}$/)
  assert.equal(ours.role, 'user')
  assert.deepEqual(ours.content, [{ type: 'text', text: CONTEXT['pre-step'] }])
  assert.deepEqual(ours.source, { kind: 'plugin', plugin: 'mnemoweave', form: 'recall' })
  assert.ok(Object.isFrozen(ours) && Object.isFrozen(ours.content[0]))
  assert.deepEqual(decision.messages.length, 2) // the downstream decision is not mutated
})

test('the session start context goes in with agent.inject, in either call form', T, async () => {
  daemon = await fakeDaemon(home)
  const { bridge, on } = mounted()
  const injected = []
  const { agent, source } = recorded('dsh/agent-session-start.json')
  agent.inject = (message) => injected.push(message)
  on('agent/session-start')({ agent, source })
  on('agent/session-start')(agent, source) // older dsh: (agent, source)
  await bridge.settled()
  assert.equal(injected.length, 2)
  assert.deepEqual(injected[0].content, [{ type: 'text', text: CONTEXT['session-start'] }])
  const bodies = daemon.hooks().map((r) => r.body.payload)
  assert.deepEqual(bodies, [recorded('wire/session-start.json'), recorded('wire/session-start.json')])
})

test('without agent.inject the start context joins the first step instead', T, async () => {
  daemon = await fakeDaemon(home)
  const { bridge, on } = mounted()
  on('agent/session-start')(recorded('dsh/agent-session-start.json'))
  await bridge.settled()
  const { payload, next } = preStepCall()
  const result = await on('agent/pre-step')(payload, next)
  const texts = result.messages.map((m) => m.content[0].text)
  assert.deepEqual(texts.slice(1, 3), [CONTEXT['session-start'], CONTEXT['pre-step']])
})

test('steps that carry nothing typed, rejected steps and subagents cost no call', T, async () => {
  daemon = await fakeDaemon(home)
  const { bridge, on } = mounted()
  const toolStep = preStepCall({ messages: [], step: 2 })
  assert.equal(await on('agent/pre-step')(toolStep.payload, toolStep.next), toolStep.decision)
  const injectedOnly = preStepCall()
  injectedOnly.payload.messages = [injectedOnly.decision.messages[1]] // a plugin's context
  assert.equal(await on('agent/pre-step')(injectedOnly.payload, injectedOnly.next), injectedOnly.decision)
  const rejected = preStepCall()
  const reject = { kind: 'reject' }
  assert.equal(await on('agent/pre-step')(rejected.payload, async () => reject), reject)
  const sub = preStepCall()
  const header = { cwd: '/tmp/PROJECT', origin: 'subagent' }
  sub.payload.agent = { ...sub.payload.agent, session: { ...sub.payload.agent.session, header } }
  assert.equal(await on('agent/pre-step')(sub.payload, sub.next), sub.decision)
  const { events } = recorded('dsh/session-turn.json')
  for (const event of events) on('session/event')({ id: 'child', header: { origin: 'subagent' } }, event)
  await bridge.settled()
  assert.deepEqual(daemon.hooks(), [])
})

test('older shapes: content on assistant/message data, a string reason, a human source', T, async () => {
  daemon = await fakeDaemon(home)
  const { bridge, on } = mounted()
  const session = { id: 's-old', header: { cwd: '/tmp/PROJECT' } }
  const send = (type, data) => on('session/event')(session, { type, seq: 0, time: 0, data })
  send('turn/start', { turn: 1, trigger: { kind: 'message' } })
  send('user/message', { content: [{ type: 'text', text: 'Use tabs in Makefiles.' }], source: { kind: 'human' } })
  send('assistant/message', { turn: 1, step: 1, content: [{ type: 'text', text: 'Noted.' }] })
  send('turn/end', { turn: 1, reason: 'completed' })
  await bridge.settled()
  assert.deepEqual(daemon.hooks()[0].body.payload, {
    session_id: 's-old',
    cwd: '/tmp/PROJECT',
    turn: 1,
    reason: 'completed',
    messages: [
      { role: 'user', text: 'Use tabs in Makefiles.' },
      { role: 'assistant', text: 'Noted.' },
    ],
  })
})

test('a daemon error leaves the step as it was and spools the payload', T, async () => {
  daemon = await fakeDaemon(home, () => [500, { error: 'engine exploded' }])
  const { on } = mounted()
  const { payload, decision, next } = preStepCall()
  assert.equal(await on('agent/pre-step')(payload, next), decision)
  const [file] = spooled(home)
  const record = JSON.parse(fs.readFileSync(`${home}/spool/${file}`, 'utf8'))
  assert.deepEqual(record, { host: 'dsh', event: 'pre-step', payload: recorded('wire/pre-step.json') })
  assert.match(logLines(home).at(-1), /dsh pre-step: engine exploded; spooled to \d+-\d+\.json$/)
})

test('a refusal is logged, not spooled', T, async () => {
  daemon = await fakeDaemon(home, () => [400, { error: "the payload's 'turn' must be an integer" }])
  const { on } = mounted()
  const { payload, decision, next } = preStepCall()
  assert.equal(await on('agent/pre-step')(payload, next), decision)
  assert.deepEqual(spooled(home), [])
  assert.match(logLines(home).at(-1), /dsh pre-step: refused: the payload's 'turn' must be an integer$/)
})

test('a daemon that does not answer costs the pre-step its budget, no more', T, async () => {
  daemon = await fakeDaemon(home, () => undefined)
  const { on } = mounted({ budgets: { 'pre-step': 300 } })
  const { payload, decision, next } = preStepCall()
  const began = Date.now()
  assert.equal(await on('agent/pre-step')(payload, next), decision)
  const took = Date.now() - began
  assert.ok(took >= 250 && took < 5000, `took ${took} ms`) // a busy machine adds seconds, a hang more
  assert.equal(spooled(home).length, 1)
  assert.match(logLines(home).at(-1), /did not answer POST \/v1\/hooks\/dsh\/pre-step in 0\.\d+s; spooled/)
})

test('a cancelled step stops waiting at once and spools nothing', T, async () => {
  daemon = await fakeDaemon(home, () => undefined)
  const { on } = mounted({ budgets: { 'pre-step': 30000 } })
  const { payload, decision, next } = preStepCall()
  const abort = new AbortController()
  payload.signal = abort.signal
  setTimeout(() => abort.abort(), 100)
  const began = Date.now()
  assert.equal(await on('agent/pre-step')(payload, next), decision)
  assert.ok(Date.now() - began < 5000) // not the budget
  assert.deepEqual(spooled(home), [])
})

test('garbage never throws into dsh', T, async () => {
  daemon = await fakeDaemon(home)
  const { bridge, on } = mounted()
  for (const junk of [undefined, null, 0, 'x', {}, { agent: null }, { agent: { session: 5 } }]) {
    on('agent/session-start')(junk)
    on('session/event')(junk, junk)
    on('session/event')({ id: 's' }, { type: 'turn/end', data: junk })
    on('session/disposed')(junk)
    const decision = { kind: 'enter', messages: [] }
    assert.equal(await on('agent/pre-step')(junk, async () => decision), decision)
  }
  const weird = { kind: 'enter', messages: 'not a list' }
  assert.equal(await on('agent/pre-step')(preStepCall().payload, async () => weird), weird)
  await bridge.settled()
  const failing = createBridge({ home, startDaemon: false })
  const boom = async () => {
    throw new Error('downstream listener failed')
  }
  await assert.rejects(failing.preStep(preStepCall().payload, boom), /downstream listener failed/)
})

test('apply listens to the four dsh events and returns nothing to Cordis', () => {
  const ctx = fakeContext()
  assert.equal(apply(ctx, { home, startDaemon: false }), undefined)
  assert.deepEqual(
    [...ctx.listeners.keys()].sort(),
    ['agent/pre-step', 'agent/session-start', 'session/disposed', 'session/event'],
  )
  const broken = { on: () => { throw new Error('no such event') } }
  assert.equal(apply(broken, { home, startDaemon: false }), undefined)
  assert.match(logLines(home).at(-1), /could not listen to session\/disposed: no such event/)
})

test('a call whose signal is already aborted is dropped without a word', T, async () => {
  daemon = await fakeDaemon(home)
  const abort = new AbortController()
  abort.abort()
  const options = { signal: abort.signal, start: false }
  assert.equal(await deliver(home, 'pre-step', recorded('wire/pre-step.json'), options), null)
  await new Promise((r) => setTimeout(r, 50))
  assert.deepEqual(spooled(home), [])
  assert.deepEqual(logLines(home), [])
})
