//! Publishing to S3 + DynamoDB (moto) through a proxy that fails requests the way AWS does
//! (`support/fault_proxy.rs`): DynamoDB throttling (`ProvisionedThroughputExceededException`,
//! `ThrottlingException`), 5xx from both services, uploads cut off mid-body, answers lost after
//! the request took effect, and a conditional write refused.
//!
//! Every run either publishes or fails with an error, and either way every recorded version
//! is whole (checked past the proxy, `support/verify.rs`) and the current one is the previous
//! version or the new one; a failed run is followed by one without faults that publishes.
//! The one-fault cases pin the behaviour down: a retried upload after a drop, a lost answer to a
//! conditional upload (the version number is skipped, or the run stops), a refused conditional
//! publish reported after exactly one attempt, a throttled publish retried until its tries are
//! spent, a lost answer to the project lock or to the publish itself not mistaken for
//! another writer's, and a lost answer to an optimistic update (a job's start) not applied twice.

mod support;

use std::path::Path;
use std::time::Instant;

use ctxgate_indexer::IndexerError;
use ctxgate_indexer::aws::{AwsStore, S3Location};
use ctxgate_indexer::jobs::{self, JobRecord, Trigger};
use ctxgate_indexer::pipeline::{
    IndexOptions, IndexReport, NoProgress, ProjectTarget, index_project,
};
use support::fault_proxy::{Fault, FaultProxy, Matcher, Rates};
use support::moto::Moto;
use support::verify::recorded_versions_are_whole;

const ORG: &str = "faults";
const BUCKET: &str = "s3://ctxgate-faults/pub";
const TABLE: &str = "faults";

struct Bench {
    _moto: Moto,
    proxy: FaultProxy,
    /// Straight to moto: what a reader sees.
    direct: AwsStore,
    /// Through the proxy: the store under test.
    faulty: AwsStore,
    repo: tempfile::TempDir,
    target: ProjectTarget,
    _cache: tempfile::TempDir,
    round: usize,
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn set_env(vars: Vec<(&'static str, String)>) {
    for (k, v) in vars {
        // SAFETY: this test binary runs one test; no other thread reads the environment while
        // the stores are opened.
        unsafe { std::env::set_var(k, v) };
    }
}

impl Bench {
    fn start() -> Option<Self> {
        let moto = Moto::start()?;
        let cache = tempfile::tempdir().unwrap();
        moto.export();
        // A lock a failed run could not release lapses in 2 s.
        set_env(vec![("CTXGATE_LOCK_TTL_SECS", "2".into())]);
        let direct =
            AwsStore::open(S3Location::parse(BUCKET).unwrap(), TABLE, cache.path()).unwrap();
        direct.init().unwrap();
        let proxy = FaultProxy::start(&moto.endpoint, 26);
        set_env(proxy.env());
        let faulty =
            AwsStore::open(S3Location::parse(BUCKET).unwrap(), TABLE, cache.path()).unwrap();
        let repo = tempfile::tempdir().unwrap();
        for i in 0..8 {
            write(
                repo.path(),
                &format!("src/part{i}.rs"),
                &format!("/// Part {i}.\npub fn part_{i}(x: u32) -> u32 {{ x + {i} }}\n"),
            );
        }
        Some(Self {
            _moto: moto,
            proxy,
            direct,
            faulty,
            repo,
            target: ProjectTarget::named(ORG, "core"),
            _cache: cache,
            round: 0,
        })
    }

    /// Every recorded version whole, seen past the proxy; the current version.
    fn current(&self) -> Option<u64> {
        recorded_versions_are_whole(&self.direct, ORG, &self.target.id).1
    }

    /// Changes the repository and indexes it through the proxy.
    fn index_change(&mut self) -> Result<IndexReport, IndexerError> {
        self.round += 1;
        write(
            self.repo.path(),
            &format!("src/round{}.rs", self.round),
            &format!(
                "/// Round {0}.\npub fn round_{0}() -> usize {{ {0} }}\n",
                self.round
            ),
        );
        self.index()
    }

    fn index(&self) -> Result<IndexReport, IndexerError> {
        index_project(
            &self.faulty,
            &self.target,
            self.repo.path(),
            &IndexOptions::default(),
            &NoProgress,
        )
    }

    /// Indexes without faults until a run gets past a lock a failed run left (it lapses in
    /// 2 s); the run must publish or find the index current.
    fn recover(&self) -> IndexReport {
        self.proxy.set_rates(Rates::default());
        for _ in 0..10 {
            match self.index() {
                Ok(r) => return r,
                Err(IndexerError::Busy { .. }) => {
                    std::thread::sleep(std::time::Duration::from_millis(500))
                }
                Err(e) => panic!("the run after a failure failed too: {e}"),
            }
        }
        panic!("the project stayed locked");
    }

    /// Runs one change with `fault` armed for the first request `matcher` fits; checks that the
    /// fault was met and the store is whole. The run's result and the version before it.
    fn one_fault(
        &mut self,
        matcher: Matcher,
        fault: Fault,
    ) -> (Result<IndexReport, IndexerError>, Option<u64>) {
        let before = self.current();
        self.proxy.arm(matcher.clone(), fault);
        let result = self.index_change();
        assert_eq!(self.proxy.armed(), 0, "{matcher:?} was never sent");
        let after = self.current();
        match &result {
            Ok(r) => assert_eq!(after, Some(r.version)),
            Err(e) => assert_eq!(after, before, "a failed run moved the version: {e}"),
        }
        (result, before)
    }
}

/// The errors a fault may end a run with: the remote store's, or the lock or version taken.
fn clean(e: &IndexerError) -> bool {
    matches!(
        e,
        IndexerError::Remote { .. } | IndexerError::Busy { .. } | IndexerError::Corrupt(_)
    )
}

#[test]
fn publishing_through_aws_faults_succeeds_or_fails_cleanly() {
    let started = Instant::now();
    let Some(mut b) = Bench::start() else { return };
    let first = b.recover();
    assert_eq!(b.current(), Some(first.version));

    // Random faults on every kind of request.
    let (mut published, mut failed) = (0, 0);
    for _ in 0..6 {
        b.proxy.set_rates(Rates {
            throttle: 0.12,
            server_error: 0.08,
            drop_upload: 0.15,
            lose_answer: 0.0,
        });
        let before = b.current();
        let result = b.index_change();
        b.proxy.set_rates(Rates::default());
        match result {
            Ok(r) => {
                published += 1;
                assert_eq!(b.current(), Some(r.version));
            }
            Err(e) => {
                failed += 1;
                assert!(clean(&e), "{e}");
                assert_eq!(b.current(), before);
                let r = b.recover();
                assert_eq!(b.current(), Some(r.version));
            }
        }
    }
    let injected = b.proxy.injected();
    let of_kind = |f: &[Fault]| injected.iter().filter(|(_, g)| f.contains(g)).count();
    eprintln!(
        "random faults: {published} runs published, {failed} failed and recovered; injected {} throttling, {} 5xx, {} dropped uploads",
        of_kind(&[Fault::Throttling, Fault::ProvisionedThroughputExceeded]),
        of_kind(&[Fault::ServerError, Fault::SlowDown]),
        of_kind(&[Fault::DropMidUpload]),
    );
    assert!(of_kind(&[Fault::Throttling, Fault::ProvisionedThroughputExceeded]) > 0);
    assert!(of_kind(&[Fault::ServerError, Fault::SlowDown]) > 0);
    assert!(of_kind(&[Fault::DropMidUpload]) > 0);
    assert!(published > 0, "no run got through the faults");

    let pack = |operation| Matcher {
        operation,
        containing: "index.pack",
    };
    let publish = Matcher {
        operation: "TransactWriteItems",
        containing: "",
    };

    // The pack's upload cut off mid-body: the SDK sends it again, the run publishes.
    let (r, before) = b.one_fault(pack("PUT"), Fault::DropMidUpload);
    let r = r.expect("a dropped upload is retried");
    assert!(Some(r.version) > before);

    // The pack's conditional upload took effect but its answer was lost: the retry finds the
    // key taken, so the run takes the next version number (the orphan pack is invisible).
    let (r, before) = b.one_fault(pack("PUT"), Fault::LoseAnswer);
    let r = r.expect("a lost answer to the pack's upload");
    assert_eq!(
        Some(r.version),
        before.map(|v| v + 2),
        "the number was skipped"
    );

    // The manifest's answer lost: the run stops (its number looks taken) and the next recovers.
    let manifest = Matcher {
        operation: "PUT",
        containing: "manifest.json",
    };
    let (r, _) = b.one_fault(manifest, Fault::LoseAnswer);
    let e = r.expect_err("a manifest whose upload looks taken");
    assert!(matches!(e, IndexerError::Busy { .. }), "{e}");
    b.recover();

    // A conditional publish refused: reported after exactly one attempt, never retried blindly.
    let count = |b: &Bench, op: &str| b.proxy.seen().iter().filter(|o| *o == op).count();
    let publishes = count(&b, "TransactWriteItems");
    let (r, _) = b.one_fault(publish.clone(), Fault::ConditionFailed);
    let e = r.expect_err("a refused publish");
    assert!(e.to_string().contains("another indexer published"), "{e}");
    assert_eq!(
        count(&b, "TransactWriteItems"),
        publishes + 1,
        "the refused publish was sent again"
    );
    b.recover();

    // Throttled publishes: two are retried, five spend the SDK's five tries and are the error.
    for _ in 0..2 {
        b.proxy
            .arm(publish.clone(), Fault::ProvisionedThroughputExceeded);
    }
    let before = b.current();
    let r = b.index_change().expect("two throttles are retried");
    assert_eq!(b.current(), Some(r.version));
    assert!(Some(r.version) > before);
    for _ in 0..5 {
        b.proxy.arm(publish.clone(), Fault::Throttling);
    }
    let before = b.current();
    let e = b
        .index_change()
        .expect_err("five throttles spend the tries");
    assert!(clean(&e) && e.to_string().contains("Throttling"), "{e}");
    assert_eq!(b.current(), before);
    b.recover();

    // The lock's answer lost: its retry meets the lock this run took, which is this run's.
    let lock = Matcher {
        operation: "PutItem",
        containing: "LOCK",
    };
    let puts = count(&b, "PutItem");
    let (r, before) = b.one_fault(lock, Fault::LoseAnswer);
    let r = r.expect("a lost answer to taking the lock");
    assert!(Some(r.version) > before);
    assert_eq!(
        count(&b, "PutItem"),
        puts + 2,
        "the lock was taken by the retry"
    );

    // The publish's answer lost: its retry must not be mistaken for another writer's publish.
    let publishes = count(&b, "TransactWriteItems");
    let (r, before) = b.one_fault(publish, Fault::LoseAnswer);
    assert_eq!(
        count(&b, "TransactWriteItems"),
        publishes + 2,
        "the retry met the publish"
    );
    let r = r.expect("a lost answer to the publish");
    assert_eq!(Some(r.version), b.current());
    assert!(Some(r.version) > before);

    // An optimistic update's answer lost: the SDK's retry fails its condition (the first try
    // moved `rev`), and the update must see its own write instead of applying it twice.
    let job_start = Matcher {
        operation: "UpdateItem",
        containing: "JOB#lost-answer",
    };
    let mut job = JobRecord::starting("lost-answer", ORG, "p1", "core", Trigger::Request, 1);
    b.proxy.arm(job_start.clone(), Fault::LoseAnswer);
    jobs::start(&b.faulty, &mut job).expect("a lost answer to starting a job");
    assert_eq!(b.proxy.armed(), 0, "{job_start:?} was never sent");
    assert_eq!(job.attempts, 1, "the job's start was applied twice");
    let stored = jobs::list(&b.direct, Some(ORG), 10).unwrap();
    let stored = stored.iter().find(|j| j.id == "lost-answer").unwrap();
    assert_eq!(stored.attempts, 1, "the stored job counts one start");
    // A real second start still counts.
    let mut again = JobRecord::starting("lost-answer", ORG, "p1", "core", Trigger::Request, 2);
    jobs::start(&b.faulty, &mut again).unwrap();
    assert_eq!(again.attempts, 2);

    eprintln!(
        "{} faults injected, {} requests forwarded, in {:?}",
        b.proxy.injected().len(),
        b.proxy.forwarded(),
        started.elapsed()
    );
}
