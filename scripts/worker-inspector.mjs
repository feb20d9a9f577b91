// Stays attached to `wrangler dev`'s inspector for the Worker while a load test runs, for two
// reasons:
//
// 1. wrangler's inspector proxy turns on the runtime's `Network` domain and keeps every message
//    the runtime sends (one per subrequest event, response bodies included) in an unbounded
//    buffer until a DevTools client attaches. Under load that buffer, not the Worker, is what
//    grows in workerd's memory (measured: the proxy's workerd process grew by hundreds of MiB
//    while the Worker's own process stayed flat). Attached, the buffer drains here and is
//    dropped, and `Network.disable` stops most of it at the source. Cloudflare's runtime has no
//    such proxy.
// 2. It reports the Worker isolate's JavaScript heap (`Runtime.getHeapUsage`) every second, one
//    JSON line appended to OUT_FILE: {"used_bytes": N, "total_bytes": N}.
//
//   node scripts/worker-inspector.mjs INSPECTOR_PORT OUT_FILE
import { appendFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
// `ws` comes with wrangler (scripts/worker-toolchain.sh installs it under target/tools/npm).
const WebSocket = require(process.env.WS_MODULE ?? "ws");

const [port, out] = process.argv.slice(2);
if (!port || !out) {
  console.error("usage: worker-inspector.mjs INSPECTOR_PORT OUT_FILE");
  process.exit(2);
}
const targets = await (await fetch(`http://127.0.0.1:${port}/json`)).json();
const target = targets.find((t) => t.webSocketDebuggerUrl);
if (!target) throw new Error(`no inspectable target on port ${port}: ${JSON.stringify(targets)}`);
const socket = new WebSocket(target.webSocketDebuggerUrl);
await new Promise((ok, fail) => {
  socket.once("open", ok);
  socket.once("error", fail);
});
socket.on("close", () => process.exit(0));
let next = 1;
const waiting = new Map();
socket.on("message", (data) => {
  // Everything else (the drained buffer, events) is read and dropped.
  const text = data.toString();
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

await call("Network.disable");
for (;;) {
  const { usedSize, totalSize } = await call("Runtime.getHeapUsage");
  appendFileSync(out, `${JSON.stringify({ used_bytes: usedSize, total_bytes: totalSize })}\n`);
  await new Promise((ok) => setTimeout(ok, 1000));
}
