//! The API's counters and latency histograms: one registry per process (`ctxgate serve`) or per
//! isolate (the Worker), fed by [`crate::observe`] from each request's record and by the native
//! host's indexing jobs, read as Prometheus text ([`Metrics::prometheus`]) or as JSON
//! ([`Metrics::snapshot`]) by `GET /metrics`.
//!
//! Hand-rolled rather than the `prometheus-client` crate: the JSON answer has to enumerate every
//! label set, which that crate's metric families do not expose (they only encode to text), and
//! the few families here fit in one small module with no dependency added to the Worker's
//! bundle. The text it writes is checked by Prometheus's own Python parser in the API suite.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

use serde::Serialize;

/// Upper bounds (seconds) of the request latency buckets.
pub const REQUEST_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

/// Upper bounds (seconds) of the indexing job duration buckets.
pub const JOB_BUCKETS: [f64; 10] = [0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0];

/// The caches a request's index version goes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum IndexCache {
    /// The project's current-version pointer ([`crate::pointer::PointerCache`]).
    Pointer,
    /// The opened version ([`crate::snapshot::SnapshotCache`]).
    Version,
}

impl IndexCache {
    /// The `cache` label.
    pub fn name(self) -> &'static str {
        match self {
            IndexCache::Pointer => "pointer",
            IndexCache::Version => "version",
        }
    }
}

/// Observations in buckets: per-bucket counts (the last one is `+Inf`), their sum and count.
#[derive(Clone, Debug, Default)]
struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, bounds: &[f64], value: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; bounds.len() + 1];
        }
        let i = bounds
            .iter()
            .position(|b| value <= *b)
            .unwrap_or(bounds.len());
        self.counts[i] += 1;
        self.sum += value;
        self.count += 1;
    }

    /// The cumulative buckets, as Prometheus and the JSON answer give them.
    fn view(&self, bounds: &[f64]) -> HistogramView {
        let mut running = 0;
        let buckets = bounds
            .iter()
            .map(Some)
            .chain([None])
            .zip(self.counts.iter())
            .map(|(le, n)| {
                running += n;
                Bucket {
                    le: le.map_or_else(|| "+Inf".to_string(), |b| b.to_string()),
                    count: running,
                }
            })
            .collect();
        HistogramView {
            count: self.count,
            sum_seconds: self.sum,
            buckets,
        }
    }
}

/// Every series, by its labels.
#[derive(Default)]
struct Series {
    /// (method, route, status)
    requests: BTreeMap<(String, String, u16), Histogram>,
    /// (org, route)
    tokens: BTreeMap<(String, String), u64>,
    /// (org, limit)
    refusals: BTreeMap<(String, String), u64>,
    /// (cache, hit)
    caches: BTreeMap<(IndexCache, bool), u64>,
    /// (trigger, outcome)
    jobs: BTreeMap<(String, String), Histogram>,
}

/// The registry.
#[derive(Default)]
pub struct Metrics {
    series: Mutex<Series>,
}

impl Metrics {
    fn with(&self, f: impl FnOnce(&mut Series)) {
        // A panic while counting cannot leave a series half-written; keep counting after it.
        let mut s = self.series.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut s);
    }

    /// One answered request to `route` (its template) taking `seconds`.
    pub fn request(&self, method: &str, route: &str, status: u16, seconds: f64) {
        self.with(|s| {
            s.requests
                .entry((method.to_string(), route.to_string(), status))
                .or_default()
                .observe(&REQUEST_BUCKETS, seconds);
        });
    }

    /// `tokens` delivered to `org` by a call to `route`.
    pub fn tokens(&self, org: &str, route: &str, tokens: u64) {
        if tokens > 0 {
            self.with(|s| *s.tokens.entry((org.into(), route.into())).or_default() += tokens);
        }
    }

    /// A call of `org` refused by its `limit` (429 `quota_exceeded`).
    pub fn refusal(&self, org: &str, limit: &str) {
        self.with(|s| *s.refusals.entry((org.into(), limit.into())).or_default() += 1);
    }

    /// A lookup in `cache`, found or not.
    pub fn cache(&self, cache: IndexCache, hit: bool) {
        self.with(|s| *s.caches.entry((cache, hit)).or_default() += 1);
    }

    /// An indexing job started by `trigger` that ended with `outcome` after `seconds`.
    pub fn index_job(&self, trigger: &str, outcome: &str, seconds: f64) {
        self.with(|s| {
            s.jobs
                .entry((trigger.into(), outcome.into()))
                .or_default()
                .observe(&JOB_BUCKETS, seconds);
        });
    }

    /// Everything counted so far.
    pub fn snapshot(&self) -> MetricsSnapshot {
        let s = self.series.lock().unwrap_or_else(|p| p.into_inner());
        MetricsSnapshot {
            scope: if cfg!(target_arch = "wasm32") {
                "isolate"
            } else {
                "process"
            },
            requests: s
                .requests
                .iter()
                .map(|((method, route, status), h)| RequestSeries {
                    method: method.clone(),
                    route: route.clone(),
                    status: *status,
                    duration: h.view(&REQUEST_BUCKETS),
                })
                .collect(),
            tokens_delivered: s
                .tokens
                .iter()
                .map(|((org, route), n)| TokenSeries {
                    org: org.clone(),
                    route: route.clone(),
                    tokens: *n,
                })
                .collect(),
            quota_refusals: s
                .refusals
                .iter()
                .map(|((org, limit), n)| RefusalSeries {
                    org: org.clone(),
                    limit: limit.clone(),
                    count: *n,
                })
                .collect(),
            index_cache: s
                .caches
                .iter()
                .map(|((cache, hit), n)| CacheSeries {
                    cache: cache.name(),
                    result: if *hit { "hit" } else { "miss" },
                    count: *n,
                })
                .collect(),
            index_jobs: s
                .jobs
                .iter()
                .map(|((trigger, outcome), h)| JobSeries {
                    trigger: trigger.clone(),
                    outcome: outcome.clone(),
                    duration: h.view(&JOB_BUCKETS),
                })
                .collect(),
        }
    }

    /// Everything counted so far in the Prometheus text exposition format (0.0.4).
    pub fn prometheus(&self) -> String {
        self.snapshot().prometheus()
    }
}

/// What `GET /metrics` answers as JSON: every series counted by this process (natively) or
/// this isolate (in the Worker: each isolate counts its own requests, and Cloudflare runs many;
/// the Analytics Engine dataset is the deployment's whole).
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct MetricsSnapshot {
    /// `process` (`ctxgate serve`) or `isolate` (the Worker).
    pub scope: &'static str,
    /// Answered requests by method, route template and status, with their latency.
    pub requests: Vec<RequestSeries>,
    /// Tokens delivered (settled by metered calls) by organisation and route.
    pub tokens_delivered: Vec<TokenSeries>,
    /// Calls refused with 429 `quota_exceeded`, by organisation and the limit hit.
    pub quota_refusals: Vec<RefusalSeries>,
    /// Lookups in the index-version caches.
    pub index_cache: Vec<CacheSeries>,
    /// Indexing jobs this host ran, by trigger and outcome, with their duration.
    pub index_jobs: Vec<JobSeries>,
}

/// Cumulative buckets.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct HistogramView {
    /// Observations.
    pub count: u64,
    /// Their sum, in seconds.
    pub sum_seconds: f64,
    /// Observations at most `le` seconds (the last bucket is `+Inf`).
    pub buckets: Vec<Bucket>,
}

/// One cumulative bucket.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Bucket {
    /// The upper bound in seconds, or `+Inf`.
    pub le: String,
    /// Observations at most `le`.
    pub count: u64,
}

/// Requests of one method, route and status.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct RequestSeries {
    /// The HTTP method.
    pub method: String,
    /// The matched route template (`/v1/projects/{id}`), or `unmatched`.
    pub route: String,
    /// The answer's status.
    pub status: u16,
    /// Their latency.
    pub duration: HistogramView,
}

/// Tokens delivered to one organisation through one route.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct TokenSeries {
    /// The organisation.
    pub org: String,
    /// The route template.
    pub route: String,
    /// Tokens.
    pub tokens: u64,
}

/// Quota refusals of one organisation by one limit.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct RefusalSeries {
    /// The organisation.
    pub org: String,
    /// `tokens_per_day`, `tokens_per_month`, `requests_per_minute`, `concurrency` or `index_jobs_per_hour`.
    pub limit: String,
    /// Refusals.
    pub count: u64,
}

/// Lookups in one cache with one result.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct CacheSeries {
    /// `pointer` (a project's current version) or `version` (an opened index version).
    pub cache: &'static str,
    /// `hit` or `miss`.
    pub result: &'static str,
    /// Lookups.
    pub count: u64,
}

/// Indexing jobs of one trigger and outcome.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct JobSeries {
    /// `create` (`POST /v1/projects`), `reindex` (the API, `--watch`) or `push` (a webhook).
    pub trigger: String,
    /// `ok` or `failed`.
    pub outcome: String,
    /// Their duration.
    pub duration: HistogramView,
}

/// A label value as the text format quotes it.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Writes `name`'s HELP and TYPE lines.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// Writes a histogram's `_bucket`, `_sum` and `_count` lines under `labels` (already quoted).
fn histogram(out: &mut String, name: &str, labels: &str, h: &HistogramView) {
    for b in &h.buckets {
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{}\"}} {}", b.le, b.count);
    }
    let _ = writeln!(out, "{name}_sum{{{labels}}} {}", h.sum_seconds);
    let _ = writeln!(out, "{name}_count{{{labels}}} {}", h.count);
}

impl MetricsSnapshot {
    /// The Prometheus text exposition format (0.0.4).
    pub fn prometheus(&self) -> String {
        let mut out = String::new();
        family(
            &mut out,
            "ctxgate_http_requests_total",
            "counter",
            "Answered requests by method, route template and status.",
        );
        for r in &self.requests {
            let _ = writeln!(
                out,
                "ctxgate_http_requests_total{{method=\"{}\",route=\"{}\",status=\"{}\"}} {}",
                label(&r.method),
                label(&r.route),
                r.status,
                r.duration.count
            );
        }
        family(
            &mut out,
            "ctxgate_http_request_duration_seconds",
            "histogram",
            "Time from routing to the answer, by method, route template and status.",
        );
        for r in &self.requests {
            let labels = format!(
                "method=\"{}\",route=\"{}\",status=\"{}\"",
                label(&r.method),
                label(&r.route),
                r.status
            );
            histogram(
                &mut out,
                "ctxgate_http_request_duration_seconds",
                &labels,
                &r.duration,
            );
        }
        family(
            &mut out,
            "ctxgate_tokens_delivered_total",
            "counter",
            "Tokens settled by metered calls, by organisation and route template.",
        );
        for t in &self.tokens_delivered {
            let _ = writeln!(
                out,
                "ctxgate_tokens_delivered_total{{org=\"{}\",route=\"{}\"}} {}",
                label(&t.org),
                label(&t.route),
                t.tokens
            );
        }
        family(
            &mut out,
            "ctxgate_quota_refusals_total",
            "counter",
            "Calls refused with 429 quota_exceeded, by organisation and the limit hit.",
        );
        for r in &self.quota_refusals {
            let _ = writeln!(
                out,
                "ctxgate_quota_refusals_total{{org=\"{}\",limit=\"{}\"}} {}",
                label(&r.org),
                label(&r.limit),
                r.count
            );
        }
        family(
            &mut out,
            "ctxgate_index_cache_lookups_total",
            "counter",
            "Lookups in the index-version caches (pointer: a project's current version; version: an opened index), by result.",
        );
        for c in &self.index_cache {
            let _ = writeln!(
                out,
                "ctxgate_index_cache_lookups_total{{cache=\"{}\",result=\"{}\"}} {}",
                c.cache, c.result, c.count
            );
        }
        family(
            &mut out,
            "ctxgate_index_job_duration_seconds",
            "histogram",
            "Indexing jobs run by this host, by trigger and outcome.",
        );
        for j in &self.index_jobs {
            let labels = format!(
                "trigger=\"{}\",outcome=\"{}\"",
                label(&j.trigger),
                label(&j.outcome)
            );
            histogram(
                &mut out,
                "ctxgate_index_job_duration_seconds",
                &labels,
                &j.duration,
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative_and_end_at_inf() {
        let m = Metrics::default();
        m.request("GET", "/healthz", 200, 0.0005);
        m.request("GET", "/healthz", 200, 0.2);
        m.request("GET", "/healthz", 200, 99.0);
        let s = m.snapshot();
        let d = &s.requests[0].duration;
        assert_eq!(d.count, 3);
        assert_eq!(d.buckets.len(), REQUEST_BUCKETS.len() + 1);
        assert_eq!(d.buckets[0].count, 1, "0.0005 <= 0.001");
        let at = |le: &str| d.buckets.iter().find(|b| b.le == le).unwrap().count;
        assert_eq!(at("0.1"), 1);
        assert_eq!(at("0.25"), 2);
        assert_eq!(at("10"), 2);
        assert_eq!(at("+Inf"), 3);
        assert!((d.sum_seconds - 99.2005).abs() < 1e-9);
    }

    #[test]
    fn text_names_each_series_once_with_quoted_labels() {
        let m = Metrics::default();
        m.request("POST", "/v1/context", 429, 0.01);
        m.tokens("ac\"me\\x", "/v1/context", 120);
        m.tokens("acme", "/v1/context", 0);
        m.refusal("acme", "tokens_per_day");
        m.refusal("acme", "tokens_per_day");
        m.cache(IndexCache::Pointer, true);
        m.cache(IndexCache::Version, false);
        m.index_job("create", "ok", 1.5);
        let text = m.prometheus();
        assert!(text.contains(
            "ctxgate_http_requests_total{method=\"POST\",route=\"/v1/context\",status=\"429\"} 1\n"
        ));
        assert!(text.contains(
            "ctxgate_tokens_delivered_total{org=\"ac\\\"me\\\\x\",route=\"/v1/context\"} 120\n"
        ));
        assert!(!text.contains("org=\"acme\",route"), "no zero series");
        assert!(
            text.contains(
                "ctxgate_quota_refusals_total{org=\"acme\",limit=\"tokens_per_day\"} 2\n"
            )
        );
        assert!(text.contains("cache=\"pointer\",result=\"hit\"} 1\n"));
        assert!(text.contains("cache=\"version\",result=\"miss\"} 1\n"));
        assert!(text.contains(
            "ctxgate_index_job_duration_seconds_bucket{trigger=\"create\",outcome=\"ok\",le=\"2.5\"} 1\n"
        ));
        for name in [
            "ctxgate_http_requests_total",
            "ctxgate_http_request_duration_seconds",
            "ctxgate_index_job_duration_seconds",
        ] {
            assert_eq!(
                text.matches(&format!("# TYPE {name} ")).count(),
                1,
                "{name}"
            );
        }
    }
}
