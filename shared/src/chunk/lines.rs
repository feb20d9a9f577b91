//! Byte offset ↔ line number.

/// Where each line of a text starts.
#[derive(Clone, Debug)]
pub struct LineIndex {
    starts: Vec<usize>,
    len: usize,
}

impl LineIndex {
    /// Indexes `text`.
    pub fn new(text: &str) -> Self {
        let mut starts = Vec::with_capacity(text.len() / 32 + 1);
        starts.push(0);
        starts.extend(memchr_iter(text.as_bytes()).map(|i| i + 1));
        if starts.len() > 1 && *starts.last().unwrap_or(&0) == text.len() {
            starts.pop();
        }
        Self {
            starts,
            len: text.len(),
        }
    }

    /// Number of lines.
    pub fn count(&self) -> usize {
        self.starts.len()
    }

    /// The 1-based line holding `byte`.
    pub fn line_of(&self, byte: usize) -> u32 {
        let i = self.starts.partition_point(|&s| s <= byte);
        u32::try_from(i.max(1)).unwrap_or(u32::MAX)
    }

    /// Byte where 1-based `line` starts.
    pub fn line_start(&self, line: usize) -> usize {
        self.starts
            .get(line.saturating_sub(1))
            .copied()
            .unwrap_or(self.len)
    }

    /// Byte one past the end of 1-based `line`, including its newline.
    pub fn line_end(&self, line: usize) -> usize {
        self.starts.get(line).copied().unwrap_or(self.len)
    }
}

fn memchr_iter(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_offsets() {
        let t = "ab\ncd\n\nef";
        let li = LineIndex::new(t);
        assert_eq!(li.count(), 4);
        assert_eq!(li.line_of(0), 1);
        assert_eq!(li.line_of(2), 1);
        assert_eq!(li.line_of(3), 2);
        assert_eq!(li.line_of(6), 3);
        assert_eq!(li.line_of(8), 4);
        assert_eq!(li.line_start(2), 3);
        assert_eq!(li.line_end(2), 6);
        assert_eq!(li.line_end(4), 9);
        let li = LineIndex::new("x\n");
        assert_eq!(li.count(), 1);
    }
}
