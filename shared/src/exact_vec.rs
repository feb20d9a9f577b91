//! `#[serde(deserialize_with = "exact_vec::deserialize")]` for a large `Vec` of a decoded pack:
//! reserve the length postcard announces instead of growing.
//!
//! serde preallocates at most 1 MiB of a sequence and then doubles, so a table of 27 MB (the
//! chunk table of an 88M-token repository) ended with up to twice its size reserved, and while
//! it grew the old and the new buffer were both held. In a Worker the WebAssembly memory never
//! shrinks, so that transient peak is what the isolate keeps: reserving exactly took the
//! decoded pack of that repository from 107 to 89 MiB.

use serde::de::{Deserialize, Deserializer, SeqAccess, Visitor};

/// The most bytes reserved up front whatever a (damaged) length claims — postcard bounds a
/// length by the bytes left, not by what they can hold, and a failed allocation aborts a
/// Worker's isolate instead of failing the decode. Every table of a pack an isolate can hold is
/// smaller; a longer sequence still decodes, growing past it as usual.
const MAX_RESERVE_BYTES: usize = 32 << 20;

/// Reads a sequence into a `Vec` of exactly its announced length (up to [`MAX_RESERVE_BYTES`]).
pub fn deserialize<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Exact<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for Exact<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a sequence")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let most = MAX_RESERVE_BYTES / std::mem::size_of::<T>().max(1);
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(most));
            while let Some(x) = seq.next_element()? {
                out.push(x);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(Exact(std::marker::PhantomData))
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Table {
        #[serde(deserialize_with = "super::deserialize")]
        rows: Vec<(u64, u64)>,
    }

    #[test]
    fn reserves_the_announced_length_and_round_trips() {
        let t = Table {
            rows: (0..100_000).map(|i| (i, i * 3)).collect(),
        };
        let bytes = postcard::to_allocvec(&t).unwrap();
        let back: Table = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.rows.capacity(), 100_000);
    }

    #[test]
    fn a_length_longer_than_the_input_is_an_error() {
        let mut bytes = postcard::to_allocvec(&Table { rows: vec![(1, 2)] }).unwrap();
        bytes[0] = 0x7f; // claims 127 rows
        assert!(postcard::from_bytes::<Table>(&bytes).is_err());
    }
}
