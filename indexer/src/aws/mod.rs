//! The AWS store: index objects in S3 (aws-sdk-s3) and metadata in one DynamoDB table
//! (aws-sdk-dynamodb), behind the same [`IndexStore`] interface as the embedded data directory.
//!
//! ```text
//! s3://{bucket}/{prefix}/org/{org}/project/{project}/segments/{sha256}.seg    content-addressed
//! s3://{bucket}/{prefix}/org/{org}/project/{project}/version/{v}/index.pack   immutable
//! s3://{bucket}/{prefix}/org/{org}/project/{project}/version/{v}/manifest.json
//! table {name}: items (pk S, sk S, data S JSON, rev N) — the embedded store's item layout;
//!   project items also carry `current_version` N, the attribute publishing flips conditionally.
//! ```
//!
//! Publishing is atomic in the same way as on disk: every object is uploaded first, then one
//! `TransactWriteItems` inserts the version item and moves the project's `current_version` on
//! the condition that it still holds the version this run started from. A crash before that
//! write leaves unreferenced objects and the previous version current.
//!
//! The interface is synchronous (indexing runs on rayon); the store drives its async clients
//! with [`tokio::runtime::Handle::block_on`], so it must be called from outside async code: the
//! CLI's main thread, or `spawn_blocking` in the Lambda function.

mod dynamo;
mod s3;
mod setup;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use aws_config::BehaviorVersion;
use aws_config::meta::region::RegionProviderChain;
use tokio::runtime::{Handle, Runtime};

use crate::IndexerError;
use crate::jobs::now_ms;
use crate::store::{IndexStore, ProjectGuard, ProjectItem, VersionItem};

pub use setup::InitReport;

/// An S3 location, `s3://bucket/prefix` (the prefix may be empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S3Location {
    /// The bucket.
    pub bucket: String,
    /// Key prefix without leading or trailing `/`.
    pub prefix: String,
}

impl S3Location {
    /// Parses `s3://bucket[/prefix]`.
    pub fn parse(s: &str) -> Result<Self, IndexerError> {
        let bad = |why: &str| IndexerError::InvalidStore(format!("`{s}`: {why}"));
        let rest = s
            .strip_prefix("s3://")
            .ok_or_else(|| bad("expected s3://BUCKET[/PREFIX]"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let valid_bucket = (3..=63).contains(&bucket.len())
            && bucket
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
            && !bucket.starts_with(['-', '.'])
            && !bucket.ends_with(['-', '.']);
        if !valid_bucket {
            return Err(bad(
                "bucket names are 3-63 lowercase letters, digits, `-` and `.`",
            ));
        }
        let prefix = prefix.trim_matches('/');
        if prefix.split('/').any(|p| p == ".." || p == ".") {
            return Err(bad("the prefix may not contain `.` or `..` segments"));
        }
        Ok(Self {
            bucket: bucket.into(),
            prefix: prefix.into(),
        })
    }

    /// The S3 key of a store key.
    pub fn key(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}/{key}", self.prefix)
        }
    }
}

impl std::fmt::Display for S3Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.prefix)
    }
}

/// Counts of what the store sent, for reports and benchmarks.
#[derive(Debug, Default)]
pub struct Traffic {
    /// Requests made to S3.
    pub s3_requests: std::sync::atomic::AtomicU64,
    /// Bytes uploaded to S3.
    pub s3_bytes_up: std::sync::atomic::AtomicU64,
    /// Requests made to DynamoDB.
    pub dynamo_requests: std::sync::atomic::AtomicU64,
}

impl Traffic {
    fn add(counter: &std::sync::atomic::AtomicU64, n: u64) {
        counter.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// (S3 requests, S3 bytes uploaded, DynamoDB requests) so far.
    pub fn snapshot(&self) -> (u64, u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (
            self.s3_requests.load(Relaxed),
            self.s3_bytes_up.load(Relaxed),
            self.dynamo_requests.load(Relaxed),
        )
    }
}

/// S3 + DynamoDB.
pub struct AwsStore {
    location: S3Location,
    table: String,
    s3: aws_sdk_s3::Client,
    dynamo: aws_sdk_dynamodb::Client,
    handle: Handle,
    cache_root: PathBuf,
    traffic: Arc<Traffic>,
    // Keeps the CLI's runtime alive; the Lambda function passes its own handle instead.
    _runtime: Option<Runtime>,
}

impl AwsStore {
    /// Connects with its own runtime (for the CLI). Credentials, region and endpoint come from
    /// the standard AWS variables and files (`AWS_ENDPOINT_URL` included).
    pub fn open(
        location: S3Location,
        table: &str,
        cache_root: &Path,
    ) -> Result<Self, IndexerError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(IndexerError::io("start the AWS client runtime", cache_root))?;
        let mut store = Self::connect(location, table, cache_root, runtime.handle().clone())?;
        store._runtime = Some(runtime);
        Ok(store)
    }

    /// Connects on an existing runtime (`handle`); call from a thread that may block.
    pub fn connect(
        location: S3Location,
        table: &str,
        cache_root: &Path,
        handle: Handle,
    ) -> Result<Self, IndexerError> {
        if table.is_empty() || table.len() > 255 {
            return Err(IndexerError::InvalidStore(format!(
                "table name `{table}` must be 1-255 characters"
            )));
        }
        let http = aws_smithy_http_client::Builder::new()
            .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
            ))
            .build_https();
        let config = handle.block_on(async {
            aws_config::defaults(BehaviorVersion::latest())
                .region(RegionProviderChain::default_provider().or_else("us-east-1"))
                // Throttling, 5xx and dropped connections: the SDK's standard mode (exponential
                // backoff with full jitter, capped at 20 s), five tries instead of three.
                .retry_config(aws_config::retry::RetryConfig::standard().with_max_attempts(5))
                .http_client(http)
                .load()
                .await
        });
        // A custom endpoint (a local server, MinIO) rarely resolves virtual-hosted buckets.
        let path_style = config.endpoint_url().is_some()
            || std::env::var("CTXGATE_S3_PATH_STYLE").is_ok_and(|v| v == "1");
        let s3 = aws_sdk_s3::Client::from_conf(
            aws_sdk_s3::config::Builder::from(&config)
                .force_path_style(path_style)
                .build(),
        );
        let dynamo = aws_sdk_dynamodb::Client::new(&config);
        Ok(Self {
            location,
            table: table.into(),
            s3,
            dynamo,
            handle,
            cache_root: cache_root.to_path_buf(),
            traffic: Arc::new(Traffic::default()),
            _runtime: None,
        })
    }

    /// What this store has sent so far.
    pub fn traffic(&self) -> &Traffic {
        &self.traffic
    }

    /// The S3 location.
    pub fn location(&self) -> &S3Location {
        &self.location
    }

    /// The DynamoDB table.
    pub fn table(&self) -> &str {
        &self.table
    }

    fn block<F: std::future::Future>(&self, f: F) -> F::Output {
        self.handle.block_on(f)
    }
}

fn remote(action: impl Into<String>, e: impl std::fmt::Display) -> IndexerError {
    IndexerError::Remote {
        action: action.into(),
        message: e.to_string(),
    }
}

impl IndexStore for AwsStore {
    fn describe(&self) -> String {
        format!("{} + DynamoDB table {}", self.location, self.table)
    }

    fn local_root(&self) -> Option<&Path> {
        None
    }

    fn cache_root(&self) -> &Path {
        &self.cache_root
    }

    fn lock_project(&self, project: &str, who: &str) -> Result<ProjectGuard, IndexerError> {
        self.lock(project, who)
    }

    fn project(&self, org: &str, id: &str) -> Result<Option<ProjectItem>, IndexerError> {
        self.get_project(org, id)
    }

    fn upsert_project(&self, item: &ProjectItem) -> Result<(), IndexerError> {
        self.put_project(item)
    }

    fn publish_version(
        &self,
        org: &str,
        version: &VersionItem,
        expected: Option<u64>,
    ) -> Result<bool, IndexerError> {
        self.publish(org, version, expected)
    }

    fn latest_version(&self, project: &str) -> Result<u64, IndexerError> {
        self.newest_version(project)
    }

    fn has_object(&self, key: &str) -> Result<bool, IndexerError> {
        self.head(key)
    }

    fn put_object(&self, key: &str, bytes: &[u8]) -> Result<(), IndexerError> {
        self.upload(key, bytes)
    }

    fn put_new_object(&self, key: &str, bytes: &[u8]) -> Result<bool, IndexerError> {
        self.upload_new(key, bytes)
    }

    fn get_object(&self, key: &str) -> Result<Vec<u8>, IndexerError> {
        self.download(key)
    }

    fn traffic(&self) -> Option<(u64, u64, u64)> {
        Some(self.traffic.snapshot())
    }

    fn item(&self, pk: &str, sk: &str) -> Result<Option<String>, IndexerError> {
        Ok(self.get_raw(pk, sk)?.map(|r| r.data))
    }

    fn put_item(&self, pk: &str, sk: &str, data: &str) -> Result<(), IndexerError> {
        self.put_raw(pk, sk, data)
    }

    fn update_item(
        &self,
        pk: &str,
        sk: &str,
        f: &mut dyn FnMut(Option<String>) -> Result<Option<String>, IndexerError>,
    ) -> Result<(), IndexerError> {
        self.update_raw(pk, sk, f)
    }

    fn items_with_prefix(
        &self,
        pk: &str,
        prefix: &str,
        newest_first: bool,
        limit: usize,
    ) -> Result<Vec<String>, IndexerError> {
        self.query_prefix(pk, prefix, newest_first, limit)
    }

    fn all_projects(&self) -> Result<Vec<ProjectItem>, IndexerError> {
        self.scan_projects()
    }

    fn list_objects(
        &self,
        prefix: &str,
    ) -> Result<Vec<ctxgate_core::index::gc::StoredObject>, IndexerError> {
        self.list(prefix)
    }

    fn delete_object(&self, key: &str) -> Result<(), IndexerError> {
        self.remove(key)
    }

    fn delete_item(&self, pk: &str, sk: &str) -> Result<(), IndexerError> {
        self.delete_raw(pk, sk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_strictly() {
        let l = S3Location::parse("s3://my-bucket/a/b/").unwrap();
        assert_eq!(l.bucket, "my-bucket");
        assert_eq!(l.prefix, "a/b");
        assert_eq!(l.key("org/x"), "a/b/org/x");
        let l = S3Location::parse("s3://my-bucket").unwrap();
        assert_eq!(l.key("org/x"), "org/x");
        for bad in [
            "my-bucket/x",
            "s3://",
            "s3://UPPER/x",
            "s3://ab",
            "s3://b-b/../x",
            "s3://-bb/x",
        ] {
            assert!(S3Location::parse(bad).is_err(), "{bad}");
        }
    }
}
