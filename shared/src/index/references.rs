//! Which chunks use each symbol the project defines: the reference half of the symbol index
//! (definitions are [`super::ChunkRecord::symbol`]).
//!
//! The indexer reads the identifiers of every chunk from its syntax tree (so names in comments
//! and strings do not count; files without a grammar fall back to a scan for identifier-shaped
//! words) and keeps, for each name some chunk defines, the chunks that use it without defining
//! it. A request that names a symbol then reaches its callers and users as well as its
//! definition, which is what a bug fix or a refactor of that symbol touches.

use serde::{Deserialize, Serialize};

use super::ChunkRecord;
use crate::lists::{Found, KeyedLists, decode_ascending, encode_ascending};

/// Names are compared lowercased, by their last path segment (`Store::open` → `open`).
pub fn name_key(symbol: &str) -> String {
    symbol
        .rsplit([':', '.'])
        .find(|s| !s.is_empty())
        .unwrap_or(symbol)
        .to_lowercase()
}

/// The names a chunk defines (a merged chunk lists several, comma-separated).
pub fn defined_names(chunk: &ChunkRecord) -> impl Iterator<Item = String> + '_ {
    chunk
        .symbol
        .iter()
        .flat_map(|s| s.split(", "))
        .map(name_key)
        .filter(|n| !n.is_empty())
}

/// Users of each defined name: names to ascending chunk indexes (varint gaps), in the pack for
/// a small repository and in segments read by range for a large one ([`KeyedLists`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct References {
    /// Defined names that some other chunk uses, and per name the chunks that use it without
    /// defining it.
    users: KeyedLists,
}

impl References {
    /// Whether its layout holds ([`KeyedLists::check`], naming only the first `segments`
    /// segments) and every chunk the lists in the pack name is one of the first `chunks` (a
    /// decoded pack's check; lists in segments are checked when read).
    pub fn within(&self, chunks: usize, segments: usize) -> bool {
        self.users.check(segments).is_ok()
            && self
                .users
                .inline_values()
                .all(|v| decode_ascending(v).iter().all(|&c| (c as usize) < chunks))
    }

    /// Builds the table from every chunk and the identifiers each one uses (`used[i]` for
    /// `chunks[i]`, any case, duplicates allowed).
    pub fn build(chunks: &[ChunkRecord], used: &[Vec<String>]) -> Self {
        use std::collections::{BTreeMap, HashSet};
        let defined: HashSet<String> = chunks.iter().flat_map(defined_names).collect();
        let mut table: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for (i, (chunk, names)) in chunks.iter().zip(used).enumerate() {
            let own: HashSet<String> = defined_names(chunk).collect();
            let mut seen: HashSet<String> = HashSet::new();
            for name in names {
                let key = name.to_lowercase();
                if defined.contains(&key) && !own.contains(&key) && seen.insert(key.clone()) {
                    table.entry(key).or_default().push(i as u32);
                }
            }
        }
        let users = KeyedLists::from_sorted(
            table
                .iter()
                .map(|(name, users)| (name, encode_ascending(users))),
        );
        Self { users }
    }

    /// References whose lists are `users` (names to ascending chunk numbers).
    pub fn from_lists(users: KeyedLists) -> Self {
        Self { users }
    }

    /// The names and their users, taken.
    pub fn into_lists(self) -> KeyedLists {
        self.users
    }

    /// The names and their users.
    pub fn lists(&self) -> &KeyedLists {
        &self.users
    }

    /// The chunks that use the name `found` ([`KeyedLists::find_in`] with [`name_key`]),
    /// ascending, with the users lists the pack does not hold taken from `external`; the
    /// name's id is the error when it lacks them.
    pub fn users_of<'a>(
        &'a self,
        found: &Found,
        external: &dyn Fn(u32) -> Option<&'a [u8]>,
    ) -> Result<Vec<u32>, u32> {
        Ok(decode_ascending(self.users.value_of(found, external)?))
    }

    /// [`References::users_of`] among any users lists laid out like these (a delta pack's).
    pub fn users_in<'a>(
        users: &'a KeyedLists,
        found: &Found,
        external: &dyn Fn(u32) -> Option<&'a [u8]>,
    ) -> Result<Vec<u32>, u32> {
        Ok(decode_ascending(users.value_of(found, external)?))
    }

    /// The chunks that use `name`, when the pack holds its key and users list (the tests'
    /// shorthand; readers find the name with [`KeyedLists::find_in`], which names a block
    /// still to be read, then go through [`References::users_of`]).
    #[cfg(test)]
    fn users(&self, name: &str) -> Vec<u32> {
        match self.users.find_in(&name_key(name), &|_| None) {
            Ok(Some(found)) => self.users_of(&found, &|_| None).unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// Moves the users lists out into parts of at most `cap` bytes ([`KeyedLists::split`]);
    /// lists of at most `inline_max` bytes in all stay in the pack.
    pub fn split(&mut self, cap: usize, inline_max: usize, first_segment: u32) -> Vec<Vec<u8>> {
        self.users.split(cap, inline_max, first_segment)
    }

    /// How many names have users.
    pub fn len(&self) -> usize {
        self.users.len()
    }

    /// Whether no name has users (an index built before references, or a project without
    /// definitions).
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::ChunkKind;
    use crate::hash::Sha256Digest;

    fn chunk(symbol: Option<&str>) -> ChunkRecord {
        ChunkRecord {
            id: Default::default(),
            file: 0,
            kind: ChunkKind::Function,
            symbol: symbol.map(Into::into),
            start_line: 1,
            end_line: 1,
            byte_start: 0,
            byte_end: 1,
            sha256: Sha256Digest::of(b""),
            tokens: crate::index::TokenCounts::new(&[1]).unwrap(),
            segment: 0,
            segment_offset: 0,
        }
    }

    #[test]
    fn users_are_the_other_chunks_that_name_a_definition() {
        let chunks = [
            chunk(Some("Store::open")),
            chunk(Some("main")),
            chunk(Some("open_all, close")),
            chunk(None),
        ];
        let used = [
            vec!["open".to_string(), "File".into()],
            vec!["Open".into(), "open".into(), "println".into()],
            vec!["open".into(), "close".into()],
            vec!["close".into(), "unknown_name".into()],
        ];
        let r = References::build(&chunks, &used);
        // The definition itself is not a user; each user is listed once.
        assert_eq!(r.users("open"), [1, 2]);
        assert_eq!(r.users("Store::open"), [1, 2]);
        assert_eq!(r.users("close"), [3]);
        assert!(r.users("println").is_empty(), "not defined in the project");
        assert!(r.users("main").is_empty(), "defined, never used");
        assert_eq!(r.len(), 2);
        // Moved to segments with its names in blocks, a name's block is read first, then its
        // users, which decode the same.
        let mut split = r.clone();
        let parts = split.split(4, 0, 0);
        let lists = split.lists();
        assert!(lists.keys_stored());
        let read = |r: crate::lists::ListRange| {
            parts[r.segment as usize][r.start as usize..][..r.len as usize].to_vec()
        };
        let b = lists.block_for("open").unwrap();
        assert_eq!(
            lists.find_in("open", &|_| None),
            Err(crate::lists::ListError::BlocksNeeded(vec![b]))
        );
        let block = read(lists.block_index().range(b).unwrap());
        let found = lists.find_in("open", &|_| Some(&block)).unwrap().unwrap();
        assert_eq!(split.users_of(&found, &|_| None), Err(found.key));
        let id = lists.id(crate::lists::ListKind::References, &found);
        let bytes = read(lists.range_of(&id).unwrap());
        assert_eq!(lists.verify_of(&id, &bytes), Ok(()));
        assert_eq!(split.users_of(&found, &|_| Some(&bytes)), Ok(vec![1, 2]));
    }
}
