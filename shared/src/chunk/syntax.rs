//! Chunking along tree-sitter syntax trees.
//!
//! One walk serves every grammar: each language only lists which node kinds are definitions
//! and which are transparent wrappers (preprocessor blocks, `extern "C"`). The siblings of one
//! level become contiguous units, each definition taking the comments and attributes right
//! above it; units too large for a chunk are opened (a class's methods, an impl's functions) or
//! split between their inner statements.

use std::cell::RefCell;

use tree_sitter::{Node, Parser};

use super::{ChunkKind, ChunkOptions, Draft, Language, LineIndex, windows};

mod grammars;
use grammars::{Grammar, grammar, ts_language};

const MAX_DEPTH: usize = 48;

thread_local! {
    // Parsers are reused per thread: creating one per file shows up in a cold index profile.
    static PARSERS: RefCell<Vec<(Language, Parser)>> = const { RefCell::new(Vec::new()) };
}

/// Parses `text` with `lang`'s grammar (one parser per language and thread, kept).
fn parse(text: &str, lang: Language) -> Option<tree_sitter::Tree> {
    PARSERS.with(|cell| {
        let mut parsers = cell.borrow_mut();
        let idx = match parsers.iter().position(|(l, _)| *l == lang) {
            Some(i) => i,
            None => {
                let mut p = Parser::new();
                p.set_language(&ts_language(lang)?).ok()?;
                parsers.push((lang, p));
                parsers.len() - 1
            }
        };
        parsers[idx].1.parse(text, None)
    })
}

/// The identifier leaves of `text`'s syntax tree (every grammar names them `identifier`,
/// `type_identifier`, `field_identifier`, `property_identifier`...), three characters or more.
pub(crate) fn identifiers(text: &str, lang: Language) -> Option<Vec<String>> {
    let tree = parse(text, lang)?;
    let mut names = Vec::new();
    let mut cursor = tree.walk();
    'walk: loop {
        let node = cursor.node();
        if node.child_count() == 0 {
            if node.kind().ends_with("identifier")
                && let Some(name) = text.get(node.byte_range())
                && name.len() >= 3
            {
                names.push(name.to_string());
            }
        } else if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    Some(names)
}

/// Chunks `text` by syntax; `None` when the grammar cannot be loaded or the parse fails.
pub(crate) fn chunk(
    text: &str,
    lang: Language,
    lines: &LineIndex,
    opts: &ChunkOptions,
) -> Option<Vec<Draft>> {
    let tree = parse(text, lang)?;
    let walker = Walker {
        text,
        lines,
        opts,
        g: grammar(lang),
    };
    let root = tree.root_node();
    let mut out = Vec::new();
    let first = walker.level(root, 0, text.len(), None, 0, &mut out);
    // Whatever precedes the first unit (a licence header, a module doc) is a block of its own.
    if first > 0 {
        out.insert(
            0,
            Draft {
                start: 0,
                end: first,
                kind: ChunkKind::Block,
                symbol: None,
            },
        );
    }
    Some(merge_small(out, opts))
}

struct Walker<'a> {
    text: &'a str,
    lines: &'a LineIndex,
    opts: &'a ChunkOptions,
    g: Grammar,
}

struct Unit<'t> {
    start: usize,
    def: Option<Node<'t>>,
}

impl<'a> Walker<'a> {
    /// Chunks the children of `node` that lie in `[start, end)`, appending drafts; returns where
    /// the first unit starts (the caller owns the bytes before it).
    fn level<'t>(
        &self,
        node: Node<'t>,
        start: usize,
        end: usize,
        prefix: Option<&str>,
        depth: usize,
        out: &mut Vec<Draft>,
    ) -> usize {
        let mut children = Vec::new();
        self.flatten(node, &mut children, depth);
        let mut units: Vec<Unit<'t>> = Vec::new();
        let mut comments: Option<usize> = None;
        let mut last_comment_end = 0;
        let push_other = |units: &mut Vec<Unit<'t>>, at: usize| {
            if !matches!(units.last(), Some(Unit { def: None, .. })) {
                units.push(Unit {
                    start: at,
                    def: None,
                });
            }
        };
        for child in children {
            if child.end_byte() <= start || child.start_byte() >= end {
                continue;
            }
            let at = self.snap(child.start_byte(), start);
            let kind = child.kind();
            if kind.contains("comment") || kind == "attribute_item" {
                if comments.is_none() || self.blank_between(last_comment_end, child.start_byte()) {
                    if let Some(c) = comments {
                        push_other(&mut units, c);
                    }
                    comments = Some(at);
                }
                last_comment_end = child.end_byte();
                continue;
            }
            if self.g.defs.contains(&kind) {
                let unit_start = match comments.take() {
                    Some(c) if !self.blank_between(last_comment_end, child.start_byte()) => c,
                    Some(c) => {
                        push_other(&mut units, c);
                        at
                    }
                    None => at,
                };
                units.push(Unit {
                    start: unit_start,
                    def: Some(child),
                });
            } else {
                let unit_start = comments.take().unwrap_or(at);
                push_other(&mut units, unit_start);
            }
        }
        if let Some(c) = comments {
            push_other(&mut units, c);
        }
        // Units must be strictly increasing; equal starts (a zero-width unit) are dropped.
        units.dedup_by(|b, a| b.start <= a.start);
        let Some(first) = units.first().map(|u| u.start.max(start)) else {
            return end;
        };
        for i in 0..units.len() {
            let u_start = units[i].start.max(start);
            let u_end = units.get(i + 1).map_or(end, |n| n.start.min(end));
            if u_end <= u_start {
                continue;
            }
            match units[i].def {
                Some(def) => self.definition(def, u_start, u_end, prefix, depth, out),
                None => self.plain(u_start, u_end, ChunkKind::Block, None, out),
            }
        }
        first
    }

    fn definition(
        &self,
        node: Node<'_>,
        start: usize,
        end: usize,
        prefix: Option<&str>,
        depth: usize,
        out: &mut Vec<Draft>,
    ) {
        let inner = unwrap(node);
        let in_container = prefix.is_some();
        let kind = kind_of(inner.kind(), in_container);
        let symbol = name_of(inner, self.text).map(|n| match prefix {
            Some(p) => format!("{p}{}{n}", self.g.separator),
            None => n,
        });
        if end - start <= self.opts.max_bytes {
            out.push(Draft {
                start,
                end,
                kind,
                symbol,
            });
            return;
        }
        if depth < MAX_DEPTH
            && let Some(body) = inner.child_by_field_name("body")
            && has_defs(body, &self.g)
        {
            let mut inner_out = Vec::new();
            let container = symbol.clone().unwrap_or_default();
            let first = self.level(
                body,
                start,
                end,
                Some(&container),
                depth + 1,
                &mut inner_out,
            );
            if first > start {
                out.push(Draft {
                    start,
                    end: first,
                    kind,
                    symbol: symbol.clone(),
                });
            }
            out.extend(inner_out);
            return;
        }
        self.split(inner, start, end, kind, &symbol, depth, out);
    }

    /// Splits an oversized definition between the children of its body, recursing into a child
    /// that is itself too large.
    #[allow(clippy::too_many_arguments)]
    fn split(
        &self,
        node: Node<'_>,
        start: usize,
        end: usize,
        kind: ChunkKind,
        symbol: &Option<String>,
        depth: usize,
        out: &mut Vec<Draft>,
    ) {
        let parent = node.child_by_field_name("body").unwrap_or(node);
        let mut cursor = parent.walk();
        let bounds: Vec<(usize, Node<'_>)> = parent
            .named_children(&mut cursor)
            .map(|c| (self.snap(c.start_byte(), start), c))
            .filter(|(b, _)| *b > start && *b < end)
            .collect();
        if bounds.is_empty() || depth >= MAX_DEPTH {
            self.plain(start, end, kind, symbol.clone(), out);
            return;
        }
        let mut cur = start;
        let mut pieces: Vec<(usize, usize, Option<Node<'_>>)> = Vec::new();
        let mut prev = start;
        let mut prev_node = None;
        for (b, n) in bounds {
            if b > prev {
                pieces.push((prev, b, prev_node));
                prev = b;
            }
            prev_node = Some(n);
        }
        pieces.push((prev, end, prev_node));
        for (ps, pe, child) in pieces {
            if pe - cur > self.opts.max_bytes && ps > cur {
                out.push(Draft {
                    start: cur,
                    end: ps,
                    kind,
                    symbol: symbol.clone(),
                });
                cur = ps;
            }
            if pe - ps > self.opts.max_bytes {
                match child {
                    Some(c) if c.named_child_count() > 0 => {
                        self.split(c, ps, pe, kind, symbol, depth + 1, out)
                    }
                    _ => self.plain(ps, pe, kind, symbol.clone(), out),
                }
                cur = pe;
            }
        }
        if end > cur {
            out.push(Draft {
                start: cur,
                end,
                kind,
                symbol: symbol.clone(),
            });
        }
    }

    /// A range with no usable structure: one chunk, or windows when too large.
    fn plain(
        &self,
        start: usize,
        end: usize,
        kind: ChunkKind,
        symbol: Option<String>,
        out: &mut Vec<Draft>,
    ) {
        if end - start <= self.opts.max_bytes {
            out.push(Draft {
                start,
                end,
                kind,
                symbol,
            });
        } else {
            out.extend(
                windows(self.text, self.lines, start, end, self.opts)
                    .into_iter()
                    .map(|mut w| {
                        w.symbol.clone_from(&symbol);
                        if kind != ChunkKind::Block {
                            w.kind = kind;
                        }
                        w
                    }),
            );
        }
    }

    fn flatten<'t>(&self, node: Node<'t>, into: &mut Vec<Node<'t>>, depth: usize) {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if depth < MAX_DEPTH && self.g.transparent.contains(&child.kind()) {
                self.flatten(child, into, depth + 1);
            } else {
                into.push(child);
            }
        }
    }

    /// Moves `pos` back to the start of its line when only indentation precedes it.
    fn snap(&self, pos: usize, floor: usize) -> usize {
        let line_start = self.lines.line_start(self.lines.line_of(pos) as usize);
        if line_start >= floor
            && self.text.as_bytes()[line_start..pos]
                .iter()
                .all(|b| *b == b' ' || *b == b'\t')
        {
            line_start
        } else {
            pos
        }
    }

    fn blank_between(&self, a: usize, b: usize) -> bool {
        a < b
            && self.text.as_bytes()[a..b]
                .iter()
                .filter(|&&c| c == b'\n')
                .count()
                >= 2
    }
}

fn has_defs(body: Node<'_>, g: &Grammar) -> bool {
    let mut cursor = body.walk();
    body.children(&mut cursor)
        .any(|c| g.defs.contains(&c.kind()))
}

/// The definition inside a wrapper (`export`, decorators, `template<...>`).
fn unwrap(node: Node<'_>) -> Node<'_> {
    let inner = match node.kind() {
        "decorated_definition" => node.child_by_field_name("definition"),
        "export_statement" => node.child_by_field_name("declaration"),
        "template_declaration" | "ambient_declaration" => {
            let n = node.named_child_count();
            (0..n)
                .rev()
                .filter_map(|i| node.named_child(i as u32))
                .find(|c| !c.kind().contains("parameter"))
        }
        _ => None,
    };
    inner.map_or(node, unwrap)
}

fn kind_of(kind: &str, in_container: bool) -> ChunkKind {
    match kind {
        k if k.contains("method") || k.contains("constructor") => ChunkKind::Method,
        k if k.contains("function") && in_container => ChunkKind::Method,
        k if k.contains("function") => ChunkKind::Function,
        "impl_item" => ChunkKind::Impl,
        k if k.contains("class") => ChunkKind::Class,
        k if k.contains("struct") || k.contains("union") || k.contains("record") => {
            ChunkKind::Struct
        }
        k if k.contains("enum") => ChunkKind::Enum,
        k if k.contains("trait") || k.contains("interface") => ChunkKind::Interface,
        "mod_item" | "namespace_definition" | "module" | "internal_module" => ChunkKind::Module,
        k if k.starts_with("type") || k.contains("type_alias") => ChunkKind::Type,
        _ => ChunkKind::Block,
    }
}

/// The name a definition introduces, when it has one.
fn name_of(node: Node<'_>, text: &str) -> Option<String> {
    fn go(node: Node<'_>, text: &str, depth: usize) -> Option<String> {
        if depth > 8 {
            return None;
        }
        match node.kind() {
            "identifier"
            | "field_identifier"
            | "type_identifier"
            | "qualified_identifier"
            | "destructor_name"
            | "operator_name"
            | "property_identifier"
            | "namespace_identifier"
            | "constant"
            | "scoped_type_identifier"
            | "generic_type"
            | "scoped_identifier" => {
                return node.utf8_text(text.as_bytes()).ok().map(str::to_string);
            }
            _ => {}
        }
        for field in ["name", "type", "declarator"] {
            if let Some(child) = node.child_by_field_name(field)
                && let Some(n) = go(child, text, depth + 1)
            {
                return Some(n);
            }
        }
        // Go's `type X struct`, JS's `const x = ...`: the name sits one level down.
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            if matches!(
                child.kind(),
                "type_spec" | "variable_declarator" | "type_alias"
            ) && let Some(n) = go(child, text, depth + 1)
            {
                return Some(n);
            }
        }
        None
    }
    let name = go(node, text, 0)?;
    let name: String = name.split_whitespace().collect::<Vec<_>>().join(" ");
    (!name.is_empty()).then(|| name.chars().take(200).collect())
}

/// Merges neighbours while one of them is below `min_bytes` and the sum stays within
/// `max_bytes`.
fn merge_small(drafts: Vec<Draft>, opts: &ChunkOptions) -> Vec<Draft> {
    let mut out: Vec<Draft> = Vec::with_capacity(drafts.len());
    for d in drafts {
        if let Some(prev) = out.last_mut() {
            let (ps, ds) = (prev.end - prev.start, d.end - d.start);
            if prev.end == d.start
                && (ps < opts.min_bytes || ds < opts.min_bytes)
                && ps + ds <= opts.max_bytes
            {
                if ds > ps {
                    prev.kind = d.kind;
                }
                prev.symbol = match (prev.symbol.take(), d.symbol) {
                    (Some(a), Some(b)) if a != b => Some(format!("{a}, {b}")),
                    (a, b) => a.or(b),
                };
                prev.end = d.end;
                continue;
            }
        }
        out.push(d);
    }
    out
}
