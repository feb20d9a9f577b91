//! all-MiniLM-L6-v2 on this machine's CPU, run by candle: the offline embedding model.
//!
//! A sentence-transformers model: BERT (6 layers, 384 dimensions), mean pooling over the
//! attention mask, then L2 normalization. Inputs are cut at [`MAX_WORDPIECES`]: attention is
//! quadratic in length, and on two cores 128 wordpieces embed about 14 chunks/s against about
//! 5 at 256; the path, the symbol and the opening lines a chunk is embedded with come first.

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

use super::{EmbedError, Embedder};

/// Wordpieces kept per text.
pub const MAX_WORDPIECES: usize = 128;

/// The loaded model.
pub struct MiniLm {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
}

/// The name vectors of this model are labelled with (the truncation is part of it: vectors
/// of longer inputs differ).
pub const MODEL_ID: &str = "all-MiniLM-L6-v2@128";

fn model_err(e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Model(e.to_string())
}

fn run_err(e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Inference(e.to_string())
}

impl MiniLm {
    /// Loads the model from `dir` (config.json, tokenizer.json, model.safetensors; see
    /// [`super::model_files`]).
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        let read = |name: &str| {
            std::fs::read(dir.join(name))
                .map_err(|e| model_err(format!("{}: {e}", dir.join(name).display())))
        };
        let config: Config = serde_json::from_slice(&read("config.json")?).map_err(model_err)?;
        let mut tokenizer = Tokenizer::from_bytes(read("tokenizer.json")?).map_err(model_err)?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_WORDPIECES,
                ..Default::default()
            }))
            .map_err(model_err)?;
        tokenizer.with_padding(Some(PaddingParams::default()));
        let device = Device::Cpu;
        let weights = read("model.safetensors")?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(model_err)?;
        let model = BertModel::load(vb, &config).map_err(model_err)?;
        Ok(Self {
            model,
            tokenizer,
            device,
        })
    }
}

impl Embedder for MiniLm {
    fn model(&self) -> &str {
        MODEL_ID
    }

    fn dims(&self) -> usize {
        384
    }

    fn batch_size(&self) -> usize {
        16
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let inputs: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
        let encoded = self.tokenizer.encode_batch(inputs, true).map_err(run_err)?;
        let rows = |f: &dyn Fn(&tokenizers::Encoding) -> &[u32]| -> Result<Tensor, EmbedError> {
            let rows = encoded
                .iter()
                .map(|e| Tensor::new(f(e), &self.device))
                .collect::<Result<Vec<_>, _>>()
                .map_err(run_err)?;
            Tensor::stack(&rows, 0).map_err(run_err)
        };
        let ids = rows(&|e| e.get_ids())?;
        let mask = rows(&|e| e.get_attention_mask())?;
        let types = ids.zeros_like().map_err(run_err)?;
        let hidden = self
            .model
            .forward(&ids, &types, Some(&mask))
            .map_err(run_err)?;
        // Mean over the real (unpadded) positions, then unit length.
        let mask = mask
            .to_dtype(DType::F32)
            .and_then(|m| m.unsqueeze(2))
            .map_err(run_err)?;
        let summed = hidden
            .broadcast_mul(&mask)
            .and_then(|h| h.sum(1))
            .map_err(run_err)?;
        let counts = mask.sum(1).map_err(run_err)?;
        let mean = summed.broadcast_div(&counts).map_err(run_err)?;
        let vectors: Vec<Vec<f32>> = mean.to_vec2().map_err(run_err)?;
        Ok(vectors
            .into_iter()
            .map(|v| {
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
                v.into_iter().map(|x| x / n).collect()
            })
            .collect())
    }
}

impl MiniLm {
    /// The vector of each wordpiece in `ids` seen alone (`[CLS] id [SEP]`, mean over the three
    /// positions, not normalized): what [`super::distilled`] distils its table from.
    pub fn wordpiece_vectors(&self, ids: &[u32]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let (cls, sep) = (self.special("[CLS]")?, self.special("[SEP]")?);
        let flat: Vec<u32> = ids.iter().flat_map(|&id| [cls, id, sep]).collect();
        let ids = Tensor::from_vec(flat, (ids.len(), 3), &self.device).map_err(run_err)?;
        let types = ids.zeros_like().map_err(run_err)?;
        let mask = ids.ones_like().map_err(run_err)?;
        let hidden = self
            .model
            .forward(&ids, &types, Some(&mask))
            .map_err(run_err)?;
        hidden.mean(1).and_then(|m| m.to_vec2()).map_err(run_err)
    }

    fn special(&self, token: &str) -> Result<u32, EmbedError> {
        self.tokenizer
            .token_to_id(token)
            .ok_or_else(|| model_err(format!("the tokenizer has no {token}")))
    }
}
