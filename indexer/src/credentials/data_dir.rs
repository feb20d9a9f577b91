//! Credentials as files of the data directory: `secrets/credentials/{org}/{name}`, each the JSON
//! of a [`Credential`], readable by the server's user only (files 0600, folders 0700), next to
//! the other secrets the data directory already keeps (`secrets/continuation.key`).

use std::io::Write;
use std::path::{Path, PathBuf};

use ctxgate_core::credential::{Credential, valid_name};

use super::CredentialStore;

/// The credentials kept in a data directory.
#[derive(Clone, Debug)]
pub struct DataDirCredentials {
    dir: PathBuf,
}

impl DataDirCredentials {
    /// The credentials of the data directory at `root`.
    pub fn new(root: &Path) -> Self {
        Self {
            dir: root.join("secrets").join("credentials"),
        }
    }

    /// Where `org`'s credential `name` is kept; both must be plain names (no separators).
    fn path(&self, org: &str, name: &str) -> Result<PathBuf, String> {
        for (what, v) in [("organisation", org), ("credential", name)] {
            if !valid_name(v) {
                return Err(format!(
                    "{what} name `{v}` must be 1-64 letters, digits, `-`, `_` or `.`, not starting with `.`"
                ));
            }
        }
        Ok(self.dir.join(org).join(name))
    }

    /// Stores (or replaces) `org`'s credential `name`; the file is created readable by this
    /// user only before the token is written to it, and renamed into place whole.
    pub fn set(&self, org: &str, name: &str, credential: &Credential) -> Result<(), String> {
        let path = self.path(org, name)?;
        let folder = path.parent().unwrap_or(&self.dir);
        create_private_dir(folder)?;
        let json = serde_json::to_vec(credential).map_err(|e| e.to_string())?;
        let tmp = folder.join(format!(".{name}.tmp"));
        let io =
            |action: &str, p: &Path, e: std::io::Error| format!("{action} `{}`: {e}", p.display());
        let mut file = private_file(&tmp).map_err(|e| io("creating", &tmp, e))?;
        file.write_all(&json)
            .and_then(|()| file.sync_all())
            .map_err(|e| io("writing", &tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| io("renaming", &tmp, e))
    }

    /// Deletes `org`'s credential `name`; whether there was one.
    pub fn delete(&self, org: &str, name: &str) -> Result<bool, String> {
        let path = self.path(org, name)?;
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(format!("deleting `{}`: {e}", path.display())),
        }
    }

    /// The names of `org`'s credentials, sorted (never their tokens).
    pub fn names(&self, org: &str) -> Result<Vec<String>, String> {
        let folder = self.path(org, "x")?.parent().map(Path::to_path_buf);
        let Some(folder) = folder else {
            return Ok(Vec::new());
        };
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(format!("listing `{}`: {e}", folder.display())),
        };
        let mut names: Vec<String> = entries
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| valid_name(n))
            .collect();
        names.sort();
        Ok(names)
    }
}

impl CredentialStore for DataDirCredentials {
    fn credential(&self, org: &str, name: &str) -> Result<Option<Credential>, String> {
        let path = self.path(org, name)?;
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("reading `{}`: {e}", path.display())),
        };
        // The parser's message could quote the file: say only where it is.
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|_| format!("`{}` is not a stored credential", path.display()))
    }
}

/// Creates `dir` and its parents, the new ones readable by this user only.
fn create_private_dir(dir: &Path) -> Result<(), String> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder
        .create(dir)
        .map_err(|e| format!("creating `{}`: {e}", dir.display()))
}

/// A new file at `path` (replacing one left by an interrupted write), mode 0600 from the start.
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file = options.open(path)?;
    #[cfg(unix)]
    {
        // A file left by an interrupted write keeps its mode through `open`: set it again.
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_private_files_per_org() {
        let dir = tempfile::tempdir().unwrap();
        let store = DataDirCredentials::new(dir.path());
        let c = Credential::new(Some("oauth2"), "glpat-0123456789").unwrap();
        store.set("acme", "ci", &c).unwrap();
        store.set("acme", "bot", &c).unwrap();
        assert_eq!(store.credential("acme", "ci").unwrap(), Some(c.clone()));
        assert_eq!(store.credential("other", "ci").unwrap(), None);
        assert_eq!(store.names("acme").unwrap(), ["bot", "ci"]);
        assert!(store.names("nobody").unwrap().is_empty());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let file = dir.path().join("secrets/credentials/acme/ci");
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let folder = std::fs::metadata(file.parent().unwrap()).unwrap();
            assert_eq!(folder.permissions().mode() & 0o777, 0o700);
        }
        let replaced = Credential::new(None, "ghp_replaced99").unwrap();
        store.set("acme", "ci", &replaced).unwrap();
        assert_eq!(store.credential("acme", "ci").unwrap(), Some(replaced));
        assert!(store.delete("acme", "ci").unwrap());
        assert!(!store.delete("acme", "ci").unwrap());
        assert_eq!(store.credential("acme", "ci").unwrap(), None);
        for (org, name) in [("acme", "../x"), ("../acme", "ci"), ("acme", ".tmp")] {
            assert!(store.set(org, name, &c).is_err(), "{org}/{name}");
        }
    }
}
