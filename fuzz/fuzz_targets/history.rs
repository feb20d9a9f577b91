//! History compaction: any bytes as a conversation (the OpenAI chat format), compacted under a
//! budget and a number of kept rounds taken from the first bytes. What comes back fits the budget.
#![no_main]

use ctxgate_core::catalog::TokenizerSpec;
use ctxgate_core::history::{CompactOptions, NoCache, compact, conversation_tokens, parse_bytes};
use ctxgate_core::tokens::Encoding;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [b0, b1, rounds, rest @ ..] = data else {
        return;
    };
    let Ok(conversation) = parse_bytes(rest) else {
        return;
    };
    let tok = if rounds & 0x80 == 0 {
        TokenizerSpec::Exact(Encoding::O200kBase)
    } else {
        TokenizerSpec::Estimate {
            base: Encoding::Cl100kBase,
            ratio: 1.25,
        }
    };
    let mut opts = CompactOptions::new(u32::from(u16::from_le_bytes([*b0, *b1])));
    opts.keep_rounds = usize::from(rounds & 0x07);
    if rounds & 0x40 != 0 {
        opts.query = Some("config parse error".into());
    }
    opts.exact_stats = rounds & 0x20 != 0;
    if let Ok(done) = compact(&conversation.messages, &tok, &opts, &mut NoCache) {
        let total = conversation_tokens(&tok, &done.messages);
        assert!(
            total <= opts.budget,
            "{total} tokens over a budget of {}",
            opts.budget
        );
        assert_eq!(done.report.tokens_total, total);
        assert_eq!(done.tiers.len(), conversation.messages.len());
    }
});
