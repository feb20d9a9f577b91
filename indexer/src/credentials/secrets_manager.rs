//! Credentials in AWS Secrets Manager, for the Lambda function: org `acme`'s credential `ci` is
//! the secret `{prefix}/acme/ci` (default prefix `ctxgate`), whose string is the JSON of a
//! [`Credential`] (`{"token": "…", "username"?: "…"}`) or the bare token.
//!
//! Secrets Manager rather than SSM Parameter Store: it is made for secrets (always encrypted
//! with KMS, versioned, rotatable, with its own resource policies and audit trail), the
//! function's IAM policy can be scoped to the names under the prefix, and its SDK crate is a
//! fraction of SSM's, which matters to the Lambda's build. The secret is read per fetch and
//! never cached.

use aws_config::BehaviorVersion;
use aws_config::meta::region::RegionProviderChain;
use ctxgate_core::credential::{Credential, secret_id, valid_name};
use tokio::runtime::Handle;

use super::CredentialStore;

/// The secret names' default first part.
pub const DEFAULT_PREFIX: &str = "ctxgate";

/// Credentials read from (and, for operators and tests, written to) Secrets Manager.
pub struct SecretsManagerCredentials {
    client: aws_sdk_secretsmanager::Client,
    prefix: String,
    handle: Handle,
}

impl SecretsManagerCredentials {
    /// A client configured like the store's (the standard AWS variables, `AWS_ENDPOINT_URL`),
    /// driven on `handle` from blocking threads.
    pub fn connect(prefix: &str, handle: Handle) -> Self {
        let http = aws_smithy_http_client::Builder::new()
            .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
            ))
            .build_https();
        let config = handle.block_on(async {
            aws_config::defaults(BehaviorVersion::latest())
                .region(RegionProviderChain::default_provider().or_else("us-east-1"))
                .http_client(http)
                .load()
                .await
        });
        Self {
            client: aws_sdk_secretsmanager::Client::new(&config),
            prefix: prefix.to_owned(),
            handle,
        }
    }

    /// Stores (or replaces) `org`'s credential `name` as a secret of its own.
    pub fn put(&self, org: &str, name: &str, credential: &Credential) -> Result<(), String> {
        let id = self.id(org, name)?;
        let value = serde_json::to_string(credential).map_err(|e| e.to_string())?;
        self.put_string(&id, &value)
    }

    /// Stores (or replaces) the secret `id` with the string `value` (an operator's secret, such
    /// as the embeddings API key [`Self::secret_string`] reads).
    pub fn put_string(&self, id: &str, value: &str) -> Result<(), String> {
        self.handle.block_on(async {
            let created = self
                .client
                .create_secret()
                .name(id)
                .secret_string(value)
                .send()
                .await;
            match created {
                Ok(_) => Ok(()),
                Err(e)
                    if e.as_service_error()
                        .is_some_and(|s| s.is_resource_exists_exception()) =>
                {
                    self.client
                        .put_secret_value()
                        .secret_id(id)
                        .secret_string(value)
                        .send()
                        .await
                        .map(|_| ())
                        .map_err(|e| format!("storing secret `{id}`: {}", service_message(&e)))
                }
                Err(e) => Err(format!("creating secret `{id}`: {}", service_message(&e))),
            }
        })
    }

    /// The string of the secret `id` (a full name or ARN, not under the prefix: an operator's
    /// secret such as the embeddings API key), or `None` when there is none by that name.
    pub fn secret_string(&self, id: &str) -> Result<Option<String>, String> {
        let got = self
            .handle
            .block_on(self.client.get_secret_value().secret_id(id).send());
        match got {
            Ok(v) => v
                .secret_string()
                .map(|s| Some(s.to_owned()))
                .ok_or_else(|| format!("secret `{id}` holds no string")),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_resource_not_found_exception()) =>
            {
                Ok(None)
            }
            Err(e) => Err(format!("reading secret `{id}`: {}", service_message(&e))),
        }
    }

    fn id(&self, org: &str, name: &str) -> Result<String, String> {
        if !valid_name(org) || !valid_name(name) {
            return Err(format!(
                "`{org}`/`{name}` is not a plain organisation and credential name"
            ));
        }
        Ok(secret_id(&self.prefix, org, name))
    }
}

impl CredentialStore for SecretsManagerCredentials {
    fn credential(&self, org: &str, name: &str) -> Result<Option<Credential>, String> {
        let id = self.id(org, name)?;
        let got = self
            .handle
            .block_on(self.client.get_secret_value().secret_id(&id).send());
        let value = match got {
            Ok(v) => v,
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_resource_not_found_exception()) =>
            {
                return Ok(None);
            }
            Err(e) => return Err(format!("reading secret `{id}`: {}", service_message(&e))),
        };
        let Some(text) = value.secret_string() else {
            return Err(format!("secret `{id}` holds no string"));
        };
        // The parser's message could quote the secret: say only which one is malformed.
        if text.trim_start().starts_with('{') {
            return serde_json::from_str(text)
                .map(Some)
                .map_err(|_| format!("secret `{id}` is not a credential's JSON"));
        }
        Credential::new(None, text)
            .map(Some)
            .map_err(|why| format!("secret `{id}`: {why}"))
    }
}

/// What an SDK error says, its code and message (never the request).
fn service_message<E, R>(e: &aws_sdk_secretsmanager::error::SdkError<E, R>) -> String
where
    E: aws_sdk_secretsmanager::error::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match e.as_service_error() {
        Some(s) => format!(
            "{}: {}",
            s.code().unwrap_or("error"),
            s.message().unwrap_or("no message")
        ),
        None => crate::source::error_chain(e),
    }
}
