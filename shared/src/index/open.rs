//! Opening a published version: the checks every reader makes, in one place.
//!
//! A version is opened in two reads, the manifest and then the pack it names; the hosts do the
//! reading (file, S3, R2) and hand the bytes here. The checks protect a reader from a damaged or
//! hostile store: a manifest may only name objects of its own project (never another org's), and
//! a pack must have exactly the size its manifest records before it is decoded.

use super::layout::{Manifest, keys};
use super::{IndexPack, PackError, PackReader};

/// Why a published version could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The manifest is not valid JSON of the expected shape.
    #[error("manifest of version {version}: {reason}")]
    Manifest {
        /// The version.
        version: u64,
        /// What the parser said.
        reason: String,
    },
    /// The manifest names an object outside its own project.
    #[error("manifest names `{0}` outside its project")]
    Foreign(String),
    /// The pack's size differs from the manifest's record.
    #[error("pack `{key}` has {found} bytes, its manifest says {expected}")]
    PackSize {
        /// The pack's key.
        key: String,
        /// Bytes read.
        found: u64,
        /// Bytes recorded.
        expected: u64,
    },
    /// The pack could not be decoded.
    #[error(transparent)]
    Pack(#[from] PackError),
}

/// Parses version `version`'s manifest of `org`'s `project` and checks that every object it
/// names belongs to that project.
pub fn read_manifest(
    org: &str,
    project: &str,
    version: u64,
    bytes: &[u8],
) -> Result<Manifest, OpenError> {
    let manifest: Manifest = serde_json::from_slice(bytes).map_err(|e| OpenError::Manifest {
        version,
        reason: e.to_string(),
    })?;
    let own = format!("{}/", keys::project(org, project));
    let foreign = manifest
        .objects()
        .into_iter()
        .find(|k| !k.starts_with(&own))
        .map(str::to_owned);
    if let Some(k) = foreign {
        return Err(OpenError::Foreign(k));
    }
    if let Some(base) = &manifest.base {
        let reason = if base.base.is_some() {
            Some("its base is a delta itself")
        } else if base.org != org || base.project != project || base.version >= version {
            Some("its base is not an earlier version of the same project")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(OpenError::Manifest {
                version,
                reason: reason.into(),
            });
        }
    }
    Ok(manifest)
}

/// Decodes the pack `manifest` names from its `bytes` (the concatenation of
/// [`Manifest::pack_objects`]), after checking their size.
pub fn open_pack(manifest: &Manifest, bytes: &[u8]) -> Result<IndexPack, OpenError> {
    if bytes.len() as u64 != manifest.pack_bytes {
        return Err(OpenError::PackSize {
            key: manifest.pack_key.clone(),
            found: bytes.len() as u64,
            expected: manifest.pack_bytes,
        });
    }
    Ok(IndexPack::decode(bytes)?)
}

/// The version `manifest` describes, from its decoded pack and (for a version stored as a
/// delta, [`super::delta`]) its base's: a delta merged over its base, a whole pack as it is.
/// A pack that does not match its manifest (a delta without a base, a base of another
/// version) is refused.
pub fn layered(
    manifest: &Manifest,
    base: Option<IndexPack>,
    pack: IndexPack,
) -> Result<IndexPack, OpenError> {
    let mismatch = |reason: &str| OpenError::Manifest {
        version: manifest.version,
        reason: reason.into(),
    };
    match (manifest.base.as_deref(), base, &pack.delta) {
        (None, None, None) => Ok(pack),
        (Some(m), Some(base), Some(d)) if d.base_version == m.version => {
            Ok(super::delta::merge(base, pack)?)
        }
        (Some(_), Some(_), Some(_)) => Err(mismatch("its delta is over another version")),
        (None, _, Some(_)) => Err(mismatch("its pack is a delta and it names no base")),
        _ => Err(mismatch(
            "it names a base and its pack is not a delta over it",
        )),
    }
}

/// A pack being decoded from its parts ([`Manifest::pack_objects`]) as they are read, so that a
/// reader never holds the whole pack beside its decoded form; the size the manifest records is
/// checked as the bytes arrive and at the end.
pub struct PackOpening<'m> {
    manifest: &'m Manifest,
    reader: PackReader,
    read: u64,
}

impl<'m> PackOpening<'m> {
    /// Starts decoding the pack `manifest` names.
    pub fn new(manifest: &'m Manifest) -> Self {
        Self {
            manifest,
            reader: PackReader::new(),
            read: 0,
        }
    }

    /// Starts decoding the pack `manifest` names, a base that `delta` will be merged into:
    /// its tables get room for the merged version's ([`PackReader::with_room`]).
    pub fn for_base_of(manifest: &'m Manifest, delta: &IndexPack) -> Self {
        let (files, chunks) = delta
            .delta
            .as_ref()
            .map_or((0, 0), |d| (u64::from(d.files), u64::from(d.chunks)));
        Self {
            manifest,
            reader: PackReader::with_room(files, chunks),
            read: 0,
        }
    }

    fn size_error(&self) -> OpenError {
        OpenError::PackSize {
            key: self.manifest.pack_key.clone(),
            found: self.read,
            expected: self.manifest.pack_bytes,
        }
    }

    /// Takes the pack's next bytes (the next part, in order).
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), OpenError> {
        self.read += bytes.len() as u64;
        if self.read > self.manifest.pack_bytes {
            return Err(self.size_error());
        }
        Ok(self.reader.push(bytes)?)
    }

    /// Bytes taken so far.
    pub fn read(&self) -> u64 {
        self.read
    }

    /// The decoded pack, once every byte the manifest records has arrived.
    pub fn finish(self) -> Result<IndexPack, OpenError> {
        if self.read != self.manifest.pack_bytes {
            return Err(self.size_error());
        }
        Ok(self.reader.finish()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(pack_key: &str, segments: &[&str]) -> Vec<u8> {
        serde_json::to_vec(&Manifest {
            format_version: super::super::FORMAT_VERSION,
            org: "acme".into(),
            project: "p1".into(),
            version: 1,
            pack_key: pack_key.into(),
            pack_bytes: 3,
            pack_sha256: String::new(),
            segment_keys: segments.iter().map(|s| s.to_string()).collect(),
            pack_parts: Vec::new(),
            created_at_ns: 0,
            origin: None,
            vectors: None,
            base: None,
        })
        .unwrap()
    }

    #[test]
    fn a_manifest_names_only_its_own_objects() {
        let own = keys::project("acme", "p1");
        let ok = manifest(
            &format!("{own}/v1.pack"),
            &[&format!("{own}/segments/a.seg")],
        );
        assert!(read_manifest("acme", "p1", 1, &ok).is_ok());
        let other = keys::project("evil", "p1");
        let stolen = manifest(
            &format!("{own}/v1.pack"),
            &[&format!("{other}/segments/a.seg")],
        );
        assert!(matches!(
            read_manifest("acme", "p1", 1, &stolen),
            Err(OpenError::Foreign(k)) if k.starts_with(&other)
        ));
        // The pack's parts are checked like every other object.
        let mut parted: Manifest = serde_json::from_slice(&ok).unwrap();
        parted.pack_parts = vec![format!("{other}/segments/b.seg")];
        assert!(matches!(
            read_manifest("acme", "p1", 1, &serde_json::to_vec(&parted).unwrap()),
            Err(OpenError::Foreign(k)) if k.ends_with("b.seg")
        ));
        // A base must be an earlier whole version of the same project.
        let mut layered: Manifest = serde_json::from_slice(&ok).unwrap();
        layered.version = 2;
        let mut base: Manifest = serde_json::from_slice(&ok).unwrap();
        layered.base = Some(Box::new(base.clone()));
        let bytes = serde_json::to_vec(&layered).unwrap();
        assert!(read_manifest("acme", "p1", 2, &bytes).is_ok());
        assert!(matches!(
            read_manifest("acme", "p1", 1, &bytes),
            Err(OpenError::Manifest { .. })
        ));
        base.base = Some(Box::new(base.clone()));
        layered.base = Some(Box::new(base));
        assert!(matches!(
            read_manifest("acme", "p1", 2, &serde_json::to_vec(&layered).unwrap()),
            Err(OpenError::Manifest { reason, .. }) if reason.contains("delta itself")
        ));
        // A sibling project whose id extends this one's is not this project.
        let sibling = manifest(&format!("{own}x/v1.pack"), &[]);
        assert!(read_manifest("acme", "p1", 1, &sibling).is_err());
        assert!(matches!(
            read_manifest("acme", "p1", 1, b"{"),
            Err(OpenError::Manifest { version: 1, .. })
        ));
    }

    #[test]
    fn a_pack_of_the_wrong_size_is_refused_before_decoding() {
        let own = keys::project("acme", "p1");
        let m = read_manifest("acme", "p1", 1, &manifest(&format!("{own}/v1.pack"), &[])).unwrap();
        assert!(matches!(
            open_pack(&m, b"abcd"),
            Err(OpenError::PackSize {
                found: 4,
                expected: 3,
                ..
            })
        ));
        assert!(matches!(open_pack(&m, b"abc"), Err(OpenError::Pack(_))));
        let mut parts = PackOpening::new(&m);
        parts.push(b"ab").unwrap();
        assert!(matches!(
            parts.push(b"cd"),
            Err(OpenError::PackSize { found: 4, .. })
        ));
        let mut short = PackOpening::new(&m);
        short.push(b"ab").unwrap();
        assert!(matches!(
            short.finish(),
            Err(OpenError::PackSize { found: 2, .. })
        ));
    }
}
