// Names where a Worker's isolate spends a request, with V8's own sampling profiler reached
// through `wrangler dev`'s inspector.
//
// workerd's clocks stand still while a Worker computes, and the CPU of workerd's threads (what
// benches/worker.rs reads from /proc) also holds its HTTP handling and the local simulations of
// KV, R2 and Durable Objects. V8's profiler samples only the isolate, JavaScript and wasm alike,
// by function. Its non-idle time per request is NOT CPU time: measured here it is about twice
// the busiest workerd thread's CPU for the same calls (V8 counts time the isolate waits as
// busy, and sampling slows it), so read the shares, not the totals.
//
//   node scripts/worker-cpu-profile.mjs INSPECTOR_PORT REQUESTS_JSON
//
// SAMPLING_US sets the sampling interval (default 100 µs), TOP the number of functions listed,
// TOTAL=N adds the N largest inclusive times, CALLERS=a|b who calls the frames so named,
// PROFILE_DIR=dir keeps the raw profile and the requests' marks there (a `.cpuprofile` that
// Chrome's DevTools opens, and `scripts/worker_profile_stages.py` splits by stage).
// REQUESTS_JSON: {"url": "...", "headers": {...}, "bodies": ["...", ...], "rounds": N}. Each body
// is POSTed in turn, `rounds` times over, one request at a time (a `null` body is a GET).
// Prints one JSON object: per-request isolate CPU (mean, p50) and the functions with the most
// self time.
import { readFileSync, writeFileSync } from "node:fs";
import { connect } from "./inspector-session.mjs";

const [port, spec] = process.argv.slice(2);
if (!port || !spec) {
  console.error("usage: worker-cpu-profile.mjs INSPECTOR_PORT REQUESTS_JSON");
  process.exit(2);
}
const plan = JSON.parse(readFileSync(spec, "utf8"));
const { call, close } = await connect(port);

const IDLE = new Set(["(idle)", "(root)"]);

/** Non-idle sampled microseconds between `from` and `to` (profile clock), by node id. */
function busy(profile, from, to) {
  const idle = new Set(
    profile.nodes.filter((n) => IDLE.has(n.callFrame.functionName)).map((n) => n.id),
  );
  let t = profile.startTime;
  const self = new Map();
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    // A sample stands for the interval up to the next one.
    const span = profile.timeDeltas[i + 1] ?? 0;
    if (t < from || t >= to || idle.has(profile.samples[i])) continue;
    total += span;
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + span);
  }
  return { total, self };
}

await call("Profiler.enable");
await call("Profiler.setSamplingInterval", { interval: Number(process.env.SAMPLING_US ?? 100) });
const marks = [];
// The profile's timestamps are V8's monotonic clock in microseconds, which on Linux is
// CLOCK_MONOTONIC, the clock of process.hrtime: requests are marked on it.
const now = () => Number(process.hrtime.bigint() / 1000n);
const started = now();
await call("Profiler.start");
for (let r = 0; r < plan.rounds; r++) {
  for (const body of plan.bodies) {
    const a = now();
    const res = await fetch(plan.url, {
      method: body === null ? "GET" : "POST",
      headers: plan.headers,
      body: body ?? undefined,
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`status ${res.status}`);
    marks.push([a, now()]);
  }
}
const { profile } = await call("Profiler.stop");
close();
if (process.env.PROFILE_DIR) {
  const stem = `${process.env.PROFILE_DIR}/worker-${process.env.SAMPLING_US ?? 100}us-${Date.now()}`;
  writeFileSync(`${stem}.cpuprofile`, JSON.stringify(profile));
  writeFileSync(`${stem}.marks.json`, JSON.stringify(marks));
}

const perRequest = marks.map(([a, b]) => busy(profile, a, b).total / 1000);
const whole = busy(profile, -Infinity, Infinity);
const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
// Anonymous frames are named by their nearest named caller.
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const label = (id) => {
  const f = byNode.get(id).callFrame;
  if (f.functionName) return f.functionName;
  let p = parent.get(id);
  while (p !== undefined && !byNode.get(p).callFrame.functionName) p = parent.get(p);
  const caller = p === undefined ? "root" : byNode.get(p).callFrame.functionName;
  return `(anonymous ${f.url.split("/").pop()}:${f.lineNumber} under ${caller})`;
};
const byName = new Map();
for (const [id, us] of whole.self) {
  const name = label(id);
  byName.set(name, (byName.get(name) ?? 0) + us);
}
// Inclusive time by name: a sample counts once for every function on its stack (TOTAL=N
// prints the N largest).
const inclusive = new Map();
for (const [id, us] of whole.self) {
  const names = new Set();
  for (let n = id; n !== undefined; n = parent.get(n)) names.add(label(n));
  for (const name of names) inclusive.set(name, (inclusive.get(name) ?? 0) + us);
}
const totals = [...inclusive.entries()]
  .sort((x, y) => y[1] - x[1])
  .slice(0, Number(process.env.TOTAL ?? 0))
  .map(([name, us]) => ({ name, ms_per_request: +(us / 1000 / marks.length).toFixed(3) }));
// CALLERS=a|b: where the time of the frames whose name holds `a` (then `b`...) comes from, by the
// four frames above the outermost such frame.
const callers = new Map();
for (const text of (process.env.CALLERS ?? "").split("|").filter(Boolean)) {
  for (const [id, us] of whole.self) {
    let hit;
    for (let n = id; n !== undefined; n = parent.get(n)) {
      if (label(n).includes(text)) hit = n;
    }
    if (hit === undefined) continue;
    const chain = [];
    for (let n = parent.get(hit); n !== undefined && chain.length < 4; n = parent.get(n)) {
      chain.push(label(n).slice(0, 90));
    }
    const key = `${text}: ${chain.join(" < ")}`;
    callers.set(key, (callers.get(key) ?? 0) + us);
  }
}
const callersTop = [...callers.entries()]
  .sort((x, y) => y[1] - x[1])
  .slice(0, 30)
  .map(([chain, us]) => ({ chain, ms_per_request: +(us / 1000 / marks.length).toFixed(3) }));
const sorted = [...perRequest].sort((x, y) => x - y);
const top = [...byName.entries()]
  .sort((x, y) => y[1] - x[1])
  .slice(0, Number(process.env.TOP ?? 25))
  .map(([name, us]) => ({ name, ms_per_request: +(us / 1000 / marks.length).toFixed(3) }));
console.log(
  JSON.stringify(
    {
      requests: marks.length,
      // Sanity of the shared clock: the profile started this many ms after our mark.
      clock_offset_ms: +((profile.startTime - started) / 1000).toFixed(2),
      requests_share_of_busy: +(perRequest.reduce((a, b) => a + b, 0) / (whole.total / 1000)).toFixed(3),
      isolate_busy_ms_mean: +(whole.total / 1000 / marks.length).toFixed(2),
      isolate_busy_ms_p50: +sorted[Math.floor(sorted.length / 2)].toFixed(2),
      isolate_busy_ms_max: +sorted[sorted.length - 1].toFixed(2),
      top_self_time: top,
      ...(totals.length ? { top_total_time: totals } : {}),
      ...(callersTop.length ? { callers: callersTop } : {}),
    },
    null,
    1,
  ),
);
