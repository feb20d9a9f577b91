//! Crash injection on the server: `ctxgate serve` killed with SIGKILL while 32 clients call
//! `POST /v1/context` (every call reserves, settles and audits in the data directory's SQLite),
//! then restarted over the same data directory, round after round; then aborted at the named
//! point inside the settlement's transaction (`before_commit`).
//!
//! After every restart the server answers, and the org's counters agree with its audit: tokens
//! booked equal the tokens of the audit records exactly (a call's settlement and its record are
//! one transaction, so a kill cannot book one without the other); every admitted call is either
//! audited or still holds its lease (which lapses, uncharged); no call is audited twice; and the
//! tokens booked exceed those the clients received by at most the budgets of the calls cut off
//! by the kill — the bound docs/api.md states.

mod common;
#[allow(dead_code)]
#[path = "api/host.rs"]
mod host;

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::SeededRng;
use ctxgate_core::item_key::ItemRange;
use ctxgate_indexer::store::Store;
use host::{Host, NativeHost, get, ledger_repo, org_with_key, post};
use serde_json::{Value, json};

const ORG: &str = "crashorg";
const CLIENTS: usize = 32;
const ROUNDS: usize = 6;
const BUDGET: u64 = 2000;

/// What the clients saw, over every round.
#[derive(Default)]
struct Seen {
    /// Answers received whole (status 200).
    answered: AtomicU64,
    /// Tokens those answers delivered.
    delivered: AtomicU64,
    /// Calls that got no whole answer (the kill cut them off, or found no server).
    cut_off: AtomicU64,
    /// Statuses other than 200 (none expected).
    unexpected: Mutex<Vec<(u16, String)>>,
}

/// Every audit record of the org, as stored.
fn audit(host: &NativeHost) -> Vec<Value> {
    let store = Store::open(host.home.path()).unwrap();
    let range = ItemRange::audit_of(ORG);
    store
        .items_with_prefix(&range.pk, range.sk_prefix, false, usize::MAX)
        .unwrap()
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// The org's usage counters (`GET /v1/usage`).
fn usage(host: &NativeHost, key: &str) -> Value {
    let u = get(host, "/v1/usage", Some(key));
    assert_eq!(u.status, 200, "{}", u.body);
    u.body["usage"].clone()
}

/// The counters agree with the audit; the clients' view is within the bound. Returns the
/// tokens booked.
fn consistent(host: &NativeHost, key: &str, seen: &Seen) -> u64 {
    let records = audit(host);
    let ids: HashSet<&str> = records.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), records.len(), "a call was audited twice");
    let audited: u64 = records
        .iter()
        .map(|r| r["tokens_used"].as_u64().unwrap())
        .sum();
    let ok_records = records.iter().filter(|r| r["status"] == 200).count() as u64;
    let u = usage(host, key);
    let booked = u["tokens_total"].as_u64().unwrap();
    let admitted = u["requests_total"].as_u64().unwrap();
    let held = u["in_flight"].as_u64().unwrap();
    assert_eq!(
        booked, audited,
        "tokens booked without an audit record (or the reverse)"
    );
    assert_eq!(
        admitted,
        records.len() as u64 + held,
        "an admitted call is neither audited nor holding its lease"
    );
    let answered = seen.answered.load(Ordering::SeqCst);
    let delivered = seen.delivered.load(Ordering::SeqCst);
    let cut_off = seen.cut_off.load(Ordering::SeqCst);
    assert!(ok_records >= answered, "an answer received was not audited");
    assert!(
        booked >= delivered,
        "tokens delivered were not booked: {delivered} > {booked}"
    );
    assert!(
        booked - delivered <= cut_off * BUDGET,
        "{} tokens booked past what was delivered, more than the {cut_off} calls cut off could hold",
        booked - delivered
    );
    assert!(
        held <= cut_off,
        "{held} leases held, {cut_off} calls cut off"
    );
    booked
}

/// 32 clients calling `/v1/context` until `stop`, or until the server is gone.
fn load(host: &NativeHost, key: &str, seen: &Seen, stop: &AtomicBool) {
    let queries = [
        "how are tokens reserved before work",
        "settle what a call did not use",
        "checked subtraction of the tokens left",
    ];
    std::thread::scope(|s| {
        for c in 0..CLIENTS {
            let url = format!("{}/v1/context", host.base_url());
            s.spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .timeout_global(Some(Duration::from_secs(20)))
                    .build()
                    .into();
                let mut i = c;
                while !stop.load(Ordering::SeqCst) {
                    i += 1;
                    let body = json!({"project": "ledger", "query": queries[i % queries.len()],
                                      "budget": BUDGET});
                    let answer = agent
                        .post(&url)
                        .header("Authorization", &format!("Bearer {key}"))
                        .header("Content-Type", "application/json")
                        .send(body.to_string())
                        .and_then(|mut r| {
                            let status = r.status().as_u16();
                            r.body_mut().read_to_string().map(|t| (status, t))
                        });
                    match answer {
                        Ok((200, text)) => match serde_json::from_str::<Value>(&text) {
                            Ok(v) => {
                                let tokens = v["tokens_total"].as_u64().unwrap();
                                seen.delivered.fetch_add(tokens, Ordering::SeqCst);
                                seen.answered.fetch_add(1, Ordering::SeqCst);
                            }
                            Err(_) => {
                                seen.cut_off.fetch_add(1, Ordering::SeqCst);
                                return;
                            }
                        },
                        Ok((status, text)) => {
                            seen.unexpected.lock().unwrap().push((status, text));
                            return;
                        }
                        Err(_) => {
                            seen.cut_off.fetch_add(1, Ordering::SeqCst);
                            return;
                        }
                    }
                }
            });
        }
    });
}

#[test]
fn a_killed_server_books_every_token_once_and_restarts() {
    let started = Instant::now();
    let mut rng = SeededRng::from_env(26);
    let mut host = NativeHost::start();
    let key = org_with_key(&host, ORG, json!({"tokens_per_day": 1_000_000_000u64}));
    let repo = ledger_repo();
    host.publish(ORG, "ledger", repo.path());
    let seen = Seen::default();

    for round in 0..ROUNDS {
        let stop = AtomicBool::new(false);
        let kill_after = Duration::from_millis(rng.range(300, 1500));
        std::thread::scope(|s| {
            s.spawn(|| load(&host, &key, &seen, &stop));
            std::thread::sleep(kill_after);
            // SIGKILL while the clients' calls reserve, settle and audit.
            // SAFETY: kill(2) on the server's own pid.
            unsafe { libc::kill(host.pid() as i32, libc::SIGKILL) };
            stop.store(true, Ordering::SeqCst);
        });
        host.kill_and_restart(&[]);
        let booked = consistent(&host, &key, &seen);
        eprintln!(
            "round {round}: killed after {kill_after:?}; {} answers, {} cut off, {booked} tokens booked",
            seen.answered.load(Ordering::SeqCst),
            seen.cut_off.load(Ordering::SeqCst)
        );
        assert!(
            seen.unexpected.lock().unwrap().is_empty(),
            "{:?}",
            seen.unexpected
        );
    }
    assert!(seen.answered.load(Ordering::SeqCst) > 0);

    // Aborted inside the settlement's transaction, after both writes: neither lands.
    let before = usage(&host, &key);
    let audited = audit(&host).len();
    host.kill_and_restart(&[("CTXGATE_CRASH_AT", "before_commit")]);
    let body = json!({"project": "ledger", "query": "settle", "budget": BUDGET});
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(20)))
        .build()
        .into();
    let cut = agent
        .post(&format!("{}/v1/context", host.base_url()))
        .header("Authorization", &format!("Bearer {key}"))
        .header("Content-Type", "application/json")
        .send(body.to_string());
    assert!(cut.is_err(), "the server answered past its crash point");
    seen.cut_off.fetch_add(1, Ordering::SeqCst);
    host.kill_and_restart(&[]);
    let after = usage(&host, &key);
    assert_eq!(after["tokens_total"], before["tokens_total"]);
    assert_eq!(audit(&host).len(), audited);
    assert_eq!(
        after["in_flight"].as_u64().unwrap(),
        before["in_flight"].as_u64().unwrap() + 1,
        "the cut-off call's lease is held until it lapses"
    );
    consistent(&host, &key, &seen);

    // The restarted server books a new call exactly.
    let r = post(&host, "/v1/context", Some(&key), &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let tokens = r.body["tokens_total"].as_u64().unwrap();
    assert_eq!(
        usage(&host, &key)["tokens_total"].as_u64().unwrap(),
        after["tokens_total"].as_u64().unwrap() + tokens
    );
    eprintln!("{} kills in {:?}", ROUNDS + 1, started.elapsed());
}
