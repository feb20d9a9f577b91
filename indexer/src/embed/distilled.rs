//! A static embedding model distilled from all-MiniLM-L6-v2: one vector per wordpiece, a text's
//! vector the weighted sum of its wordpieces' — no attention at embedding time.
//!
//! The transformer embeds about 14 chunks a second on two cores, minutes for a repository that
//! indexes in a second; a table lookup embeds thousands. The table is distilled the way
//! Model2Vec does it: every wordpiece of the vocabulary is run through the model alone, the
//! vectors are centred (their common direction says nothing about meaning) and weighted by
//! the wordpiece's rarity. BERT's vocabulary is ordered by frequency after its reserved and
//! single-character entries, so a wordpiece's rank is its id, and its weight `ln(1 + rank)`
//! lets "timeout" outweigh "the". Code names are split where their case changes before
//! tokenizing (`KeyboardInterrupt` → `Keyboard Interrupt`), as the model's lower-casing
//! tokenizer would otherwise cut them into fragments.
//!
//! The table is derived once from the downloaded model (about a minute on two cores) and kept
//! beside it as `static-v1.f32`.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use tokenizers::Tokenizer;

use super::local::MiniLm;
use super::{EmbedError, Embedder};

/// The name vectors of this model are labelled with.
pub const MODEL_ID: &str = "all-MiniLM-L6-v2-static@1";
/// The table's file beside the model.
const TABLE_FILE: &str = "static-v1.f32";
/// The vocabulary's file beside it.
const VOCAB_FILE: &str = "static-v1.vocab.txt";
/// Dimensions of MiniLM's vectors.
const DIMS: usize = 384;
/// The first id of BERT's frequency-ordered words ("the"); below it are reserved entries
/// (`[unused…]`, `[CLS]`…) and single characters.
const FIRST_WORD: u32 = 1996;
/// The first single character; ids below are reserved and weigh nothing.
const FIRST_CHARACTER: u32 = 999;
/// Wordpieces run through the model at once while distilling.
const DISTIL_BATCH: usize = 256;

/// The distilled model.
pub struct StaticMiniLm {
    tokenizer: Tokenizer,
    /// `vocabulary × DIMS`, row-major, each row centred and weighted: read whole for a batch
    /// of chunks (indexing), left on disk for a lone query, whose few rows are read one by one
    /// (a warm call would otherwise read 47 MB to embed ten words).
    table: OnceLock<Vec<f32>>,
    /// The table's file, when the table came from one.
    file: Option<Mutex<File>>,
}

fn model_err(e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Model(e.to_string())
}

impl StaticMiniLm {
    /// Opens the table in `dir` (the MiniLM folder of [`super::model_files`]), distilling it
    /// first when it is not there yet.
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        let tokenizer = bert_tokenizer(&vocabulary_lines(dir)?)?;
        let vocabulary = tokenizer.get_vocab_size(false);
        let path = dir.join(TABLE_FILE);
        let whole = (vocabulary * DIMS * 4) as u64;
        let table = OnceLock::new();
        if std::fs::metadata(&path).map(|m| m.len()).ok() != Some(whole) {
            tracing::info!(
                "distilling a static table from all-MiniLM-L6-v2 ({vocabulary} wordpieces, \
                 about 30 s on two cores, once) into {}",
                path.display()
            );
            let distilled = distil(&MiniLm::load(dir)?, vocabulary)?;
            write_table(&path, &distilled)?;
            let _ = table.set(distilled);
        }
        let file = File::open(&path).map_err(|e| model_err(format!("{}: {e}", path.display())))?;
        Ok(Self {
            tokenizer,
            table,
            file: Some(Mutex::new(file)),
        })
    }

    /// A model from its tokenizer and a `vocabulary × 384` table.
    pub fn from_parts(tokenizer: Tokenizer, table: Vec<f32>) -> Result<Self, EmbedError> {
        let vocabulary = tokenizer.get_vocab_size(false);
        if table.len() != vocabulary * DIMS {
            return Err(model_err(format!(
                "a table of {} values for {vocabulary} wordpieces of {DIMS} dimensions",
                table.len()
            )));
        }
        Ok(Self {
            tokenizer,
            table: OnceLock::from(table),
            file: None,
        })
    }

    /// The whole table, read from its file on first use.
    fn whole(&self) -> Result<&[f32], EmbedError> {
        if let Some(table) = self.table.get() {
            return Ok(table);
        }
        let mut bytes = Vec::new();
        self.with_file(|f| {
            f.seek(SeekFrom::Start(0))?;
            f.read_to_end(&mut bytes).map(|_| ())
        })?;
        let _ = self.table.set(from_le(&bytes));
        self.table
            .get()
            .map(Vec::as_slice)
            .ok_or_else(|| model_err("the static table could not be kept"))
    }

    fn with_file(
        &self,
        read: impl FnOnce(&mut File) -> std::io::Result<()>,
    ) -> Result<(), EmbedError> {
        let file = self
            .file
            .as_ref()
            .ok_or_else(|| model_err("the static table has no file"))?;
        let mut file = file
            .lock()
            .map_err(|_| model_err("the static table's file is poisoned"))?;
        read(&mut file).map_err(|e| model_err(format!("reading the static table: {e}")))
    }

    /// The wordpiece ids of `text`, code names split first.
    fn ids(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        let split = split_code_names(text);
        self.tokenizer
            .encode(split.as_str(), false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| EmbedError::Inference(e.to_string()))
    }

    /// `text`'s vector from the whole table.
    fn vector(&self, table: &[f32], text: &str) -> Result<Vec<f32>, EmbedError> {
        let ids = self.ids(text)?;
        Ok(unit_sum(ids.iter().filter_map(|&id| {
            let start = id as usize * DIMS;
            table.get(start..start + DIMS)
        })))
    }

    /// `text`'s vector from the rows its wordpieces name, each read from the file.
    fn vector_from_file(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut ids = self.ids(text)?;
        ids.sort_unstable();
        let mut rows = Vec::with_capacity(ids.len());
        let mut bytes = vec![0u8; DIMS * 4];
        for group in ids.chunk_by(|a, b| a == b) {
            self.with_file(|f| {
                f.seek(SeekFrom::Start((group[0] as usize * DIMS * 4) as u64))?;
                f.read_exact(&mut bytes)
            })?;
            let row = from_le(&bytes);
            rows.extend(std::iter::repeat_n(row, group.len()));
        }
        Ok(unit_sum(rows.iter().map(Vec::as_slice)))
    }
}

/// The vocabulary as `vocab.txt` lists it (one wordpiece a line, in id order), kept as
/// `static-v1.vocab.txt` beside the table: `tokenizer.json` takes about 25 ms to parse, more
/// than everything else a warm call with this model does.
fn vocabulary_lines(dir: &Path) -> Result<Vec<u8>, EmbedError> {
    let path = dir.join(VOCAB_FILE);
    if let Ok(bytes) = std::fs::read(&path) {
        return Ok(bytes);
    }
    let json = dir.join("tokenizer.json");
    let bytes = std::fs::read(&json).map_err(|e| model_err(format!("{}: {e}", json.display())))?;
    let full = Tokenizer::from_bytes(bytes).map_err(model_err)?;
    let mut words: Vec<(u32, String)> = full
        .get_vocab(false)
        .into_iter()
        .map(|(word, id)| (id, word))
        .collect();
    words.sort_unstable();
    if words
        .iter()
        .enumerate()
        .any(|(i, (id, _))| *id as usize != i)
    {
        return Err(model_err("the tokenizer's vocabulary has gaps in its ids"));
    }
    let lines: String = words.into_iter().map(|(_, w)| w + "\n").collect();
    crate::token_tables::write_atomic(&path, lines.as_bytes())
        .map_err(|e| model_err(format!("{}: {e}", path.display())))?;
    Ok(lines.into_bytes())
}

/// BERT's uncased word-piece tokenizer over `lines` (the normalizer, pre-tokenizer and model
/// all-MiniLM-L6-v2's `tokenizer.json` names; no special tokens are added).
fn bert_tokenizer(lines: &[u8]) -> Result<Tokenizer, EmbedError> {
    use tokenizers::models::wordpiece::WordPiece;
    use tokenizers::normalizers::bert::BertNormalizer;
    use tokenizers::pre_tokenizers::bert::BertPreTokenizer;
    let vocab = WordPiece::read_bytes(lines).map_err(model_err)?;
    let model = WordPiece::builder()
        .vocab(vocab)
        .unk_token("[UNK]".into())
        .build()
        .map_err(model_err)?;
    let mut tokenizer = Tokenizer::new(model);
    tokenizer.with_normalizer(Some(BertNormalizer::new(true, true, None, true)));
    tokenizer.with_pre_tokenizer(Some(BertPreTokenizer));
    Ok(tokenizer)
}

/// Little-endian `f32`s.
fn from_le(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// The sum of `rows`, at unit length.
fn unit_sum<'a>(rows: impl Iterator<Item = &'a [f32]>) -> Vec<f32> {
    let mut sum = vec![0f32; DIMS];
    for row in rows {
        sum.iter_mut().zip(row).for_each(|(s, r)| *s += r);
    }
    let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    sum.into_iter().map(|x| x / norm).collect()
}

impl Embedder for StaticMiniLm {
    fn model(&self) -> &str {
        MODEL_ID
    }

    fn dims(&self) -> usize {
        DIMS
    }

    fn batch_size(&self) -> usize {
        256
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        match texts {
            [one] if self.table.get().is_none() => Ok(vec![self.vector_from_file(one)?]),
            _ => {
                let table = self.whole()?;
                texts.iter().map(|t| self.vector(table, t)).collect()
            }
        }
    }

    /// Half the transformer's: on the question benchmark's train split the `dense` weight
    /// 0.25 scored best with this model against 0.5 for MiniLM itself (docs/retrieval.md).
    fn trust(&self) -> f32 {
        0.5
    }
}

/// How much a wordpiece weighs: reserved entries nothing, single characters as the commonest
/// word, words by their frequency rank.
fn weight(id: u32) -> f32 {
    if id < FIRST_CHARACTER {
        0.0
    } else {
        let rank = id.saturating_sub(FIRST_WORD - 1).max(1);
        (1.0 + rank as f32).ln()
    }
}

/// Runs every wordpiece through the model alone, centres the vectors on their mean and
/// weights them.
fn distil(model: &MiniLm, vocabulary: usize) -> Result<Vec<f32>, EmbedError> {
    let ids: Vec<u32> = (0..vocabulary as u32).collect();
    let mut table = Vec::with_capacity(vocabulary * DIMS);
    for batch in ids.chunks(DISTIL_BATCH) {
        for row in model.wordpiece_vectors(batch)? {
            if row.len() != DIMS {
                return Err(model_err(format!(
                    "expected {DIMS} dimensions, got {}",
                    row.len()
                )));
            }
            table.extend(row);
        }
    }
    let counted: Vec<usize> = (FIRST_CHARACTER as usize..vocabulary).collect();
    let mut mean = vec![0f32; DIMS];
    for &i in &counted {
        mean.iter_mut()
            .zip(&table[i * DIMS..(i + 1) * DIMS])
            .for_each(|(m, x)| *m += x);
    }
    mean.iter_mut()
        .for_each(|m| *m /= counted.len().max(1) as f32);
    for (i, row) in table.chunks_exact_mut(DIMS).enumerate() {
        row.iter_mut().zip(&mean).for_each(|(x, m)| *x -= m);
        let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
        let w = weight(i as u32) / norm;
        row.iter_mut().for_each(|x| *x *= w);
    }
    Ok(table)
}

/// Writes the table through a temporary file, so that an interrupted distillation is never
/// read as a table (nor two processes distilling at once write into one file).
fn write_table(path: &Path, table: &[f32]) -> Result<(), EmbedError> {
    let bytes: Vec<u8> = table.iter().flat_map(|x| x.to_le_bytes()).collect();
    crate::token_tables::write_atomic(path, &bytes)
        .map_err(|e| model_err(format!("{}: {e}", path.display())))
}

/// `text` with a space where a code name's case changes (`parseHTTPResponse` → `parse HTTP
/// Response`), so that the model's lower-casing tokenizer sees words.
fn split_code_names(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for (i, &c) in chars.iter().enumerate() {
        if i > 0 && c.is_uppercase() {
            let before = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if before.is_lowercase()
                || before.is_ascii_digit()
                || (before.is_uppercase() && next_lower)
            {
                out.push(' ');
            }
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_names_are_split_where_their_case_changes() {
        assert_eq!(
            split_code_names("parseHTTPResponse KeyboardInterrupt max_retries"),
            "parse HTTP Response Keyboard Interrupt max_retries"
        );
        assert_eq!(split_code_names("v2Config"), "v2 Config");
    }

    /// A word-piece tokenizer over `words` (ids from 0), lower-casing as BERT's does.
    fn tokenizer(words: &[&str]) -> Tokenizer {
        let vocab: serde_json::Map<String, serde_json::Value> = words
            .iter()
            .enumerate()
            .map(|(i, w)| (w.to_string(), serde_json::json!(i)))
            .collect();
        let json = serde_json::json!({
            "version": "1.0",
            "normalizer": {"type": "BertNormalizer", "clean_text": true,
                "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "model": {"type": "WordPiece", "unk_token": "[UNK]",
                "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
                "vocab": vocab},
        });
        Tokenizer::from_bytes(json.to_string()).expect("a valid tokenizer")
    }

    /// One-hot rows: wordpiece `i` points along dimension `i`.
    fn one_hot(vocabulary: usize) -> Vec<f32> {
        let mut table = vec![0f32; vocabulary * DIMS];
        (0..vocabulary).for_each(|i| table[i * DIMS + i] = 1.0);
        table
    }

    #[test]
    fn a_text_is_the_unit_sum_of_its_wordpieces_and_code_names_read_as_words() {
        let words = ["[UNK]", "parse", "config", "file"];
        let model = StaticMiniLm::from_parts(tokenizer(&words), one_hot(words.len()))
            .expect("table matches the vocabulary");
        let camel = model.embed(&["parseConfig"]).expect("embeds");
        let spaced = model.embed(&["parse config"]).expect("embeds");
        assert_eq!(camel, spaced);
        let v = &camel[0];
        let half = 1.0 / 2f32.sqrt();
        assert!(
            (v[1] - half).abs() < 1e-6 && (v[2] - half).abs() < 1e-6,
            "{:?}",
            &v[..4]
        );
        assert_eq!(v[3], 0.0);
        let norm: f32 = v.iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-5);
    }

    #[test]
    fn a_lone_query_read_row_by_row_embeds_as_a_batch_does() {
        let words = ["[UNK]", "parse", "config", "file"];
        let dir = tempfile::tempdir().expect("temporary folder");
        let json = tokenizer(&words).to_string(false).expect("serializes");
        std::fs::write(dir.path().join("tokenizer.json"), json).expect("writes");
        let mut table = one_hot(words.len());
        table[2 * DIMS + 7] = 0.5;
        write_table(&dir.path().join(TABLE_FILE), &table).expect("writes");
        let model = StaticMiniLm::load(dir.path()).expect("opens without distilling");
        let text = "parse the config file, parseConfig";
        let lone = model.embed(&[text]).expect("embeds");
        assert!(
            model.table.get().is_none(),
            "a lone query must not read the whole table"
        );
        let batch = model.embed(&[text, "file"]).expect("embeds");
        assert_eq!(lone[0], batch[0]);
        assert!(lone[0][7] > 0.0);
    }

    #[test]
    fn a_table_that_does_not_fit_the_vocabulary_is_refused() {
        let words = ["[UNK]", "parse"];
        assert!(StaticMiniLm::from_parts(tokenizer(&words), vec![0.0; DIMS]).is_err());
    }

    #[test]
    fn rare_words_weigh_more_than_common_ones_and_reserved_entries_nothing() {
        assert_eq!(weight(0), 0.0);
        assert_eq!(weight(101), 0.0);
        assert!(weight(FIRST_WORD) < weight(FIRST_WORD + 1000));
        assert!(weight(FIRST_CHARACTER) > 0.0);
    }
}
