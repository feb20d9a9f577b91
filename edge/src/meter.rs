//! Quota admission and settlement around each metered call, and its audit record.
//!
//! A call reserves its largest possible cost before any work (the budget it may fill) and
//! settles what it really used after, so concurrent calls can never spend past a limit. A
//! settlement that fails leaves the lease to lapse ([`ctxgate_core::quota::LEASE_MS`]): the
//! org is briefly over-reserved, never over-spent.
//!
//! Index jobs are metered apart ([`OrgJobs`]): a host counts one in the org's ledger when it
//! starts or queues it, and a refusal answers as every other quota refusal does
//! ([`ApiError::quota_exceeded`]).

use async_trait::async_trait;
use ctxgate_core::quota::{Limits, Refusal};

use crate::backend::{Accounts, AuditRecord, BackendError, JobGate};
use crate::error::ApiError;
use crate::extract::Caller;
use crate::state::AppState;

/// How an admitted call's tokens are held until it settles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// A lease in the org's ledger, released when the call settles.
    Lease,
    /// Nothing: the org has no limit a concurrent call could overrun, so the call made no
    /// round trip to its ledger before the work and is booked (a request and its tokens) in
    /// the write that records it.
    Unreserved,
}

impl Hold {
    /// How a call of an org with `limits` is held when it need not be: unreserved without
    /// limits, else by a lease.
    pub fn for_limits(limits: &ctxgate_core::quota::Limits) -> Self {
        if limits.calls_unlimited() {
            Self::Unreserved
        } else {
            Self::Lease
        }
    }
}

/// A call admitted under its org's quota.
pub struct Admission {
    /// The lease id, also the request id.
    pub id: String,
    /// Tokens held (planned, for an unreserved call).
    pub reserved: u64,
    hold: Hold,
    endpoint: &'static str,
}

/// A fresh random id (hex).
pub fn new_id(state: &AppState) -> String {
    state
        .accounts
        .random_bytes(12)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Reserves `tokens` for a call to `endpoint`, or answers 429 with what was hit.
pub async fn admit(
    state: &AppState,
    caller: &Caller,
    tokens: u64,
    endpoint: &'static str,
) -> Result<Admission, ApiError> {
    let id = new_id(state);
    let now = state.accounts.now_ms();
    let outcome = hold(state, caller, &id, tokens, now).await?;
    admitted(id, tokens, endpoint, outcome).inspect_err(|e| noted(caller, e))
}

/// Holds `tokens` for call `id`: a lease in the org's ledger (one round trip to it), or nothing
/// for an org without limits.
pub async fn hold(
    state: &AppState,
    caller: &Caller,
    id: &str,
    tokens: u64,
    now: u64,
) -> Result<Result<Hold, Refusal>, ApiError> {
    Ok(match Hold::for_limits(&caller.org.limits) {
        Hold::Unreserved => Ok(Hold::Unreserved),
        Hold::Lease => state
            .accounts
            .reserve(&caller.org.name, &caller.org.limits, id, tokens, now)
            .await?
            .map(|_| Hold::Lease),
    })
}

/// Notes a quota refusal on the caller's request record, so it is counted even where the
/// error does not become the HTTP answer (an MCP tool call answers a JSON-RPC error).
pub fn noted(caller: &Caller, e: &ApiError) {
    if let Some(limit) = e.quota_limit {
        caller.note.refused(limit);
    }
}

/// The admission of a call whose reservation (lease `id`, `tokens`) had `outcome`: the 429 a
/// refusal answers with names the limit hit, what remains and when to retry.
pub fn admitted(
    id: String,
    tokens: u64,
    endpoint: &'static str,
    outcome: Result<Hold, Refusal>,
) -> Result<Admission, ApiError> {
    match outcome {
        Ok(hold) => Ok(Admission {
            id,
            reserved: tokens,
            hold,
            endpoint,
        }),
        Err(r) => Err(ApiError::quota_exceeded(&r)),
    }
}

/// The index jobs of one org, counted in its ledger against its `index_jobs_per_hour`: the
/// gate every host is handed for jobs an org's request, push or watched folder starts.
pub struct OrgJobs<'a> {
    accounts: &'a dyn Accounts,
    org: &'a str,
    limits: Limits,
}

impl<'a> OrgJobs<'a> {
    /// The jobs of `org`, under `limits`, counted in `accounts`.
    pub fn new(accounts: &'a dyn Accounts, org: &'a str, limits: Limits) -> Self {
        Self {
            accounts,
            org,
            limits,
        }
    }
}

#[async_trait]
impl JobGate for OrgJobs<'_> {
    async fn admit(&self) -> Result<(), BackendError> {
        let now = self.accounts.now_ms();
        self.accounts
            .admit_index_job(self.org, &self.limits, now)
            .await?
            .map_err(BackendError::QuotaExceeded)
    }
}

/// What a call delivered, for its audit record (ids only, never content).
#[derive(Default)]
pub struct Delivered {
    /// The project read, if any.
    pub project: Option<String>,
    /// The client's session id, if it gave one.
    pub session: Option<String>,
    /// Chunk ids sent.
    pub chunks: Vec<String>,
    /// Those of `chunks` sent only as an outline (a signature or a signpost): a later call of
    /// the session may send them whole.
    pub signature_only: Vec<String>,
    /// The budget the call was held to.
    pub budget: Option<u32>,
    /// The model it was held to, when one was named.
    pub model: Option<String>,
    /// The assembly profile.
    pub profile: Option<String>,
    /// The detected intent's label.
    pub intent: Option<String>,
}

/// Settles an admitted call at `used` tokens and records its audit entry.
pub async fn finish(
    state: &AppState,
    caller: &Caller,
    admission: Admission,
    used: u64,
    status: u16,
    delivered: Delivered,
) {
    let now = state.accounts.now_ms();
    let org = &caller.org.name;
    caller.note.tokens(used);
    let record = AuditRecord {
        id: admission.id,
        at_ms: now,
        endpoint: admission.endpoint.to_string(),
        project: delivered.project,
        session: delivered.session,
        key: Some(caller.key_id.clone()),
        chunks: delivered.chunks,
        signature_only: delivered.signature_only,
        budget: delivered.budget,
        model: delivered.model,
        profile: delivered.profile,
        intent: delivered.intent,
        tokens_reserved: admission.reserved,
        tokens_used: used,
        status,
    };
    let _ = match admission.hold {
        Hold::Lease => {
            state
                .accounts
                .settle_and_audit(org, &record.id, used, now, &record)
                .await
        }
        Hold::Unreserved => state.accounts.book_and_audit(org, used, now, &record).await,
    };
}
