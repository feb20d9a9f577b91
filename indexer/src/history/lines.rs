//! Line arithmetic of the history walk: which lines of a file's version a commit wrote, and
//! where the lines it kept were in its parent's version.

use std::ops::Range;

use imara_diff::{Algorithm, Diff, InternedInput};

/// Lines of one file not yet attributed: `cur` in the numbering of the commit being looked at,
/// starting at line `work` of the work tree's file (0-based).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Pending {
    pub(super) cur: Range<u32>,
    pub(super) work: u32,
}

/// `bytes` with every `\r\n` as `\n` (line numbers unchanged): a work tree checked out with
/// CRLF line ends is the same text as its LF blob.
pub(super) fn lf(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if !bytes.windows(2).any(|w| w == b"\r\n") {
        return std::borrow::Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len());
    for (i, &b) in bytes.iter().enumerate() {
        if !(b == b'\r' && bytes.get(i + 1) == Some(&b'\n')) {
            out.push(b);
        }
    }
    std::borrow::Cow::Owned(out)
}

pub(super) fn line_count(bytes: &[u8]) -> u32 {
    let breaks = bytes.iter().filter(|&&b| b == b'\n').count();
    let last = usize::from(!bytes.is_empty() && !bytes.ends_with(b"\n"));
    (breaks + last) as u32
}

pub(super) fn work_range(p: &Pending) -> Range<u32> {
    p.work..p.work + (p.cur.end - p.cur.start)
}

/// From a commit's version of a file (`after`) back to its parent's (`before`): of the lines
/// still `pending` (in `after`'s numbering), those the change wrote (returned second, in
/// work-tree lines) and those it kept, renumbered as `before`'s (first).
pub(super) fn step(
    pending: &[Pending],
    before: &[u8],
    after: &[u8],
) -> (Vec<Pending>, Vec<Range<u32>>) {
    let input = InternedInput::new(before, after);
    let mut diff = Diff::compute(Algorithm::Histogram, &input);
    diff.postprocess_lines(&input);
    // The after side as regions: kept (with the shift to the before side) or written.
    let mut regions: Vec<(Range<u32>, Option<i64>)> = Vec::new();
    let (mut a, mut b) = (0u32, 0u32);
    for h in diff.hunks() {
        if h.after.start > a {
            regions.push((a..h.after.start, Some(i64::from(b) - i64::from(a))));
        }
        if h.after.end > h.after.start {
            regions.push((h.after.clone(), None));
        }
        a = h.after.end;
        b = h.before.end;
    }
    let after_lines = input.after.len() as u32;
    if after_lines > a {
        regions.push((a..after_lines, Some(i64::from(b) - i64::from(a))));
    }
    let mut carried = Vec::new();
    let mut wrote = Vec::new();
    for p in pending {
        for (region, shift) in &regions {
            let start = p.cur.start.max(region.start);
            let end = p.cur.end.min(region.end);
            if start >= end {
                continue;
            }
            let work = p.work + (start - p.cur.start);
            match shift {
                Some(shift) => carried.push(Pending {
                    cur: (i64::from(start) + shift) as u32..(i64::from(end) + shift) as u32,
                    work,
                }),
                None => wrote.push(work..work + (end - start)),
            }
        }
    }
    (carried, wrote)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_attributes_the_changed_lines_and_renumbers_the_rest() {
        let before = b"a\nb\nc\nd\n";
        let after = b"a\nx\ny\nc\nd\ne\n";
        let pending = vec![Pending { cur: 0..6, work: 0 }];
        let (carried, wrote) = step(&pending, before, after);
        // x, y (lines 1-2) and e (line 5) were written; a, c, d go back to lines 0, 2, 3.
        assert_eq!(wrote, vec![1..3, 5..6]);
        assert_eq!(
            carried,
            vec![
                Pending { cur: 0..1, work: 0 },
                Pending { cur: 2..4, work: 3 },
            ]
        );
        // Only what is still pending is looked at.
        let (carried, wrote) = step(
            &[Pending {
                cur: 3..4,
                work: 10,
            }],
            before,
            after,
        );
        assert_eq!(wrote, Vec::<Range<u32>>::new());
        assert_eq!(
            carried,
            vec![Pending {
                cur: 2..3,
                work: 10
            }]
        );
    }

    #[test]
    fn crlf_line_ends_read_as_lf() {
        assert_eq!(&*lf(b"a\r\nb\r\n"), b"a\nb\n");
        assert_eq!(&*lf(b"a\rb\n"), b"a\rb\n", "a lone CR is text");
        assert!(matches!(lf(b"a\nb"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn line_counts_include_an_unterminated_last_line() {
        assert_eq!(line_count(b""), 0);
        assert_eq!(line_count(b"a\n"), 1);
        assert_eq!(line_count(b"a\nb"), 2);
    }
}
