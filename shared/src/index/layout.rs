//! Where a published index lives: the object keys (the same in a data directory, S3 or R2) and
//! the manifest that makes a version visible.

use serde::{Deserialize, Serialize};

/// The last object of a version: once it exists, every object it names exists too.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Index pack format version.
    pub format_version: u32,
    /// Organisation.
    pub org: String,
    /// Project id.
    pub project: String,
    /// Version number.
    pub version: u64,
    /// Key of the pack; when the pack is in [`Manifest::pack_parts`], the object here holds
    /// only its 12-byte header (it is what claims the version number).
    pub pack_key: String,
    /// Size of the pack in bytes (checked on open).
    pub pack_bytes: u64,
    /// sha256 of the pack.
    pub pack_sha256: String,
    /// Keys of the segments the version needs: those the pack refers to and its parts.
    pub segment_keys: Vec<String>,
    /// A pack larger than one segment is stored cut into content-addressed segments, so no
    /// object of a version nears a store's size limit (the Worker accepts 32 MiB): their keys in
    /// order, whose concatenation is the pack. Empty: the pack is the object at `pack_key`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pack_parts: Vec<String>,
    /// Created, nanoseconds since the epoch.
    pub created_at_ns: i64,
    /// The repository and commit the files came from, when known: what links to a piece's
    /// source are made of (never a credential: [`crate::source::Origin::new`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<crate::source::Origin>,
    /// The chunks' embeddings, when the indexer made them: an object of its own beside the
    /// pack (never inside it), so a host without dense retrieval never reads it and a host
    /// with it can tell, before reading, whether the table fits its memory and its model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vectors: Option<VectorsRef>,
    /// A version stored as a delta over an earlier one ([`crate::index::delta`]): that
    /// version's manifest, whose objects (but its vectors) this version names too (a reader
    /// opens this version's pack, then the base's, and merges them; garbage collection keeps
    /// them while this version is kept). Never itself a delta.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<Box<Manifest>>,
}

/// Where a version's [`crate::dense::VectorTable`] is and what it holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorsRef {
    /// Its content-addressed key ([`keys::vectors`]): an unchanged table is stored once for
    /// every version that names it.
    pub key: String,
    /// Its size in bytes (a reader with a memory ceiling skips a larger table unread).
    pub bytes: u64,
    /// The model that made the vectors (a query must be embedded by the same one).
    pub model: String,
    /// Dimensions per vector.
    pub dims: u32,
}

/// The largest part of a pack stored in parts (the indexer's segment size).
pub const PACK_PART_MAX: u64 = 4 << 20;

impl Manifest {
    /// The objects whose bytes, concatenated in this order, are the pack.
    pub fn pack_objects(&self) -> Vec<&str> {
        if self.pack_parts.is_empty() {
            vec![self.pack_key.as_str()]
        } else {
            self.pack_parts.iter().map(String::as_str).collect()
        }
    }

    /// Every object the version consists of besides the manifest, each once, in the order a
    /// writer stores them: every segment (the pack's parts among them), the vectors, then the
    /// pack (or its header).
    pub fn objects(&self) -> Vec<&str> {
        let mut seen = std::collections::HashSet::new();
        // A base's vectors are not this version's (it names its own, if any).
        let base: Vec<&str> = self
            .base
            .as_deref()
            .map(|b| {
                let vectors = b.vectors.as_ref().map(|v| v.key.as_str());
                let mut objects = b.objects();
                objects.retain(|k| Some(*k) != vectors);
                objects
            })
            .unwrap_or_default();
        base.into_iter()
            .chain(
                self.segment_keys
                    .iter()
                    .chain(&self.pack_parts)
                    .chain(self.vectors.as_ref().map(|v| &v.key))
                    .chain(std::iter::once(&self.pack_key))
                    .map(String::as_str),
            )
            .filter(|k| seen.insert(*k))
            .collect()
    }
}

/// The id of an organisation's project named `name`: derived, so the indexer and the edge (which
/// registers projects for the indexer to fetch) name the same project the same way without
/// asking each other.
pub fn project_id(org: &str, name: &str) -> String {
    let digest = crate::hash::Sha256Digest::of(format!("{org}\0{name}").as_bytes()).to_hex();
    format!("p{}", &digest[..16])
}

/// Object keys, shared with the S3 layout.
pub mod keys {
    /// Prefix of everything a project owns.
    pub fn project(org: &str, project: &str) -> String {
        format!("org/{org}/project/{project}")
    }
    /// A content-addressed segment of chunk texts.
    pub fn segment(org: &str, project: &str, sha_hex: &str) -> String {
        format!("{}/segments/{sha_hex}.seg", self::project(org, project))
    }
    /// A content-addressed table of chunk embeddings.
    pub fn vectors(org: &str, project: &str, sha_hex: &str) -> String {
        format!("{}/vectors/{sha_hex}.vec", self::project(org, project))
    }
    /// A version's index pack.
    pub fn pack(org: &str, project: &str, version: u64) -> String {
        format!(
            "{}/version/{version:010}/index.pack",
            self::project(org, project)
        )
    }
    /// A version's manifest.
    pub fn manifest(org: &str, project: &str, version: u64) -> String {
        format!(
            "{}/version/{version:010}/manifest.json",
            self::project(org, project)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{Manifest, project_id};

    #[test]
    fn a_pack_in_parts_is_read_from_its_parts_and_old_manifests_still_parse() {
        let old = r#"{"format_version":7,"org":"o","project":"p","version":1,
            "pack_key":"k/index.pack","pack_bytes":3,"pack_sha256":"","segment_keys":["k/a.seg"],
            "created_at_ns":0}"#;
        let mut m: Manifest = serde_json::from_str(old).unwrap();
        assert_eq!(m.pack_objects(), ["k/index.pack"]);
        assert_eq!(m.objects(), ["k/a.seg", "k/index.pack"]);
        assert!(!serde_json::to_string(&m).unwrap().contains("pack_parts"));
        m.pack_parts = vec!["k/p1.seg".into(), "k/a.seg".into()];
        m.segment_keys.push("k/p1.seg".into());
        assert_eq!(m.pack_objects(), ["k/p1.seg", "k/a.seg"]);
        assert_eq!(m.objects(), ["k/a.seg", "k/p1.seg", "k/index.pack"]);
        // Vectors are an object of the version too (garbage collection keeps what it names).
        assert!(!serde_json::to_string(&m).unwrap().contains("vectors"));
        m.vectors = Some(super::VectorsRef {
            key: "k/v.vec".into(),
            bytes: 9,
            model: "m".into(),
            dims: 4,
        });
        assert_eq!(
            m.objects(),
            ["k/a.seg", "k/p1.seg", "k/v.vec", "k/index.pack"]
        );
        let back: Manifest = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back.vectors, m.vectors);
        // A delta names its base's objects first (garbage collection keeps them with it).
        assert!(!serde_json::to_string(&m).unwrap().contains("base"));
        let mut base = m.clone();
        base.version = 1;
        base.segment_keys = vec!["k/b.seg".into(), "k/a.seg".into()];
        base.pack_parts.clear();
        base.vectors = None;
        base.pack_key = "k/1.pack".into();
        m.base = Some(Box::new(base));
        assert_eq!(
            m.objects(),
            [
                "k/b.seg",
                "k/a.seg",
                "k/1.pack",
                "k/p1.seg",
                "k/v.vec",
                "k/index.pack"
            ]
        );
        let back: Manifest = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn project_ids_are_stable_and_differ_per_org() {
        // Published indexes are keyed by this id: changing its derivation orphans them.
        assert_eq!(project_id("acme", "core"), project_id("acme", "core"));
        assert_ne!(project_id("acme", "core"), project_id("other", "core"));
        assert_ne!(project_id("acme", "core"), project_id("acm", "ecore"));
        let id = project_id("acme", "core");
        assert_eq!(id.len(), 17);
        assert!(id.starts_with('p') && id[1..].bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
