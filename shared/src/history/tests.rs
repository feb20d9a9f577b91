//! Compaction's guarantees: the budget, the protected turns, the secrets.

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::catalog::TokenizerSpec;
use crate::tokens::Encoding;

fn o200k() -> TokenizerSpec {
    TokenizerSpec::Exact(Encoding::O200kBase)
}

fn chat(n: usize) -> Vec<Message> {
    let mut v = vec![Message::text(Role::System, "You are a helpful assistant.")];
    for i in 0..n {
        v.push(Message::text(
            Role::User,
            format!(
                "Question {i}: how do I configure the service number {i}? We run it on host alpha-{i} with port {}. {}",
                8000 + i,
                "Some more context about the deployment follows here. ".repeat(i % 5 + 1)
            ),
        ));
        v.push(Message::text(
            Role::Assistant,
            format!(
                "Answer {i}: set `port = {}` in config-{i}.toml and restart. {}",
                8000 + i,
                "Further explanation about why this works is given. ".repeat(i % 7 + 1)
            ),
        ));
    }
    v
}

fn agent_run(steps: usize) -> Vec<Message> {
    let mut v = vec![
        Message::text(Role::System, "You are a coding agent."),
        Message::text(Role::User, "Fix the failing parser tests."),
    ];
    for s in 0..steps {
        let mut a = Message::text(Role::Assistant, format!("Step {s}: I'll run the tests."));
        a.tool_calls = Some(json!([{"id": format!("c{s}"), "type": "function",
            "function": {"name": "bash", "arguments": format!("{{\"command\": \"cargo test -p parser{s}\"}}")}}]));
        v.push(a);
        let mut t = Message::text(
            Role::Tool,
            format!(
                "running 10 tests\nerror[E0{s:03}]: something broke in src/p{s}.rs\ntest result: FAILED. 9 passed; 1 failed\n{}",
                "log line\n".repeat(30)
            ),
        );
        t.tool_call_id = Some(format!("c{s}"));
        v.push(t);
    }
    v.push(Message::text(Role::Assistant, "All fixed."));
    v
}

#[test]
fn a_conversation_that_fits_is_unchanged() {
    let msgs = chat(3);
    let c = compact(&msgs, &o200k(), &CompactOptions::new(100_000), &mut NoCache).unwrap();
    assert_eq!(c.messages, msgs);
    assert!(c.report.dropped.is_empty() && c.report.summarized.is_empty());
    assert_eq!(c.report.tokens_total, conversation_tokens(&o200k(), &msgs));
}

#[test]
fn tiers_follow_age_and_budget_holds() {
    let msgs = chat(60);
    let full = conversation_tokens(&o200k(), &msgs);
    for budget in [900, 2000, 4000, full / 2] {
        let c = compact(&msgs, &o200k(), &CompactOptions::new(budget), &mut NoCache).unwrap();
        assert!(c.report.tokens_total <= budget);
        assert_eq!(
            conversation_tokens(&o200k(), &c.messages),
            c.report.tokens_total
        );
        // The last three rounds (six messages) are verbatim, at the end.
        assert_eq!(&c.messages[c.messages.len() - 6..], &msgs[msgs.len() - 6..]);
        assert_eq!(c.messages[0], msgs[0]);
        // Older tiers sit on older messages.
        let rank = |t: Tier| match t {
            Tier::Verbatim => 0,
            Tier::Summarized => 1,
            Tier::Aggregated => 2,
            Tier::Dropped => 3,
            _ => -1,
        };
        let ranks: Vec<i32> = c
            .tiers
            .iter()
            .map(|t| rank(*t))
            .filter(|r| *r >= 0)
            .collect();
        assert!(
            ranks.windows(2).all(|w| w[0] >= w[1]),
            "{budget}: {ranks:?}"
        );
    }
}

#[test]
fn too_small_a_budget_says_what_is_needed() {
    let msgs = chat(10);
    let e = compact(&msgs, &o200k(), &CompactOptions::new(50), &mut NoCache).unwrap_err();
    let CompactError::BudgetTooSmall { needed, .. } = e else {
        panic!("{e}")
    };
    assert!(needed > 50);
    assert!(e.to_string().contains(&needed.to_string()));
    // Exactly the protected size is enough.
    let c = compact(&msgs, &o200k(), &CompactOptions::new(needed), &mut NoCache).unwrap();
    assert!(c.report.tokens_total <= needed);
}

#[test]
fn agent_turns_keep_their_facts() {
    let msgs = agent_run(40);
    let c = compact(&msgs, &o200k(), &CompactOptions::new(3000), &mut NoCache).unwrap();
    assert!(c.report.tokens_total <= 3000);
    let turns: Vec<&SummaryEntry> = c
        .report
        .summarized
        .iter()
        .filter(|s| s.kind == "agent_turn")
        .collect();
    assert!(!turns.is_empty(), "{:?}", c.report);
    let text: String = c.messages.iter().map(|m| m.text_content()).collect();
    assert!(text.contains("9 passed, 1 failed"));
    assert!(text.contains("cargo test -p parser"));
    // No tool message is left without its call.
    for (i, m) in c.messages.iter().enumerate() {
        if m.role == Role::Tool {
            let prev = &c.messages[i - 1];
            assert!(prev.role == Role::Tool || prev.tool_calls.is_some());
        }
    }
}

#[test]
fn a_query_brings_old_messages_back_whole() {
    let mut msgs = chat(40);
    msgs[5] = Message::text(
        Role::User,
        "Remember: the staging database password rotation happens every zanzibar quarter, handled by team Orion.",
    );
    let mut opts = CompactOptions::new(2500);
    opts.query = Some("when does the zanzibar rotation happen?".into());
    let c = compact(&msgs, &o200k(), &opts, &mut NoCache).unwrap();
    assert!(c.report.recalled.contains(&5), "{:?}", c.report.recalled);
    assert!(c.messages.contains(&msgs[5]));
    assert!(c.report.tokens_total <= 2500);
}

#[test]
fn summaries_are_cached_by_content() {
    let msgs = chat(40);
    let mut cache = MemoryCache::default();
    let opts = CompactOptions::new(3000);
    let a = compact(&msgs, &o200k(), &opts, &mut cache).unwrap();
    assert!(a.report.cache_misses > 0 && a.report.cache_hits == 0);
    let b = compact(&msgs, &o200k(), &opts, &mut cache).unwrap();
    assert_eq!(b.report.cache_misses, 0);
    assert_eq!(a.messages, b.messages);
}

#[test]
fn pinned_messages_survive() {
    let mut msgs = chat(50);
    msgs[3].pinned = true;
    let c = compact(&msgs, &o200k(), &CompactOptions::new(1500), &mut NoCache).unwrap();
    assert!(c.messages.contains(&msgs[3]));
    assert_eq!(c.tiers[3], Tier::Pinned);
}

#[test]
fn estimated_tokenizers_hold_the_budget() {
    let tok = TokenizerSpec::Estimate {
        base: Encoding::Cl100kBase,
        ratio: 1.3,
    };
    let msgs = chat(50);
    let c = compact(&msgs, &tok, &CompactOptions::new(3000), &mut NoCache).unwrap();
    assert!(conversation_tokens(&tok, &c.messages) <= 3000);
}

const SECRETS: [&str; 6] = [
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "sk-proj-abc123DEF456ghi789JKL012mno",
    "xoxb-1234567890-abcdefghij",
    "hunter2hunter2",
    "MIIEowIBAAKCAQEAsecretkeymaterial",
];

fn secret_text(i: usize) -> String {
    match i {
        4 => format!("password={}", SECRETS[4]),
        5 => format!(
            "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
            SECRETS[5]
        ),
        _ => SECRETS[i].to_string(),
    }
}

fn arb_message() -> impl Strategy<Value = Message> {
    let role = prop_oneof![Just(Role::User), Just(Role::Assistant), Just(Role::Tool)];
    (
        role,
        proptest::collection::vec("[a-zA-Z0-9 ,.?!:=/_\\-]{0,40}", 0..12),
        proptest::option::of(0..SECRETS.len()),
        any::<bool>(),
        0u8..10,
    )
        .prop_map(|(role, words, secret, calls, pin)| {
            let mut text = words.join(". ");
            if let Some(s) = secret {
                text.push_str(" here it is: ");
                text.push_str(&secret_text(s));
                text.push_str(" ok.");
            }
            let mut m = Message::text(role, text);
            if role == Role::Assistant && calls {
                m.tool_calls = Some(json!([{"id": "x", "type": "function", "function":
                    {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]));
            }
            if role == Role::Tool {
                m.tool_call_id = Some("x".into());
            }
            m.pinned = pin == 0;
            m
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The budget is never exceeded, protected messages come out verbatim and in order, and no
    /// secret survives into anything ctxgate wrote itself.
    #[test]
    fn guarantees(
        system in proptest::option::of("[a-z ]{0,60}"),
        body in proptest::collection::vec(arb_message(), 1..60),
        keep in 0usize..4,
        extra in 0u32..3000,
        query in proptest::option::of("[a-z ]{1,20}"),
        exact_stats in any::<bool>(),
    ) {
        let mut msgs = Vec::new();
        if let Some(s) = system {
            msgs.push(Message::text(Role::System, s));
        }
        msgs.extend(body);
        let tok = o200k();
        let opts = CompactOptions { budget: 1, keep_rounds: keep, query: query.clone(), exact_stats };
        let needed = match compact(&msgs, &tok, &opts, &mut NoCache) {
            Ok(c) => { prop_assert!(c.report.tokens_total <= 1); return Ok(()); }
            Err(CompactError::BudgetTooSmall { needed, .. }) => needed,
            Err(e) => return Err(TestCaseError::fail(e.to_string())),
        };
        let budget = needed + extra;
        let opts = CompactOptions { budget, keep_rounds: keep, query, exact_stats };
        let c = compact(&msgs, &tok, &opts, &mut NoCache).unwrap();
        if exact_stats {
            prop_assert_eq!(c.report.tokens_before, Some(conversation_tokens(&tok, &msgs)));
        }
        prop_assert!(conversation_tokens(&tok, &c.messages) <= budget);
        prop_assert_eq!(conversation_tokens(&tok, &c.messages), c.report.tokens_total);
        // Protected messages appear verbatim, in their order.
        let protected: Vec<&Message> = msgs.iter().zip(&c.tiers)
            .filter(|(_, t)| t.is_protected()).map(|(m, _)| m).collect();
        let mut it = c.messages.iter();
        for p in &protected {
            prop_assert!(it.any(|m| m == *p), "protected message missing");
        }
        // Every system message is protected.
        for (m, t) in msgs.iter().zip(&c.tiers) {
            if m.role == Role::System { prop_assert_eq!(*t, Tier::System); }
            if m.pinned { prop_assert!(t.is_protected()); }
        }
        // Secrets: none in any message that is not an input message kept whole.
        for m in &c.messages {
            if msgs.contains(m) { continue; }
            let text = m.text_content();
            for s in SECRETS {
                prop_assert!(!text.contains(s), "secret {} in summary {}", s, text);
            }
        }
    }
}

#[test]
fn huge_and_empty_messages_are_handled() {
    let mut msgs = vec![
        Message::text(Role::User, ""),
        Message::text(Role::Assistant, "x".repeat(200_000)),
        Message::text(
            Role::User,
            "word salad with numbers 42 and paths src/a.rs. ".repeat(4_000),
        ),
    ];
    msgs.extend(chat(10));
    let c = compact(&msgs, &o200k(), &CompactOptions::new(3000), &mut NoCache).unwrap();
    assert!(c.report.tokens_total <= 3000);
    assert_eq!(
        conversation_tokens(&o200k(), &c.messages),
        c.report.tokens_total
    );
}

/// A stand-in for a model: its summary depends on what it is given.
struct FirstWords {
    calls: usize,
    mode: &'static str,
}

impl Summarizer for FirstWords {
    fn version(&self) -> String {
        format!("first-words/{}", self.mode)
    }
    fn summarize(&mut self, input: &SummaryInput<'_>) -> Option<String> {
        self.calls += 1;
        let text = render_for_summary(input);
        match self.mode {
            "short" => Some(format!(
                "LLM: {}",
                text.split_whitespace()
                    .take(6)
                    .collect::<Vec<_>>()
                    .join(" ")
            )),
            "chatty" => Some("blah ".repeat(2000)),
            "leaky" => Some(format!("the key is {}", SECRETS[0])),
            _ => None,
        }
    }
}

#[test]
fn other_summarizers_are_used_within_limits() {
    let msgs = chat(40);
    let opts = CompactOptions::new(2500);
    let mut cache = MemoryCache::default();
    let mut s = FirstWords {
        calls: 0,
        mode: "short",
    };
    let c = compact_with(&msgs, &o200k(), &opts, &mut cache, &mut s).unwrap();
    assert!(s.calls > 0);
    assert_eq!(c.report.summarizer, "first-words/short");
    assert!(
        c.messages
            .iter()
            .any(|m| m.text_content().starts_with("LLM: "))
    );
    assert!(c.report.tokens_total <= 2500);
    // Cached under its own version: a second run asks nothing; the extractive one misses.
    let mut again = FirstWords {
        calls: 0,
        mode: "short",
    };
    compact_with(&msgs, &o200k(), &opts, &mut cache, &mut again).unwrap();
    assert_eq!(again.calls, 0);
    let e = compact(&msgs, &o200k(), &opts, &mut cache).unwrap();
    assert!(e.report.cache_misses > 0);
    // Too long: the extractive summary is used. A secret: redacted. None: extractive.
    for mode in ["chatty", "leaky", "none"] {
        let mut s = FirstWords { calls: 0, mode };
        let c = compact_with(&msgs, &o200k(), &opts, &mut NoCache, &mut s).unwrap();
        let text: String = c.messages.iter().map(|m| m.text_content()).collect();
        assert!(!text.contains("blah blah blah"), "{mode}");
        assert!(!text.contains(SECRETS[0]), "{mode}");
        assert!(c.report.tokens_total <= 2500);
    }
}

#[test]
fn what_a_model_is_shown_has_no_secrets() {
    let m = Message::text(Role::User, format!("deploy with {}", secret_text(0)));
    let mut a = Message::text(Role::Assistant, "ok");
    a.tool_calls = Some(json!([{"id": "1", "type": "function", "function":
        {"name": "bash", "arguments": format!("{{\"command\": \"export TOKEN={}\"}}", SECRETS[1])}}]));
    let parts = [&m, &a];
    let input = SummaryInput {
        kind: SummaryKind::AgentTurn,
        messages: &parts,
        prev: None,
        next: None,
        extractive: "",
    };
    let shown = render_for_summary(&input);
    assert!(shown.contains("deploy with") && shown.contains("bash("));
    assert!(
        !shown.contains(SECRETS[0]) && !shown.contains(SECRETS[1]),
        "{shown}"
    );
}
