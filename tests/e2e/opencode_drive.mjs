// Drives the OpenCode plugin (plugins/opencode/mnemoweave.js) the way OpenCode calls it,
// without OpenCode: the hooks get objects shaped like OpenCode 1.18's.
// stdin: {"plugin": path, "directory": dir, "worktree": dir, "messages": [client list],
//         "steps": [step...]}; a step is one of
//   {"event": {"type", "properties"}, "wait": true}   (wait: false = do not await it)
//   {"chat": {"sessionID", "messageID", "text"}}
//   {"compacting": {"sessionID"}}
//   {"sleep": ms}
//   {"exit": code}                                     (process.exit right away)
// stdout: one JSON line per step: {"parts": [...], "ms": n} for chat, {"context": [...]} for
// compacting, {"ms": n} for the rest.

import fs from "node:fs";
import { pathToFileURL } from "node:url";

const spec = JSON.parse(fs.readFileSync(0, "utf8"));
const module = await import(pathToFileURL(spec.plugin).href);
const client = {
  session: {
    messages: async ({ path }) => ({ data: (spec.messages || []).filter((m) => m.info.sessionID === path.id) }),
  },
};
const hooks = await module.MnemoweavePlugin({
  client,
  project: { id: "global", worktree: spec.worktree },
  directory: spec.directory,
  worktree: spec.worktree,
  serverUrl: new URL("http://localhost:4096"),
  $: null,
});

const out = (value) => process.stdout.write(JSON.stringify(value) + "\n");
let part = 0;
for (const step of spec.steps) {
  const start = Date.now();
  if (step.exit !== undefined) process.exit(step.exit);
  if (step.sleep !== undefined) {
    await new Promise((resolve) => setTimeout(resolve, step.sleep));
    out({ ms: Date.now() - start });
  } else if (step.event) {
    const running = hooks.event({ event: step.event });
    if (step.wait !== false) await running;
    out({ ms: Date.now() - start });
  } else if (step.chat) {
    const { sessionID, messageID, text } = step.chat;
    const id = `prt_${(0x227b0000000 + part++).toString(16)}AAAAAAAAAAAAAA`;
    const output = {
      message: { id: messageID, role: "user", sessionID, time: { created: Date.now() }, agent: "build" },
      parts: [{ type: "text", text, messageID, sessionID, id }],
    };
    await hooks["chat.message"]({ sessionID, model: { providerID: "fake", modelID: "fake-model" } }, output);
    out({ parts: output.parts, ms: Date.now() - start });
  } else if (step.compacting) {
    const output = { context: [], prompt: undefined };
    await hooks["experimental.session.compacting"]({ sessionID: step.compacting.sessionID }, output);
    out({ context: output.context, ms: Date.now() - start });
  }
}
