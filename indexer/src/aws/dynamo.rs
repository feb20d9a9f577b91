//! Metadata in one DynamoDB table, in the embedded store's item layout: `pk`, `sk`, `data`
//! (JSON), plus `rev` for optimistic read-modify-write and, on project items, `current_version`
//! for the conditional publish.
//!
//! Every read that decides a write is strongly consistent; queries page through DynamoDB's 1 MB
//! pages; every conditional failure is told apart from a real error.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::DisplayErrorContext;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};

use super::{AwsStore, Traffic, now_ms, remote};
use crate::IndexerError;
use crate::store::{ProjectGuard, ProjectItem, VersionItem};
use ctxgate_core::backoff::Backoff;
use ctxgate_core::item_key::attr::{
    CURRENT_VERSION, DATA, EXPIRES_MS, HOLDER, PK, REV, SK, WRITER,
};
use ctxgate_core::item_key::{self, ItemKey, ItemRange};

mod lease;

use lease::Lease;

type Item = HashMap<String, AttributeValue>;

/// An item as stored.
pub(super) struct RawItem {
    pub data: String,
    pub rev: u64,
    pub current_version: Option<u64>,
    /// The token of the optimistic update that wrote `rev` ([`DynamoTable::update_raw`]).
    pub writer: Option<String>,
}

/// A token naming one optimistic update: written beside the data, so that an update whose
/// answer was lost, and whose retry then failed its condition, can tell its own write from
/// another writer's instead of applying its change a second time.
fn writer_token() -> String {
    let mut random = [0u8; 16];
    // Without randomness, time and the process make a token still unique in practice.
    if getrandom::fill(&mut random).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        random = (t ^ u128::from(std::process::id())).to_le_bytes();
    }
    random.iter().map(|b| format!("{b:02x}")).collect()
}

/// How long an indexing lease lasts unless its holder renews it (a third of the way through):
/// a crashed indexer blocks its project for at most this long. `CTXGATE_LOCK_TTL_SECS` changes
/// it (tests use seconds).
fn lease_ms() -> u64 {
    std::env::var("CTXGATE_LOCK_TTL_SECS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|&s| s > 0)
        .unwrap_or(60)
        * 1000
}
/// Tries of an optimistic update before giving up (each lost race means another writer won),
/// with a jittered pause between them so that racing writers spread out instead of colliding
/// again at once.
const UPDATE_BACKOFF: Backoff = Backoff::BATCH;

/// Sleeps before try `attempt + 1` of an update that lost a race; false when the tries are spent.
fn pause_after_lost_race(attempt: u32) -> bool {
    let mut random = [0u8; 8];
    // Without randomness the pause is the bound itself: still a pause.
    let random = match getrandom::fill(&mut random) {
        Ok(()) => u64::from_le_bytes(random),
        Err(_) => u64::MAX,
    };
    match UPDATE_BACKOFF.delay_ms(attempt, random) {
        Some(ms) => {
            std::thread::sleep(std::time::Duration::from_millis(ms));
            true
        }
        None => false,
    }
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_string())
}

fn n(v: u64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn get_s<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
}

fn get_n(item: &Item, name: &str) -> Option<u64> {
    item.get(name)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
}

fn decode<T: for<'de> serde::Deserialize<'de>>(data: &str) -> Result<T, IndexerError> {
    serde_json::from_str(data).map_err(|e| IndexerError::Corrupt(e.to_string()))
}

fn encode<T: serde::Serialize>(v: &T) -> Result<String, IndexerError> {
    serde_json::to_string(v).map_err(|e| IndexerError::Corrupt(e.to_string()))
}

/// DynamoDB refuses items over 400 KB; say so before sending one.
fn check_size(pk: &str, sk: &str, data: &str) -> Result<(), IndexerError> {
    let size = pk.len() + sk.len() + data.len() + 64;
    if size > 400 * 1024 {
        return Err(IndexerError::Corrupt(format!(
            "item {pk}/{sk} would be {size} bytes; DynamoDB items are at most 400 KB"
        )));
    }
    Ok(())
}

/// Which items of a cancelled publish (version put, project update) failed their condition. A
/// cancellation for a conflict, throttling or validation fails none, and stays an error to retry.
fn failed_conditions(
    e: &aws_sdk_dynamodb::error::SdkError<
        aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError,
    >,
) -> [bool; 2] {
    use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError as E;
    let mut failed = [false; 2];
    if let Some(E::TransactionCanceledException(t)) = e.as_service_error() {
        for (i, r) in t.cancellation_reasons().iter().take(2).enumerate() {
            failed[i] = r.code() == Some("ConditionalCheckFailed");
        }
    }
    failed
}

/// How one publish attempt ended.
enum Attempt {
    Published,
    VersionTaken,
    /// The version item exists and the project moved too: another writer's publish of this
    /// number, or this run's own whose answer was lost and whose retry met it.
    TakenAndMoved,
    ProjectMoved,
}

/// DynamoDB's idempotency token (at most 36 characters), unique to this run's publish.
fn publish_token(v: &VersionItem, attempt: u32) -> String {
    let digest = ctxgate_core::hash::Sha256Digest::of(
        format!(
            "{}\0{}\0{}\0{attempt}",
            v.project, v.version, v.created_at_ns
        )
        .as_bytes(),
    );
    digest.to_hex()[..32].to_string()
}

impl AwsStore {
    fn ddb(&self) {
        Traffic::add(&self.traffic.dynamo_requests, 1);
    }

    pub(super) fn get_raw(&self, pk: &str, sk: &str) -> Result<Option<RawItem>, IndexerError> {
        self.ddb();
        let out = self
            .block(
                self.dynamo
                    .get_item()
                    .table_name(&self.table)
                    .key(PK, s(pk))
                    .key(SK, s(sk))
                    .consistent_read(true)
                    .send(),
            )
            .map_err(|e| {
                remote(
                    format!("DynamoDB GetItem {pk}/{sk}"),
                    DisplayErrorContext(e),
                )
            })?;
        Ok(out.item.map(|item| RawItem {
            data: get_s(&item, DATA).unwrap_or_default().to_string(),
            rev: get_n(&item, REV).unwrap_or(0),
            current_version: get_n(&item, CURRENT_VERSION),
            writer: get_s(&item, WRITER).map(str::to_string),
        }))
    }

    pub(super) fn put_raw(&self, pk: &str, sk: &str, data: &str) -> Result<(), IndexerError> {
        check_size(pk, sk, data)?;
        self.ddb();
        // An update, not a put: attributes other than `data` (a project's current version)
        // survive, and `rev` moves so that optimistic writers see the change.
        self.block(
            self.dynamo
                .update_item()
                .table_name(&self.table)
                .key(PK, s(pk))
                .key(SK, s(sk))
                .update_expression("SET #d = :d ADD #r :one")
                .expression_attribute_names("#d", DATA)
                .expression_attribute_names("#r", REV)
                .expression_attribute_values(":d", s(data))
                .expression_attribute_values(":one", n(1))
                .send(),
        )
        .map_err(|e| {
            remote(
                format!("DynamoDB UpdateItem {pk}/{sk}"),
                DisplayErrorContext(e),
            )
        })?;
        Ok(())
    }

    pub(super) fn update_raw(
        &self,
        pk: &str,
        sk: &str,
        f: &mut dyn FnMut(Option<String>) -> Result<Option<String>, IndexerError>,
    ) -> Result<(), IndexerError> {
        let token = writer_token();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let old = self.get_raw(pk, sk)?;
            // The previous try landed though its answer was lost (the SDK's retry of it then
            // failed the condition): it is done, and applying `f` again would apply it twice.
            if attempt > 1 && old.as_ref().and_then(|o| o.writer.as_deref()) == Some(&token) {
                return Ok(());
            }
            let rev = old.as_ref().map(|o| o.rev);
            let exists = old.is_some();
            let Some(new) = f(old.map(|o| o.data))? else {
                return Ok(());
            };
            check_size(pk, sk, &new)?;
            self.ddb();
            let mut req = self
                .dynamo
                .update_item()
                .table_name(&self.table)
                .key(PK, s(pk))
                .key(SK, s(sk))
                .update_expression("SET #d = :d, #r = :next, #w = :w")
                .expression_attribute_names("#d", DATA)
                .expression_attribute_names("#r", REV)
                .expression_attribute_names("#w", WRITER)
                .expression_attribute_values(":d", s(&new))
                .expression_attribute_values(":w", s(&token))
                .expression_attribute_values(":next", n(rev.map_or(1, |r| r + 1)));
            req = match rev {
                // An item written without `rev` (by another tool) is matched by its absence.
                Some(0) if exists => req.condition_expression("attribute_not_exists(#r)"),
                Some(r) => req
                    .condition_expression("#r = :rev")
                    .expression_attribute_values(":rev", n(r)),
                None => req.condition_expression(format!("attribute_not_exists({PK})")),
            };
            match self.block(req.send()) {
                Ok(_) => return Ok(()),
                Err(e)
                    if e.as_service_error()
                        .is_some_and(|s| s.is_conditional_check_failed_exception()) =>
                {
                    if !pause_after_lost_race(attempt) {
                        return Err(remote(
                            format!("DynamoDB UpdateItem {pk}/{sk}"),
                            format!("{attempt} concurrent writers won in a row; try again",),
                        ));
                    }
                }
                Err(e) => {
                    return Err(remote(
                        format!("DynamoDB UpdateItem {pk}/{sk}"),
                        DisplayErrorContext(e),
                    ));
                }
            }
        }
    }

    /// Pages through the query (DynamoDB returns at most 1 MB a page) until `limit` items.
    pub(super) fn query_prefix(
        &self,
        pk: &str,
        prefix: &str,
        newest_first: bool,
        limit: usize,
    ) -> Result<Vec<String>, IndexerError> {
        let mut out = Vec::new();
        let mut start: Option<Item> = None;
        while out.len() < limit {
            self.ddb();
            let page = self
                .block(
                    self.dynamo
                        .query()
                        .table_name(&self.table)
                        .key_condition_expression(format!("{PK} = :pk AND begins_with({SK}, :p)"))
                        .expression_attribute_values(":pk", s(pk))
                        .expression_attribute_values(":p", s(prefix))
                        .scan_index_forward(!newest_first)
                        .consistent_read(true)
                        .limit(i32::try_from(limit - out.len()).unwrap_or(i32::MAX))
                        .set_exclusive_start_key(start.take())
                        .send(),
                )
                .map_err(|e| remote(format!("DynamoDB Query {pk}"), DisplayErrorContext(e)))?;
            for item in page.items() {
                out.push(get_s(item, DATA).unwrap_or_default().to_string());
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
        out.truncate(limit);
        Ok(out)
    }

    /// Every project item of the table (a Scan: garbage collection over a whole store is an
    /// operator's occasional job).
    pub(super) fn scan_projects(&self) -> Result<Vec<ProjectItem>, IndexerError> {
        let mut out = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            self.ddb();
            let page = self
                .block(
                    self.dynamo
                        .scan()
                        .table_name(&self.table)
                        .filter_expression("begins_with(pk, :o) AND begins_with(sk, :p)")
                        .expression_attribute_values(":o", s(item_key::ORG_PREFIX))
                        .expression_attribute_values(":p", s(item_key::PROJECT_PREFIX))
                        .consistent_read(true)
                        .set_exclusive_start_key(start.take())
                        .send(),
                )
                .map_err(|e| remote("DynamoDB Scan projects", DisplayErrorContext(e)))?;
            for item in page.items() {
                out.push(decode(get_s(item, DATA).unwrap_or_default())?);
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
        Ok(out)
    }

    /// Deletes item (`pk`, `sk`) (DynamoDB answers success for an item already gone).
    pub(super) fn delete_raw(&self, pk: &str, sk: &str) -> Result<(), IndexerError> {
        self.ddb();
        self.block(
            self.dynamo
                .delete_item()
                .table_name(&self.table)
                .key(PK, s(pk))
                .key(SK, s(sk))
                .send(),
        )
        .map(|_| ())
        .map_err(|e| {
            remote(
                format!("DynamoDB DeleteItem {pk}/{sk}"),
                DisplayErrorContext(e),
            )
        })
    }

    pub(super) fn get_project(
        &self,
        org: &str,
        id: &str,
    ) -> Result<Option<ProjectItem>, IndexerError> {
        let key = ItemKey::project(org, id);
        let Some(raw) = self.get_raw(&key.pk, &key.sk)? else {
            return Ok(None);
        };
        let mut item: ProjectItem = decode(&raw.data)?;
        // The attribute is the truth: publishing moves it conditionally.
        item.current_version = raw.current_version;
        Ok(Some(item))
    }

    pub(super) fn put_project(&self, item: &ProjectItem) -> Result<(), IndexerError> {
        let mut stored = item.clone();
        stored.current_version = None;
        let key = ItemKey::project(&item.org, &item.id);
        self.put_raw(&key.pk, &key.sk, &encode(&stored)?)
    }

    /// Publishes conditionally; a project description changed between the read and the write
    /// (not the version) makes it read and try again, so that change is never lost.
    pub(super) fn publish(
        &self,
        org: &str,
        version: &VersionItem,
        expected: Option<u64>,
    ) -> Result<bool, IndexerError> {
        for attempt in 0..8 {
            let key = ItemKey::project(org, &version.project);
            let Some(raw) = self.get_raw(&key.pk, &key.sk)? else {
                return Err(IndexerError::Corrupt(format!(
                    "project {} vanished before publishing",
                    version.project
                )));
            };
            if raw.current_version != expected {
                return Ok(false);
            }
            match self.publish_once(org, version, expected, &raw, attempt)? {
                Attempt::Published => return Ok(true),
                Attempt::VersionTaken => return Ok(false),
                Attempt::TakenAndMoved => return self.recorded_as(version),
                Attempt::ProjectMoved => {
                    pause_after_lost_race(attempt + 1);
                }
            }
        }
        Err(remote(
            format!("publish {}", version.project),
            "the project's record kept changing; try again",
        ))
    }

    /// Whether the version item holds exactly `version` as this run wrote it (its start time in
    /// nanoseconds included): then the publish that found the item taken and the project moved
    /// was the SDK's retry of this run's own, whose answer was lost (the idempotency token
    /// covers that on DynamoDB; a store that ignores tokens does not), and the transaction that
    /// wrote the item moved the project. Anything else is another writer's.
    fn recorded_as(&self, version: &VersionItem) -> Result<bool, IndexerError> {
        let key = ItemKey::version(&version.project, version.version);
        let mine = encode(version)?;
        Ok(self
            .get_raw(&key.pk, &key.sk)?
            .is_some_and(|r| r.data == mine))
    }

    fn publish_once(
        &self,
        org: &str,
        version: &VersionItem,
        expected: Option<u64>,
        raw: &RawItem,
        attempt: u32,
    ) -> Result<Attempt, IndexerError> {
        let project_key = ItemKey::project(org, &version.project);
        let mut project: ProjectItem = decode(&raw.data)?;
        project.updated_at_ns = version.created_at_ns;
        project.current_version = None;
        let version_key = ItemKey::version(&version.project, version.version);
        let version_data = encode(version)?;
        check_size(&version_key.pk, &version_key.sk, &version_data)?;
        let put = Put::builder()
            .table_name(&self.table)
            .item(PK, s(&version_key.pk))
            .item(SK, s(&version_key.sk))
            .item(DATA, s(&version_data))
            .item(REV, n(1))
            .condition_expression(format!("attribute_not_exists({PK})"))
            .build()
            .map_err(|e| remote("build the publish transaction", e))?;
        let mut update = Update::builder()
            .table_name(&self.table)
            .key(PK, s(&project_key.pk))
            .key(SK, s(&project_key.sk))
            .update_expression("SET #cv = :v, #d = :d ADD #r :one")
            .expression_attribute_names("#cv", CURRENT_VERSION)
            .expression_attribute_names("#d", DATA)
            .expression_attribute_names("#r", REV)
            .expression_attribute_values(":v", n(version.version))
            .expression_attribute_values(":d", s(&encode(&project)?))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":rev", n(raw.rev));
        // The description written back is the one read: it must not have changed since.
        update = match expected {
            Some(e) => update
                .condition_expression("#cv = :expected AND #r = :rev")
                .expression_attribute_values(":expected", n(e)),
            None => update.condition_expression(format!(
                "attribute_exists({PK}) AND attribute_not_exists(#cv) AND #r = :rev"
            )),
        };
        let update = update
            .build()
            .map_err(|e| remote("build the publish transaction", e))?;
        self.ddb();
        let out = self.block(
            self.dynamo
                .transact_write_items()
                .transact_items(TransactWriteItem::builder().put(put).build())
                .transact_items(TransactWriteItem::builder().update(update).build())
                // The same token on a retried request is applied once, not twice.
                .client_request_token(publish_token(version, attempt))
                .send(),
        );
        match out {
            Ok(_) => Ok(Attempt::Published),
            Err(e) if failed_conditions(&e) == [true, true] => Ok(Attempt::TakenAndMoved),
            // The version item exists: another run recorded this number; final.
            Err(e) if failed_conditions(&e)[0] => Ok(Attempt::VersionTaken),
            // Only the project's conditions failed: its version or description moved; re-read.
            Err(e) if failed_conditions(&e)[1] => Ok(Attempt::ProjectMoved),
            Err(e) => Err(remote(
                format!("DynamoDB TransactWriteItems (publish {})", version.project),
                DisplayErrorContext(e),
            )),
        }
    }

    pub(super) fn newest_version(&self, project: &str) -> Result<u64, IndexerError> {
        let range = ItemRange::versions_of(project);
        let newest = self.query_prefix(&range.pk, range.sk_prefix, true, 1)?;
        match newest.first() {
            Some(d) => Ok(decode::<VersionItem>(d)?.version),
            None => Ok(0),
        }
    }

    /// A lease in the table: taken when absent or expired, released by its holder only.
    pub(super) fn lock(&self, project: &str, who: &str) -> Result<ProjectGuard, IndexerError> {
        let key = ItemKey::lock(project);
        let now = now_ms();
        // Unique per holder even when two Lambda containers share a pid and a millisecond.
        let nonce = ctxgate_core::hash::Sha256Digest::of(
            format!("{who}{now}{:?}{:p}", std::thread::current().id(), &now).as_bytes(),
        );
        let token = format!("{who}@{now}#{}", &nonce.to_hex()[..12]);
        let lease = lease_ms();
        self.ddb();
        let out = self.block(
            self.dynamo
                .put_item()
                .table_name(&self.table)
                .item(PK, s(&key.pk))
                .item(SK, s(&key.sk))
                .item(HOLDER, s(&token))
                .item(EXPIRES_MS, n(now + lease))
                .condition_expression(format!("attribute_not_exists({PK}) OR {EXPIRES_MS} < :now"))
                .expression_attribute_values(":now", n(now))
                .send(),
        );
        match out {
            Ok(_) => {}
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_conditional_check_failed_exception()) =>
            {
                let holder = self
                    .block(
                        self.dynamo
                            .get_item()
                            .table_name(&self.table)
                            .key(PK, s(&key.pk))
                            .key(SK, s(&key.sk))
                            .consistent_read(true)
                            .send(),
                    )
                    .ok()
                    .and_then(|o| o.item)
                    .and_then(|i| get_s(&i, HOLDER).map(str::to_string))
                    .unwrap_or_else(|| "another indexer".into());
                // Our own put took effect and its answer was lost: the SDK's retry met it.
                if holder != token {
                    return Err(IndexerError::Busy {
                        project: project.into(),
                        holder,
                    });
                }
            }
            Err(e) => {
                return Err(remote(
                    format!("DynamoDB PutItem {}/{}", key.pk, key.sk),
                    DisplayErrorContext(e),
                ));
            }
        }
        Ok(ProjectGuard::new(Lease::hold(
            self.dynamo.clone(),
            self.handle.clone(),
            self.table.clone(),
            key,
            token,
            lease,
        )))
    }
}
