//! The model catalog: which models exist, how big their windows are, how to count their tokens
//! and what they cost.
//!
//! The catalog is data (`data/models.toml`), compiled in so that a laptop with no network knows
//! every model, and overridable: a deployment or a user merges its own file of the same schema
//! over it ([`Catalog::merge`]), replacing models by id and adding new ones.
//!
//! Names are resolved here, once, for every host: the CLI's `--model`, the HTTP API's and MCP's
//! `model` field all go through [`Catalog::resolve`]. Besides its id, a model answers to its
//! aliases: dated snapshots, Ollama tags, router names, and the short names people type
//! (`sonnet`, `gpt`, `gemini`, `llama3`), which the catalog file gives to the newest model of
//! each family.

mod budget;
mod model;

pub use budget::{
    BudgetError, BudgetPolicy, DEFAULT_BUDGET, MIN_BUDGET, ModelBudget, ResolvedBudget,
    default_budget_warning, resolve_budget,
};
pub use model::{CatalogError, Model, Tier, TokenizerSpec};

use serde::Deserialize;

/// The built-in catalog's source.
pub const BUILTIN_TOML: &str = include_str!("../../data/models.toml");

/// A validated set of models, looked up by id or alias (case-insensitive).
#[derive(Clone, Debug)]
pub struct Catalog {
    models: Vec<Model>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogFile {
    #[serde(default)]
    model: Vec<model::ModelRecord>,
}

impl Catalog {
    /// The compiled-in catalog.
    pub fn builtin() -> Self {
        // The built-in file is checked by a unit test, so this cannot fail in a released build.
        Self::from_toml(BUILTIN_TOML).unwrap_or_else(|e| panic!("built-in catalog is invalid: {e}"))
    }

    /// A catalog of already validated models, such as [`Catalog::models`] of another one sent
    /// as JSON: the Worker takes the built-in catalog in that form, prepared by its build
    /// script, because parsing the TOML took a fresh isolate's first request ~20 ms of CPU.
    /// Only uniqueness is checked again.
    pub fn from_models(models: Vec<Model>) -> Result<Self, CatalogError> {
        let catalog = Self { models };
        catalog.check_unique()?;
        Ok(catalog)
    }

    /// Parses and validates a catalog file.
    pub fn from_toml(text: &str) -> Result<Self, CatalogError> {
        let file: CatalogFile =
            toml::from_str(text).map_err(|e| CatalogError::Parse(e.to_string()))?;
        let models = file
            .model
            .into_iter()
            .map(Model::try_from)
            .collect::<Result<Vec<_>, _>>()?;
        let catalog = Self { models };
        catalog.check_unique()?;
        Ok(catalog)
    }

    /// This catalog with `other`'s models laid over it: same id replaces, new ids are added, and
    /// an alias `other` gives moves to its model, so that a user's newer model can take a short
    /// name such as `sonnet` from the built-in one. An alias that is another model's id is
    /// still refused.
    pub fn merge(mut self, other: Catalog) -> Result<Self, CatalogError> {
        for m in other.models {
            for base in self
                .models
                .iter_mut()
                .filter(|x| !x.id.eq_ignore_ascii_case(&m.id))
            {
                base.aliases
                    .retain(|a| !m.aliases.iter().any(|n| n.eq_ignore_ascii_case(a)));
            }
            match self
                .models
                .iter_mut()
                .find(|x| x.id.eq_ignore_ascii_case(&m.id))
            {
                Some(slot) => *slot = m,
                None => self.models.push(m),
            }
        }
        self.check_unique()?;
        Ok(self)
    }

    /// All models, in file order.
    pub fn models(&self) -> &[Model] {
        &self.models
    }

    /// Finds a model by id or alias, ignoring case.
    pub fn get(&self, name: &str) -> Option<&Model> {
        let name = name.trim();
        self.models.iter().find(|m| {
            m.id.eq_ignore_ascii_case(name)
                || m.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
        })
    }

    /// Finds a model, or says which names come closest.
    pub fn resolve(&self, name: &str) -> Result<&Model, CatalogError> {
        self.get(name).ok_or_else(|| CatalogError::UnknownModel {
            name: name.to_string(),
            suggestions: self.suggest(name),
        })
    }

    /// Up to three names close to `name`, one per model, closest first. Names are compared
    /// without case and separators, so `gpt5` and `claude sonnet` find `gpt-5` and
    /// `claude-sonnet`.
    fn suggest(&self, name: &str) -> Vec<String> {
        let needle = comparable(name);
        let mut best: Vec<(usize, &str)> = self
            .models
            .iter()
            .filter_map(|m| {
                std::iter::once(m.id.as_str())
                    .chain(m.aliases.iter().map(String::as_str))
                    .map(|cand| (edit_distance(&needle, &comparable(cand)), cand))
                    .min()
            })
            .collect();
        best.sort();
        best.into_iter()
            .filter(|(d, _)| *d <= needle.len().max(4) / 2 + 1)
            .take(3)
            .map(|(_, c)| c.to_string())
            .collect()
    }

    fn check_unique(&self) -> Result<(), CatalogError> {
        let mut seen = std::collections::HashMap::new();
        for m in &self.models {
            for name in std::iter::once(&m.id).chain(m.aliases.iter()) {
                if let Some(owner) = seen.insert(name.to_ascii_lowercase(), m.id.clone())
                    && (owner != m.id || name != &m.id)
                {
                    return Err(CatalogError::Duplicate {
                        name: name.clone(),
                        first: owner,
                    });
                }
            }
        }
        Ok(())
    }
}

/// A name as compared for suggestions: lower case, without the separators people vary.
fn comparable(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '-' | '_' | '.' | ':' | ' ' | '/'))
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_as_json_make_the_same_catalog() {
        let c = Catalog::builtin();
        let json = serde_json::to_vec(c.models()).unwrap();
        let back = Catalog::from_models(serde_json::from_slice(&json).unwrap()).unwrap();
        assert_eq!(back.models(), c.models());
        let mut twice = c.models().to_vec();
        twice.push(twice[0].clone());
        assert!(matches!(
            Catalog::from_models(twice),
            Err(CatalogError::Duplicate { .. })
        ));
    }

    #[test]
    fn builtin_catalog_is_valid_and_has_the_seed_models() {
        let c = Catalog::builtin();
        for name in [
            "qwen2.5-coder:7b",
            "qwen2.5-coder:32b",
            "llama3.1:70b",
            "deepseek-coder:33b",
            "codellama:34b",
            "gpt-4o",
            "gpt-4o-mini",
        ] {
            assert!(c.get(name).is_some(), "missing {name}");
        }
        for provider in ["openai", "anthropic", "google"] {
            assert!(
                c.models().iter().any(|m| m.provider == provider),
                "no {provider} model"
            );
        }
        let gpt4o = c.resolve("GPT-4o").unwrap();
        assert_eq!(
            gpt4o.tokenizer,
            TokenizerSpec::Exact(crate::tokens::Encoding::O200kBase)
        );
        let claude = c
            .models()
            .iter()
            .find(|m| m.provider == "anthropic")
            .unwrap();
        assert!(matches!(claude.tokenizer, TokenizerSpec::Estimate { .. }));
    }

    #[test]
    fn unknown_models_get_suggestions() {
        let c = Catalog::builtin();
        match c.resolve("gpt-4oo") {
            Err(CatalogError::UnknownModel { suggestions, .. }) => {
                assert!(suggestions.iter().any(|s| s == "gpt-4o"), "{suggestions:?}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn short_names_name_the_newest_of_their_family() {
        let c = Catalog::builtin();
        for (name, id) in [
            ("sonnet", "claude-sonnet-5-5"),
            ("opus", "claude-opus-5-5"),
            ("haiku", "claude-haiku-5-5"),
            ("fable", "claude-fable-5-2"),
            ("claude", "claude-sonnet-5-5"),
            ("gpt", "gpt-6.1-sol"),
            ("gpt-mini", "gpt-5-mini"),
            ("gpt-oss", "gpt-oss-20b"),
            ("gemini", "gemini-3.6-flash"),
            ("gemini-flash", "gemini-3.6-flash"),
            ("gemini-pro", "gemini-3.1-pro-preview"),
            ("gemini-flash-lite", "gemini-3.5-flash-lite"),
            ("llama3", "llama-3.3-70b-instruct"),
            ("llama", "llama-3.3-70b-instruct"),
            ("codellama", "codellama-34b-instruct"),
            ("qwen", "qwen2.5-72b-instruct"),
            ("deepseek", "deepseek-coder-33b-instruct"),
            ("Sonnet", "claude-sonnet-5-5"),
        ] {
            assert_eq!(c.resolve(name).map(|m| m.id.as_str()), Ok(id), "{name}");
        }
        // The file lists a family newest first, so the short name names the family's first
        // model: a newer model added above its predecessor without taking the name fails here.
        for (name, family) in [
            ("sonnet", "claude-sonnet-"),
            ("opus", "claude-opus-"),
            ("haiku", "claude-haiku-"),
            ("fable", "claude-fable-"),
            ("gpt", "gpt-"),
            ("gemini", "gemini-"),
            ("gemini-pro", "-pro"),
            ("gemini-flash-lite", "-flash-lite"),
            ("llama3", "llama-3"),
        ] {
            let first = c.models().iter().find(|m| m.id.contains(family)).unwrap();
            assert_eq!(c.get(name).unwrap().id, first.id, "{name}");
        }
        let sonnet = c.get("sonnet").unwrap();
        let shown: Vec<&str> = sonnet.typed_aliases().collect();
        assert!(
            shown.contains(&"sonnet") && shown.contains(&"claude-sonnet"),
            "{shown:?}"
        );
        assert!(!shown.iter().any(|a| a.contains('/')), "{shown:?}");
    }

    #[test]
    fn suggestions_include_aliases_and_forgive_separators() {
        let c = Catalog::builtin();
        let suggested = |name: &str| match c.resolve(name) {
            Err(CatalogError::UnknownModel { suggestions, .. }) => suggestions,
            other => panic!("{name}: {other:?}"),
        };
        assert!(suggested("sonet").contains(&"sonnet".to_string()));
        assert!(suggested("gpt5").contains(&"gpt-5".to_string()));
        assert!(suggested("claude sonnet").contains(&"claude-sonnet".to_string()));
        assert!(suggested("gemnii").contains(&"gemini".to_string()));
        assert!(suggested("mistral-large").len() <= 3);
    }

    #[test]
    fn a_laid_over_model_takes_the_short_name() {
        let user = Catalog::from_toml(
            r#"
            [[model]]
            id = "claude-sonnet-9"
            provider = "anthropic"
            aliases = ["sonnet", "claude-sonnet"]
            context_window = 2000000
            max_output = 128000
            tokenizer = "estimate"
            estimate_ratio = 1.8
            input_price_per_mtok = 2.0
            output_price_per_mtok = 10.0
            tier = "frontier"
            "#,
        )
        .unwrap();
        let merged = Catalog::builtin().merge(user).unwrap();
        assert_eq!(merged.resolve("sonnet").unwrap().id, "claude-sonnet-9");
        assert_eq!(merged.resolve("claude").unwrap().id, "claude-sonnet-5-5");
        assert_eq!(
            merged.resolve("claude-sonnet-5.5").unwrap().id,
            "claude-sonnet-5-5"
        );
        // An id is not an alias to move: claiming one is still a clash.
        let thief = Catalog::from_toml(
            r#"
            [[model]]
            id = "mine"
            provider = "local"
            aliases = ["gpt-4o"]
            context_window = 8192
            max_output = 1024
            tokenizer = "cl100k_base"
            input_price_per_mtok = 0.0
            output_price_per_mtok = 0.0
            tier = "small"
            "#,
        )
        .unwrap();
        assert!(matches!(
            Catalog::builtin().merge(thief),
            Err(CatalogError::Duplicate { .. })
        ));
    }

    #[test]
    fn merge_replaces_and_adds() {
        let base = Catalog::builtin();
        let n = base.models().len();
        let user = Catalog::from_toml(
            r#"
            [[model]]
            id = "gpt-4o"
            provider = "openai"
            context_window = 1000
            max_output = 100
            tokenizer = "o200k_base"
            input_price_per_mtok = 1.0
            output_price_per_mtok = 2.0
            tier = "large"

            [[model]]
            id = "my-local"
            provider = "local"
            aliases = ["mine:latest"]
            context_window = 8192
            max_output = 1024
            tokenizer = "estimate"
            estimate_base = "cl100k_base"
            estimate_ratio = 1.3
            input_price_per_mtok = 0.0
            output_price_per_mtok = 0.0
            tier = "small"
            "#,
        )
        .unwrap();
        let merged = base.merge(user).unwrap();
        assert_eq!(merged.models().len(), n + 1);
        assert_eq!(merged.resolve("gpt-4o").unwrap().context_window, 1000);
        assert_eq!(merged.resolve("MINE:latest").unwrap().id, "my-local");
    }

    #[test]
    fn bad_files_are_refused() {
        assert!(matches!(
            Catalog::from_toml("[[model]]\nid = 3"),
            Err(CatalogError::Parse(_))
        ));
        let dup = r#"
            [[model]]
            id = "a"
            provider = "x"
            context_window = 10
            max_output = 1
            tokenizer = "o200k_base"
            input_price_per_mtok = 0.0
            output_price_per_mtok = 0.0
            tier = "small"
            [[model]]
            id = "b"
            aliases = ["A"]
            provider = "x"
            context_window = 10
            max_output = 1
            tokenizer = "o200k_base"
            input_price_per_mtok = 0.0
            output_price_per_mtok = 0.0
            tier = "small"
        "#;
        assert!(matches!(
            Catalog::from_toml(dup),
            Err(CatalogError::Duplicate { .. })
        ));
    }
}
