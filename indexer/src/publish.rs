//! Publishing a locally indexed version to a Worker deployed over R2 and Durable Objects, where
//! nothing can fetch or parse a repository: the version's objects go up through the Worker's
//! admin API, then the project record, so the version becomes visible only once every object
//! it names is there (the same order as publishing anywhere else: manifest last, record after).
//! Segments are content-addressed, so those an earlier version uploaded are skipped (asked
//! with `HEAD`): republishing after a small change sends the changed segments, the pack and
//! the manifest.

use std::time::Duration;

use ctxgate_core::host_wire::{GcAnswer, GcRequest, PublishedProject};
use ctxgate_core::index::layout::{Manifest, keys, project_id};
use serde::Serialize;

use crate::IndexerError;
use crate::store::IndexStore;

/// Where to publish: the Worker's base URL and its admin secret.
#[derive(Clone, Debug)]
pub struct WorkerTarget {
    /// `https://ctxgate.example.workers.dev` (no trailing path).
    pub url: String,
    /// The Worker's `ADMIN_SECRET`.
    pub admin_secret: String,
}

/// What was published.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Published {
    /// Organisation.
    pub org: String,
    /// Project name.
    pub name: String,
    /// Project id.
    pub id: String,
    /// The version now current on the Worker.
    pub version: u64,
    /// Objects uploaded (segments, pack, manifest).
    pub objects: usize,
    /// Segments the Worker already had (content-addressed: uploaded by an earlier version).
    pub skipped: usize,
    /// Bytes uploaded.
    pub bytes: u64,
}

/// The keys of a version's objects, in upload order: what the manifest names first, the
/// manifest last.
fn upload_order(manifest: &Manifest, manifest_key: String) -> Vec<String> {
    let mut keys: Vec<String> = manifest.objects().into_iter().map(str::to_owned).collect();
    keys.push(manifest_key);
    keys
}

/// The part of an object key under `org/{org}/`, as the admin API addresses it.
fn org_relative<'k>(org: &str, key: &'k str) -> Result<&'k str, IndexerError> {
    key.strip_prefix(&format!("org/{org}/")).ok_or_else(|| {
        IndexerError::Corrupt(format!("object `{key}` is outside organisation `{org}`"))
    })
}

/// A refusal or failure of the Worker, with its error code and message when it sent one.
fn refused(action: String, status: u16, body: &str) -> IndexerError {
    let said = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            let e = v.get("error")?;
            Some(format!(
                "{}: {}",
                e.get("code")?.as_str()?,
                e.get("message")?.as_str()?
            ))
        })
        .unwrap_or_else(|| body.chars().take(300).collect());
    IndexerError::Remote {
        action,
        message: format!("HTTP {status}: {said}"),
    }
}

/// The client for a Worker's admin API: each call may take up to `timeout` (an upload of a
/// large object, a collection of many projects).
fn http_client(timeout: Duration) -> Result<reqwest::blocking::Client, IndexerError> {
    crate::source::ensure_tls_provider();
    reqwest::blocking::Client::builder()
        .user_agent(concat!("ctxgate/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(30))
        .timeout(timeout)
        .build()
        .map_err(|e| IndexerError::Remote {
            action: "building the HTTP client".into(),
            message: e.to_string(),
        })
}

/// One call of the admin API: the answer's text on a 2xx status, else the Worker's refusal
/// with its error code ([`refused`]).
fn call(
    client: &reqwest::blocking::Client,
    method: reqwest::Method,
    url: &str,
    bearer: &str,
    body: Vec<u8>,
    content_type: &str,
) -> Result<String, IndexerError> {
    let action = format!("{method} {url}");
    let res = client
        .request(method, url)
        .header("Authorization", bearer)
        .header("Content-Type", content_type)
        .body(body)
        .send()
        .map_err(|e| IndexerError::Remote {
            action: action.clone(),
            message: e.to_string(),
        })?;
    let status = res.status().as_u16();
    let text = res.text().unwrap_or_default();
    if (200..300).contains(&status) {
        Ok(text)
    } else {
        Err(refused(action, status, &text))
    }
}

/// Uploads the current version of `org`'s project `name` from `store` to the Worker and makes
/// it current there. `progress(done, total)` is called after each object.
pub fn publish_to_worker(
    store: &dyn IndexStore,
    org: &str,
    name: &str,
    target: &WorkerTarget,
    progress: &dyn Fn(usize, usize),
) -> Result<Published, IndexerError> {
    let id = project_id(org, name);
    let project = store.project(org, &id)?.ok_or_else(|| {
        IndexerError::InvalidRequest(format!(
            "no project `{name}` of organisation `{org}` here: index it with `ctxgate project add` first"
        ))
    })?;
    let version = project.current_version.ok_or_else(|| {
        IndexerError::InvalidRequest(format!("project `{name}` has no published version here"))
    })?;
    let manifest_key = keys::manifest(org, &id, version);
    let manifest: Manifest = serde_json::from_slice(&store.get_object(&manifest_key)?)
        .map_err(|e| IndexerError::Corrupt(format!("manifest `{manifest_key}`: {e}")))?;

    let client = http_client(Duration::from_secs(300))?;
    let base = target.url.trim_end_matches('/');
    let bearer = format!("Bearer {}", target.admin_secret);
    let send = |method: reqwest::Method, url: String, body: Vec<u8>, json: bool| {
        let content_type = if json {
            "application/json"
        } else {
            "application/octet-stream"
        };
        call(&client, method, &url, &bearer, body, content_type).map(|_| ())
    };

    // Whether the Worker already stores `url`'s object: only a 204 says yes (a Worker without
    // the HEAD route, or any doubt, means upload).
    let stored = |url: &str| {
        client
            .head(url)
            .header("Authorization", &bearer)
            .send()
            .is_ok_and(|r| r.status().as_u16() == 204)
    };
    let order = upload_order(&manifest, manifest_key);
    let (mut bytes, mut skipped) = (0u64, 0usize);
    for (i, key) in order.iter().enumerate() {
        let url = format!(
            "{base}/v1/admin/orgs/{org}/objects/{}",
            org_relative(org, key)?
        );
        // Content-addressed objects (segments, pack parts, vectors) the Worker has are not
        // sent again; a version's pack and manifest (a base's too: a number, not a content
        // address) always are.
        let addressed = key.contains("/segments/") || key.contains("/vectors/");
        if addressed && stored(&url) {
            skipped += 1;
        } else {
            let object = store.get_object(key)?;
            bytes += object.len() as u64;
            send(reqwest::Method::PUT, url, object, false)?;
        }
        progress(i + 1, order.len());
    }
    let record = PublishedProject {
        id: id.clone(),
        source: project.source.clone(),
        current_version: Some(version),
    };
    send(
        reqwest::Method::PUT,
        format!("{base}/v1/admin/orgs/{org}/projects/{name}"),
        serde_json::to_vec(&record).map_err(|e| IndexerError::Corrupt(e.to_string()))?,
        true,
    )?;
    Ok(Published {
        org: org.into(),
        name: name.into(),
        id,
        version,
        objects: order.len() - skipped,
        skipped,
        bytes,
    })
}

/// Garbage collection on a Worker (its R2): `POST /v1/admin/orgs/{org}/gc` with `policy`,
/// the reports of `org`'s projects as the Worker answers them.
pub fn collect_on_worker(
    target: &WorkerTarget,
    org: &str,
    policy: &ctxgate_core::index::gc::GcPolicy,
    dry_run: bool,
) -> Result<Vec<ctxgate_core::index::gc::GcReport>, IndexerError> {
    let client = http_client(Duration::from_secs(600))?;
    let url = format!(
        "{}/v1/admin/orgs/{org}/gc",
        target.url.trim_end_matches('/')
    );
    let body = serde_json::to_vec(&GcRequest::of(policy, dry_run))
        .map_err(|e| IndexerError::Corrupt(e.to_string()))?;
    let bearer = format!("Bearer {}", target.admin_secret);
    let text = call(
        &client,
        reqwest::Method::POST,
        &url,
        &bearer,
        body,
        "application/json",
    )?;
    serde_json::from_str::<GcAnswer>(&text)
        .map(|a| a.projects)
        .map_err(|e| IndexerError::Remote {
            action: format!("POST {url}"),
            message: format!("unexpected answer: {e}"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_goes_last_and_keys_stay_in_their_org() {
        let m = Manifest {
            format_version: 1,
            org: "acme".into(),
            project: "p1".into(),
            version: 2,
            pack_key: keys::pack("acme", "p1", 2),
            pack_bytes: 1,
            pack_sha256: String::new(),
            segment_keys: vec![
                keys::segment("acme", "p1", "ab"),
                keys::segment("acme", "p1", "cd"),
            ],
            pack_parts: Vec::new(),
            created_at_ns: 0,
            origin: None,
            vectors: None,
            base: None,
        };
        let order = upload_order(&m, keys::manifest("acme", "p1", 2));
        assert_eq!(order.len(), 4);
        assert_eq!(order[2], keys::pack("acme", "p1", 2));
        assert_eq!(order[3], keys::manifest("acme", "p1", 2));
        assert_eq!(
            org_relative("acme", &order[3]).unwrap(),
            "project/p1/version/0000000002/manifest.json"
        );
        assert!(org_relative("other", &order[3]).is_err());
    }

    #[test]
    fn a_refusal_carries_the_workers_code() {
        let e = refused(
            "PUT x".into(),
            404,
            r#"{"error":{"code":"org_not_found","message":"no organisation `a`","details":{}}}"#,
        );
        assert_eq!(
            e.to_string(),
            "PUT x: HTTP 404: org_not_found: no organisation `a`"
        );
        assert_eq!(e.code(), "remote_store_error");
    }
}
