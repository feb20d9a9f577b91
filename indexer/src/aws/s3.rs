//! Objects in S3: whole puts for small objects, multipart uploads for large ones.

use aws_sdk_s3::error::DisplayErrorContext;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};

use super::{AwsStore, Traffic, remote};
use crate::IndexerError;

/// Objects above this size go up in parts (S3 allows 5 GiB in one PUT, but a failed part is
/// cheaper to retry than a failed 100 MB body).
const MULTIPART_FROM: usize = 16 << 20;
/// Part size (S3's minimum is 5 MiB for all parts but the last).
const PART_BYTES: usize = 8 << 20;

/// S3 answers a failed `If-None-Match` with 412 (or 409 when a concurrent conditional write of
/// the same key is in flight).
fn precondition_failed(status: Option<u16>) -> bool {
    matches!(status, Some(412 | 409))
}

impl AwsStore {
    pub(super) fn head(&self, key: &str) -> Result<bool, IndexerError> {
        Traffic::add(&self.traffic.s3_requests, 1);
        let out = self.block(
            self.s3
                .head_object()
                .bucket(&self.location.bucket)
                .key(self.location.key(key))
                .send(),
        );
        match out {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_not_found()) => Ok(false),
            Err(e) => Err(remote(
                format!("S3 HEAD {}", self.location.key(key)),
                DisplayErrorContext(e),
            )),
        }
    }

    pub(super) fn upload(&self, key: &str, bytes: &[u8]) -> Result<(), IndexerError> {
        self.put(key, bytes, false).map(|_| ())
    }

    /// A conditional write (`If-None-Match: *`): `false` when the key exists.
    pub(super) fn upload_new(&self, key: &str, bytes: &[u8]) -> Result<bool, IndexerError> {
        self.put(key, bytes, true)
    }

    fn put(&self, key: &str, bytes: &[u8], only_new: bool) -> Result<bool, IndexerError> {
        let s3_key = self.location.key(key);
        if bytes.len() >= MULTIPART_FROM {
            return self.upload_parts(&s3_key, bytes, only_new);
        }
        Traffic::add(&self.traffic.s3_requests, 1);
        Traffic::add(&self.traffic.s3_bytes_up, bytes.len() as u64);
        let mut req = self
            .s3
            .put_object()
            .bucket(&self.location.bucket)
            .key(&s3_key)
            .body(ByteStream::from(bytes.to_vec()));
        if only_new {
            req = req.if_none_match("*");
        }
        match self.block(req.send()) {
            Ok(_) => Ok(true),
            Err(e)
                if only_new
                    && precondition_failed(e.raw_response().map(|r| r.status().as_u16())) =>
            {
                Ok(false)
            }
            Err(e) => Err(remote(format!("S3 PUT {s3_key}"), DisplayErrorContext(e))),
        }
    }

    fn upload_parts(
        &self,
        s3_key: &str,
        bytes: &[u8],
        only_new: bool,
    ) -> Result<bool, IndexerError> {
        let action = format!("S3 multipart upload {s3_key}");
        Traffic::add(&self.traffic.s3_requests, 1);
        let created = self
            .block(
                self.s3
                    .create_multipart_upload()
                    .bucket(&self.location.bucket)
                    .key(s3_key)
                    .send(),
            )
            .map_err(|e| remote(&action, DisplayErrorContext(e)))?;
        let upload_id = created
            .upload_id()
            .ok_or_else(|| remote(&action, "no upload id in the answer"))?
            .to_string();
        let result = self.send_parts(s3_key, &upload_id, bytes, &action, only_new);
        if !matches!(result, Ok(true)) {
            // An abandoned upload keeps its parts (and their cost) until aborted.
            Traffic::add(&self.traffic.s3_requests, 1);
            let _ = self.block(
                self.s3
                    .abort_multipart_upload()
                    .bucket(&self.location.bucket)
                    .key(s3_key)
                    .upload_id(&upload_id)
                    .send(),
            );
        }
        result
    }

    fn send_parts(
        &self,
        s3_key: &str,
        upload_id: &str,
        bytes: &[u8],
        action: &str,
        only_new: bool,
    ) -> Result<bool, IndexerError> {
        let mut parts = Vec::new();
        for (i, part) in bytes.chunks(PART_BYTES).enumerate() {
            let number = i as i32 + 1;
            Traffic::add(&self.traffic.s3_requests, 1);
            Traffic::add(&self.traffic.s3_bytes_up, part.len() as u64);
            let out = self
                .block(
                    self.s3
                        .upload_part()
                        .bucket(&self.location.bucket)
                        .key(s3_key)
                        .upload_id(upload_id)
                        .part_number(number)
                        .body(ByteStream::from(part.to_vec()))
                        .send(),
                )
                .map_err(|e| remote(action, DisplayErrorContext(e)))?;
            parts.push(
                CompletedPart::builder()
                    .part_number(number)
                    .set_e_tag(out.e_tag().map(str::to_string))
                    .build(),
            );
        }
        Traffic::add(&self.traffic.s3_requests, 1);
        let mut req = self
            .s3
            .complete_multipart_upload()
            .bucket(&self.location.bucket)
            .key(s3_key)
            .upload_id(upload_id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(parts))
                    .build(),
            );
        if only_new {
            req = req.if_none_match("*");
        }
        match self.block(req.send()) {
            Ok(_) => Ok(true),
            Err(e)
                if only_new
                    && precondition_failed(e.raw_response().map(|r| r.status().as_u16())) =>
            {
                Ok(false)
            }
            Err(e) => Err(remote(action, DisplayErrorContext(e))),
        }
    }

    pub(super) fn download(&self, key: &str) -> Result<Vec<u8>, IndexerError> {
        let s3_key = self.location.key(key);
        Traffic::add(&self.traffic.s3_requests, 1);
        let action = format!("S3 GET {s3_key}");
        self.block(async {
            let out = self
                .s3
                .get_object()
                .bucket(&self.location.bucket)
                .key(&s3_key)
                .send()
                .await
                .map_err(|e| {
                    if e.as_service_error().is_some_and(|s| s.is_no_such_key()) {
                        IndexerError::Corrupt(format!("object `{s3_key}` is missing"))
                    } else {
                        remote(&action, DisplayErrorContext(e))
                    }
                })?;
            let body = out.body.collect().await.map_err(|e| remote(&action, e))?;
            Ok(body.into_bytes().to_vec())
        })
    }

    /// Every object under store key `prefix`, with sizes and modification times (ListObjectsV2,
    /// page by page).
    pub(super) fn list(
        &self,
        prefix: &str,
    ) -> Result<Vec<ctxgate_core::index::gc::StoredObject>, IndexerError> {
        let s3_prefix = self.location.key(prefix);
        // Store keys are S3 keys without the location's own prefix.
        let strip = if self.location.prefix.is_empty() {
            0
        } else {
            self.location.prefix.len() + 1
        };
        let action = format!("S3 LIST {s3_prefix}");
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            Traffic::add(&self.traffic.s3_requests, 1);
            let page = self
                .block(
                    self.s3
                        .list_objects_v2()
                        .bucket(&self.location.bucket)
                        .prefix(&s3_prefix)
                        .set_continuation_token(token.take())
                        .send(),
                )
                .map_err(|e| remote(&action, DisplayErrorContext(e)))?;
            for o in page.contents() {
                let Some(key) = o.key().and_then(|k| k.get(strip..)) else {
                    continue;
                };
                out.push(ctxgate_core::index::gc::StoredObject {
                    key: key.to_string(),
                    bytes: o.size().map_or(0, |b| b.max(0) as u64),
                    modified_ms: o
                        .last_modified()
                        .and_then(|t| t.to_millis().ok())
                        .map_or(0, |ms| ms.max(0) as u64),
                });
            }
            match page.next_continuation_token() {
                Some(t) if page.is_truncated() == Some(true) => token = Some(t.to_string()),
                _ => break,
            }
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    /// Deletes an object (S3 answers success for a key already gone).
    pub(super) fn remove(&self, key: &str) -> Result<(), IndexerError> {
        let s3_key = self.location.key(key);
        Traffic::add(&self.traffic.s3_requests, 1);
        self.block(
            self.s3
                .delete_object()
                .bucket(&self.location.bucket)
                .key(&s3_key)
                .send(),
        )
        .map(|_| ())
        .map_err(|e| remote(format!("S3 DELETE {s3_key}"), DisplayErrorContext(e)))
    }
}
