//! The seam for other summarizers: what one is given and what it must promise, so a host can plug
//! in a model without the core doing any I/O.

use serde_json::Value;

use crate::history::message::Message;
use crate::history::summarize::{SUMMARIZER_VERSION, clip};

/// What a summarizer is asked to summarize.
pub struct SummaryInput<'a> {
    /// One chat message, or an agent turn.
    pub kind: SummaryKind,
    /// The messages summarized together.
    pub messages: &'a [&'a Message],
    /// The message before (chat messages only).
    pub prev: Option<&'a Message>,
    /// The message after (chat messages only).
    pub next: Option<&'a Message>,
    /// The extractive summary: what a summarizer that fails falls back to, and the length to aim
    /// for.
    pub extractive: &'a str,
}

/// What is summarized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SummaryKind {
    /// One chat message.
    Message,
    /// An assistant's tool calls and their results.
    AgentTurn,
}

/// A source of summaries. The extractive one is built in; a host may add others (an LLM behind
/// an OpenAI-compatible API) without the core doing any I/O. Whatever a summarizer returns is
/// redacted again, and used only if it is not much longer than the extractive summary.
pub trait Summarizer {
    /// Names the algorithm (and model); part of every cache key.
    fn version(&self) -> String;
    /// A summary, or `None` to use the extractive one.
    fn summarize(&mut self, input: &SummaryInput<'_>) -> Option<String>;
}

/// The built-in deterministic extractive summarizer.
#[derive(Debug, Default, Clone, Copy)]
pub struct Extractive;

impl Summarizer for Extractive {
    fn version(&self) -> String {
        SUMMARIZER_VERSION.to_string()
    }
    fn summarize(&mut self, input: &SummaryInput<'_>) -> Option<String> {
        Some(input.extractive.to_string())
    }
}

/// The unit's messages as plain text for a summarizer that reads prose (secrets redacted):
/// `role: text` lines, tool calls as `→ name(arguments)`.
pub fn render_for_summary(input: &SummaryInput<'_>) -> String {
    let mut out = String::new();
    if let Some(p) = input.prev {
        out.push_str(&format!(
            "(before, for context) {}: {}\n",
            p.role.name(),
            clip(&p.text_content(), 400)
        ));
    }
    for m in input.messages {
        out.push_str(m.role.name());
        out.push_str(": ");
        out.push_str(&m.text_content());
        out.push('\n');
        if let Some(Value::Array(calls)) = &m.tool_calls {
            for c in calls {
                let f = c.get("function").unwrap_or(c);
                let name = f.get("name").and_then(Value::as_str).unwrap_or("tool");
                let args = match f.get("arguments") {
                    Some(Value::String(a)) => a.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                out.push_str(&format!("→ {name}({})\n", clip(&args, 2000)));
            }
        }
    }
    if let Some(n) = input.next {
        out.push_str(&format!(
            "(after, for context) {}: {}\n",
            n.role.name(),
            clip(&n.text_content(), 400)
        ));
    }
    crate::secrets::redact(&out).into_owned()
}
