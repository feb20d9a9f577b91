//! Observability on both hosts: `GET /metrics` read by Prometheus's own text parser (the
//! `prometheus_client` package, installed into `target/lint-venv` by
//! `scripts/lint-tools-setup.sh`, which the test command runs), its counters moving as a 200, a
//! 429 from a quota and 404s are answered; each request's JSON log line, with its fields and
//! without the key or the query's text; and in the Worker, the Analytics Engine data points,
//! written to a stand-in dataset (`tests/api/analytics/`: `wrangler dev`'s local dataset drops
//! every write).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::host::{ADMIN_SECRET, Host, NativeHost, call_with, get, ledger_repo, org_with_key};
use super::worker::WorkerHost;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Words in the query that must never reach a log line.
const QUERY_MARKER: &str = "zqxobservedmarker";

/// A project name that must show in no route label (the template `{id}` does).
const MISSING_PROJECT: &str = "no-such-project-qvw";

/// One sample as the parser read it.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// `text` parsed by `prometheus_client.parser`: every sample of every family (fails the test
/// if the parser refuses the text).
fn parse_prometheus(text: &str) -> Vec<Sample> {
    let python = Path::new(ROOT).join("target/lint-venv/bin/python");
    assert!(
        python.exists(),
        "no {}: run scripts/lint-tools-setup.sh (scripts/test.sh does)",
        python.display()
    );
    let script = "import json, sys\n\
        from prometheus_client.parser import text_string_to_metric_families\n\
        out = []\n\
        for f in text_string_to_metric_families(sys.stdin.read()):\n\
        \x20   for s in f.samples:\n\
        \x20       out.append({'family': f.name, 'type': f.type, 'name': s.name, 'labels': s.labels, 'value': s.value})\n\
        print(json.dumps(out))\n";
    let mut child = Command::new(&python)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "prometheus_client refused /metrics: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let samples: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    samples
        .into_iter()
        .map(|s| Sample {
            name: s["name"].as_str().unwrap().to_string(),
            labels: serde_json::from_value(s["labels"].clone()).unwrap(),
            value: s["value"].as_f64().unwrap(),
        })
        .collect()
}

/// The value of sample `name` whose labels include `labels` (0 when there is none).
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|s| s.name == name)
        .filter(|s| {
            labels
                .iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
        .sum()
}

/// `GET /metrics` as Prometheus text, parsed.
fn scrape(host: &dyn Host) -> Vec<Sample> {
    let r = get(host, "/metrics", Some(ADMIN_SECRET));
    assert_eq!(r.status, 200, "{}", r.body);
    parse_prometheus(r.body.as_str().expect("a text answer"))
}

/// The calls whose effects both hosts check: returns the request id sent with the 200.
struct Calls {
    org: String,
    limited: String,
    key: String,
    limited_key: String,
}

fn make_calls(host: &dyn Host, tag: &str) -> Calls {
    let org = format!("obs{tag}");
    let limited = format!("obsq{tag}");
    let key = org_with_key(host, &org, json!({}));
    let limited_key = org_with_key(host, &limited, json!({ "tokens_per_day": 500 }));
    let repo = ledger_repo();
    host.publish(&org, "core", repo.path());
    host.publish(&limited, "core", repo.path());
    Calls {
        org,
        limited,
        key,
        limited_key,
    }
}

/// A 200 (sent with request id `id`), a 429 from the daily token quota, a 404 on a route with a
/// parameter and a 404 on no route.
fn exercise(host: &dyn Host, calls: &Calls, id: &str) {
    let ask = format!("how are tokens reserved {QUERY_MARKER}");
    let body = json!({ "project": "core", "query": ask, "budget": 2000 }).to_string();
    let ok = call_with(
        host,
        "POST",
        "/v1/context",
        Some(&calls.key),
        Some(&body),
        "application/json",
        &[("X-Request-Id", id)],
    );
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert!(ok.body["tokens_total"].as_u64().unwrap() > 0, "{}", ok.body);
    let refused = call_with(
        host,
        "POST",
        "/v1/context",
        Some(&calls.limited_key),
        Some(&body),
        "application/json",
        &[],
    );
    assert_eq!(
        (refused.status, refused.code()),
        (429, "quota_exceeded"),
        "{}",
        refused.body
    );
    let missing = get(
        host,
        &format!("/v1/projects/{MISSING_PROJECT}"),
        Some(&calls.key),
    );
    assert_eq!(missing.status, 404, "{}", missing.body);
    let nowhere = get(host, "/no/such/route", None);
    assert_eq!((nowhere.status, nowhere.code()), (404, "route_not_found"));
}

/// The JSON request lines in `log`.
fn request_lines(log: &str) -> Vec<Value> {
    log.lines()
        .filter_map(|l| l.find('{').map(|i| &l[i..]))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "request")
        .collect()
}

/// The log lines of the calls [`exercise`] made carry their fields, and no line carries a key,
/// the query's text or a raw path's values.
fn check_log(log: &str, calls: &Calls, id: &str) {
    let lines = request_lines(log);
    let ok = lines
        .iter()
        .find(|l| l["request_id"] == id)
        .unwrap_or_else(|| panic!("no line for request {id}:\n{log}"));
    assert_eq!(ok["route"], "/v1/context", "{ok}");
    assert_eq!(ok["method"], "POST", "{ok}");
    assert_eq!(ok["status"], 200, "{ok}");
    assert_eq!(ok["org"], calls.org.as_str(), "{ok}");
    assert!(ok["tokens"].as_u64().unwrap() > 0, "{ok}");
    assert!(ok["latency_ms"].as_f64().unwrap() >= 0.0, "{ok}");
    assert!(ok["ts_ms"].as_u64().unwrap() > 0, "{ok}");
    assert!(ok.get("error_code").is_none(), "{ok}");
    assert!(ok["version_cache"].is_string(), "{ok}");
    let refused = lines
        .iter()
        .find(|l| l["status"] == 429 && l["org"] == calls.limited.as_str())
        .unwrap_or_else(|| panic!("no 429 line:\n{log}"));
    assert_eq!(refused["error_code"], "quota_exceeded", "{refused}");
    assert_eq!(refused["quota_limit"], "tokens_per_day", "{refused}");
    assert_eq!(refused["tokens"], 0, "{refused}");
    let missing = lines
        .iter()
        .find(|l| l["route"] == "/v1/projects/{id}" && l["status"] == 404)
        .unwrap_or_else(|| panic!("no 404 line for /v1/projects/{{id}}:\n{log}"));
    assert_eq!(missing["error_code"], "project_not_found", "{missing}");
    let nowhere = lines
        .iter()
        .find(|l| l["route"] == "unmatched")
        .unwrap_or_else(|| panic!("no line for an unmatched route:\n{log}"));
    assert_eq!(nowhere["error_code"], "route_not_found", "{nowhere}");
    assert!(nowhere.get("org").is_none(), "{nowhere}");
    for secret in [
        calls.key.as_str(),
        calls.limited_key.as_str(),
        ADMIN_SECRET,
        QUERY_MARKER,
    ] {
        assert!(!log.contains(secret), "the log holds `{secret}`:\n{log}");
    }
    // Records name routes by template (wrangler's own request lines, beside them in the
    // Worker's output, show raw paths).
    for line in &lines {
        assert!(
            !line.to_string().contains(MISSING_PROJECT),
            "a record holds a raw path: {line}"
        );
    }
}

/// The counters [`exercise`] moves, from `before` to `after`.
fn check_counters(before: &[Sample], after: &[Sample], calls: &Calls) {
    let moved = |name: &str, labels: &[(&str, &str)]| {
        value(after, name, labels) - value(before, name, labels)
    };
    let requests = "ctxgate_http_requests_total";
    let context = ("route", "/v1/context");
    assert_eq!(moved(requests, &[context, ("status", "200")]), 1.0);
    assert_eq!(moved(requests, &[context, ("status", "429")]), 1.0);
    assert_eq!(
        moved(
            requests,
            &[("route", "/v1/projects/{id}"), ("status", "404")]
        ),
        1.0
    );
    assert_eq!(
        moved(requests, &[("route", "unmatched"), ("status", "404")]),
        1.0
    );
    let histogram = "ctxgate_http_request_duration_seconds_count";
    assert_eq!(moved(histogram, &[context, ("status", "200")]), 1.0);
    assert_eq!(
        moved(
            "ctxgate_http_request_duration_seconds_bucket",
            &[context, ("status", "200"), ("le", "+Inf")]
        ),
        1.0
    );
    assert!(moved("ctxgate_tokens_delivered_total", &[("org", &calls.org)]) > 0.0);
    assert_eq!(
        moved("ctxgate_tokens_delivered_total", &[("org", &calls.limited)]),
        0.0
    );
    assert_eq!(
        moved(
            "ctxgate_quota_refusals_total",
            &[("org", &calls.limited), ("limit", "tokens_per_day")]
        ),
        1.0
    );
    let lookups = "ctxgate_index_cache_lookups_total";
    assert!(moved(lookups, &[("cache", "version")]) >= 1.0);
    assert!(moved(lookups, &[("cache", "pointer")]) >= 1.0);
}

/// `/metrics` refuses a caller without the admin secret, like every admin endpoint.
fn check_admin_only(host: &dyn Host, calls: &Calls) {
    let r = get(host, "/metrics", Some(&calls.key));
    assert_eq!((r.status, r.code()), (401, "invalid_admin_secret"));
    let r = get(host, "/metrics", None);
    assert_eq!((r.status, r.code()), (401, "invalid_admin_secret"));
}

/// `ctxgate serve`: logs to a file at `CTXGATE_LOG=warn,access=info`, metrics scraped before and
/// after the calls, and the indexing jobs of `POST /v1/projects` and its reindex timed.
pub fn native() {
    let scratch = tempfile::tempdir().unwrap();
    let log_path = scratch.path().join("serve.log");
    let tmp = std::env::temp_dir().display().to_string();
    let host = NativeHost::start_logging(
        &["--local-root", &tmp],
        &[("CTXGATE_LOG", "warn,access=info")],
        Some(log_path.clone()),
    );
    let calls = make_calls(&host, "n");
    let before = scrape(&host);
    exercise(&host, &calls, "obs-native-1");
    let after = scrape(&host);
    check_counters(&before, &after, &calls);
    check_admin_only(&host, &calls);

    // Indexing jobs this server runs are timed: one `create`, one `reindex`.
    let repo = ledger_repo();
    let created = super::host::post(
        &host,
        "/v1/projects",
        Some(&calls.key),
        &json!({ "name": "viaapi", "source": { "kind": "local", "path": repo.path() } }),
    );
    assert_eq!(created.status, 201, "{}", created.body);
    let reindexed = super::host::post(
        &host,
        "/v1/projects/viaapi/reindex",
        Some(&calls.key),
        &json!({}),
    );
    assert_eq!(reindexed.status, 200, "{}", reindexed.body);
    let jobs = scrape(&host);
    let job = "ctxgate_index_job_duration_seconds_count";
    assert_eq!(
        value(&jobs, job, &[("trigger", "create"), ("outcome", "ok")]),
        1.0
    );
    assert_eq!(
        value(&jobs, job, &[("trigger", "reindex"), ("outcome", "ok")]),
        1.0
    );
    assert!(
        value(
            &jobs,
            "ctxgate_index_job_duration_seconds_sum",
            &[("trigger", "create")]
        ) > 0.0
    );
    // A quota refusal inside an MCP tool call (answered 200, a JSON-RPC tool error) counts too.
    let tool = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": { "name": "get_context", "arguments": {
            "project": "core", "query": "how are tokens reserved", "budget": 2000 } }
    });
    let r = super::host::post(&host, "/mcp", Some(&calls.limited_key), &tool);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.to_string().contains("quota_exceeded"), "{}", r.body);
    let refusals = |samples: &[Sample]| {
        value(
            samples,
            "ctxgate_quota_refusals_total",
            &[("org", &calls.limited), ("limit", "tokens_per_day")],
        )
    };
    assert_eq!(refusals(&scrape(&host)) - refusals(&jobs), 1.0);
    // The JSON form holds the same series.
    let j = call_with(
        &host,
        "GET",
        "/metrics",
        Some(ADMIN_SECRET),
        None,
        "",
        &[("Accept", "application/json")],
    );
    assert_eq!(j.status, 200, "{}", j.body);
    assert_eq!(j.body["scope"], "process", "{}", j.body);
    assert!(
        j.body["index_jobs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["trigger"] == "create" && s["duration"]["count"] == 1),
        "{}",
        j.body
    );
    let log = std::fs::read_to_string(&log_path).unwrap();
    check_log(&log, &calls, "obs-native-1");
    assert!(
        request_lines(&log).iter().any(|l| l["route"] == "/mcp"
            && l["status"] == 200
            && l["quota_limit"] == "tokens_per_day"),
        "{log}"
    );
    assert!(
        request_lines(&log).len() >= 8,
        "one line per request:\n{log}"
    );
}

/// The config `wrangler dev` runs the Worker with in this test: the repository's, with the
/// Analytics Engine dataset replaced by a service binding to the stand-in's RPC entrypoint;
/// the stand-in's own config beside it.
fn standin_configs(scratch: &Path) -> Vec<PathBuf> {
    let ours = std::fs::read_to_string(Path::new(ROOT).join("wrangler.toml")).unwrap();
    let dataset =
        "[[analytics_engine_datasets]]\nbinding = \"ANALYTICS\"\ndataset = \"ctxgate_requests\"\n";
    assert!(
        ours.contains(dataset),
        "wrangler.toml no longer binds the dataset as this test expects"
    );
    let module = Path::new(ROOT).join("target/worker-build/index.js");
    let config = ours
        .replace(
            dataset,
            "[[services]]\nbinding = \"ANALYTICS\"\nservice = \"ctxgate-analytics-standin\"\nentrypoint = \"Dataset\"\n",
        )
        .replace(
            "main = \"target/worker-build/index.js\"",
            &format!("main = {:?}", module.display().to_string()),
        );
    let path = scratch.join("wrangler.toml");
    std::fs::write(&path, config).unwrap();
    vec![
        path,
        Path::new(ROOT).join("tests/api/analytics/standin.toml"),
    ]
}

/// The data points the stand-in received (its lines in wrangler's output).
fn data_points(output: &str) -> Vec<Value> {
    output
        .lines()
        .filter_map(|l| l.split_once("analytics-standin ").map(|(_, p)| p))
        .filter_map(|p| serde_json::from_str(p.trim()).ok())
        .collect()
}

/// The Worker under workerd: logs and data points from wrangler's output, `/metrics` as text
/// (parsed) and as JSON, per isolate.
pub fn worker() {
    if !WorkerHost::available() {
        return;
    }
    let host = WorkerHost::start_with_configs(standin_configs);
    let calls = make_calls(&host, "w");
    let before = scrape(&host);
    exercise(&host, &calls, "obs-worker-1");
    let after = scrape(&host);
    check_counters(&before, &after, &calls);
    check_admin_only(&host, &calls);
    let j = call_with(
        &host,
        "GET",
        "/metrics",
        Some(ADMIN_SECRET),
        None,
        "",
        &[("Accept", "application/json")],
    );
    assert_eq!(j.status, 200, "{}", j.body);
    assert_eq!(j.body["scope"], "isolate", "{}", j.body);
    assert!(
        j.body["quota_refusals"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["org"] == calls.limited.as_str() && s["limit"] == "tokens_per_day"),
        "{}",
        j.body
    );
    // wrangler prints the Worker's console lines as they come; wait for the last call's.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut output = host.output();
    while !output.contains("route_not_found") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        output = host.output();
    }
    check_log(&output, &calls, "obs-worker-1");
    let points = data_points(&output);
    let ok = points
        .iter()
        .find(|p| p["blobs"][4] == "obs-worker-1")
        .unwrap_or_else(|| panic!("no data point for the 200:\n{output}"));
    assert_eq!(ok["indexes"], json!([calls.org]), "{ok}");
    assert_eq!(ok["blobs"][0], "/v1/context", "{ok}");
    assert_eq!(ok["blobs"][1], "POST", "{ok}");
    assert_eq!(ok["doubles"][0], 200.0, "{ok}");
    assert!(ok["doubles"][2].as_f64().unwrap() > 0.0, "tokens: {ok}");
    let refused = points
        .iter()
        .find(|p| p["indexes"] == json!([calls.limited]) && p["doubles"][0] == 429.0)
        .unwrap_or_else(|| panic!("no data point for the 429:\n{output}"));
    assert_eq!(refused["blobs"][2], "quota_exceeded", "{refused}");
    assert_eq!(refused["blobs"][3], "tokens_per_day", "{refused}");
    assert_eq!(refused["doubles"][3], 1.0, "{refused}");
}
