//! Whole pieces of one file that touch or overlap are quoted as one stretch under one header:
//! which pieces join, and how each enters its block, without changing a byte of the file.

use super::{Piece, PieceForm};

/// Most empty lines between two whole pieces of a file that are still quoted as one stretch.
pub const MAX_JOIN_GAP: u64 = 3;

/// How a piece enters the block it is quoted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Join {
    /// It opens the block.
    Start,
    /// It follows the block so far after this many empty lines.
    Gap(usize),
    /// It overlaps the block so far: its text from this byte on is new.
    Skip(usize),
    /// The block so far already holds all of it.
    Inside,
}

/// Whether the piece's text is its chunk's bytes, unchanged (not cut, not compressed).
fn verbatim(p: &Piece) -> bool {
    p.form == PieceForm::Full && p.text.len() as u64 == p.byte_end.saturating_sub(p.byte_start)
}

/// How `next` continues a block whose last byte is `block.byte_end` and last line
/// `block.end_line` (both from the piece of the block that reaches furthest), if the two can
/// be quoted as one stretch without changing a byte of the file.
fn continuation(block: &Piece, next: &Piece) -> Option<Join> {
    if !verbatim(block) || !verbatim(next) || next.path != block.path {
        return None;
    }
    if next.byte_start >= block.byte_end {
        // Chunks start at line starts: every byte between the two must be a line break, which
        // holds when there are as many bytes as line breaks.
        let next_line = block.end_line + u32::from(block.text.ends_with('\n'));
        let breaks = u64::from(next.start_line.checked_sub(next_line)?);
        let gap = next.byte_start - block.byte_end;
        (gap == breaks && gap <= MAX_JOIN_GAP).then_some(Join::Gap(gap as usize))
    } else if next.byte_start < block.byte_start || next.start_line > block.end_line {
        None
    } else if next.byte_end <= block.byte_end {
        Some(Join::Inside)
    } else {
        let skip = usize::try_from(block.byte_end - next.byte_start).ok()?;
        next.text.is_char_boundary(skip).then_some(Join::Skip(skip))
    }
}

/// One file's pieces (in line order) cut into the blocks they are quoted in: each block lists
/// its pieces by their index in `pieces`, with how each enters it.
pub(super) fn blocks(pieces: &[&Piece]) -> Vec<Vec<(usize, Join)>> {
    let mut out: Vec<Vec<(usize, Join)>> = Vec::new();
    // The piece of the current block that reaches furthest into the file.
    let mut reach: Option<&Piece> = None;
    for (i, &p) in pieces.iter().enumerate() {
        match (reach.and_then(|r| continuation(r, p)), out.last_mut()) {
            (Some(join), Some(block)) => {
                block.push((i, join));
                if join != Join::Inside {
                    reach = Some(p);
                }
            }
            _ => {
                out.push(vec![(i, Join::Start)]);
                reach = Some(p);
            }
        }
    }
    out
}

/// The header above a block of several joined pieces: the stretch they quote together.
pub(super) fn joined_header(block: &[&Piece]) -> String {
    let first = block[0];
    let end = block
        .iter()
        .map(|p| p.end_line)
        .max()
        .unwrap_or(first.end_line);
    format!("### {}:{}-{end}\n", first.path, first.start_line)
}

/// Indices of the pieces (in `pieces`, any order) that are quoted in the block of an earlier
/// piece of their file: each saves its own header and fences.
pub fn joined(pieces: &[Piece]) -> Vec<usize> {
    let mut by_file: Vec<(&str, Vec<usize>)> = Vec::new();
    let code = pieces
        .iter()
        .enumerate()
        .filter(|(_, p)| p.form != PieceForm::Signpost);
    for (i, p) in code {
        match by_file.iter_mut().find(|(path, _)| *path == p.path) {
            Some((_, v)) => v.push(i),
            None => by_file.push((&p.path, vec![i])),
        }
    }
    let mut out = Vec::new();
    for (_, mut ix) in by_file {
        ix.sort_by_key(|&i| (pieces[i].start_line, pieces[i].end_line));
        let refs: Vec<&Piece> = ix.iter().map(|&i| &pieces[i]).collect();
        for block in blocks(&refs) {
            out.extend(block.iter().skip(1).map(|&(k, _)| ix[k]));
        }
    }
    out
}
