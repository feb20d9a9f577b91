//! Markdown: one chunk per section, from an ATX heading to the next.

use super::{ChunkKind, ChunkOptions, Draft, LineIndex, windows};

/// Cuts at `#` headings outside fenced code; merges tiny sections into the next, and windows
/// sections that are too large.
pub(crate) fn sections(text: &str, lines: &LineIndex, opts: &ChunkOptions) -> Vec<Draft> {
    let mut starts: Vec<(usize, Option<String>)> = vec![(0, None)];
    // An open fence: its character and length; only a fence of the same character at least as
    // long closes it.
    let mut fence: Option<(u8, usize)> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let run = |c: u8| trimmed.bytes().take_while(|&b| b == c).count();
        if let Some((c, len)) = fence {
            if run(c) >= len {
                fence = None;
            }
        } else if run(b'`') >= 3 {
            fence = Some((b'`', run(b'`')));
        } else if run(b'~') >= 3 {
            fence = Some((b'~', run(b'~')));
        } else if let Some(title) = heading(line) {
            if offset == 0 {
                starts[0].1 = Some(title);
            } else {
                starts.push((offset, Some(title)));
            }
        }
        offset += line.len();
    }
    let mut out: Vec<Draft> = Vec::new();
    for (i, (start, title)) in starts.iter().enumerate() {
        let end = starts.get(i + 1).map_or(text.len(), |s| s.0);
        if let Some(prev) = out.last_mut()
            && prev.kind == ChunkKind::Section
            && prev.end == *start
            && prev.end - prev.start < opts.min_bytes
            && end - prev.start <= opts.max_bytes
        {
            prev.end = end;
            continue;
        }
        if end - start > opts.max_bytes {
            for mut w in windows(text, lines, *start, end, opts) {
                w.symbol = title.clone();
                out.push(w);
            }
        } else {
            out.push(Draft {
                start: *start,
                end,
                kind: ChunkKind::Section,
                symbol: title.clone(),
            });
        }
    }
    out
}

fn heading(line: &str) -> Option<String> {
    if line.starts_with("    ") {
        return None;
    }
    let t = line.trim_start();
    let hashes = t.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = &t[hashes..];
    if !(rest.is_empty()
        || rest.starts_with(' ')
        || rest.starts_with('\t')
        || rest.starts_with('\n'))
    {
        return None;
    }
    let title = rest.trim().trim_end_matches('#').trim();
    Some(title.to_string())
}
