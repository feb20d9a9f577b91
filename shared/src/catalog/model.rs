//! One catalog entry and how its tokens are counted.

use serde::{Deserialize, Serialize};

use crate::error_code::ErrorCode;
use crate::tokens::Encoding;

/// Capability tier, ordered from weakest to strongest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Small local or nano models: simple edits, lookups.
    Small,
    /// Mid-size models: routine coding.
    Medium,
    /// Large models: multi-file work.
    Large,
    /// The strongest models available.
    Frontier,
}

/// How a model's tokens are counted. In JSON: `{"kind": "exact", "encoding"}` or
/// `{"kind": "estimate", "base", "ratio"}` ([`TokenizerJson`]).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(into = "TokenizerJson", from = "TokenizerJson")]
pub enum TokenizerSpec {
    /// The model uses this tiktoken encoding: counts are exact.
    Exact(Encoding),
    /// No public tokenizer: count with `base` and multiply by `ratio` (≥ 1, chosen high on
    /// source code), rounding up. The count is an estimate and says so.
    Estimate {
        /// The exact encoding counted with.
        base: Encoding,
        /// Conservative multiplier from `base` tokens to the model's tokens.
        ratio: f64,
    },
}

/// [`TokenizerSpec`]'s JSON: an internally tagged newtype variant of a string cannot be
/// written as one (serde wrote `{"kind": "exact", "o200k_base": null}`), so the encoding of an
/// exact tokenizer is a named field.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TokenizerJson {
    /// The model uses this tiktoken encoding: counts are exact.
    Exact {
        /// The encoding.
        encoding: Encoding,
    },
    /// Counted with `base`, multiplied by `ratio` and rounded up: an estimate.
    Estimate {
        /// The exact encoding counted with.
        base: Encoding,
        /// Conservative multiplier from `base` tokens to the model's tokens.
        ratio: f64,
    },
}

impl From<TokenizerSpec> for TokenizerJson {
    fn from(t: TokenizerSpec) -> Self {
        match t {
            TokenizerSpec::Exact(encoding) => TokenizerJson::Exact { encoding },
            TokenizerSpec::Estimate { base, ratio } => TokenizerJson::Estimate { base, ratio },
        }
    }
}

impl From<TokenizerJson> for TokenizerSpec {
    fn from(t: TokenizerJson) -> Self {
        match t {
            TokenizerJson::Exact { encoding } => TokenizerSpec::Exact(encoding),
            TokenizerJson::Estimate { base, ratio } => TokenizerSpec::Estimate { base, ratio },
        }
    }
}

impl TokenizerSpec {
    /// The encoding that is actually run.
    pub fn base(&self) -> Encoding {
        match *self {
            TokenizerSpec::Exact(e) => e,
            TokenizerSpec::Estimate { base, .. } => base,
        }
    }

    /// Whether counts are exact.
    pub fn is_exact(&self) -> bool {
        matches!(self, TokenizerSpec::Exact(_))
    }

    /// The model's token count for `text` (an upper estimate when not exact).
    pub fn count(&self, text: &str) -> u32 {
        self.scale(self.base().count(text))
    }

    /// Converts a count in the base encoding to this model's count.
    pub fn scale(&self, base_count: u32) -> u32 {
        match *self {
            TokenizerSpec::Exact(_) => base_count,
            TokenizerSpec::Estimate { ratio, .. } => {
                let scaled = (f64::from(base_count) * ratio).ceil();
                if scaled >= f64::from(u32::MAX) {
                    u32::MAX
                } else {
                    scaled as u32
                }
            }
        }
    }

    /// The largest base-encoding count whose scaled count stays within `budget`.
    pub fn base_budget(&self, budget: u32) -> u32 {
        match *self {
            TokenizerSpec::Exact(_) => budget,
            TokenizerSpec::Estimate { ratio, .. } => {
                let mut n = (f64::from(budget) / ratio).floor() as u32;
                while n > 0 && self.scale(n) > budget {
                    n -= 1;
                }
                n
            }
        }
    }

    /// A short label: `o200k_base` or `estimate(cl100k_base*1.25)`.
    pub fn label(&self) -> String {
        match *self {
            TokenizerSpec::Exact(e) => e.name().to_string(),
            TokenizerSpec::Estimate { base, ratio } => {
                format!("estimate({}*{ratio:.2})", base.name())
            }
        }
    }
}

/// A model ctxgate can budget and route for.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// Canonical id, e.g. `gpt-4o`.
    pub id: String,
    /// Who serves it: `openai`, `anthropic`, `google`, `local`...
    pub provider: String,
    /// Human name.
    pub display_name: String,
    /// Other names clients use (Ollama tags, dated snapshots).
    pub aliases: Vec<String>,
    /// Context window in tokens (prompt plus reply).
    pub context_window: u32,
    /// Longest reply the model can produce.
    pub max_output: u32,
    /// The most it accepts as input, when that is less than the window.
    pub max_input: Option<u32>,
    /// How to count its tokens.
    pub tokenizer: TokenizerSpec,
    /// Why the estimate ratio was chosen, when there is one.
    pub estimate_note: Option<String>,
    /// USD per million input tokens.
    pub input_price_per_mtok: f64,
    /// USD per million output tokens.
    pub output_price_per_mtok: f64,
    /// Capability tier.
    pub tier: Tier,
}

impl Model {
    /// The aliases a person types, as `ctxgate models` shows them: not a provider-qualified name
    /// (`openai/gpt-4o`, `Qwen/Qwen2.5-72B-Instruct`), and no longer than the id (dated
    /// snapshots are). Every alias resolves; this only chooses what is worth a column.
    pub fn typed_aliases(&self) -> impl Iterator<Item = &str> {
        self.aliases
            .iter()
            .map(String::as_str)
            .filter(|a| !a.contains('/') && a.len() <= self.id.len())
    }

    /// USD for `tokens` input tokens at list price: the one formula every cost and saving the
    /// API and the CLI report is computed with (a prompt's tokens fit a `u32`, a repository's a
    /// `u64`; both convert to `f64` exactly below 2^53).
    pub fn input_cost(&self, tokens: impl Into<u64>) -> f64 {
        tokens.into() as f64 * self.input_price_per_mtok / 1_000_000.0
    }
}

/// Errors in a catalog file or a lookup.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CatalogError {
    /// The file is not valid TOML of the catalog's schema.
    #[error("model catalog is not valid: {0}")]
    Parse(String),
    /// A model entry breaks a rule.
    #[error("model `{id}` in the catalog is invalid: {reason}")]
    Invalid {
        /// The model's id.
        id: String,
        /// What is wrong.
        reason: String,
    },
    /// Two entries claim one name.
    #[error("model name `{name}` appears twice in the catalog (first for `{first}`)")]
    Duplicate {
        /// The name.
        name: String,
        /// The model that had it first.
        first: String,
    },
    /// No model has this id or alias.
    #[error("unknown model `{name}`{}; run `ctxgate models` to list them", suggest(.suggestions))]
    UnknownModel {
        /// What was asked for.
        name: String,
        /// Closest known names.
        suggestions: Vec<String>,
    },
}

impl CatalogError {
    /// The machine-readable code every host reports for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            CatalogError::UnknownModel { .. } => ErrorCode::UnknownModel,
            _ => ErrorCode::InvalidCatalog,
        }
    }
}

fn suggest(s: &[String]) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", s.join(", "))
    }
}

/// A model as written in the TOML file, before validation.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ModelRecord {
    id: String,
    provider: String,
    #[serde(default)]
    display_name: Option<String>,
    #[serde(default)]
    aliases: Vec<String>,
    context_window: u32,
    max_output: u32,
    #[serde(default)]
    max_input: Option<u32>,
    tokenizer: String,
    #[serde(default)]
    estimate_base: Option<String>,
    #[serde(default)]
    estimate_ratio: Option<f64>,
    #[serde(default)]
    estimate_note: Option<String>,
    input_price_per_mtok: f64,
    output_price_per_mtok: f64,
    tier: Tier,
}

impl TryFrom<ModelRecord> for Model {
    type Error = CatalogError;

    fn try_from(r: ModelRecord) -> Result<Self, CatalogError> {
        let invalid = |reason: String| CatalogError::Invalid {
            id: r.id.clone(),
            reason,
        };
        if r.id.trim().is_empty() {
            return Err(invalid("empty id".into()));
        }
        if r.context_window == 0 {
            return Err(invalid("context_window must be > 0".into()));
        }
        if r.max_output >= r.context_window && r.max_output > 0 && r.context_window < 1000 {
            return Err(invalid(
                "max_output must be smaller than context_window".into(),
            ));
        }
        if !(r.input_price_per_mtok >= 0.0 && r.output_price_per_mtok >= 0.0) {
            return Err(invalid("prices must be >= 0".into()));
        }
        let tokenizer = if r.tokenizer == "estimate" {
            let base_name = r.estimate_base.as_deref().unwrap_or("cl100k_base");
            let base = Encoding::from_name(base_name)
                .ok_or_else(|| invalid(format!("unknown estimate_base `{base_name}`")))?;
            let ratio = r
                .estimate_ratio
                .ok_or_else(|| invalid("tokenizer = \"estimate\" needs estimate_ratio".into()))?;
            if !(1.0..=4.0).contains(&ratio) {
                return Err(invalid(format!(
                    "estimate_ratio {ratio} must be within 1.0..=4.0"
                )));
            }
            TokenizerSpec::Estimate { base, ratio }
        } else {
            if r.estimate_ratio.is_some() || r.estimate_base.is_some() {
                return Err(invalid(
                    "estimate_* fields need tokenizer = \"estimate\"".into(),
                ));
            }
            TokenizerSpec::Exact(Encoding::from_name(&r.tokenizer).ok_or_else(|| {
                invalid(format!(
                    "unknown tokenizer `{}` (use o200k_base, o200k_harmony, cl100k_base, p50k_base, r50k_base or estimate)",
                    r.tokenizer
                ))
            })?)
        };
        Ok(Model {
            display_name: r.display_name.clone().unwrap_or_else(|| r.id.clone()),
            id: r.id,
            provider: r.provider,
            aliases: r.aliases,
            context_window: r.context_window,
            max_output: r.max_output,
            max_input: r.max_input.filter(|&m| m < r.context_window),
            tokenizer,
            estimate_note: r.estimate_note,
            input_price_per_mtok: r.input_price_per_mtok,
            output_price_per_mtok: r.output_price_per_mtok,
            tier: r.tier,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_scaling_rounds_up_and_inverts() {
        let t = TokenizerSpec::Estimate {
            base: Encoding::Cl100kBase,
            ratio: 1.25,
        };
        assert_eq!(t.scale(4), 5);
        assert_eq!(t.scale(5), 7);
        for budget in [0, 1, 7, 100, 1001, 128_000] {
            let b = t.base_budget(budget);
            assert!(t.scale(b) <= budget);
            assert!(t.scale(b + 1) > budget || b + 1 > budget);
        }
        let exact = TokenizerSpec::Exact(Encoding::O200kBase);
        assert_eq!(exact.base_budget(77), 77);
    }

    #[test]
    fn tokenizers_are_written_with_named_fields() {
        let exact = TokenizerSpec::Exact(Encoding::O200kBase);
        let json = serde_json::to_value(exact).unwrap();
        assert_eq!(
            json,
            serde_json::json!({ "kind": "exact", "encoding": "o200k_base" })
        );
        assert_eq!(
            serde_json::from_value::<TokenizerSpec>(json).unwrap(),
            exact
        );
        let estimate = TokenizerSpec::Estimate {
            base: Encoding::Cl100kBase,
            ratio: 1.25,
        };
        let json = serde_json::to_value(estimate).unwrap();
        assert_eq!(json["kind"], "estimate");
        assert_eq!(
            serde_json::from_value::<TokenizerSpec>(json).unwrap(),
            estimate
        );
    }
}
