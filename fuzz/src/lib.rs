//! What the fuzz targets share: a small indexed sample project ([`sample`]) and the API router
//! over an in-memory host ([`api`]). Each target in `fuzz_targets/` is a few lines over these.

pub mod api;
pub mod extract;
pub mod json;
pub mod sample;
