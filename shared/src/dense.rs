//! Dense retrieval: the chunks whose embeddings lie nearest to the request's.
//!
//! The vectors come from an embedding model the core never runs (the indexer's providers, or an
//! API at the edge); the core only compares them. Vectors are stored quantized to `i8` with one
//! scale per vector: a quarter of the memory of `f32` (an isolate holds a 1M-token index in a
//! few MB), and for unit vectors of a few hundred dimensions the cosine moves by about 1e-3,
//! far below the differences ranking depends on.

use serde::{Deserialize, Serialize};

/// Embeddings of a pack's chunks, by chunk index.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VectorTable {
    /// The model that made them (a query must be embedded by the same one).
    pub model: String,
    /// Dimensions per vector.
    pub dims: u32,
    /// `dims` quantized components per chunk, chunk after chunk; a chunk without a vector has
    /// all zeros (it never matches). Decoded to exactly its length: serde's default doubling
    /// would leave a 16 MiB table up to 32 MiB in an isolate whose memory never shrinks.
    #[serde(deserialize_with = "crate::exact_vec::deserialize")]
    pub values: Vec<i8>,
    /// Per chunk, the factor that turns its `i8` components back into a unit vector's.
    #[serde(deserialize_with = "crate::exact_vec::deserialize")]
    pub scales: Vec<f32>,
}

/// Why a vector cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DenseError {
    /// The query's vector was made for another space.
    #[error("the query vector has {found} dimensions, the index's vectors {expected}")]
    Dimensions {
        /// The index's.
        expected: u32,
        /// The query's.
        found: usize,
    },
}

/// Magic bytes of an encoded [`VectorTable`] (the trailing digit is its format version).
const MAGIC: &[u8; 8] = b"CTXGVEC1";

impl VectorTable {
    /// Serializes the table (magic bytes, then postcard).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        // Encoding plain vectors and strings into a Vec cannot fail.
        out.extend(postcard::to_allocvec(self).unwrap_or_default());
        out
    }

    /// Reads a table written by [`VectorTable::encode`]; `None` for anything else (a cache
    /// entry that is not one is rebuilt, never trusted).
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let body = bytes.strip_prefix(MAGIC.as_slice())?;
        let t: Self = postcard::from_bytes(body).ok()?;
        let expected = t.scales.len().checked_mul(t.dims as usize)?;
        (t.values.len() == expected).then_some(t)
    }

    /// An empty table for `model`'s vectors of `dims` dimensions.
    pub fn new(model: &str, dims: u32) -> Self {
        Self {
            model: model.to_string(),
            dims,
            values: Vec::new(),
            scales: Vec::new(),
        }
    }

    /// A table of `n` rows without vectors, to be filled in any order ([`VectorTable::set`],
    /// [`VectorTable::copy_row`]): a re-index fills it from several sources without holding
    /// every vector as `f32` first (180k chunks of 1,536 dimensions are 1.1 GB so, 276 MB here).
    pub fn zeroed(model: &str, dims: u32, n: usize) -> Self {
        Self {
            model: model.to_string(),
            dims,
            values: vec![0; n.saturating_mul(dims as usize)],
            scales: vec![0.0; n],
        }
    }

    /// Stores `vector` (normalized) as row `i`, which must exist.
    pub fn set(&mut self, i: usize, vector: &[f32]) -> Result<(), DenseError> {
        let d = self.dims as usize;
        if vector.len() != d {
            return Err(DenseError::Dimensions {
                expected: self.dims,
                found: vector.len(),
            });
        }
        let (q, scale) = quantize(vector);
        if let (Some(row), Some(s)) = (
            self.values.get_mut(i * d..(i + 1) * d),
            self.scales.get_mut(i),
        ) {
            row.copy_from_slice(&q);
            *s = scale;
        }
        Ok(())
    }

    /// Copies row `j` of `from` (a table of the same dimensions) to row `i`, as stored: the
    /// same components a dequantize-and-store round would give, without the `f32` copy.
    /// Whether both rows exist and the dimensions match.
    pub fn copy_row(&mut self, i: usize, from: &VectorTable, j: usize) -> bool {
        let d = self.dims as usize;
        if from.dims != self.dims {
            return false;
        }
        let (Some(src), Some(&scale)) = (from.values.get(j * d..(j + 1) * d), from.scales.get(j))
        else {
            return false;
        };
        match (
            self.values.get_mut(i * d..(i + 1) * d),
            self.scales.get_mut(i),
        ) {
            (Some(row), Some(s)) => {
                row.copy_from_slice(src);
                *s = scale;
                true
            }
            _ => false,
        }
    }

    /// Row `from` copied to row `i` (chunks of the same text share a vector).
    pub fn repeat_row(&mut self, i: usize, from: usize) {
        let d = self.dims as usize;
        if i.max(from) < self.scales.len() {
            self.values.copy_within(from * d..(from + 1) * d, i * d);
            self.scales[i] = self.scales[from];
        }
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.scales.len()
    }

    /// Whether it holds no vector.
    pub fn is_empty(&self) -> bool {
        self.scales.is_empty()
    }

    /// Appends `vector` (any length-`dims` vector; it is normalized), or a zero vector for
    /// `None`.
    pub fn push(&mut self, vector: Option<&[f32]>) -> Result<(), DenseError> {
        let dims = self.dims as usize;
        match vector {
            Some(v) if v.len() != dims => Err(DenseError::Dimensions {
                expected: self.dims,
                found: v.len(),
            }),
            Some(v) => {
                let (q, scale) = quantize(v);
                self.values.extend_from_slice(&q);
                self.scales.push(scale);
                Ok(())
            }
            None => {
                self.values.extend(std::iter::repeat_n(0, dims));
                self.scales.push(0.0);
                Ok(())
            }
        }
    }

    /// Chunk `i`'s vector as stored (a unit vector up to quantization), or `None` when it has
    /// none: what a re-index reuses instead of embedding an unchanged chunk again (quantizing
    /// it again gives back the same components).
    pub fn vector(&self, i: usize) -> Option<Vec<f32>> {
        let d = self.dims as usize;
        let scale = *self.scales.get(i)?;
        if scale <= 0.0 {
            return None;
        }
        let row = self.values.get(i * d..(i + 1) * d)?;
        Some(row.iter().map(|&x| f32::from(x) * scale).collect())
    }

    /// Bytes the table holds in memory: what a host with a memory ceiling weighs.
    pub fn memory_bytes(&self) -> usize {
        self.values.len() + self.scales.len() * 4 + self.model.len()
    }

    /// The cosine similarity of chunk `i` to a query quantized like the table's vectors
    /// (`query` its components, `scale` its factor).
    fn cosine(&self, i: usize, query: &[i8], scale: f32) -> f32 {
        let d = self.dims as usize;
        let row = &self.values[i * d..(i + 1) * d];
        dot_i8(row, query) as f32 * self.scales[i] * scale
    }

    /// The `k` chunks nearest to `query`, most similar first, with their cosine similarity.
    pub fn nearest(&self, query: &[f32], k: usize) -> Result<Vec<(u32, f32)>, DenseError> {
        if query.len() != self.dims as usize {
            return Err(DenseError::Dimensions {
                expected: self.dims,
                found: query.len(),
            });
        }
        // The query is quantized as the table's vectors are: the scan is then integer
        // arithmetic, which the Worker's scalar WebAssembly runs in a fraction of the time of
        // an `i8` → `f32` conversion and a float multiply per component (the cosine moves by
        // about 1e-3 more, still far below what ranking depends on).
        let (q, scale) = quantize(query);
        let mut all: Vec<(u32, f32)> = (0..self.len())
            .filter(|&i| self.scales[i] > 0.0)
            .map(|i| (i as u32, self.cosine(i, &q, scale)))
            .collect();
        let k = k.min(all.len());
        if k == 0 {
            return Ok(Vec::new());
        }
        all.select_nth_unstable_by(k - 1, |a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        all.truncate(k);
        all.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(all)
    }
}

/// The dot product of two `i8` vectors of one length, in independent lanes so that the
/// additions do not wait on each other (and vectorize where the target has SIMD). The sum
/// stays inside `i32` up to 2^31 / 128² = 131,072 dimensions, far beyond any model's.
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    const LANES: usize = 16;
    let mut acc = [0i32; LANES];
    let (xs, ys) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: i32 = xs
        .remainder()
        .iter()
        .zip(ys.remainder())
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum();
    for (x, y) in xs.zip(ys) {
        for k in 0..LANES {
            acc[k] += i32::from(x[k]) * i32::from(y[k]);
        }
    }
    acc.iter().sum::<i32>() + tail
}

fn normalized(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        v.iter().map(|x| x / norm).collect()
    } else {
        vec![0.0; v.len()]
    }
}

/// A unit vector as `i8` components and the factor that scales them back.
fn quantize(v: &[f32]) -> (Vec<i8>, f32) {
    let unit = normalized(v);
    let max = unit.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if max == 0.0 {
        return (vec![0; v.len()], 0.0);
    }
    let q = unit
        .iter()
        .map(|x| (x / max * 127.0).round().clamp(-127.0, 127.0) as i8)
        .collect();
    (q, max / 127.0)
}

/// Dense evidence for ranking: the `k` nearest chunks, each scaled to 0-1 between the weakest
/// and the strongest of them (cosines of one model cluster in a narrow band, so the raw value
/// says little; the rank within the request says more).
pub fn scaled_hits(nearest: &[(u32, f32)]) -> Vec<(u32, f32)> {
    let Some(top) = nearest.first().map(|h| h.1) else {
        return Vec::new();
    };
    let floor = nearest.last().map(|h| h.1).unwrap_or(top);
    let span = top - floor;
    nearest
        .iter()
        .map(|&(c, s)| {
            let v = if span > 0.0 { (s - floor) / span } else { 1.0 };
            (c, v)
        })
        .collect()
}

/// The OpenAI-compatible embeddings wire format (`POST {url}/embeddings`), spoken by the
/// indexer's blocking client and the edge's query embedder alike, so both ask and read the same.
pub mod wire {
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct Answer {
        data: Vec<Item>,
    }

    #[derive(Deserialize)]
    struct Item {
        index: usize,
        embedding: Vec<f32>,
    }

    /// The request body embedding `inputs` with `model`, as floats.
    pub fn request(model: &str, inputs: &[&str]) -> String {
        serde_json::json!({ "model": model, "input": inputs, "encoding_format": "float" })
            .to_string()
    }

    /// What a refusal says: the provider's `error.message`, else the start of its body.
    pub fn refusal(body: &[u8]) -> String {
        serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
            .unwrap_or_else(|| String::from_utf8_lossy(body).chars().take(300).collect())
    }

    /// The vectors of an answer to a request of `count` inputs, each placed by its `index` and
    /// of `dims` dimensions; what is wrong with the answer otherwise.
    pub fn vectors(body: &[u8], count: usize, dims: usize) -> Result<Vec<Vec<f32>>, String> {
        let answer: Answer = serde_json::from_slice(body).map_err(|e| e.to_string())?;
        let mut out: Vec<Option<Vec<f32>>> = vec![None; count];
        for item in answer.data {
            let slot = out
                .get_mut(item.index)
                .ok_or_else(|| format!("index {} out of range", item.index))?;
            if item.embedding.len() != dims {
                return Err(format!(
                    "a vector of {} dimensions, expected {dims}",
                    item.embedding.len()
                ));
            }
            *slot = Some(item.embedding);
        }
        out.into_iter()
            .enumerate()
            .map(|(i, v)| v.ok_or_else(|| format!("no vector for input {i}")))
            .collect()
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn vectors_are_placed_by_index_and_checked() {
            let body = br#"{"data":[{"index":1,"embedding":[3,4]},{"index":0,"embedding":[1,2]}]}"#;
            assert_eq!(
                vectors(body, 2, 2).unwrap(),
                vec![vec![1.0, 2.0], vec![3.0, 4.0]]
            );
            assert!(vectors(body, 2, 3).unwrap_err().contains("3"));
            assert!(vectors(body, 1, 2).unwrap_err().contains("out of range"));
            assert!(vectors(body, 3, 2).unwrap_err().contains("input 2"));
            assert!(vectors(b"{", 1, 2).is_err());
            assert_eq!(refusal(br#"{"error":{"message":"bad key"}}"#), "bad key");
            assert_eq!(refusal(b"plain"), "plain");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(vectors: &[&[f32]]) -> VectorTable {
        let mut t = VectorTable::new("m", vectors[0].len() as u32);
        for v in vectors {
            t.push(Some(v)).unwrap();
        }
        t
    }

    #[test]
    fn nearest_orders_by_cosine_and_skips_missing_vectors() {
        let mut t = table(&[&[1.0, 0.0, 0.0], &[0.6, 0.8, 0.0], &[0.0, 0.0, 5.0]]);
        t.push(None).unwrap();
        let hits = t.nearest(&[1.0, 1.0, 0.0], 10).unwrap();
        let order: Vec<u32> = hits.iter().map(|h| h.0).collect();
        assert_eq!(order, vec![1, 0, 2], "chunk 3 has no vector");
        // cos([1,1,0], [0.6,0.8,0]) = 1.4/sqrt(2)
        assert!((hits[0].1 - 1.4 / 2f32.sqrt()).abs() < 0.01, "{hits:?}");
        assert!(hits[2].1.abs() < 0.01);
        assert_eq!(t.nearest(&[1.0, 0.0, 0.0], 1).unwrap().len(), 1);
    }

    #[test]
    fn the_lane_dot_product_is_the_plain_one() {
        for len in [0usize, 1, 5, 15, 16, 17, 37, 384, 1536] {
            let a: Vec<i8> = (0..len)
                .map(|i| ((i * 37 + 11) % 255) as i32 as i8)
                .collect();
            let b: Vec<i8> = (0..len)
                .map(|i| ((i * 53 + 101) % 255) as i32 as i8)
                .collect();
            let plain: i32 = a
                .iter()
                .zip(&b)
                .map(|(&x, &y)| i32::from(x) * i32::from(y))
                .sum();
            assert_eq!(dot_i8(&a, &b), plain, "length {len}");
        }
        let extreme = vec![i8::MIN; 1536];
        assert_eq!(dot_i8(&extreme, &extreme), 1536 * 128 * 128);
    }

    #[test]
    fn quantized_cosines_stay_close() {
        // 384 pseudo-random components, as from a small sentence model.
        let mut x = 0x2545_f491_u32;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x as f32 / u32::MAX as f32) - 0.5
        };
        let a: Vec<f32> = (0..384).map(|_| next()).collect();
        let b: Vec<f32> = a.iter().map(|v| v + 0.5 * next()).collect();
        let exact = {
            let (na, nb) = (normalized(&a), normalized(&b));
            na.iter().zip(&nb).map(|(x, y)| x * y).sum::<f32>()
        };
        let t = table(&[&a]);
        let got = t.nearest(&b, 1).unwrap()[0].1;
        assert!((got - exact).abs() < 5e-3, "{got} vs {exact}");
    }

    #[test]
    fn tables_round_trip_and_junk_is_refused() {
        let t = table(&[&[1.0, 2.0], &[-3.0, 0.5]]);
        assert_eq!(VectorTable::decode(&t.encode()), Some(t.clone()));
        assert_eq!(VectorTable::decode(b"CTXGVEC1junk"), None);
        let mut cut = t.encode();
        cut.truncate(cut.len() - 1);
        assert_eq!(VectorTable::decode(&cut), None);
    }

    #[test]
    fn decoded_tables_hold_exactly_their_vectors() {
        let many: Vec<Vec<f32>> = (0..300).map(|i| vec![i as f32, 1.0, -2.0]).collect();
        let refs: Vec<&[f32]> = many.iter().map(Vec::as_slice).collect();
        let back = VectorTable::decode(&table(&refs).encode()).unwrap();
        assert_eq!(back.values.capacity(), 900);
        assert_eq!(back.scales.capacity(), 300);
        // Dimensions whose product with the count overflows are refused, not wrapped.
        let huge = VectorTable {
            model: "m".into(),
            dims: u32::MAX,
            values: Vec::new(),
            scales: vec![1.0; 3],
        };
        assert_eq!(VectorTable::decode(&huge.encode()), None);
    }

    #[test]
    fn stored_vectors_quantize_back_to_themselves() {
        let mut t = table(&[&[0.3, -0.9, 0.2], &[5.0, 1.0, 0.0]]);
        t.push(None).unwrap();
        assert_eq!(t.vector(2), None);
        assert_eq!(t.vector(3), None);
        let mut again = VectorTable::new("m", 3);
        for i in 0..3 {
            again.push(t.vector(i).as_deref()).unwrap();
        }
        assert_eq!(again.values, t.values);
        assert_eq!(t.memory_bytes(), 9 + 12 + 1);
    }

    #[test]
    fn a_table_filled_in_any_order_equals_one_pushed_in_order() {
        let rows: [&[f32]; 3] = [&[0.3, -0.9, 0.2], &[5.0, 1.0, 0.0], &[0.0, 0.0, 1.0]];
        let pushed = table(&rows);
        let mut filled = VectorTable::zeroed("m", 3, 4);
        filled.set(2, rows[2]).unwrap();
        assert!(filled.copy_row(1, &pushed, 1));
        filled.set(0, rows[0]).unwrap();
        assert_eq!(filled.vector(3), None, "a row never filled has no vector");
        assert_eq!(filled.values[..9], pushed.values[..]);
        assert_eq!(filled.scales[..3], pushed.scales[..]);
        assert!(!filled.copy_row(9, &pushed, 0));
        assert!(!filled.copy_row(0, &VectorTable::zeroed("m", 2, 1), 0));
        assert!(filled.set(0, &[1.0]).is_err());
        filled.repeat_row(3, 1);
        assert_eq!(filled.vector(3), pushed.vector(1));
        filled.repeat_row(4, 1);
    }

    #[test]
    fn wrong_dimensions_are_refused() {
        let mut t = table(&[&[1.0, 0.0]]);
        assert_eq!(
            t.nearest(&[1.0, 0.0, 0.0], 3),
            Err(DenseError::Dimensions {
                expected: 2,
                found: 3
            })
        );
        assert!(t.push(Some(&[1.0])).is_err());
    }

    #[test]
    fn hits_scale_between_the_weakest_and_strongest() {
        let s = scaled_hits(&[(4, 0.6), (2, 0.5), (9, 0.4)]);
        assert_eq!(s[0], (4, 1.0));
        assert!((s[1].1 - 0.5).abs() < 1e-6);
        assert_eq!(s[2], (9, 0.0));
        assert!(scaled_hits(&[]).is_empty());
    }
}
