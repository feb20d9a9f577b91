//! Signed S3 and DynamoDB requests, built without I/O.

use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode, sign,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;

use crate::backend::BackendError;

/// Where the indexer publishes, and the credentials to read it.
#[derive(Clone, Debug)]
pub struct AwsConfig {
    /// A custom endpoint (`http://127.0.0.1:PORT` for a local server): path-style S3 then.
    pub endpoint: Option<String>,
    /// The region.
    pub region: String,
    /// Access key id.
    pub access_key_id: String,
    /// Secret access key.
    pub secret_access_key: String,
    /// Session token, for temporary credentials.
    pub session_token: Option<String>,
    /// The bucket.
    pub bucket: String,
    /// Key prefix, without leading or trailing `/`.
    pub prefix: String,
    /// The DynamoDB table.
    pub table: String,
    /// The indexer function (name or ARN) to start when a project is registered; without it,
    /// registered projects wait for the scheduled pass.
    pub indexer_function: Option<String>,
    /// A custom Lambda endpoint (`AWS_ENDPOINT_URL_LAMBDA`), else `endpoint`.
    pub lambda_endpoint: Option<String>,
}

impl AwsConfig {
    /// Splits `s3://bucket[/prefix]`.
    pub fn parse_store(url: &str) -> Result<(String, String), String> {
        let rest = url
            .strip_prefix("s3://")
            .ok_or_else(|| format!("`{url}`: expected s3://BUCKET[/PREFIX]"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(format!("`{url}`: no bucket"));
        }
        Ok((bucket.to_string(), prefix.trim_matches('/').to_string()))
    }

    /// The configuration in variables read by `var` (the Worker's env, the process's
    /// environment): `CTXGATE_STORE` (`s3://BUCKET[/PREFIX]`; without it, `None`),
    /// `CTXGATE_TABLE`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, optionally
    /// `AWS_SESSION_TOKEN`, `AWS_ENDPOINT_URL` (a local server), `CTXGATE_INDEXER_FUNCTION`
    /// (the indexer function to start when a project is registered) and
    /// `AWS_ENDPOINT_URL_LAMBDA`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<AwsConfig>, String> {
        let Some(store) = var("CTXGATE_STORE") else {
            return Ok(None);
        };
        let need =
            |name: &str| var(name).ok_or_else(|| format!("CTXGATE_STORE is set but {name} is not"));
        let (bucket, prefix) = Self::parse_store(&store)?;
        Ok(Some(Self {
            endpoint: var("AWS_ENDPOINT_URL"),
            region: var("AWS_REGION").unwrap_or_else(|| "us-east-1".into()),
            access_key_id: need("AWS_ACCESS_KEY_ID")?,
            secret_access_key: need("AWS_SECRET_ACCESS_KEY")?,
            session_token: var("AWS_SESSION_TOKEN"),
            bucket,
            prefix,
            table: need("CTXGATE_TABLE")?,
            indexer_function: var("CTXGATE_INDEXER_FUNCTION"),
            lambda_endpoint: var("AWS_ENDPOINT_URL_LAMBDA"),
        }))
    }
}

/// A request ready to send: the host adds nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedRequest {
    /// `GET` or `POST`.
    pub method: &'static str,
    /// The full URL.
    pub url: String,
    /// Every header, the signature's included.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

/// Percent-encodes a key's path segments (keys are ASCII names the indexer made, but a reader
/// must never let a key change the request's path).
fn encode_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

impl AwsConfig {
    fn host_url(&self, service: &str, bucket: Option<&str>) -> String {
        match (&self.endpoint, bucket) {
            (Some(e), Some(b)) => format!("{}/{b}", e.trim_end_matches('/')),
            (Some(e), None) => e.trim_end_matches('/').to_string(),
            (None, Some(b)) => format!("https://{b}.s3.{}.amazonaws.com", self.region),
            (None, None) => format!("https://{service}.{}.amazonaws.com", self.region),
        }
    }

    /// `GET` of the object at store key `key` (under the prefix).
    pub fn s3_get(&self, key: &str, now_ms: u64) -> Result<SignedRequest, BackendError> {
        self.s3_get_range(key, None, now_ms)
    }

    /// A signed S3 `GetObject` of `len` bytes from `offset` (`Range: bytes=a-b`, answered 206),
    /// or of the whole object without a range.
    pub fn s3_get_range(
        &self,
        key: &str,
        range: Option<(u64, u64)>,
        now_ms: u64,
    ) -> Result<SignedRequest, BackendError> {
        let full = if self.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}/{key}", self.prefix)
        };
        let url = format!(
            "{}/{}",
            self.host_url("s3", Some(&self.bucket)),
            encode_key(&full)
        );
        let mut settings = SigningSettings::default();
        // S3 signs the path as sent (no double encoding, no normalisation) and wants the
        // payload hash header.
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        let headers = match range {
            Some((offset, len)) if len > 0 => vec![(
                "range".to_string(),
                format!("bytes={offset}-{}", offset + len - 1),
            )],
            _ => Vec::new(),
        };
        self.sign("GET", url, headers, Vec::new(), "s3", settings, now_ms)
    }

    /// An asynchronous invocation (`Event`: Lambda queues it, retries it and answers 202 at
    /// once) of `function` with `payload`.
    pub fn lambda_invoke_async(
        &self,
        function: &str,
        payload: &serde_json::Value,
        now_ms: u64,
    ) -> Result<SignedRequest, BackendError> {
        let base = match self.lambda_endpoint.as_ref().or(self.endpoint.as_ref()) {
            Some(e) => e.trim_end_matches('/').to_string(),
            None => format!("https://lambda.{}.amazonaws.com", self.region),
        };
        // A name or an ARN: its `:` are escaped, like every byte that is not a name's.
        let url = format!(
            "{base}/2015-03-31/functions/{}/invocations",
            encode_key(function).replace('/', "%2F")
        );
        let headers = vec![
            ("content-type".to_string(), "application/json".to_string()),
            ("x-amz-invocation-type".to_string(), "Event".to_string()),
        ];
        let body = serde_json::to_vec(payload).map_err(|e| BackendError::Storage(e.to_string()))?;
        self.sign(
            "POST",
            url,
            headers,
            body,
            "lambda",
            SigningSettings::default(),
            now_ms,
        )
    }

    /// A DynamoDB JSON call (`target` is the operation, e.g. `Query`).
    pub fn dynamodb(
        &self,
        target: &str,
        body: &serde_json::Value,
        now_ms: u64,
    ) -> Result<SignedRequest, BackendError> {
        let url = format!("{}/", self.host_url("dynamodb", None));
        let headers = vec![
            (
                "content-type".to_string(),
                "application/x-amz-json-1.0".to_string(),
            ),
            (
                "x-amz-target".to_string(),
                format!("DynamoDB_20120810.{target}"),
            ),
        ];
        let body = serde_json::to_vec(body).map_err(|e| BackendError::Storage(e.to_string()))?;
        self.sign(
            "POST",
            url,
            headers,
            body,
            "dynamodb",
            SigningSettings::default(),
            now_ms,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn sign(
        &self,
        method: &'static str,
        url: String,
        mut headers: Vec<(String, String)>,
        body: Vec<u8>,
        service: &str,
        settings: SigningSettings,
        now_ms: u64,
    ) -> Result<SignedRequest, BackendError> {
        let failed = |e: &dyn std::fmt::Display| BackendError::Storage(format!("signing: {e}"));
        let host = url
            .split("://")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .ok_or_else(|| failed(&"no host in the URL"))?
            .to_string();
        headers.push(("host".into(), host));
        let identity: Identity = Credentials::new(
            &self.access_key_id,
            &self.secret_access_key,
            self.session_token.clone(),
            None,
            "ctxgate",
        )
        .into();
        // Hosts differ in clocks (`Date.now()` in the Worker); the caller gives the time.
        let time = SystemTime::UNIX_EPOCH + Duration::from_millis(now_ms);
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(service)
            .time(time)
            .settings(settings)
            .build()
            .map_err(|e| failed(&e))?
            .into();
        let signable = SignableRequest::new(
            method,
            url.as_str(),
            headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            SignableBody::Bytes(&body),
        )
        .map_err(|e| failed(&e))?;
        let (instructions, _) = sign(signable, &params)
            .map_err(|e| failed(&e))?
            .into_parts();
        let (signed, _) = instructions.into_parts();
        for h in signed {
            headers.push((h.name().to_string(), h.value().to_string()));
        }
        Ok(SignedRequest {
            method,
            url,
            headers,
            body,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(endpoint: Option<&str>) -> AwsConfig {
        AwsConfig {
            endpoint: endpoint.map(str::to_string),
            region: "eu-west-1".into(),
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
            bucket: "idx-bucket".into(),
            prefix: "ctxgate".into(),
            table: "ctxgate".into(),
            indexer_function: None,
            lambda_endpoint: None,
        }
    }

    #[test]
    fn s3_requests_are_signed_for_their_host_and_path() {
        let r = config(None)
            .s3_get(
                "org/acme/project/p1/version/1/manifest.json",
                1_700_000_000_000,
            )
            .unwrap();
        assert_eq!(
            r.url,
            "https://idx-bucket.s3.eu-west-1.amazonaws.com/ctxgate/org/acme/project/p1/version/1/manifest.json"
        );
        let header = |n: &str| {
            r.headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(n))
                .map(|(_, v)| v.clone())
        };
        assert_eq!(
            header("host").as_deref(),
            Some("idx-bucket.s3.eu-west-1.amazonaws.com")
        );
        assert_eq!(header("x-amz-date").as_deref(), Some("20231114T221320Z"));
        let auth = header("authorization").unwrap();
        assert!(auth.starts_with(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/eu-west-1/s3/aws4_request"
        ));
        assert!(header("x-amz-content-sha256").is_some());
        // Path-style on a custom endpoint, and a key cannot add path segments or a query.
        let local = config(Some("http://127.0.0.1:5000/"))
            .s3_get("org/a b/x?y", 1_700_000_000_000)
            .unwrap();
        assert_eq!(
            local.url,
            "http://127.0.0.1:5000/idx-bucket/ctxgate/org/a%20b/x%3Fy"
        );
    }

    #[test]
    fn dynamodb_requests_name_their_operation() {
        let body = serde_json::json!({"TableName": "ctxgate"});
        let r = config(Some("http://127.0.0.1:5000"))
            .dynamodb("Query", &body, 1_700_000_000_000)
            .unwrap();
        assert_eq!(r.url, "http://127.0.0.1:5000/");
        assert_eq!(r.method, "POST");
        assert!(
            r.headers
                .iter()
                .any(|(k, v)| k == "x-amz-target" && v == "DynamoDB_20120810.Query")
        );
        assert!(
            r.headers
                .iter()
                .any(|(k, v)| k == "authorization" && v.contains("/dynamodb/aws4_request"))
        );
        assert_eq!(r.body, br#"{"TableName":"ctxgate"}"#);
        assert!(AwsConfig::parse_store("s3://b/p/").unwrap() == ("b".into(), "p".into()));
        assert!(AwsConfig::parse_store("b/p").is_err());
    }

    #[test]
    fn lambda_invocations_are_asynchronous_and_signed_for_lambda() {
        let payload = serde_json::json!({"action": "index"});
        let arn = "arn:aws:lambda:eu-west-1:123456789012:function:ctxgate-indexer";
        let r = config(None)
            .lambda_invoke_async(arn, &payload, 1_700_000_000_000)
            .unwrap();
        assert_eq!(
            r.url,
            "https://lambda.eu-west-1.amazonaws.com/2015-03-31/functions/\
             arn%3Aaws%3Alambda%3Aeu-west-1%3A123456789012%3Afunction%3Actxgate-indexer/invocations"
        );
        let header = |n: &str| {
            r.headers
                .iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(header("x-amz-invocation-type"), Some("Event"));
        assert!(
            header("authorization").is_some_and(|a| a.contains("/eu-west-1/lambda/aws4_request"))
        );
        // Its own endpoint first, then the shared one; a name cannot add path segments.
        let mut c = config(Some("http://127.0.0.1:5000"));
        let shared = c.lambda_invoke_async("f", &payload, 0).unwrap();
        assert_eq!(
            shared.url,
            "http://127.0.0.1:5000/2015-03-31/functions/f/invocations"
        );
        c.lambda_endpoint = Some("http://127.0.0.1:6000/".into());
        let own = c.lambda_invoke_async("a/../b", &payload, 0).unwrap();
        assert_eq!(
            own.url,
            "http://127.0.0.1:6000/2015-03-31/functions/a%2F..%2Fb/invocations"
        );
    }
}
