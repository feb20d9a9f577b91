//! Crash injection on the indexer: `ctxgate index` and `ctxgate gc` killed with SIGKILL at seeded
//! random moments, and aborted at the named points of `indexer/src/crash.rs` (inside publish:
//! after a segment, after the pack, before the flip; inside GC: after the version records,
//! after an object). After every crash the data directory opens, every recorded version names
//! only objects that exist and pass their checks (`indexer/tests/support/verify.rs`), the
//! current version is the previous one (or, for a kill after the flip, the new one, whole), it
//! answers `ctxgate assemble`, and the next run indexes and publishes. At the end a GC leaves
//! exactly the current version's objects: nothing a crash left behind lingers.

mod common;
#[allow(dead_code)]
#[path = "../indexer/tests/support/verify.rs"]
mod verify;

use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::{Env, SeededRng, json, stderr, stdout};
use ctxgate_indexer::store::{LOCAL_ORG, Store};

/// Index runs a random kill must crash (each also checks the recovery run after it).
const INDEX_KILLS: usize = 50;
/// GC runs a random kill must crash.
const GC_KILLS: usize = 10;

/// How a run that may have been killed ended.
#[derive(Debug, PartialEq)]
enum Ended {
    /// Exit status 0: it finished before the kill.
    Finished,
    /// Killed (SIGKILL) or aborted at a crash point (SIGABRT).
    Crashed(i32),
}

fn ended(status: ExitStatus, out: &std::process::Output) -> Ended {
    match status.signal() {
        Some(sig) => Ended::Crashed(sig),
        None => {
            assert!(status.success(), "the run failed: {}", stderr(out));
            Ended::Finished
        }
    }
}

struct Lab {
    env: Env,
    project: String,
}

impl Lab {
    /// A repository of some 40 files, indexed once.
    fn new() -> Self {
        let env = Env::new();
        env.sample();
        for i in 0..40 {
            let body: String = (0..30)
                .map(|j| format!("/// Step {j} of module {i}.\npub fn step_{i}_{j}(x: u64) -> u64 {{ x.wrapping_mul({j}) ^ {i} }}\n\n"))
                .collect();
            env.write(&format!("src/mod{i}.rs"), body);
        }
        let out = env.run(&["index", &env.repo_arg(), "--format", "json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let project = json(&out)["project"]["id"].as_str().unwrap().to_string();
        Self { env, project }
    }

    /// `ctxgate ARGS`, killed after `kill_after` (if it has not finished) or crashed at `point`.
    fn run_killed(
        &self,
        args: &[&str],
        kill_after: Option<Duration>,
        point: Option<&str>,
    ) -> Ended {
        let mut cmd = self.env.cmd();
        cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
        if let Some(p) = point {
            cmd.env("CTXGATE_CRASH_AT", p);
        }
        let mut child = cmd.spawn().unwrap();
        if let Some(after) = kill_after {
            let deadline = Instant::now() + after;
            while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
                std::thread::sleep(Duration::from_micros(200));
            }
            let _ = child.kill();
        }
        let out = child.wait_with_output().unwrap();
        ended(out.status, &out)
    }

    fn store(&self) -> Store {
        Store::open(self.env.home.path()).unwrap()
    }

    /// Every recorded version whole; the current version.
    fn check_store(&self) -> u64 {
        let store = self.store();
        let (_, current) = verify::recorded_versions_are_whole(&store, LOCAL_ORG, &self.project);
        current.expect("a current version")
    }

    /// `ctxgate assemble` answers `query` from the current version without publishing one
    /// (nothing changed since it), with `marker` in its prompt.
    fn answers_unchanged(&self, version: u64, query: &str, marker: &str) {
        let out = self
            .env
            .assemble(&["--query", query, "--budget", "4000", "--format", "json"]);
        assert!(out.status.success(), "assemble: {}", stderr(&out));
        let text = stdout(&out);
        assert!(text.contains(marker), "the answer lacks {marker}");
        assert_eq!(self.check_store(), version, "assemble published a version");
    }

    /// A full `ctxgate index`: it must succeed; the version it leaves current.
    fn index(&self) -> serde_json::Value {
        let out = self
            .env
            .run(&["index", &self.env.repo_arg(), "--format", "json"]);
        assert!(out.status.success(), "recovery run: {}", stderr(&out));
        json(&out)
    }

    fn marker_file(&self, i: usize) {
        let tag = tag(i);
        self.env.write(
            &format!("src/crash{i}.rs"),
            format!("/// Crash round {tag}.\npub fn {tag}() -> u64 {{ {i} }}\n"),
        );
    }

    /// Keys of every object stored for the project.
    fn stored_keys(&self) -> Vec<String> {
        let prefix = format!("org/{LOCAL_ORG}/project/{}/", self.project);
        let mut keys: Vec<String> = self
            .store()
            .list_objects(&prefix)
            .unwrap()
            .into_iter()
            .map(|o| o.key)
            .collect();
        keys.sort();
        keys
    }
}

/// A word only round `i`'s file holds (letters: the index splits identifiers and numbers).
fn tag(i: usize) -> String {
    let mut n = i + 26 * 26;
    let mut word = String::from("tag");
    while n > 0 {
        word.push((b'a' + (n % 26) as u8) as char);
        n /= 26;
    }
    word
}

/// One crash of an index run that was indexing marker `i`: the store is whole; when the previous
/// version stayed current it still answers (with marker `i` taken away again, so nothing
/// changed); then a full run publishes marker `i`.
fn after_index_crash(lab: &Lab, i: usize, before: u64, how: &Ended) {
    let current = lab.check_store();
    assert!(
        current >= before,
        "version went back from {before} to {current}"
    );
    if *how == Ended::Finished {
        assert!(current > before, "a finished run published nothing");
    }
    if *how != Ended::Finished && current == before {
        std::fs::remove_file(lab.env.repo().join(format!("src/crash{i}.rs"))).unwrap();
        if i == 0 {
            lab.answers_unchanged(before, "parse the config", "parse_config");
        } else {
            lab.answers_unchanged(before, &tag(i - 1), &tag(i - 1));
        }
        lab.marker_file(i);
    }
    let report = lab.index();
    let now = lab.check_store();
    assert_eq!(report["version"].as_u64(), Some(now));
    if current == before {
        assert_eq!(report["status"], "published", "{report}");
        assert!(now > before);
    }
}

#[test]
fn killed_indexers_and_collectors_leave_a_whole_current_version() {
    let started = Instant::now();
    let mut rng = SeededRng::from_env(26);
    let lab = Lab::new();
    let repo = lab.env.repo_arg();
    let index_args = ["index", repo.as_str(), "--format", "json"];

    // How long an incremental run takes here: the kills land anywhere in it.
    // (The median of three: this machine is shared.)
    let mut runs: Vec<Duration> = (1000..1003)
        .map(|i| {
            lab.marker_file(i);
            let t = Instant::now();
            assert_eq!(lab.run_killed(&index_args, None, None), Ended::Finished);
            t.elapsed()
        })
        .collect();
    runs.sort();
    let full = runs[1];
    eprintln!("an incremental index run takes {full:?}");

    // The named points inside publish: abort there, then check and recover.
    let mut round = 0;
    let mut at_points = 0;
    for point in ["after_segment", "after_pack", "before_publish"] {
        let before = lab.check_store();
        lab.marker_file(round);
        let how = lab.run_killed(&index_args, None, Some(point));
        assert_eq!(
            how,
            Ended::Crashed(libc::SIGABRT),
            "{point} was not reached"
        );
        at_points += 1;
        assert_eq!(lab.check_store(), before, "{point}: the version moved");
        after_index_crash(&lab, round, before, &how);
        round += 1;
    }

    // Random kills, from process start to a whole run's length.
    let mut crashed = 0;
    let mut orphans_seen = 0;
    let limit_us = full.as_micros() as u64;
    let mut tries = 0;
    while crashed < INDEX_KILLS {
        tries += 1;
        assert!(
            tries <= 3 * INDEX_KILLS,
            "too few kills landed before the run ended"
        );
        let before = lab.check_store();
        let named = lab.stored_keys().len();
        lab.marker_file(round);
        let delay = Duration::from_micros(rng.range(0, limit_us));
        let how = lab.run_killed(&index_args, Some(delay), None);
        if how != Ended::Finished {
            crashed += 1;
        }
        if lab.stored_keys().len() > named && lab.check_store() == before {
            orphans_seen += 1;
        }
        after_index_crash(&lab, round, before, &how);
        round += 1;
    }
    eprintln!(
        "{tries} random kills: {crashed} crashed a run, {orphans_seen} of them after it had written objects"
    );
    assert!(orphans_seen > 0, "no kill landed inside publish");

    // GC at its named points: the current version keeps every object it names.
    for point in ["gc_after_records", "gc_after_object:3"] {
        lab.marker_file(round);
        lab.index();
        round += 1;
        let current = lab.check_store();
        let how = lab.run_killed(&["gc", "--keep", "0", "--grace", "0s"], None, Some(point));
        assert_eq!(
            how,
            Ended::Crashed(libc::SIGABRT),
            "{point} was not reached"
        );
        at_points += 1;
        assert_eq!(lab.check_store(), current);
        lab.answers_unchanged(current, &tag(round - 1), &tag(round - 1));
    }

    // GC killed at random moments, with two superseded versions to delete each time, until
    // GC_KILLS kills landed inside a run; the kill delay is drawn up to the length of the last
    // run that finished (the first also takes what the crashes above left, and is not killed).
    let gc_args = ["gc", "--keep", "0", "--grace", "0s"];
    let (mut gc_us, mut gc_crashed, mut gc_tries) = (0, 0, 0);
    while gc_crashed < GC_KILLS {
        gc_tries += 1;
        assert!(
            gc_tries <= 4 * GC_KILLS,
            "too few kills landed inside a GC run"
        );
        for _ in 0..2 {
            lab.marker_file(round);
            lab.index();
            round += 1;
        }
        let current = lab.check_store();
        let delay = (gc_tries > 2).then(|| Duration::from_micros(rng.range(0, gc_us)));
        let t = Instant::now();
        let how = lab.run_killed(&gc_args, delay, None);
        if how == Ended::Finished {
            gc_us = t.elapsed().as_micros() as u64;
        } else {
            gc_crashed += 1;
        }
        assert_eq!(lab.check_store(), current);
        lab.answers_unchanged(current, &tag(round - 1), &tag(round - 1));
    }
    crashed += gc_crashed;

    // A complete GC leaves exactly the current version's objects.
    let out = lab.env.run(&gc_args);
    assert!(out.status.success(), "{}", stderr(&out));
    let current = lab.check_store();
    let mut named = verify::version_is_whole(&lab.store(), LOCAL_ORG, &lab.project, current);
    named.sort();
    named.dedup();
    assert_eq!(
        lab.stored_keys(),
        named,
        "objects a crash left behind remain"
    );
    eprintln!(
        "{crashed} runs killed at random and {at_points} aborted at named points; {round} rounds in {:?}",
        started.elapsed()
    );
}
