//! Progress bars for long work, on stderr and only when it is a terminal.

use ctxgate_indexer::pipeline::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// An indicatif bar over files. It draws only once work starts ([`Progress::start`]): a run that
/// fails before (a missing folder, a bad URL) shows its error without an empty bar above it.
pub struct FileBar {
    bar: ProgressBar,
    quiet: bool,
}

impl FileBar {
    pub fn new(quiet: bool, label: &'static str) -> Self {
        Self::counting(quiet, label, "files")
    }

    /// A bar counting `unit` (objects, files).
    pub fn counting(quiet: bool, label: &'static str, unit: &str) -> Self {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
        let style = ProgressStyle::with_template(&format!(
            "{{prefix:>9}} [{{bar:30}}] {{pos}}/{{len}} {unit} {{elapsed}}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(label);
        Self { bar, quiet }
    }
}

impl Progress for FileBar {
    fn start(&self, total: u64) {
        if !self.quiet && self.bar.is_hidden() {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
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
