//! What every handler shares: the accounts and projects stores, the catalog, the configuration, dense retrieval where
//! the host has it, and the per-process cache of opened index versions ([`crate::snapshot`]).

use std::sync::Arc;

use ctxgate_core::catalog::Catalog;
use ctxgate_core::rank::Weights;

use crate::backend::{Accounts, Admission, Projects, TwoCalls};
use crate::dense::DenseRetrieval;
use crate::dense::published::PublishedDense;
use crate::hooks::Webhooks;
use crate::metrics::Metrics;
use crate::pointer::PointerCache;
use crate::snapshot::SnapshotCache;

/// Deployment settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Signs continuation tokens.
    pub token_secret: Vec<u8>,
    /// Unlocks the admin endpoints; `None` disables them.
    pub admin_secret: Option<String>,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// How long a current-version pointer is trusted before it is read again
    /// ([`crate::pointer::PointerCache`]); 0 reads it on every request.
    pub pointer_ttl_ms: u64,
    /// How long a continuation token stays valid.
    pub continuation_ttl_ms: u64,
    /// The ranking weights: the tuned defaults, or the host's `CTXGATE_RANK_WEIGHTS` (a tuning
    /// aid, read the same way by the CLI, `ctxgate serve` and the Worker's `RANK_WEIGHTS` var,
    /// so that an experiment on one surface holds on the others).
    pub weights: Weights,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            token_secret: Vec::new(),
            admin_secret: None,
            max_body_bytes: 4 * 1024 * 1024,
            pointer_ttl_ms: 5_000,
            continuation_ttl_ms: 3_600_000,
            weights: Weights::default(),
        }
    }
}

/// The router's state.
#[derive(Clone)]
pub struct AppState {
    /// Organisations, keys, quotas and audit.
    pub accounts: Arc<dyn Accounts>,
    /// Projects and their index objects.
    pub projects: Arc<dyn Projects>,
    /// Finding a project and reserving quota for a call on it.
    pub admission: Arc<dyn Admission>,
    /// The model catalog.
    pub catalog: Arc<Catalog>,
    /// Settings.
    pub config: Arc<Config>,
    /// Opened versions, shared by requests.
    pub snapshots: Arc<SnapshotCache>,
    /// Projects' current versions, read at most once per TTL.
    pub pointers: Arc<PointerCache>,
    /// Dense retrieval that embeds a version's chunks itself, where the host has it.
    pub dense: Option<Arc<dyn DenseRetrieval>>,
    /// Dense retrieval over the vectors a version was published with, where the host can
    /// embed queries.
    pub published_dense: Option<Arc<PublishedDense>>,
    /// Counters and histograms of this process or isolate (`GET /metrics`).
    pub metrics: Arc<Metrics>,
    /// Push webhooks, where the host can queue re-indexing.
    pub webhooks: Option<Arc<dyn Webhooks>>,
}

impl AppState {
    /// State over `accounts` and `projects`, admitting calls with two calls to them
    /// ([`TwoCalls`]).
    pub fn new(
        accounts: Arc<dyn Accounts>,
        projects: Arc<dyn Projects>,
        catalog: Catalog,
        config: Config,
    ) -> Self {
        let admission = Arc::new(TwoCalls {
            accounts: accounts.clone(),
            projects: projects.clone(),
        });
        Self {
            accounts,
            projects,
            admission,
            catalog: Arc::new(catalog),
            pointers: Arc::new(PointerCache::new(config.pointer_ttl_ms)),
            config: Arc::new(config),
            snapshots: Arc::new(SnapshotCache::default()),
            dense: None,
            published_dense: None,
            metrics: Arc::default(),
            webhooks: None,
        }
    }

    /// The same state, counting into `metrics` (shared with what else the host counts: its
    /// indexing jobs).
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// The same state, admitting calls through `admission` (a host that keeps projects and
    /// ledger together does it in one round trip).
    pub fn with_admission(mut self, admission: Arc<dyn Admission>) -> Self {
        self.admission = admission;
        self
    }

    /// The same state, ranking with `dense` retrieval too.
    pub fn with_dense(mut self, dense: Option<Arc<dyn DenseRetrieval>>) -> Self {
        self.dense = dense;
        self
    }

    /// The same state, ranking with the vectors versions were published with too.
    pub fn with_published_dense(mut self, dense: Option<Arc<PublishedDense>>) -> Self {
        self.published_dense = dense;
        self
    }

    /// The same state, taking push webhooks through `webhooks`.
    pub fn with_webhooks(mut self, webhooks: Option<Arc<dyn Webhooks>>) -> Self {
        self.webhooks = webhooks;
        self
    }

    /// The same state, loading index objects through `shared` first (see [`ObjectCache`]).
    pub fn with_object_cache(mut self, shared: Arc<dyn ObjectCache>) -> Self {
        self.snapshots = Arc::new(self.snapshots.through(shared));
        self
    }
}

pub use crate::snapshot::{ObjectCache, Snapshot};
