//! The one aggregate message the oldest messages fold into, fitted to whatever room is left so the
//! whole span stays covered, more coarsely, before anything is dropped.

use crate::catalog::TokenizerSpec;
use crate::history::message::{Content, MESSAGE_OVERHEAD, Message, Role, message_tokens};
use crate::history::summarize::{
    Digest as MessageDigest, SEGMENT_MESSAGES, aggregate_header, aggregate_lines, digest,
};

/// The aggregate message for `msgs` within `cap` tokens, and the input positions it covers.
/// Segment lines give way first (oldest first), then topic lines; with no room for a header and
/// one topic there is no aggregate.
pub(super) fn render_aggregate(
    msgs: &[(usize, &Message)],
    cap: u64,
    tok: &TokenizerSpec,
) -> (Option<Message>, Vec<usize>) {
    if msgs.is_empty() {
        return (None, Vec::new());
    }
    let digests: Vec<MessageDigest> = msgs.iter().map(|(i, m)| digest(*i, m)).collect();
    // The finest resolution that fits: ten messages a line, then 15, 23, 35... so the whole
    // span stays covered, more coarsely, before any line is given up.
    let header = u64::from(tok.count(&aggregate_header(1, 1000, 1000)))
        + u64::from(MESSAGE_OVERHEAD)
        + u64::from(tok.count("system"))
        + 2;
    let mut segment = SEGMENT_MESSAGES;
    let (lines, line_cost) = loop {
        let lines = aggregate_lines(&digests, segment);
        let line_cost: Vec<u64> = lines
            .iter()
            .map(|l| u64::from(tok.count(&l.text)) + 1)
            .collect();
        if header + line_cost.iter().sum::<u64>() <= cap || segment >= digests.len() {
            break (lines, line_cost);
        }
        segment = (segment * 3).div_ceil(2);
    };
    let mut keep = vec![true; lines.len()];
    let build = |keep: &[bool]| -> (Message, Vec<usize>) {
        let mut covered: Vec<usize> = lines
            .iter()
            .zip(keep)
            .filter(|(l, k)| **k && l.topic)
            .flat_map(|(l, _)| l.covers.iter().copied())
            .collect();
        covered.sort_unstable();
        let first = covered.first().map_or(0, |c| c + 1);
        let last = covered.last().map_or(0, |c| c + 1);
        let mut text = aggregate_header(first, last, covered.len());
        for (l, _) in lines.iter().zip(keep).filter(|(_, k)| **k) {
            text.push('\n');
            text.push_str(&l.text);
        }
        let mut m = Message::text(Role::System, text);
        m.content = Some(Content::Text(m.text_content()));
        (m, covered)
    };
    let mut estimate = header + line_cost.iter().sum::<u64>();
    // Segment lines first, oldest first; then topic lines, oldest first.
    let order: Vec<usize> = (0..lines.len())
        .filter(|&i| !lines[i].topic)
        .chain((0..lines.len()).filter(|&i| lines[i].topic))
        .collect();
    let mut next = 0;
    while estimate > cap && next < order.len() {
        keep[order[next]] = false;
        estimate -= line_cost[order[next]];
        next += 1;
    }
    loop {
        if !keep.iter().zip(&lines).any(|(k, l)| *k && l.topic) {
            return (None, Vec::new());
        }
        let (m, covered) = build(&keep);
        if u64::from(message_tokens(tok, &m)) <= cap {
            return (Some(m), covered);
        }
        if next >= order.len() {
            return (None, Vec::new());
        }
        keep[order[next]] = false;
        next += 1;
    }
}
