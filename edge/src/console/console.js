// The ctxgate console: one small script over the public API (GET /v1/usage, POST /v1/context,
// GET /v1/projects, GET /v1/projects/{id}/status, POST /v1/projects/{id}/reindex).
// The API key lives in this tab's sessionStorage and goes out only in the Authorization header.
// Everything the API returns is written with textContent, never parsed as HTML.
"use strict";
(() => {
  const KEY = "ctxgate.key";
  const REFUSAL = "ctxgate.refusal";
  const PAGES = ["usage", "inspector", "projects"];
  const $ = (id) => document.getElementById(id);
  const fmt = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));
  const pct = (part, whole) => (whole > 0 ? ((100 * part) / whole).toFixed(1) + "%" : "–");
  const time = (ms) => new Date(ms).toISOString().replace("T", " ").slice(0, 19) + " UTC";

  /** A new element with attributes and children (strings become text). */
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "style") e.style.cssText = v; // CSSOM: allowed by the page's CSP
      else if (k.startsWith("data-")) e.setAttribute(k, v);
      else if (k in e) e[k] = v;
      else e.setAttribute(k, v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }

  const key = () => sessionStorage.getItem(KEY);
  const say = (text) => { $("status").textContent = text; };

  /** Calls the API; resolves to {status, body, retryAfter}. */
  async function api(method, path, body) {
    const headers = { Authorization: "Bearer " + key() };
    const init = { method, headers, cache: "no-store", credentials: "omit" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const res = await fetch(path, init);
    let data = null;
    try { data = await res.json(); } catch (_) { data = null; }
    if (res.status === 401) signOut("The key was refused (" + code(data) + "). Sign in again.");
    if (res.status === 429) remember429(data, res.headers.get("Retry-After"));
    return { status: res.status, body: data };
  }
  const code = (b) => (b && b.error ? b.error.code : "no answer");
  const errorText = (r) => r.body && r.body.error
    ? `${r.body.error.code} (HTTP ${r.status}): ${r.body.error.message}`
    : `HTTP ${r.status}`;

  // ---- the last refusal, explained on the usage page ----
  const LIMITS = {
    tokens_per_day: ["tokens per UTC day", "tokens"],
    tokens_per_month: ["tokens per UTC month", "tokens"],
    requests_per_minute: ["requests per minute", "requests"],
    concurrency: ["calls at once", "calls"],
    index_jobs_per_hour: ["index jobs per hour", "index jobs"],
  };
  function remember429(body, retryAfter) {
    const d = (body && body.error && body.error.details) || {};
    const at = Date.now();
    const retry = Number(d.retry_after_s ?? retryAfter ?? 0);
    sessionStorage.setItem(REFUSAL, JSON.stringify({ at, retry, code: code(body), details: d }));
  }
  function explainRefusal() {
    const box = $("refusal");
    const raw = sessionStorage.getItem(REFUSAL);
    box.replaceChildren();
    if (!raw) { box.hidden = true; return; }
    const r = JSON.parse(raw);
    const [name, unit] = LIMITS[r.details.limit] || [r.details.limit || "a", "units"];
    const until = r.at + r.retry * 1000;
    box.append(
      el("p", {}, el("strong", {}, "A call was refused: HTTP 429 ", el("code", {}, r.code), ".")),
      el("p", { "data-refusal": r.details.limit || "" },
        `At ${time(r.at)} the organisation's limit of ${fmt(r.details.allowed)} ${name} ` +
        `left ${fmt(r.details.remaining)} ${unit}; the call needed ${fmt(r.details.requested)}. ` +
        (until > Date.now()
          ? `Retry in ${Math.ceil((until - Date.now()) / 1000)} s (after ${time(until)}).`
          : `It could be retried from ${time(until)}.`)),
      el("p", {}, "Refused calls do no work and are not charged. ",
        el("button", { type: "button", onclick: () => { sessionStorage.removeItem(REFUSAL); explainRefusal(); } }, "Dismiss")));
    box.hidden = false;
  }

  // ---- bars ----
  /** A bar of `parts` ([{name, tokens, cls}]) out of `whole`, with an accessible label. */
  function bar(node, parts, whole, label) {
    node.replaceChildren(...parts.map((p) => el("span", {
      class: p.cls, title: `${p.name}: ${fmt(p.tokens)}`,
      style: `width:${whole > 0 ? Math.min(100, (100 * p.tokens) / whole) : 0}%`,
    })));
    node.setAttribute("aria-label", label);
  }

  // ---- usage ----
  async function showUsage() {
    const page = $("page-usage");
    page.setAttribute("aria-busy", "true");
    try {
      await fillUsage();
    } finally {
      page.setAttribute("aria-busy", "false");
      // A count of finished loads, so that a reader (the browser test) can wait for the load it
      // started instead of reading the bars of an earlier one.
      page.dataset.loads = String(Number(page.dataset.loads || 0) + 1);
    }
  }
  async function fillUsage() {
    explainRefusal();
    const [u, p] = await Promise.all([api("GET", "/v1/usage"), api("GET", "/v1/projects")]);
    if (u.status !== 200) { say("Usage could not be read: " + errorText(u)); return; }
    const names = {};
    for (const x of (p.body && p.body.projects) || []) names[x.id] = x.name;
    const s = u.body.usage, l = s.limits || {};
    $("org-name").textContent = "Organisation " + u.body.org;
    const rows = [
      ["tokens-day", "Tokens today", s.tokens_today, l.tokens_per_day, "tokens", s.tokens_reserved],
      ["tokens-month", "Tokens this month", s.tokens_this_month, l.tokens_per_month, "tokens", s.tokens_reserved],
      ["rate", "Requests this minute", s.requests_this_minute, l.requests_per_minute, "requests"],
      ["concurrency", "Calls in flight", s.in_flight, l.concurrency, "calls"],
      ["index-jobs", "Index jobs this hour", s.index_jobs_this_hour ?? 0, l.index_jobs_per_hour, "jobs"],
    ];
    $("quota-bars").replaceChildren(...rows.map(([id, name, used, limit, unit, held]) => {
      const box = el("div", { class: "quota", "data-quota": id });
      const limited = limit !== undefined && limit !== null;
      let text = limited
        ? `${name}: ${fmt(used)} of ${fmt(limit)} ${unit} (${pct(used, limit)})`
        : `${name}: ${fmt(used)} ${unit} (no limit)`;
      if (held) text += `; ${fmt(held)} held by calls in flight`;
      box.append(el("p", { "data-used": used, "data-limit": limited ? limit : "" }, el("strong", {}, text)));
      if (limited) {
        const b = el("div", { class: "bar" });
        bar(b, [{ name: "used", tokens: used, cls: "p-used" }], limit, text);
        b.setAttribute("role", "img");
        box.append(b);
        if (used >= limit) {
          box.append(el("p", { class: "full" },
            id === "index-jobs"
              ? "Limit reached: new index jobs (projects, re-indexes, pushes) are refused with HTTP 429 quota_exceeded until the hour ends."
              : `Limit reached: new calls are refused with HTTP 429 quota_exceeded until the ${
                id === "rate" ? "minute ends" : id === "concurrency" ? "calls in flight finish" : id === "tokens-day" ? "UTC day ends" : "UTC month ends"}.`));
        }
      }
      return box;
    }));
    const body = $("calls").tBodies[0];
    body.replaceChildren(...u.body.recent.map((r) => el("tr", {},
      el("td", {}, time(r.at_ms)), el("td", {}, el("code", {}, r.endpoint)),
      el("td", {}, r.project ? names[r.project] || r.project : "–"),
      el("td", { class: "num" }, fmt(r.budget)), el("td", { class: "num" }, fmt(r.tokens_used)),
      el("td", {}, r.model || "–"), el("td", {}, r.profile || "–"), el("td", {}, r.intent || "–"),
      el("td", { class: "num" }, String(r.status)))));
    if (!u.body.recent.length) body.append(el("tr", {}, el("td", { colSpan: 9 }, "No calls yet.")));
    say("");
  }

  // ---- inspector ----
  let lastPrompt = "";
  async function fillInspector() {
    const [p, m] = await Promise.all([api("GET", "/v1/projects"), fetch("/v1/models").then((r) => r.json())]);
    const sel = $("project");
    const had = sel.value;
    sel.replaceChildren(...((p.body && p.body.projects) || []).map((x) =>
      el("option", { value: x.name }, x.current_version ? `${x.name} (v${x.current_version})` : `${x.name} (not indexed)`)));
    if (had) sel.value = had;
    const ms = $("model");
    if (ms.options.length <= 1) {
      for (const x of m.models) ms.append(el("option", { value: x.id }, `${x.id} (${fmt(x.context_window)}-token window)`));
    }
  }

  async function inspect(ev) {
    ev.preventDefault();
    const f = ev.target;
    const req = {
      project: f.project.value,
      query: f.query.value,
      budget: Number(f.budget.value),
      profile: f.profile.value,
    };
    if (f.model.value) req.model = f.model.value;
    if (req.profile === "repair") req.error_output = f.error_output.value;
    $("inspect-error").textContent = "";
    $("inspect-run").disabled = true;
    say("Assembling…");
    try {
      const r = await api("POST", "/v1/context", req);
      if (r.status !== 200) {
        $("inspect-error").replaceChildren(errorText(r),
          r.status === 429 ? el("span", {}, " — ", el("a", { href: "#usage" }, "see the Usage page")) : "");
        say("");
        return;
      }
      render(r.body);
      say(`Assembled: ${fmt(r.body.tokens_total)} tokens in ${r.body.pieces.length} pieces.`);
    } finally {
      $("inspect-run").disabled = false;
    }
  }

  function render(a) {
    const an = a.analysis, b = an.bar;
    const parts = [
      { id: "query", name: "Query", tokens: b.query, cls: "p-query" },
      { id: "headers", name: "Headers and framing", tokens: b.headers, cls: "p-headers" },
      { id: "code", name: "Code", tokens: b.code, cls: "p-code" },
      { id: "summaries", name: "Summaries", tokens: b.summaries, cls: "p-summaries" },
      { id: "history", name: "Conversation", tokens: b.history, cls: "p-history" },
      { id: "free", name: "Free room", tokens: b.free, cls: "p-free" },
    ];
    const used = b.budget - b.free;
    const summary = `${fmt(used)} of a ${fmt(b.budget)}-token budget used (${pct(used, b.budget)}), ${fmt(b.free)} free.`;
    $("bar-summary").textContent = summary;
    bar($("budget-bar"), parts, b.budget, summary);
    $("bar-table").tBodies[0].replaceChildren(...parts.map((p) => el("tr", { "data-part": p.id },
      el("th", { scope: "row" }, el("span", { class: "key " + p.cls, "aria-hidden": "true" }), p.name),
      el("td", { class: "num", "data-tokens": p.tokens }, fmt(p.tokens)),
      el("td", { class: "num" }, pct(p.tokens, b.budget)))));
    const w = an.window;
    if (w) {
      const text = `The budget is ${pct(b.budget, w.window)} of ${a.model}'s ${fmt(w.window)}-token window ` +
        `(${fmt(w.usable)} usable for context; ${fmt(w.reply_reserve)} kept for the reply, ${fmt(w.system_prompt)} for the system prompt).`;
      $("window-summary").textContent = text;
      $("window-summary").dataset.window = w.window;
      bar($("window-bar"), [
        { name: "used", tokens: used, cls: "p-budget" },
        { name: "rest of the budget", tokens: b.free, cls: "p-free" },
        { name: "beyond the budget, usable", tokens: Math.max(0, w.usable - b.budget), cls: "p-free" },
        { name: "reply and system prompt", tokens: w.reply_reserve + w.system_prompt, cls: "p-reserve" },
      ], w.window, text);
      $("window-bar").hidden = false;
    } else {
      $("window-summary").textContent = "No model named: the budget alone bounds the prompt (counted with " + a.tokenizer + ").";
      $("window-bar").hidden = true;
    }
    const o = a.project.origin || {};
    const facts = [
      ["Project", `${a.project.name}, version ${a.project.version}`],
      ["Indexed commit", o.commit ? `${o.commit}${o.remote ? " of " + o.remote : ""}` : "not from git"],
      ["Tokens", `${fmt(a.tokens_total)} (${a.exact ? "exact" : "estimated"}, ${a.tokenizer})`],
      ["Intent", `${a.intent.intent} (confidence ${Number(a.intent.confidence).toFixed(2)}), scope ${a.intent.scope}`],
      ["Profile", a.profile && a.profile.name ? a.profile.name : "–"],
      ["Strategy", an.strategy],
      ["Candidates", `${fmt(an.candidates)} weighed, ${fmt(an.left_out)} left out for room`],
      ["Routing", a.routing ? `${a.routing.model}: ${a.routing.reason} (≈ $${Number(a.routing.estimated_cost_usd).toFixed(4)})` : "–"],
      ["Savings", `${fmt(a.savings.tokens_saved)} tokens (${Number(a.savings.percent_saved).toFixed(1)}%) against the whole repository of ${fmt(a.savings.repo_tokens)}`],
    ];
    $("facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
    $("warnings").replaceChildren(...a.warnings.map((t) => el("li", {}, "Warning: " + t)));
    $("pieces").tBodies[0].replaceChildren(...a.pieces.map((p, i) => {
      const where = `${p.path}:${p.start_line}-${p.end_line}`;
      const src = p.source_url
        ? el("a", { href: p.source_url, target: "_blank", rel: "noopener noreferrer", class: "source" }, where)
        : el("span", {}, where);
      const sig = p.reasoning ? Object.entries(p.reasoning)
        .filter(([k, v]) => v !== 0 && !(k === "prior" && v === 1) && !(k === "diversity" && v === 1))
        .map(([k, v]) => el("li", {}, `${k} ${Number(v).toFixed(2)}`)) : [];
      return el("tr", { "data-chunk": p.chunk_id },
        el("td", { class: "num" }, String(i + 1)),
        el("td", {}, src, p.symbol ? el("div", {}, el("code", {}, p.symbol), " ", p.kind) : el("div", {}, p.kind)),
        el("td", {}, p.form + (p.original_tokens ? ` (from ${fmt(p.original_tokens)})` : "")),
        el("td", { class: "num" }, fmt(p.tokens)),
        el("td", { class: "num" }, Number(p.score).toFixed(3)),
        el("td", {}, sig.length ? el("ul", { class: "signals" }, sig) : "–"));
    }));
    lastPrompt = a.prompt;
    $("prompt").textContent = a.prompt;
    $("copy-status").textContent = "";
    $("result").hidden = false;
  }

  async function copyPrompt() {
    try {
      await navigator.clipboard.writeText(lastPrompt);
      $("copy-status").textContent = "Copied.";
    } catch (_) {
      const range = document.createRange();
      range.selectNodeContents($("prompt"));
      const s = getSelection(); s.removeAllRanges(); s.addRange(range);
      $("copy-status").textContent = "Selected: press Ctrl+C (⌘C) to copy.";
    }
  }

  // ---- projects ----
  function jobText(j) {
    if (!j) return "no job recorded on this host";
    let t = `${j.state.replaceAll("_", " ")} (${j.trigger}, ${j.stage}) ${time(j.updated_ms)}`;
    if (j.error_code) t += ` — error ${j.error_code}`;
    return t;
  }
  async function showProjects() {
    const p = await api("GET", "/v1/projects");
    if (p.status !== 200) { say("Projects could not be read: " + errorText(p)); return; }
    const body = $("projects-table").tBodies[0];
    const list = p.body.projects;
    const statuses = await Promise.all(list.map((x) => api("GET", `/v1/projects/${encodeURIComponent(x.id)}/status`)));
    body.replaceChildren(...list.map((x, i) => {
      const s = statuses[i].status === 200 ? statuses[i].body : null;
      const ix = s && s.index;
      const tokens = ix ? ix.tokens.o200k_base ?? Object.values(ix.tokens)[0] : null;
      const out = el("span", { role: "status", "aria-live": "polite" });
      const btn = el("button", { type: "button", onclick: () => reindex(x, btn, out) }, "Re-index now");
      btn.setAttribute("aria-label", `Re-index ${x.name} now`);
      return el("tr", { "data-project": x.name },
        el("th", { scope: "row" }, x.name, el("div", {}, el("small", {}, x.source))),
        el("td", { class: "num" }, x.current_version ?? "none"),
        el("td", {}, ix && ix.commit ? el("code", { title: ix.commit }, ix.commit.slice(0, 12)) : "–"),
        el("td", { class: "num" }, ix ? fmt(ix.files) : "–"),
        el("td", { class: "num" }, ix ? fmt(ix.chunks) : "–"),
        el("td", { class: "num" }, tokens === null || tokens === undefined ? "–" : fmt(tokens)),
        el("td", { "data-job": s && s.last_job ? s.last_job.state : "" }, s ? jobText(s.last_job) : errorText(statuses[i])),
        el("td", {}, btn, " ", out));
    }));
    if (!list.length) body.append(el("tr", {}, el("td", { colSpan: 8 }, "No projects yet.")));
    say("");
  }
  async function reindex(project, btn, out) {
    btn.disabled = true;
    out.textContent = "Re-indexing…";
    try {
      const r = await api("POST", `/v1/projects/${encodeURIComponent(project.id)}/reindex`);
      if (r.status === 200 || r.status === 202) {
        const v = r.body.project && r.body.project.current_version;
        await showProjects();
        say(r.body.changed ? `${project.name}: version ${v} published.` : `${project.name}: unchanged, version ${v} stands.`);
      } else {
        out.textContent = errorText(r);
      }
    } finally {
      btn.disabled = false;
    }
  }

  // ---- pages and sign-in ----
  function signOut(message) {
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(REFUSAL);
    route();
    if (message) $("signin-error").textContent = message;
  }
  async function signIn(ev) {
    ev.preventDefault();
    const input = $("api-key");
    sessionStorage.setItem(KEY, input.value.trim());
    input.value = "";
    const r = await api("GET", "/v1/usage");
    if (r.status !== 200) { signOut("Sign-in failed: " + errorText(r)); return; }
    $("signin-error").textContent = "";
    if (!PAGES.includes(location.hash.slice(1))) location.hash = "#usage";
    else route();
  }
  async function route() {
    const signedIn = !!key();
    const page = signedIn ? (PAGES.includes(location.hash.slice(1)) ? location.hash.slice(1) : "usage") : "signin";
    for (const p of ["signin", ...PAGES]) $("page-" + p).hidden = p !== page;
    $("nav").hidden = !signedIn;
    $("who").hidden = !signedIn;
    for (const a of document.querySelectorAll("nav a")) {
      if (a.dataset.page === page) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    document.title = (page === "signin" ? "Sign in" : page[0].toUpperCase() + page.slice(1)) + " · ctxgate console";
    if (!signedIn) { $("api-key").focus(); return; }
    say("Loading…");
    if (page === "usage") await showUsage();
    if (page === "inspector") { await fillInspector(); say(""); }
    if (page === "projects") await showProjects();
    $("page-" + page).querySelector("h1").focus({ preventScroll: true });
  }

  document.addEventListener("DOMContentLoaded", () => {
    for (const h of document.querySelectorAll("section > h1")) h.tabIndex = -1;
    $("signin-form").addEventListener("submit", signIn);
    $("sign-out").addEventListener("click", () => signOut("Signed out."));
    $("inspect-form").addEventListener("submit", inspect);
    $("copy-prompt").addEventListener("click", copyPrompt);
    $("usage-refresh").addEventListener("click", showUsage);
    $("projects-refresh").addEventListener("click", showProjects);
    $("profile").addEventListener("change", (e) => { $("error-output-field").hidden = e.target.value !== "repair"; });
    window.addEventListener("hashchange", route);
    route();
  });
})();
