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
import { connect } from "./inspector-session.mjs";

const [port, out] = process.argv.slice(2);
if (!port || !out) {
  console.error("usage: worker-inspector.mjs INSPECTOR_PORT OUT_FILE");
  process.exit(2);
}
// Everything but the answers (the drained buffer, events) is read and dropped.
const { call, onClose } = await connect(port);
onClose(() => process.exit(0));

await call("Network.disable");
for (;;) {
  const { usedSize, totalSize } = await call("Runtime.getHeapUsage");
  appendFileSync(out, `${JSON.stringify({ used_bytes: usedSize, total_bytes: totalSize })}\n`);
  await new Promise((ok) => setTimeout(ok, 1000));
}
