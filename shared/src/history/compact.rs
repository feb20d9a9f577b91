//! The compaction itself: tiers, the budget, and the report.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::cache::{SummaryCache, SummaryKey};
use super::message::{
    CONVERSATION_OVERHEAD, Content, Message, Role, conversation_tokens, message_tokens,
};
use super::summarize::{
    Digest as MessageDigest, SEGMENT_MESSAGES, SUMMARIZER_VERSION, aggregate_header,
    aggregate_lines, digest, summarize_agent_span, summarize_message,
};
use crate::catalog::TokenizerSpec;
use crate::hash::Sha256Digest;
use crate::lexical::{Bm25Builder, Bm25Params, doc_terms, query_terms};

/// Rounds kept whole unless the caller says otherwise.
pub const DEFAULT_KEEP_ROUNDS: usize = 3;
/// At most this many old messages (or agent turns) are recalled for a query.
const MAX_RECALLED: usize = 8;
/// A unit is recalled only if it scores at least this share of the best match.
const RECALL_MIN_SHARE: f32 = 0.3;

/// How to compact.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactOptions {
    /// Hard limit on [`super::conversation_tokens`] of the result.
    pub budget: u32,
    /// Newest rounds kept verbatim.
    pub keep_rounds: usize,
    /// Bring the old messages most relevant to this back whole.
    pub query: Option<String>,
    /// Count every input message for the report's `tokens_before` figures. Without it, messages
    /// that end up aggregated or dropped are never counted (counting is most of the time spent
    /// on a long conversation), and those figures are left out.
    pub exact_stats: bool,
}

impl CompactOptions {
    /// Defaults for `budget`.
    pub fn new(budget: u32) -> Self {
        Self {
            budget,
            keep_rounds: DEFAULT_KEEP_ROUNDS,
            query: None,
            exact_stats: true,
        }
    }
}

/// Why a conversation could not be compacted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompactError {
    /// A zero budget.
    #[error("the budget is 0 tokens")]
    BudgetZero,
    /// What must be kept verbatim does not fit.
    #[error(
        "the budget of {budget} tokens is smaller than the protected part of the conversation (system prompt, pinned messages and the last {keep_rounds} rounds), which needs {needed} tokens; raise the budget to at least {needed} or keep fewer rounds"
    )]
    BudgetTooSmall {
        /// Tokens the protected part needs.
        needed: u32,
        /// The budget given.
        budget: u32,
        /// Rounds protected.
        keep_rounds: usize,
    },
}

impl CompactError {
    /// The stable machine-readable code the CLI and the API report.
    pub fn code(&self) -> &'static str {
        match self {
            CompactError::BudgetZero => "budget_zero",
            CompactError::BudgetTooSmall { .. } => "budget_too_small",
        }
    }
}

/// The form an input message ends up in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// System or developer message (never summarized).
    System,
    /// Pinned by the client (never summarized).
    Pinned,
    /// One of the last `keep_rounds` rounds.
    Recent,
    /// Older, brought back whole because it matches the query.
    Recalled,
    /// Older, kept whole because there was room.
    Verbatim,
    /// Older, replaced by its own summary.
    Summarized,
    /// Oldest, folded into the one aggregate summary.
    Aggregated,
    /// Left out: not even the aggregate had room.
    Dropped,
}

impl Tier {
    /// Every tier, most detailed first.
    pub const ALL: [Tier; 8] = [
        Tier::System,
        Tier::Pinned,
        Tier::Recent,
        Tier::Recalled,
        Tier::Verbatim,
        Tier::Summarized,
        Tier::Aggregated,
        Tier::Dropped,
    ];

    /// Whether the tier is kept verbatim whatever the budget.
    pub fn is_protected(self) -> bool {
        matches!(self, Tier::System | Tier::Pinned | Tier::Recent)
    }
}

/// One tier's share.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TierStats {
    /// Input messages in the tier.
    pub messages: usize,
    /// Their tokens before compaction (absent when not every message was counted).
    pub tokens_before: Option<u32>,
    /// Tokens the tier takes in the result (the aggregate message for `aggregated`).
    pub tokens_after: u32,
}

/// One summary in the result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SummaryEntry {
    /// Input positions (0-based) the summary replaces.
    pub messages: Vec<usize>,
    /// Their ids, where the client gave them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<Value>,
    /// `message` or `agent_turn`.
    pub kind: &'static str,
    /// Tokens of the replaced messages.
    pub tokens_before: u32,
    /// Tokens of the summary message.
    pub tokens_after: u32,
    /// Whether it came from the cache.
    pub cached: bool,
}

/// What a compaction did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompactReport {
    /// The budget.
    pub budget: u32,
    /// Tokens of the input conversation (absent when not every message was counted).
    pub tokens_before: Option<u32>,
    /// Tokens of the result (≤ budget).
    pub tokens_total: u32,
    /// Input messages.
    pub messages_before: usize,
    /// Result messages.
    pub messages_after: usize,
    /// Rounds found.
    pub rounds: usize,
    /// Rounds protected.
    pub keep_rounds: usize,
    /// Per tier, most detailed first (tiers with no messages are left out).
    pub tiers: BTreeMap<Tier, TierStats>,
    /// Each summary made.
    pub summarized: Vec<SummaryEntry>,
    /// Input positions folded into the aggregate.
    pub aggregated: Vec<usize>,
    /// Input positions recalled for the query.
    pub recalled: Vec<usize>,
    /// Input positions left out.
    pub dropped: Vec<usize>,
    /// Ids of the dropped messages, where given.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dropped_ids: Vec<Value>,
    /// The summarizer that made the summaries (its version).
    pub summarizer: String,
    /// Summaries found in the cache.
    pub cache_hits: usize,
    /// Summaries computed.
    pub cache_misses: usize,
}

/// The result: the messages to send and the report.
#[derive(Clone, Debug, PartialEq)]
pub struct Compacted {
    /// The compacted conversation, in order.
    pub messages: Vec<Message>,
    /// The tier of each input message.
    pub tiers: Vec<Tier>,
    /// What happened.
    pub report: CompactReport,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UnitKind {
    Message,
    AgentTurn,
}

/// Older messages handled together: one chat message, or an agent turn.
struct Unit {
    msgs: Vec<usize>,
    kind: UnitKind,
    verbatim: u32,
    summary: Option<Message>,
    summary_tokens: u32,
    cached: bool,
    tier: Tier,
}

impl Unit {
    /// Tokens at summary level (never more than verbatim: a summary longer than its message is
    /// not used).
    fn summary_cost(&self) -> u32 {
        self.summary_tokens.min(self.verbatim)
    }
}

/// Where each round starts: at a user message, or at an assistant message that follows a tool
/// result (the next step of an agent run). Instruction messages belong to no round.
fn round_starts(messages: &[Message]) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut prev: Option<Role> = None;
    for (i, m) in messages.iter().enumerate() {
        if m.role.is_instruction() {
            continue;
        }
        let starts_round = match m.role {
            Role::User => true,
            Role::Assistant => matches!(prev, Some(Role::Tool | Role::Function)),
            _ => false,
        } || prev.is_none();
        if starts_round {
            starts.push(i);
        }
        prev = Some(m.role);
    }
    starts
}

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
            super::summarize::clip(&p.text_content(), 400)
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
                out.push_str(&format!(
                    "→ {name}({})\n",
                    super::summarize::clip(&args, 2000)
                ));
            }
        }
    }
    if let Some(n) = input.next {
        out.push_str(&format!(
            "(after, for context) {}: {}\n",
            n.role.name(),
            super::summarize::clip(&n.text_content(), 400)
        ));
    }
    crate::secrets::redact(&out).into_owned()
}

/// Compacts `messages` within `opts.budget` counted with `tok`, with the extractive summarizer.
/// `cache` supplies and keeps summaries.
pub fn compact(
    messages: &[Message],
    tok: &TokenizerSpec,
    opts: &CompactOptions,
    cache: &mut dyn SummaryCache,
) -> Result<Compacted, CompactError> {
    compact_with(messages, tok, opts, cache, &mut Extractive)
}

/// [`compact`] with another summarizer.
pub fn compact_with(
    messages: &[Message],
    tok: &TokenizerSpec,
    opts: &CompactOptions,
    cache: &mut dyn SummaryCache,
    summarizer: &mut dyn Summarizer,
) -> Result<Compacted, CompactError> {
    if opts.budget == 0 {
        return Err(CompactError::BudgetZero);
    }
    let n = messages.len();
    let mut costs = Costs {
        v: vec![None; n],
        tok,
        messages,
    };

    // Protection.
    let starts = round_starts(messages);
    let keep_from = if opts.keep_rounds == 0 {
        n
    } else if starts.len() <= opts.keep_rounds {
        0
    } else {
        starts[starts.len() - opts.keep_rounds]
    };
    let mut tier: Vec<Option<Tier>> = messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            if m.role.is_instruction() {
                Some(Tier::System)
            } else if m.pinned {
                Some(Tier::Pinned)
            } else if i >= keep_from {
                Some(Tier::Recent)
            } else {
                None
            }
        })
        .collect();

    // Units: each older round's user message alone; the rest of the round one agent turn when it
    // uses tools (a pinned message inside protects the whole turn, so tool calls and results
    // stay paired), else one unit per message.
    let mut units: Vec<Unit> = Vec::new();
    let mut bounds: Vec<usize> = starts.iter().copied().filter(|&s| s < keep_from).collect();
    bounds.push(keep_from);
    for w in bounds.windows(2) {
        let (lo, hi) = (w[0], w[1]);
        let mut rest_from = lo;
        if messages[lo].role == Role::User {
            rest_from = lo + 1;
            if tier[lo].is_none() {
                units.push(new_unit(vec![lo], UnitKind::Message));
            }
        }
        let rest: Vec<usize> = (rest_from..hi)
            .filter(|&i| !messages[i].role.is_instruction())
            .collect();
        let agent = rest.iter().any(|&i| messages[i].is_tool_activity());
        if agent {
            if rest.iter().any(|&i| tier[i].is_some()) {
                for &i in &rest {
                    tier[i].get_or_insert(Tier::Pinned);
                }
            } else if !rest.is_empty() {
                units.push(new_unit(rest, UnitKind::AgentTurn));
            }
        } else {
            for i in rest {
                if tier[i].is_none() {
                    units.push(new_unit(vec![i], UnitKind::Message));
                }
            }
        }
    }

    let protected_tokens = (0..n)
        .filter(|&i| tier[i].is_some())
        .fold(CONVERSATION_OVERHEAD, |a, i| a.saturating_add(costs.get(i)));
    if protected_tokens > opts.budget {
        return Err(CompactError::BudgetTooSmall {
            needed: protected_tokens,
            budget: opts.budget,
            keep_rounds: opts.keep_rounds,
        });
    }

    let mut report = CompactReport {
        budget: opts.budget,
        tokens_before: None,
        tokens_total: 0,
        messages_before: n,
        messages_after: n,
        rounds: starts.len(),
        keep_rounds: opts.keep_rounds,
        tiers: BTreeMap::new(),
        summarized: Vec::new(),
        aggregated: Vec::new(),
        recalled: Vec::new(),
        dropped: Vec::new(),
        dropped_ids: Vec::new(),
        summarizer: summarizer.version(),
        cache_hits: 0,
        cache_misses: 0,
    };

    // Does it all fit? Counted newest first, stopping as soon as it cannot.
    let mut whole = CONVERSATION_OVERHEAD;
    for i in (0..n).rev() {
        whole = whole.saturating_add(costs.get(i));
        if whole > opts.budget {
            break;
        }
    }
    if whole <= opts.budget {
        let tiers: Vec<Tier> = tier.iter().map(|t| t.unwrap_or(Tier::Verbatim)).collect();
        report.tokens_before = Some(whole);
        report.tokens_total = whole;
        report.tiers = tier_stats(&tiers, &costs.v, &[(Tier::Verbatim, 0)]);
        return Ok(Compacted {
            messages: messages.to_vec(),
            tiers,
            report,
        });
    }

    // The split: the oldest `k` units go to the aggregate, the rest are summarized. Newer detail
    // beats older breadth: units are summarized from the newest back while the aggregate keeps
    // its reserve.
    let room = opts.budget - protected_tokens;
    let nu = units.len();
    let mut msgs_before = vec![0u64; nu + 1];
    for j in 0..nu {
        msgs_before[j + 1] = msgs_before[j] + units[j].msgs.len() as u64;
    }
    let reserve = |k: usize| -> u64 {
        if k == 0 {
            0
        } else {
            // ~7 tokens a message (a ~60-token line per ten), a header, and at most a third of
            // the room: the aggregate is what gives way when space is short.
            (40 + 7 * msgs_before[k]).min((u64::from(room) / 3).max(40))
        }
    };
    // With a query, room is set aside first for the best matches to come back whole (up to a
    // quarter of the room).
    let mut hits: Vec<(u32, f32)> = Vec::new();
    if let Some(q) = opts.query.as_deref().filter(|q| !q.trim().is_empty()) {
        let mut b = Bm25Builder::default();
        for u in &units {
            let text: String = u
                .msgs
                .iter()
                .map(|&i| messages[i].text_content())
                .collect::<Vec<_>>()
                .join("\n");
            b.add(&doc_terms(&text, ""));
        }
        hits = b.finish(Bm25Params::default()).search(&query_terms(q));
        let best = hits.first().map_or(0.0, |h| h.1);
        hits.retain(|h| h.1 >= best * RECALL_MIN_SHARE);
        hits.truncate(MAX_RECALLED);
    }
    for h in &hits {
        units[h.0 as usize].count(&mut costs);
    }
    let recall_reserve = hits
        .iter()
        .map(|h| u64::from(units[h.0 as usize].verbatim))
        .sum::<u64>()
        .min(u64::from(room) / 4);
    let plan_room = u64::from(room) - recall_reserve;
    // Summaries are made newest first and only as far as they can be used: the units that end
    // up in the aggregate are never summarized one by one.
    let mut k = nu;
    let mut suffix_k = 0u64;
    while k > 0 {
        let j = k - 1;
        units[j].count(&mut costs);
        summarize_unit(&mut units[j], messages, tok, cache, summarizer, &mut report);
        let with = suffix_k + u64::from(units[j].summary_cost());
        if with + reserve(j) > plan_room {
            break;
        }
        suffix_k = with;
        k = j;
    }
    for (j, u) in units.iter_mut().enumerate() {
        u.tier = if j < k {
            Tier::Aggregated
        } else if u.summary_cost() == u.verbatim {
            Tier::Verbatim
        } else {
            Tier::Summarized
        };
    }
    let mut slack = u64::from(room).saturating_sub(suffix_k + reserve(k));

    // Recall for the query: whole messages instead of their summaries, best match first.
    for (doc, _) in hits {
        let u = &mut units[doc as usize];
        if u.tier == Tier::Verbatim {
            continue;
        }
        let now = if u.tier == Tier::Aggregated {
            0
        } else {
            u.summary_cost()
        };
        let delta = u64::from(u.verbatim - now);
        if delta <= slack {
            slack -= delta;
            u.tier = Tier::Recalled;
        }
    }
    // Newest older units back to verbatim while they fit (a contiguous recent stretch).
    for u in units[k..].iter_mut().rev() {
        if u.tier != Tier::Summarized {
            continue;
        }
        let delta = u64::from(u.verbatim - u.summary_cost());
        if delta > slack {
            break;
        }
        slack -= delta;
        u.tier = Tier::Verbatim;
    }

    // The aggregate gets whatever is left.
    let used: u64 = units
        .iter()
        .map(|u| match u.tier {
            Tier::Recalled | Tier::Verbatim => u64::from(u.verbatim),
            Tier::Summarized => u64::from(u.summary_cost()),
            _ => 0,
        })
        .sum();
    let cap = u64::from(room).saturating_sub(used);
    let agg_msgs: Vec<(usize, &Message)> = units
        .iter()
        .filter(|u| u.tier == Tier::Aggregated)
        .flat_map(|u| u.msgs.iter().map(|&i| (i, &messages[i])))
        .collect();
    let (aggregate, covered) = render_aggregate(&agg_msgs, cap, tok);
    for u in &mut units {
        if u.tier == Tier::Aggregated && !u.msgs.iter().all(|i| covered.binary_search(i).is_ok()) {
            u.tier = Tier::Dropped;
        }
    }

    // Assemble in order.
    let mut out: Vec<(Message, Tier, usize)> = Vec::with_capacity(n);
    let mut unit_of = vec![usize::MAX; n];
    for (j, u) in units.iter().enumerate() {
        for &i in &u.msgs {
            unit_of[i] = j;
        }
    }
    let first_aggregated = units
        .iter()
        .position(|u| u.tier == Tier::Aggregated)
        .map(|j| units[j].msgs[0]);
    let mut agg_tokens = 0;
    let mut aggregate = aggregate;
    for i in 0..n {
        if Some(i) == first_aggregated
            && let Some(a) = aggregate.take()
        {
            agg_tokens = message_tokens(tok, &a);
            out.push((a, Tier::Aggregated, i));
        }
        if let Some(t) = tier[i] {
            out.push((messages[i].clone(), t, i));
            continue;
        }
        let u = &units[unit_of[i]];
        tier[i] = Some(u.tier);
        match u.tier {
            Tier::Recalled | Tier::Verbatim => out.push((messages[i].clone(), u.tier, i)),
            Tier::Summarized if u.msgs[0] == i => {
                if let Some(s) = &u.summary {
                    out.push((s.clone(), Tier::Summarized, i));
                }
            }
            _ => {}
        }
    }

    // The guarantee, checked on the result itself. The plan above is exact by construction
    // (costs are additive and the aggregate was counted whole); this only guards against a
    // future mistake by giving up the oldest unprotected output first.
    let mut result: Vec<Message> = out.iter().map(|(m, _, _)| m.clone()).collect();
    let mut total = conversation_tokens(tok, &result);
    while total > opts.budget {
        let Some(pos) = out.iter().position(|(_, t, _)| !t.is_protected()) else {
            break;
        };
        let (_, t, i) = out.remove(pos);
        if t == Tier::Aggregated {
            agg_tokens = 0;
            for x in tier.iter_mut().filter(|x| **x == Some(Tier::Aggregated)) {
                *x = Some(Tier::Dropped);
            }
        } else if let Some(u) = units.get(unit_of[i]) {
            for &m in &u.msgs {
                tier[m] = Some(Tier::Dropped);
            }
        }
        result = out.iter().map(|(m, _, _)| m.clone()).collect();
        total = conversation_tokens(tok, &result);
    }

    let tiers: Vec<Tier> = tier.iter().map(|t| t.unwrap_or(Tier::Dropped)).collect();
    for u in &units {
        if tiers[u.msgs[0]] == Tier::Summarized {
            report.summarized.push(SummaryEntry {
                messages: u.msgs.clone(),
                ids: u
                    .msgs
                    .iter()
                    .filter_map(|&i| messages[i].id.clone())
                    .collect(),
                kind: match u.kind {
                    UnitKind::Message => "message",
                    UnitKind::AgentTurn => "agent_turn",
                },
                tokens_before: u.verbatim,
                tokens_after: u.summary_tokens,
                cached: u.cached,
            });
        }
    }
    for (i, t) in tiers.iter().enumerate() {
        match t {
            Tier::Aggregated => report.aggregated.push(i),
            Tier::Recalled => report.recalled.push(i),
            Tier::Dropped => {
                report.dropped.push(i);
                if let Some(id) = &messages[i].id {
                    report.dropped_ids.push(id.clone());
                }
            }
            _ => {}
        }
    }
    let summarized_after: u32 = report.summarized.iter().map(|s| s.tokens_after).sum();
    if opts.exact_stats {
        for i in 0..n {
            costs.get(i);
        }
    }
    report.tokens_before = costs
        .v
        .iter()
        .try_fold(CONVERSATION_OVERHEAD, |a, c| c.map(|c| a.saturating_add(c)));
    report.tiers = tier_stats(
        &tiers,
        &costs.v,
        &[
            (Tier::Summarized, summarized_after),
            (Tier::Aggregated, agg_tokens),
        ],
    );
    report.tokens_total = total;
    report.messages_after = result.len();
    Ok(Compacted {
        messages: result,
        tiers,
        report,
    })
}

/// Makes (or fetches) `u`'s summary message and counts it.
fn summarize_unit(
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

/// Message costs, counted on first use: on a long conversation most messages end up in the
/// aggregate, and counting them would be most of the work.
struct Costs<'a> {
    v: Vec<Option<u32>>,
    tok: &'a TokenizerSpec,
    messages: &'a [Message],
}

impl Costs<'_> {
    fn get(&mut self, i: usize) -> u32 {
        *self.v[i].get_or_insert_with(|| message_tokens(self.tok, &self.messages[i]))
    }
}

impl Unit {
    /// Counts the unit's messages (once).
    fn count(&mut self, costs: &mut Costs<'_>) {
        if self.verbatim == u32::MAX {
            self.verbatim = self
                .msgs
                .iter()
                .fold(0u32, |a, &i| a.saturating_add(costs.get(i)))
                .min(u32::MAX - 1);
            self.summary_tokens = self.verbatim;
        }
    }
}

fn new_unit(msgs: Vec<usize>, kind: UnitKind) -> Unit {
    Unit {
        msgs,
        kind,
        verbatim: u32::MAX,
        summary: None,
        summary_tokens: u32::MAX,
        cached: false,
        tier: Tier::Summarized,
    }
}

/// Per-tier figures: verbatim tiers take what their messages cost; `after` gives the others.
fn tier_stats(
    tiers: &[Tier],
    cost: &[Option<u32>],
    after: &[(Tier, u32)],
) -> BTreeMap<Tier, TierStats> {
    let mut out = BTreeMap::new();
    for t in Tier::ALL {
        let mut s = TierStats {
            tokens_before: Some(0),
            ..TierStats::default()
        };
        for (i, x) in tiers.iter().enumerate() {
            if *x == t {
                s.messages += 1;
                s.tokens_before = s
                    .tokens_before
                    .zip(cost[i])
                    .map(|(a, c)| a.saturating_add(c));
            }
        }
        if s.messages == 0 {
            continue;
        }
        s.tokens_after = match after.iter().find(|(x, _)| *x == t) {
            Some((_, a)) if matches!(t, Tier::Summarized | Tier::Aggregated) => *a,
            _ if t == Tier::Dropped => 0,
            _ => s.tokens_before.unwrap_or(0),
        };
        out.insert(t, s);
    }
    out
}

/// The aggregate message for `msgs` within `cap` tokens, and the input positions it covers.
/// Segment lines give way first (oldest first), then topic lines; with no room for a header and
/// one topic there is no aggregate.
fn render_aggregate(
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
        + u64::from(super::message::MESSAGE_OVERHEAD)
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
