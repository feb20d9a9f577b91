//! One unit's summary message: the cache key, the summarizer asked, its answer checked, so every
//! summary in a result is redacted, bounded and reusable.

use sha2::{Digest, Sha256};

use crate::catalog::TokenizerSpec;
use crate::hash::Sha256Digest;
use crate::history::cache::{SummaryCache, SummaryKey};
use crate::history::message::{Message, Role, message_tokens};
use crate::history::summarize::{summarize_agent_span, summarize_message};

use super::report::CompactReport;
use super::summarizer::{Summarizer, SummaryInput, SummaryKind};
use super::units::{Unit, UnitKind};

fn key_for(
    version: &str,
    parts: &[&Message],
    prev: Option<&Message>,
    next: Option<&Message>,
) -> SummaryKey {
    let mut h = Sha256::new();
    h.update(version.as_bytes());
    for (tag, m) in [(b'p', prev), (b'n', next)] {
        if let Some(m) = m {
            h.update([tag]);
            h.update(m.text_content().as_bytes());
            h.update([0]);
        }
    }
    for m in parts {
        h.update(b"m");
        h.update(serde_json::to_vec(m).unwrap_or_default());
        h.update([0]);
    }
    SummaryKey {
        hash: Sha256Digest(h.finalize().into()),
        version: version.to_string(),
    }
}

fn summary_message(role: Role, name: Option<&String>, text: String) -> Message {
    let role = match role {
        Role::User => Role::User,
        _ => Role::Assistant,
    };
    let mut m = Message::text(role, text);
    if role == Role::User {
        m.name = name.cloned();
    }
    m
}

/// Makes (or fetches) `u`'s summary message and counts it.
pub(super) fn summarize_unit(
    u: &mut Unit,
    messages: &[Message],
    tok: &TokenizerSpec,
    cache: &mut dyn SummaryCache,
    summarizer: &mut dyn Summarizer,
    report: &mut CompactReport,
) {
    let parts: Vec<&Message> = u.msgs.iter().map(|&i| &messages[i]).collect();
    let (prev, next) = match u.kind {
        UnitKind::AgentTurn => (None, None),
        UnitKind::Message => {
            let i = u.msgs[0];
            (i.checked_sub(1).map(|p| &messages[p]), messages.get(i + 1))
        }
    };
    let key = key_for(&report.summarizer, &parts, prev, next);
    let text = match cache.get(&key) {
        Some(t) => {
            report.cache_hits += 1;
            u.cached = true;
            t
        }
        None => {
            report.cache_misses += 1;
            let extractive = match u.kind {
                UnitKind::AgentTurn => summarize_agent_span(&parts),
                UnitKind::Message => summarize_message(
                    prev.map(|m| m.text_content()).as_deref(),
                    &parts[0].text_content(),
                    next.map(|m| m.text_content()).as_deref(),
                ),
            };
            let input = SummaryInput {
                kind: match u.kind {
                    UnitKind::AgentTurn => SummaryKind::AgentTurn,
                    UnitKind::Message => SummaryKind::Message,
                },
                messages: &parts,
                prev,
                next,
                extractive: &extractive,
            };
            // Another summarizer's text is redacted and kept only within 1.5× the extractive
            // summary's length, so a chatty model cannot crowd out the rest of the history.
            let t = match summarizer.summarize(&input) {
                Some(t) if t != extractive => {
                    let t = crate::secrets::redact(t.trim()).into_owned();
                    let limit = tok.count(&extractive).saturating_mul(3) / 2 + 8;
                    if !t.is_empty() && tok.count(&t) <= limit {
                        t
                    } else {
                        extractive
                    }
                }
                _ => extractive,
            };
            cache.put(&key, &t);
            t
        }
    };
    let first = parts[0];
    let m = summary_message(
        if u.kind == UnitKind::AgentTurn {
            Role::Assistant
        } else {
            first.role
        },
        first.name.as_ref(),
        text,
    );
    u.summary_tokens = message_tokens(tok, &m);
    u.summary = Some(m);
}
