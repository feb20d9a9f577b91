//! One Durable Object per organisation: its record, quota ledger, projects and audit trail.
//!
//! A Durable Object handles its events one at a time, and while one of its storage calls is in
//! flight no other event is delivered to it (its input gate), so a read-modify-write of the
//! ledger with nothing but storage calls in between is atomic: this is what makes
//! [`Ledger::reserve`] never overspend under concurrency, with the core's arithmetic unchanged.
//! Everything an org owns lives here, so org-scoped reads are strongly consistent too.

// `#[durable_object]` generates the class's JavaScript glue without docs.
#![allow(missing_docs)]

use std::cell::RefCell;

use ctxgate_core::quota::{Lease, Ledger, Limits, Refusal};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use worker::{Env, ListOptions, Request, Response, State, durable_object};

use crate::backend::{AuditRecord, OrgRecord, ProjectAdmission, ProjectInfo, find_project};

/// A call from the Worker to an org's object (JSON in a POST body).
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum OrgCommand {
    /// Create the org record; 409 if it exists.
    CreateOrg { org: OrgRecord },
    /// The org record (or `null`).
    Org,
    /// Replace the org record.
    UpdateOrg { org: OrgRecord },
    /// [`Ledger::reserve`], answering `Result<Lease, Refusal>`.
    Reserve {
        limits: Limits,
        lease_id: String,
        tokens: u64,
        now_ms: u64,
    },
    /// The project `project` (id or name) and, when it has a published version, `Reserve` for
    /// a call on it, in one round trip; answers a [`ProjectAdmission`].
    ReserveForProject {
        project: String,
        limits: Limits,
        lease_id: String,
        tokens: u64,
        now_ms: u64,
    },
    /// [`Ledger::admit_index_job`], answering `Result<(), Refusal>`.
    AdmitIndexJob { limits: Limits, now_ms: u64 },
    /// [`Ledger::settle`].
    Settle {
        lease_id: String,
        used: u64,
        now_ms: u64,
    },
    /// The ledger.
    Ledger,
    /// Append an audit record.
    AppendAudit { record: AuditRecord },
    /// `Settle`, then `AppendAudit`, in one round trip.
    SettleAndAudit {
        lease_id: String,
        used: u64,
        now_ms: u64,
        record: AuditRecord,
    },
    /// [`Ledger::book`] under the record's id, then `AppendAudit`, in one round trip: a call
    /// of an org without limits, which reserved nothing.
    BookAndAudit {
        used: u64,
        now_ms: u64,
        record: AuditRecord,
    },
    /// Newest audit records first.
    Audit { limit: usize },
    /// Every project.
    Projects,
    /// Insert or replace a project.
    PutProject { project: ProjectInfo },
}

/// HTTP status the object answers a conflict with.
pub const CONFLICT: u16 = 409;

const ORG: &str = "org";
const LEDGER: &str = "ledger";
const PROJECT: &str = "project:";
const AUDIT: &str = "audit:";

/// The organisation's Durable Object (class `OrgObject` in `wrangler.toml`).
#[durable_object]
pub struct OrgObject {
    state: State,
    /// The ledger as this object last read or wrote it. Only this object writes it and it
    /// handles one event at a time, so the copy is the stored ledger; it saves every metered
    /// call two storage reads and their JSON. A failed write drops it (read again next time);
    /// a restarted object starts without it.
    ledger: RefCell<Option<Ledger>>,
    /// Every project, once listed; `PutProject` (the only writer of project records) drops it.
    /// A call naming its project by name listed them all each time.
    projects: RefCell<Option<Vec<ProjectInfo>>>,
}

impl worker::DurableObject for OrgObject {
    fn new(state: State, _env: Env) -> Self {
        Self {
            state,
            ledger: RefCell::new(None),
            projects: RefCell::new(None),
        }
    }

    async fn fetch(&self, mut req: Request) -> worker::Result<Response> {
        let command: OrgCommand = match req.json().await {
            Ok(c) => c,
            Err(e) => return Response::error(format!("bad command: {e}"), 400),
        };
        match self.apply(command).await {
            Ok(Outcome::Value(v)) => Response::ok(v),
            Ok(Outcome::Conflict) => Response::error("exists", CONFLICT),
            Err(e) => Response::error(e.to_string(), 500),
        }
    }
}

enum Outcome {
    /// A JSON answer.
    Value(String),
    /// The record already exists.
    Conflict,
}

fn json<T: Serialize>(v: &T) -> worker::Result<Outcome> {
    to_json(v).map(Outcome::Value)
}

/// A stored document's text.
fn to_json<T: Serialize>(v: &T) -> worker::Result<String> {
    serde_json::to_string(v).map_err(|e| worker::Error::RustError(e.to_string()))
}

/// Audit records sort by time, then id.
fn audit_key(record: &AuditRecord) -> String {
    format!("{AUDIT}{:015}:{}", record.at_ms, record.id)
}

impl OrgObject {
    /// A stored JSON document.
    async fn read<T: DeserializeOwned>(&self, key: &str) -> worker::Result<Option<T>> {
        match self.state.storage().get::<String>(key).await? {
            Some(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| worker::Error::RustError(format!("stored `{key}` is damaged: {e}"))),
            None => Ok(None),
        }
    }

    async fn write<T: Serialize>(&self, key: &str, v: &T) -> worker::Result<()> {
        self.state.storage().put(key, to_json(v)?).await
    }

    /// Stored JSON documents under `prefix`, in key order (or reversed), at most `limit`.
    async fn list<T: DeserializeOwned>(
        &self,
        prefix: &str,
        reverse: bool,
        limit: Option<usize>,
    ) -> worker::Result<Vec<T>> {
        let mut opts = ListOptions::new().prefix(prefix).reverse(reverse);
        if let Some(n) = limit {
            opts = opts.limit(n);
        }
        let map = self.state.storage().list_with_options(opts).await?;
        let mut out = Vec::with_capacity(map.size() as usize);
        for value in map.values() {
            let text = value?.as_string().ok_or_else(|| {
                worker::Error::RustError(format!("`{prefix}*` holds a non-string"))
            })?;
            out.push(serde_json::from_str(&text).map_err(|e| {
                worker::Error::RustError(format!("stored `{prefix}*` is damaged: {e}"))
            })?);
        }
        Ok(out)
    }

    /// The stored ledger, from this object's copy when it has one.
    async fn ledger(&self) -> worker::Result<Ledger> {
        if let Some(ledger) = self.ledger.borrow().as_ref() {
            return Ok(ledger.clone());
        }
        let ledger: Ledger = self.read(LEDGER).await?.unwrap_or_default();
        *self.ledger.borrow_mut() = Some(ledger.clone());
        Ok(ledger)
    }

    /// Stores `ledger`, and `also` (a key and its text) in the same write when given, and keeps
    /// the ledger as this object's copy (dropped if the write fails: what storage holds is then
    /// unknown).
    async fn put_ledger(
        &self,
        ledger: Ledger,
        also: Option<(String, String)>,
    ) -> worker::Result<()> {
        *self.ledger.borrow_mut() = None;
        match also {
            None => self.write(LEDGER, &ledger).await?,
            Some((key, text)) => {
                let entries = js_sys::Object::new();
                js_sys::Reflect::set(&entries, &LEDGER.into(), &to_json(&ledger)?.into())?;
                js_sys::Reflect::set(&entries, &key.into(), &text.into())?;
                self.state.storage().put_multiple_raw(entries).await?;
            }
        }
        *self.ledger.borrow_mut() = Some(ledger);
        Ok(())
    }

    /// [`Ledger::reserve`] on the stored ledger (written only if it admitted the call).
    async fn reserve(
        &self,
        limits: &Limits,
        lease_id: &str,
        tokens: u64,
        now_ms: u64,
    ) -> worker::Result<Result<Lease, Refusal>> {
        let mut ledger = self.ledger().await?;
        let outcome = ledger.reserve(limits, lease_id, tokens, now_ms);
        if outcome.is_ok() {
            self.put_ledger(ledger, None).await?;
        }
        Ok(outcome)
    }

    /// [`Ledger::admit_index_job`] on the stored ledger (written only if it admitted the job).
    async fn admit_index_job(
        &self,
        limits: &Limits,
        now_ms: u64,
    ) -> worker::Result<Result<(), Refusal>> {
        let mut ledger = self.ledger().await?;
        let outcome = ledger.admit_index_job(limits, now_ms);
        if outcome.is_ok() {
            self.put_ledger(ledger, None).await?;
        }
        Ok(outcome)
    }

    /// [`Ledger::settle`] on the stored ledger (written only if the lease was open).
    async fn settle(&self, lease_id: &str, used: u64, now_ms: u64) -> worker::Result<()> {
        let mut ledger = self.ledger().await?;
        if ledger.settle(lease_id, used, now_ms) {
            self.put_ledger(ledger, None).await?;
        }
        Ok(())
    }

    /// Makes sure this object holds its copy of every project.
    async fn load_projects(&self) -> worker::Result<()> {
        if self.projects.borrow().is_none() {
            let listed: Vec<ProjectInfo> = self.list(PROJECT, false, None).await?;
            *self.projects.borrow_mut() = Some(listed);
        }
        Ok(())
    }

    /// Every project.
    async fn projects(&self) -> worker::Result<Vec<ProjectInfo>> {
        self.load_projects().await?;
        Ok(self.projects.borrow().clone().unwrap_or_default())
    }

    /// The project `key` names (id or name, as [`find_project`] picks).
    async fn project(&self, key: &str) -> worker::Result<Option<ProjectInfo>> {
        self.load_projects().await?;
        let projects = self.projects.borrow();
        Ok(projects
            .as_deref()
            .and_then(|all| find_project(all, key))
            .cloned())
    }

    /// Inserts or replaces `project`; this object's copy is listed again on its next use.
    async fn put_project(&self, project: ProjectInfo) -> worker::Result<()> {
        *self.projects.borrow_mut() = None;
        self.write(&format!("{PROJECT}{}", project.id), &project)
            .await
    }

    async fn append_audit(&self, record: &AuditRecord) -> worker::Result<()> {
        self.write(&audit_key(record), record).await
    }

    /// [`Ledger::settle`] and the call's audit record in one storage write (the ledger only if
    /// the lease was open): every metered call ends here, and each write is a storage call and
    /// a row of SQLite.
    async fn settle_and_audit(
        &self,
        lease_id: &str,
        used: u64,
        now_ms: u64,
        record: &AuditRecord,
    ) -> worker::Result<()> {
        self.ledger_and_audit(record, |l| l.settle(lease_id, used, now_ms))
            .await
    }

    /// [`Ledger::book`] and the call's audit record in one storage write: a call of an org
    /// without limits, which reserved nothing.
    async fn book_and_audit(
        &self,
        used: u64,
        now_ms: u64,
        record: &AuditRecord,
    ) -> worker::Result<()> {
        self.ledger_and_audit(record, |l| {
            l.book(&record.id, used, now_ms);
            true
        })
        .await
    }

    /// `change` applied to the ledger and `record` appended, in one storage write (the record
    /// alone when `change` changed nothing). The record is kept even when the ledger cannot be
    /// read.
    async fn ledger_and_audit(
        &self,
        record: &AuditRecord,
        change: impl FnOnce(&mut Ledger) -> bool,
    ) -> worker::Result<()> {
        let mut ledger = match self.ledger().await {
            Ok(ledger) => ledger,
            Err(e) => {
                self.append_audit(record).await?;
                return Err(e);
            }
        };
        if !change(&mut ledger) {
            return self.append_audit(record).await;
        }
        let audit = (audit_key(record), to_json(record)?);
        self.put_ledger(ledger, Some(audit)).await
    }

    /// One command. Each arm awaits nothing but this object's storage, which keeps its
    /// read-modify-write atomic (see the module doc).
    async fn apply(&self, command: OrgCommand) -> worker::Result<Outcome> {
        match command {
            OrgCommand::CreateOrg { org } => {
                if self.read::<OrgRecord>(ORG).await?.is_some() {
                    return Ok(Outcome::Conflict);
                }
                self.write(ORG, &org).await?;
                json(&())
            }
            OrgCommand::Org => json(&self.read::<OrgRecord>(ORG).await?),
            OrgCommand::UpdateOrg { org } => {
                self.write(ORG, &org).await?;
                json(&())
            }
            OrgCommand::Reserve {
                limits,
                lease_id,
                tokens,
                now_ms,
            } => json(&self.reserve(&limits, &lease_id, tokens, now_ms).await?),
            OrgCommand::ReserveForProject {
                project,
                limits,
                lease_id,
                tokens,
                now_ms,
            } => {
                let found = self.project(&project).await?;
                let admission = match found {
                    None => ProjectAdmission::NotFound,
                    Some(p) => match p.current_version {
                        None => ProjectAdmission::NotIndexed { project: p },
                        Some(version) => ProjectAdmission::Reserved {
                            outcome: self.reserve(&limits, &lease_id, tokens, now_ms).await?,
                            project: p,
                            version,
                        },
                    },
                };
                json(&admission)
            }
            OrgCommand::AdmitIndexJob { limits, now_ms } => {
                json(&self.admit_index_job(&limits, now_ms).await?)
            }
            OrgCommand::Settle {
                lease_id,
                used,
                now_ms,
            } => {
                self.settle(&lease_id, used, now_ms).await?;
                json(&())
            }
            OrgCommand::Ledger => json(&self.read::<Ledger>(LEDGER).await?.unwrap_or_default()),
            OrgCommand::AppendAudit { record } => {
                self.append_audit(&record).await?;
                json(&())
            }
            OrgCommand::SettleAndAudit {
                lease_id,
                used,
                now_ms,
                record,
            } => {
                self.settle_and_audit(&lease_id, used, now_ms, &record)
                    .await?;
                json(&())
            }
            OrgCommand::BookAndAudit {
                used,
                now_ms,
                record,
            } => {
                self.book_and_audit(used, now_ms, &record).await?;
                json(&())
            }
            OrgCommand::Audit { limit } => {
                json(&self.list::<AuditRecord>(AUDIT, true, Some(limit)).await?)
            }
            OrgCommand::Projects => json(&self.projects().await?),
            OrgCommand::PutProject { project } => {
                self.put_project(project).await?;
                json(&())
            }
        }
    }
}
