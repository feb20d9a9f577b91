//! Progress of long batch work (files indexed, chunks embedded): reported to a progress bar in
//! the CLI, to nothing elsewhere. Its own module, so that every step may report without
//! importing the pipeline.

/// Receives progress while files are processed (a progress bar in the CLI).
pub trait Progress: Sync {
    /// Processing of `total` files starts.
    fn start(&self, total: u64);
    /// One file is done.
    fn advance(&self);
    /// All files are done.
    fn finish(&self);
}

/// Progress that goes nowhere.
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _: u64) {}
    fn advance(&self) {}
    fn finish(&self) {}
}
