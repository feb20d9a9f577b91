// One DevTools protocol session with the Worker's isolate through `wrangler dev`'s inspector:
// what scripts/worker-cpu-profile.mjs and scripts/worker-inspector.mjs share.
//
//   const { call, close } = await connect(port);
//   await call("Runtime.getHeapUsage");
//
// Events and answers to no pending call are read and dropped.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
// `ws` comes with wrangler (scripts/worker-toolchain.sh installs it under target/tools/npm).
const WebSocket = require(process.env.WS_MODULE ?? "ws");

/** Attaches to the first inspectable target on `port`; `call(method, params)` answers its result. */
export async function connect(port) {
  const targets = await (await fetch(`http://127.0.0.1:${port}/json`)).json();
  const target = targets.find((t) => t.webSocketDebuggerUrl);
  if (!target) throw new Error(`no inspectable target on port ${port}: ${JSON.stringify(targets)}`);
  const socket = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((ok, fail) => {
    socket.once("open", ok);
    socket.once("error", fail);
  });
  let next = 1;
  const waiting = new Map();
  socket.on("message", (data) => {
    const text = data.toString();
    // Only answers carry an id first; skip parsing the (possibly large) events.
    if (!text.startsWith('{"id"')) return;
    const msg = JSON.parse(text);
    if (msg.id && waiting.has(msg.id)) {
      const { ok, fail } = waiting.get(msg.id);
      waiting.delete(msg.id);
      if (msg.error) fail(new Error(JSON.stringify(msg.error)));
      else ok(msg.result);
    }
  });
  const call = (method, params = {}) =>
    new Promise((ok, fail) => {
      const id = next++;
      waiting.set(id, { ok, fail });
      socket.send(JSON.stringify({ id, method, params }));
    });
  return { call, close: () => socket.close(), onClose: (f) => socket.on("close", f) };
}
