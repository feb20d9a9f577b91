//! The HTTP API against both hosts: `ctxgate serve` and the Worker under workerd (wrangler dev).
//! auth, quotas, isolation, continuation, bad input: the same cases, over HTTP only.

mod aws;
mod cases;
#[path = "../common/mod.rs"]
mod common;
mod console;
mod contract;
mod damaged;
mod dense;
mod fresh;
mod host;
mod observability;
mod planted;
mod sources;
mod webhooks;
mod worker;

#[test]
fn native_api_suite() {
    let host = host::NativeHost::start();
    cases::run_suite(&host, "n");
    contract::run(&host, "n");
    // Index jobs need a source the server indexes: a folder under its --local-root.
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        root.path().join("lib.rs"),
        "/// Counted.\npub fn job() -> u32 { 1 }\n",
    )
    .unwrap();
    let dir = root.path().canonicalize().unwrap();
    let indexing = host::NativeHost::start_with(&["--local-root", dir.to_str().unwrap()]);
    cases::index_jobs_are_metered(
        &indexing,
        "jobsn",
        serde_json::json!({ "kind": "local", "path": dir }),
    );
    // The planted corpus, with the server's logs at their most verbose, and every byte the data
    // directory holds afterwards.
    let scratch = tempfile::tempdir().unwrap();
    let log = scratch.path().join("serve.log");
    let logged =
        host::NativeHost::start_logging(&[], &[("CTXGATE_LOG", "debug")], Some(log.clone()));
    planted::run(&logged, "n", &|| {
        std::fs::read_to_string(&log).unwrap_or_default()
    });
    assert!(planted::assert_dir_clean("the data directory", logged.home.path()) > 0);
}

#[test]
fn worker_api_suite() {
    if let Some(mut host) = worker::WorkerHost::start_or_skip() {
        planted::run(&host, "w", &|| host.output());
        assert!(planted::assert_dir_clean("the Worker's state", &host.state_dir()) > 0);
        cases::run_suite(&host, "w");
        contract::run(&host, "w");
        console::run(&host, "w", Some("source_refused"));
        worker::publishing_refusals(&host, cases::sample_repo());
        worker::garbage_collection_on_r2(&host);
        worker::fresh_isolates_read_index_objects_from_the_cache(&mut host);
    }
}

#[test]
fn native_console_in_chromium() {
    // The project is a temporary folder on this machine, so "Re-index now" may read it under
    // the temporary folder as a root.
    let tmp = std::env::temp_dir().display().to_string();
    let host = host::NativeHost::start_with(&["--local-root", &tmp]);
    console::run(&host, "n", None);
}

#[test]
fn worker_serves_what_the_lambda_published_to_aws() {
    aws::run();
}

#[test]
fn native_projects_from_git_and_tarball_urls() {
    sources::run();
}

#[test]
fn native_dense_retrieval_over_an_embeddings_api() {
    dense::run();
}

#[test]
fn worker_dense_retrieval_over_published_vectors() {
    dense::worker();
}

#[test]
fn native_damaged_segments_are_named() {
    damaged::run();
}

#[test]
fn native_served_folders_stay_fresh() {
    fresh::run();
}

#[test]
fn native_metrics_and_request_logs() {
    observability::native();
}

#[test]
fn worker_metrics_request_logs_and_analytics() {
    observability::worker();
}

#[test]
fn native_push_webhooks_reindex() {
    webhooks::run();
}
