//! Byte strings addressed by position, kept in the pack while small and in segments of the
//! version once large, read by range only when a query needs one.
//!
//! The summaries' texts are the case: a query shows at most a few dozen of them, but an
//! 88M-token repository has ~20 MiB of them, which a Worker's isolate would otherwise hold for
//! every query. They are laid out as [`super::KeyedLists`] lays out its values (end
//! offsets, then the bytes in the pack or in parts of segments with a 4-byte check value each),
//! without keys: the position is the key.

use serde::{Deserialize, Serialize};

use super::ListError;
use super::parts::{ListRange, ListStore, ascending, checked_len, cut, range_in, sum_of};

/// Values by position.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ValueList {
    /// End of value `k` in the byte string of every value.
    #[serde(deserialize_with = "crate::exact_vec::deserialize")]
    ends: Vec<u32>,
    /// Where that byte string is.
    store: ListStore,
}

impl ValueList {
    /// `values`, in order, held in the pack. Fails when they sum to 4 GiB or more (offsets are
    /// 32 bits).
    pub fn from_values<V: AsRef<[u8]>>(
        values: impl IntoIterator<Item = V>,
    ) -> Result<Self, TooLarge> {
        let mut bytes = Vec::new();
        let mut ends = Vec::new();
        for v in values {
            bytes.extend_from_slice(v.as_ref());
            ends.push(u32::try_from(bytes.len()).map_err(|_| TooLarge)?);
        }
        Ok(Self {
            ends,
            store: ListStore::Inline(bytes),
        })
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Whether the values are outside the pack, to be read by range.
    pub fn is_stored(&self) -> bool {
        matches!(self.store, ListStore::Segments { .. })
    }

    /// Value `k`'s bytes in the byte string of every value.
    fn span(&self, k: usize) -> (usize, usize) {
        let start = match k {
            0 => 0,
            _ => self.ends.get(k - 1).copied().unwrap_or(0) as usize,
        };
        let end = self.ends.get(k).copied().unwrap_or(start as u32) as usize;
        (start, end.max(start))
    }

    /// Whether value `k` must be read from a segment: stored outside the pack and not empty.
    pub fn must_read(&self, k: usize) -> bool {
        let (start, end) = self.span(k);
        self.is_stored() && end > start
    }

    /// Value `k` when the pack holds it (`None` when it is in a segment or past the end).
    pub fn inline(&self, k: usize) -> Option<&[u8]> {
        if k >= self.len() {
            return None;
        }
        let (start, end) = self.span(k);
        match &self.store {
            ListStore::Inline(all) => all.get(start..end),
            ListStore::Segments { .. } => (end == start).then_some(&[][..]),
        }
    }

    /// Where value `k` is read from, when it is not in the pack.
    pub fn range(&self, k: u32) -> Option<ListRange> {
        if k as usize >= self.len() {
            return None;
        }
        let (start, end) = self.span(k as usize);
        range_in(&self.store, start, end)
    }

    /// Checks bytes read for value `k` against what the index recorded.
    pub fn verify(&self, k: u32, bytes: &[u8]) -> Result<(), ListError> {
        let ok = match &self.store {
            ListStore::Inline(_) => false,
            ListStore::Segments { sums, .. } => {
                let (start, end) = self.span(k as usize);
                (k as usize) < self.len()
                    && bytes.len() == end - start
                    && sums.get(k as usize) == Some(&sum_of(bytes))
            }
        };
        if ok {
            Ok(())
        } else {
            Err(ListError::Checksum { key: k })
        }
    }

    /// Checks what readers index with after decoding: offsets that never go back and stay
    /// inside the values in the pack, parts and sums that match and name only the first
    /// `segments` segments.
    pub fn check(&self, segments: usize) -> Result<(), &'static str> {
        let limit = checked_len(&self.store, self.ends.len(), segments)?;
        if ascending(&self.ends, limit) {
            Ok(())
        } else {
            Err("value offsets out of order or out of range")
        }
    }

    /// Moves the values out into parts of at most `cap` bytes holding whole values (a value
    /// larger than `cap` gets a part of its own), to be stored as the segments
    /// `first_segment`, `first_segment + 1`, ... of the pack; returns their bytes. Values of at
    /// most `inline_max` bytes in all stay in the pack. Parts end where the values say
    /// (`parts::cut`).
    pub fn split(&mut self, cap: usize, inline_max: usize, first_segment: u32) -> Vec<Vec<u8>> {
        let ListStore::Inline(all) = &self.store else {
            return Vec::new();
        };
        if all.len() <= inline_max {
            return Vec::new();
        }
        let (store, out) = cut(all, &self.ends, cap, first_segment);
        self.store = store;
        out
    }

    /// The values back in the pack, each read with `read` and checked: for a writer that
    /// builds on a version whose values are in segments.
    pub fn load<E>(
        &self,
        mut read: impl FnMut(ListRange) -> Result<Vec<u8>, E>,
        corrupt: impl Fn(ListError) -> E,
    ) -> Result<Self, E> {
        if !self.is_stored() {
            return Ok(self.clone());
        }
        let mut bytes = Vec::new();
        for k in 0..self.len() as u32 {
            let Some(r) = self.range(k).filter(|_| self.must_read(k as usize)) else {
                continue;
            };
            let value = read(r)?;
            self.verify(k, &value).map_err(&corrupt)?;
            bytes.extend_from_slice(&value);
        }
        Ok(Self {
            ends: self.ends.clone(),
            store: ListStore::Inline(bytes),
        })
    }
}

/// Values of 4 GiB or more in all.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the values add up to 4 GiB or more")]
pub struct TooLarge;

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> Vec<String> {
        (0..40)
            .map(|i| {
                if i % 7 == 3 {
                    String::new()
                } else {
                    format!("value {i} ").repeat(i % 5 + 1)
                }
            })
            .collect()
    }

    #[test]
    fn split_values_read_back_by_range_and_verify() {
        let vs = values();
        let inline = ValueList::from_values(&vs).unwrap();
        for (k, v) in vs.iter().enumerate() {
            assert_eq!(inline.inline(k), Some(v.as_bytes()));
        }
        let mut split = inline.clone();
        let parts = split.split(64, 0, 3);
        assert!(parts.len() > 2, "values spread over several parts");
        assert_eq!(split.check(3 + parts.len()), Ok(()));
        assert!(
            split.check(3).is_err(),
            "a part in a missing segment is refused"
        );
        for (k, v) in vs.iter().enumerate() {
            assert_eq!(split.must_read(k), !v.is_empty());
            if v.is_empty() {
                assert_eq!(split.inline(k), Some(&[][..]));
                continue;
            }
            assert_eq!(split.inline(k), None);
            let r = split.range(k as u32).unwrap();
            let seg = &parts[(r.segment - 3) as usize];
            let bytes = &seg[r.start as usize..(r.start + r.len) as usize];
            assert_eq!(bytes, v.as_bytes());
            assert_eq!(split.verify(k as u32, bytes), Ok(()));
            let mut damaged = bytes.to_vec();
            damaged[0] ^= 1;
            assert_eq!(
                split.verify(k as u32, &damaged),
                Err(ListError::Checksum { key: k as u32 })
            );
        }
        assert_eq!(split.range(vs.len() as u32), None, "past the end");
        let loaded = split
            .load(
                |r| {
                    Ok::<_, ListError>(
                        parts[(r.segment - 3) as usize]
                            [r.start as usize..(r.start + r.len) as usize]
                            .to_vec(),
                    )
                },
                |e| e,
            )
            .unwrap();
        assert_eq!(loaded, inline);
    }

    #[test]
    fn a_changed_value_changes_only_the_part_that_holds_it() {
        let values: Vec<String> = (0..20_000)
            .map(|i| format!("summary of file {i}; "))
            .collect();
        let mut before = ValueList::from_values(&values).unwrap();
        let old = before.split(64 << 10, 0, 0);
        let mut changed = values.clone();
        changed[10_000] =
            "a longer summary of the changed file, which moves every offset after it".into();
        let mut after = ValueList::from_values(&changed).unwrap();
        let new = after.split(64 << 10, 0, 0);
        assert!(old.len() > 4, "{} parts", old.len());
        assert!(old.iter().all(|p| p.len() <= 64 << 10));
        let kept = new.iter().filter(|p| old.contains(p)).count();
        assert!(kept + 2 >= new.len(), "{kept} of {} parts kept", new.len());
        assert!(new.len() - kept >= 1);
    }

    #[test]
    fn small_values_stay_in_the_pack_and_bad_offsets_are_refused() {
        let mut small = ValueList::from_values(["a", "bc"]).unwrap();
        assert!(small.split(64, 1 << 20, 0).is_empty());
        assert!(!small.is_stored());
        assert_eq!(small.check(0), Ok(()));
        let bad = ValueList {
            ends: vec![3, 1],
            store: ListStore::Inline(b"abc".to_vec()),
        };
        assert!(bad.check(0).is_err());
        let past = ValueList {
            ends: vec![9],
            store: ListStore::Inline(b"abc".to_vec()),
        };
        assert!(past.check(0).is_err());
    }
}
