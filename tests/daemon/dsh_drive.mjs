// Drives the dsh bridge (plugins/dsh/index.js) through one dsh session, standing in for dsh:
// session start, one step with a typed prompt, the turn's log events, disposal.
// stdin: {"plugin": path, "home": dir, "session": id, "cwd": dir, "prompt": text, "answer": text,
//         "cold": true to let the bridge start the daemon and keep its default budgets, with the
//         step right after the session start (as dsh runs them)}
// stdout: {"injected": [texts given to agent.inject], "step": [texts of the step's messages]}

import fs from 'node:fs'
import { pathToFileURL } from 'node:url'

const spec = JSON.parse(fs.readFileSync(0, 'utf8'))
const { mount } = await import(pathToFileURL(spec.plugin).href)

const listeners = new Map()
const ctx = { on: (event, listener) => void listeners.set(event, listener) }
const settings = spec.cold ? {} : { startDaemon: false, budgets: { 'pre-step': 5000 } }
const bridge = mount(ctx, { home: spec.home, ...settings })

const injected = []
const session = { id: spec.session, header: { cwd: spec.cwd } }
const agent = { id: spec.session, session, inject: (message) => injected.push(message.content[0].text) }
const text = (value) => [{ type: 'text', text: value }]
const prompt = { id: 'm-1', role: 'user', content: text(spec.prompt), source: { kind: 'user' } }

listeners.get('agent/session-start')({ agent, source: 'startup' })
if (!spec.cold) await bridge.settled()

const decision = { kind: 'enter', messages: [prompt] }
const step = await listeners.get('agent/pre-step')(
  { agent, messages: [prompt], turn: 1, step: 1, signal: new AbortController().signal },
  async () => decision,
)

const model = { kind: 'model', provider: 'fake', model: 'fake' }
const answer = { id: 'm-2', role: 'assistant', content: text(spec.answer), source: model }
const log = [
  ['turn/start', { turn: 1, trigger: { kind: 'message', source: { kind: 'user' } } }],
  ['user/message', prompt],
  ['assistant/message', { turn: 1, step: 1, message: answer }],
  ['turn/end', { turn: 1, reason: { kind: 'completed' } }],
]
for (const [seq, [type, data]] of log.entries()) {
  listeners.get('session/event')(session, { type, seq, time: Date.now(), data })
}
await bridge.settled()
listeners.get('session/disposed')(session)
await bridge.settled()

process.stdout.write(JSON.stringify({ injected, step: step.messages.map((m) => m.content[0].text) }))
