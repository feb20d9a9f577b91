//! Progress bars for long work, on stderr and only when it is a terminal.

use ctxgate_indexer::pipeline::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// An indicatif bar over files.
pub struct FileBar {
    bar: ProgressBar,
}

impl FileBar {
    pub fn new(quiet: bool, label: &'static str) -> Self {
        Self::counting(quiet, label, "files")
    }

    /// A bar counting `unit` (objects, files).
    pub fn counting(quiet: bool, label: &'static str, unit: &str) -> Self {
        let bar = ProgressBar::with_draw_target(
            Some(0),
            if quiet {
                ProgressDrawTarget::hidden()
            } else {
                ProgressDrawTarget::stderr()
            },
        );
        let style = ProgressStyle::with_template(&format!(
            "{{prefix:>9}} [{{bar:30}}] {{pos}}/{{len}} {unit} {{elapsed}}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(label);
        Self { bar }
    }
}

impl Progress for FileBar {
    fn start(&self, total: u64) {
        self.bar.set_length(total);
        self.bar.set_position(0);
    }
    fn advance(&self) {
        self.bar.inc(1);
    }
    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
