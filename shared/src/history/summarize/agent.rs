//! An agent turn's summary: the facts a later step needs (files touched, commands, test counts,
//! errors, commits, decisions), because an agent resumes from facts, not from prose.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use super::text::{clip, sentences, squash};
use super::tool_args::{COMMAND_KEYS, PATH_KEYS};
use crate::history::message::{Message, Role};
use crate::secrets::redact;

struct AgentPatterns {
    tests: Regex,
    commit_out: Regex,
    commit_msg: Regex,
    error: Regex,
    decision: Regex,
    diff_file: Regex,
}

fn agent_patterns() -> &'static AgentPatterns {
    static P: OnceLock<AgentPatterns> = OnceLock::new();
    P.get_or_init(|| {
        let p = |s: &str| Regex::new(s).unwrap_or_else(|e| panic!("pattern {s}: {e}"));
        AgentPatterns {
            tests: p(r"(?i)\b(\d+) (passed|failed|errors?)\b"),
            commit_out: p(r"^\[([\w./\-]+)(?: \(root-commit\))? ([0-9a-f]{7,40})\] (.+)$"),
            commit_msg: p(r#"git commit\b.*?-(?:a?m)\s+(?:"([^"]+)"|'([^']+)'|(\S+))"#),
            error: p(
                r"^\s*(?:error(?:\[\w+\])?:|[A-Za-z]*Error\b|Traceback|thread '.*' panicked|panicked at|FAILED\b|FAIL\b|fatal:|npm ERR!|E\s{2,}\S|--- FAIL)",
            ),
            decision: p(
                r"(?i)\b(?:i'll|i will|let's|we should|we'll|decided|decision|going to|the plan|instead|chose|choose|the fix is|root cause|because)\b",
            ),
            diff_file: p(r"(?m)^(?:\+\+\+ b/|\*\*\* (?:Update|Add) File: )(\S+)"),
        }
    })
}

/// What an agent span did, gathered before rendering.
#[derive(Default)]
struct AgentFacts {
    tools: Vec<(String, u32)>,
    modified: Vec<String>,
    read: Vec<String>,
    commands: Vec<String>,
    passed: u64,
    failed: u64,
    errors: Vec<String>,
    commits: Vec<String>,
    decisions: Vec<String>,
    said: Vec<String>,
}

fn push_unique(list: &mut Vec<String>, item: String, max: usize) {
    if list.len() < max && !list.contains(&item) {
        list.push(item);
    }
}

fn tool_call_facts(facts: &mut AgentFacts, call: &Value) {
    let f = call.get("function").unwrap_or(call);
    let name = f
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("tool")
        .to_string();
    match facts.tools.iter_mut().find(|(n, _)| *n == name) {
        Some((_, c)) => *c += 1,
        None => facts.tools.push((name.clone(), 1)),
    }
    let args: Value = match f.get("arguments") {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
        Some(v) => v.clone(),
        None => Value::Null,
    };
    let lname = name.to_lowercase();
    let writes = [
        "edit", "write", "create", "patch", "replace", "insert", "apply", "save",
    ]
    .iter()
    .any(|k| lname.contains(k));
    if let Value::Object(obj) = &args {
        for k in PATH_KEYS {
            if let Some(p) = obj.get(*k).and_then(Value::as_str) {
                let p = clip(&redact(p), 160);
                if writes {
                    push_unique(&mut facts.modified, p, 30);
                } else {
                    push_unique(&mut facts.read, p, 12);
                }
            }
        }
        for k in COMMAND_KEYS {
            let cmd = match obj.get(*k) {
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Array(a)) => Some(
                    a.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                _ => None,
            };
            if let Some(c) = cmd {
                command_facts(facts, &c);
            }
        }
    }
    let raw = match &args {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    for c in agent_patterns().diff_file.captures_iter(&raw) {
        if let Some(m) = c.get(1) {
            push_unique(&mut facts.modified, clip(&redact(m.as_str()), 160), 30);
        }
    }
}

fn command_facts(facts: &mut AgentFacts, cmd: &str) {
    let cmd = redact(cmd);
    let one = squash(&cmd);
    if let Some(c) = agent_patterns().commit_msg.captures(&one)
        && let Some(m) = c.get(1).or(c.get(2)).or(c.get(3))
    {
        push_unique(&mut facts.commits, clip(m.as_str(), 120), 8);
    }
    push_unique(&mut facts.commands, clip(&one, 120), 12);
}

fn output_facts(facts: &mut AgentFacts, text: &str) {
    let text = redact(text);
    let p = agent_patterns();
    for line in text.lines() {
        let has_counts = line.contains("passed") || line.contains("failed");
        if has_counts
            && (line.contains("test result")
                || line.contains("==")
                || line.contains("Tests:")
                || line.contains(" in ")
                || line.trim_start().starts_with(char::is_numeric))
        {
            for c in p.tests.captures_iter(line) {
                let n: u64 = c[1].parse().unwrap_or(0);
                match &c[2] {
                    "passed" => facts.passed += n,
                    _ => facts.failed += n,
                }
            }
        }
        if let Some(c) = p.commit_out.captures(line.trim()) {
            push_unique(
                &mut facts.commits,
                format!("{} {}", &c[2], clip(&c[3], 100)),
                8,
            );
        }
        if p.error.is_match(line) {
            push_unique(&mut facts.errors, clip(line.trim(), 160), 4);
        }
    }
}

fn assistant_text_facts(facts: &mut AgentFacts, text: &str) {
    let clean = redact(text);
    let p = agent_patterns();
    for s in sentences(&clean) {
        if s.starts_with("[code:") {
            continue;
        }
        if p.decision.is_match(&s) {
            push_unique(&mut facts.decisions, clip(&s, 200), 4);
        } else {
            push_unique(&mut facts.said, clip(&s, 200), 2);
        }
    }
}

/// The summary of an assistant turn that used tools (the assistant and tool messages of one
/// round, in order).
pub fn summarize_agent_span(messages: &[&Message]) -> String {
    let mut facts = AgentFacts::default();
    for m in messages {
        match m.role {
            Role::Tool | Role::Function => output_facts(&mut facts, &m.text_content()),
            _ => {
                assistant_text_facts(&mut facts, &m.text_content());
                if let Some(Value::Array(calls)) = &m.tool_calls {
                    for c in calls {
                        tool_call_facts(&mut facts, c);
                    }
                }
                if let Some(fc) = m.extra.get("function_call") {
                    tool_call_facts(&mut facts, fc);
                }
            }
        }
    }
    let mut out = format!("[summarized agent turn, {} messages]", messages.len());
    let list = |items: &[String]| items.join(", ");
    if !facts.said.is_empty() {
        out.push_str("\nSaid: ");
        out.push_str(&facts.said.join(" "));
    }
    if !facts.tools.is_empty() {
        let t: Vec<String> = facts
            .tools
            .iter()
            .map(|(n, c)| {
                if *c > 1 {
                    format!("{n}×{c}")
                } else {
                    n.clone()
                }
            })
            .collect();
        out.push_str("\nTools: ");
        out.push_str(&t.join(", "));
    }
    if !facts.modified.is_empty() {
        out.push_str("\nFiles modified: ");
        out.push_str(&list(&facts.modified));
    }
    if !facts.read.is_empty() {
        out.push_str("\nFiles read: ");
        out.push_str(&list(&facts.read));
    }
    if !facts.commands.is_empty() {
        out.push_str("\nCommands: ");
        let c: Vec<String> = facts.commands.iter().map(|c| format!("`{c}`")).collect();
        out.push_str(&c.join("; "));
    }
    if facts.passed + facts.failed > 0 {
        out.push_str(&format!(
            "\nTests: {} passed, {} failed",
            facts.passed, facts.failed
        ));
    }
    if !facts.errors.is_empty() {
        out.push_str("\nErrors: ");
        out.push_str(&facts.errors.join(" | "));
    }
    if !facts.commits.is_empty() {
        out.push_str("\nCommits: ");
        out.push_str(&list(&facts.commits));
    }
    if !facts.decisions.is_empty() {
        out.push_str("\nDecisions: ");
        out.push_str(&facts.decisions.join(" "));
    }
    // Belt and braces: nothing assembled above may re-form a secret.
    redact(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_span_keeps_what_an_agent_needs() {
        let call = serde_json::json!([
            {"id": "1", "type": "function", "function": {"name": "edit_file", "arguments": "{\"path\": \"src/lib.rs\", \"old\": \"a\", \"new\": \"b\"}"}},
            {"id": "2", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"cargo test && git commit -am 'fix parser'\"}"}}
        ]);
        let mut a = Message::text(
            Role::Assistant,
            "The root cause is an off-by-one in the parser. I'll fix it.",
        );
        a.tool_calls = Some(call);
        let t = Message::text(
            Role::Tool,
            "running 5 tests\nerror[E0308]: mismatched types\n  --> src/lib.rs:3\ntest result: FAILED. 4 passed; 1 failed; 0 ignored\n[main 1a2b3c4] fix parser\nexport AWS_KEY=AKIAIOSFODNN7EXAMPLE",
        );
        let s = summarize_agent_span(&[&a, &t]);
        for want in [
            "Files modified: src/lib.rs",
            "cargo test",
            "Tests: 4 passed, 1 failed",
            "error[E0308]: mismatched types",
            "fix parser",
            "1a2b3c4",
            "root cause",
        ] {
            assert!(s.contains(want), "missing {want}: {s}");
        }
        assert!(!s.contains("AKIAIOSFODNN7EXAMPLE"));
    }
}
