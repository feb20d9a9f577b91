//! Where the tokens of private git sources are kept, and how a source's reference is resolved.
//!
//! A source names a credential; the token lives in a [`CredentialStore`] under the project's
//! org, so a reference can only ever reach its own org's secrets. Natively that is a file per
//! credential in the data directory ([`DataDirCredentials`], mode 0600); the Lambda reads AWS
//! Secrets Manager (`SecretsManagerCredentials`, feature `aws`). The token is read when a
//! source is fetched or probed and dropped after: it is never part of a record, a job, an
//! index or a log line.

mod data_dir;
#[cfg(feature = "aws")]
mod secrets_manager;

pub use data_dir::DataDirCredentials;
#[cfg(feature = "aws")]
pub use secrets_manager::{DEFAULT_PREFIX, SecretsManagerCredentials};

use ctxgate_core::credential::{Credential, valid_name};

use crate::source::{SourceError, SourceSpec};

/// A place credentials are read from, by org and name.
pub trait CredentialStore: Send + Sync {
    /// `org`'s credential `name`, or `None` when it has none by that name. `name` has been
    /// checked with [`valid_name`].
    fn credential(&self, org: &str, name: &str) -> Result<Option<Credential>, String>;
}

/// A store with no credentials: hosts that have none configured.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoCredentials;

impl CredentialStore for NoCredentials {
    fn credential(&self, _: &str, _: &str) -> Result<Option<Credential>, String> {
        Ok(None)
    }
}

/// The credential `spec` names, read from `org`'s in `store`; `None` when it names none.
pub fn resolve(
    store: &dyn CredentialStore,
    org: &str,
    spec: &SourceSpec,
) -> Result<Option<Credential>, SourceError> {
    let Some(name) = spec.credential() else {
        return Ok(None);
    };
    if !valid_name(name) {
        return Err(SourceError::CredentialNotFound {
            name: name.to_owned(),
        });
    }
    match store.credential(org, name) {
        Ok(Some(c)) => Ok(Some(c)),
        Ok(None) => Err(SourceError::CredentialNotFound {
            name: name.to_owned(),
        }),
        Err(message) => Err(SourceError::CredentialStore {
            name: name.to_owned(),
            message,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_resolve_within_their_org_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = DataDirCredentials::new(dir.path());
        store
            .set(
                "acme",
                "ci",
                &Credential::new(None, "acme-secret-1").unwrap(),
            )
            .unwrap();
        let spec = |name: &str| SourceSpec::Git {
            url: "https://h/r.git".into(),
            rev: None,
            credential: Some(name.into()),
        };
        let got = resolve(&store, "acme", &spec("ci")).unwrap().unwrap();
        assert_eq!(got.token, "acme-secret-1");
        let err = resolve(&store, "other", &spec("ci")).unwrap_err();
        assert!(
            matches!(err, SourceError::CredentialNotFound { .. }),
            "{err}"
        );
        assert!(err.is_user_error());
        let err = resolve(&store, "acme", &spec("../acme/ci")).unwrap_err();
        assert!(
            matches!(err, SourceError::CredentialNotFound { .. }),
            "{err}"
        );
        let public = SourceSpec::Git {
            url: "https://h/r.git".into(),
            rev: None,
            credential: None,
        };
        assert!(resolve(&NoCredentials, "acme", &public).unwrap().is_none());
    }
}
