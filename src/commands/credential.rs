//! `ctxgate credential set|list|delete`: the tokens private git sources name, kept in the data
//! directory per organisation (`ctxgate_indexer::credentials::DataDirCredentials`). A token is
//! read from stdin or a file, never from an argument, and never printed back.

use ctxgate_core::error_code::ErrorCode;
use std::io::Read;

use ctxgate_core::credential::{Credential, valid_name};
use ctxgate_core::item_key::ItemKey;
use ctxgate_indexer::credentials::DataDirCredentials;
use ctxgate_indexer::store::Store;
use serde_json::json;

use super::{data_dir, print_json};
use crate::args::{CredentialCommand, Format, Global};
use crate::failure::{CmdResult, Failure};

/// `ctxgate credential ...`.
pub fn run(global: &Global, cmd: &CredentialCommand) -> CmdResult {
    let dir = data_dir(global)?;
    let store = DataDirCredentials::new(&dir);
    let (org, format) = match cmd {
        CredentialCommand::Set(a) => (&a.org, a.format),
        CredentialCommand::List(a) => (&a.org, a.format),
        CredentialCommand::Delete(a) => (&a.org, a.format),
    };
    known_org(&dir, org)?;
    let store_error = |e: String| Failure::coded(ErrorCode::CredentialStoreError, e);
    match cmd {
        CredentialCommand::Set(a) => {
            if !valid_name(&a.name) {
                return Err(Failure::coded(
                    ErrorCode::InvalidName,
                    "a credential name is 1-64 letters, digits, `-`, `_` or `.`, not starting with `.`",
                ));
            }
            let token = read_token(a.token_file.as_deref())?;
            let credential = Credential::new(Some(&a.username), &token)
                .map_err(|why| Failure::coded(ErrorCode::InvalidCredential, why))?;
            store.set(org, &a.name, &credential).map_err(store_error)?;
            match format {
                Format::Json => {
                    print_json(&json!({ "org": org, "credential": a.name, "stored": true }))
                }
                Format::Text => {
                    println!("stored credential {} of organisation {org}", a.name);
                    Ok(())
                }
            }
        }
        CredentialCommand::List(_) => {
            let names = store.names(org).map_err(store_error)?;
            match format {
                Format::Json => print_json(&json!({ "org": org, "credentials": names })),
                Format::Text => {
                    for name in names {
                        println!("{name}");
                    }
                    Ok(())
                }
            }
        }
        CredentialCommand::Delete(a) => {
            let deleted = store.delete(org, &a.name).map_err(store_error)?;
            if !deleted {
                return Err(Failure::coded(
                    ErrorCode::CredentialNotFound,
                    format!("no credential `{}` in organisation `{org}`", a.name),
                ));
            }
            match format {
                Format::Json => {
                    print_json(&json!({ "org": org, "credential": a.name, "deleted": true }))
                }
                Format::Text => {
                    println!("deleted credential {} of organisation {org}", a.name);
                    Ok(())
                }
            }
        }
    }
}

/// Refuses an organisation the data directory does not have: a typo would store a credential
/// no project can use.
fn known_org(dir: &std::path::Path, org: &str) -> Result<(), Failure> {
    let store = Store::open(dir)?;
    let key = ItemKey::org(org);
    match store.item(&key.pk, &key.sk)? {
        Some(_) => Ok(()),
        None => Err(Failure::coded(
            ErrorCode::OrgNotFound,
            format!("no organisation `{org}` (create it with `ctxgate org create {org}`)"),
        )),
    }
}

/// The token from `file`, or from stdin.
fn read_token(file: Option<&std::path::Path>) -> Result<String, Failure> {
    let mut token = String::new();
    match file {
        Some(path) => {
            token = std::fs::read_to_string(path).map_err(|e| {
                Failure::coded(
                    ErrorCode::FileUnreadable,
                    format!("reading `{}`: {e}", path.display()),
                )
            })?;
        }
        None => {
            std::io::stdin().read_to_string(&mut token).map_err(|e| {
                Failure::coded(ErrorCode::FileUnreadable, format!("reading stdin: {e}"))
            })?;
        }
    }
    Ok(token)
}
