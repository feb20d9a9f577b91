//! A project's own defaults: `ctxgate.toml` (or `.ctxgate.toml`) at its root, read by the
//! commands that work on a folder (`assemble`, `index`, `mcp`). A flag given on the command
//! line wins over the file.

use ctxgate_core::error_code::ErrorCode;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::args::{CompressionArg, ProfileArg};
use crate::failure::Failure;

/// The names looked for, in order; both present is an error rather than a silent choice.
pub const FILE_NAMES: [&str; 2] = ["ctxgate.toml", ".ctxgate.toml"];

/// What the file may say. Unknown keys are refused, so a typo never silently does nothing.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectConfig {
    /// Default target model (`--model`).
    pub model: Option<String>,
    /// Default token budget (`--budget`).
    pub budget: Option<u32>,
    /// Default profile (`--profile`): plan, expand or repair.
    pub profile: Option<Named<ProfileArg>>,
    /// Default compression (`--compression`): none, light, medium or aggressive.
    pub compression: Option<Named<CompressionArg>>,
    /// Only files matching one of these (`--include`).
    #[serde(default)]
    pub include: Vec<String>,
    /// Never files matching one of these (`--exclude`).
    #[serde(default)]
    pub exclude: Vec<String>,
}

/// A value named as on the command line (`profile = "plan"`), parsed by clap's own rules so the
/// file and the flags accept exactly the same words.
#[derive(Debug, Clone, Copy)]
pub struct Named<T>(pub T);

impl<'de, T: clap::ValueEnum> Deserialize<'de> for Named<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let word = String::deserialize(d)?;
        T::from_str(&word, true).map(Named).map_err(|_| {
            let known: Vec<String> = T::value_variants()
                .iter()
                .filter_map(|v| v.to_possible_value())
                .map(|v| v.get_name().to_string())
                .collect();
            serde::de::Error::custom(format!("`{word}` is not one of: {}", known.join(", ")))
        })
    }
}

/// The config file of the folder `repo`, if it has one.
pub fn load(repo: &Path) -> Result<Option<(PathBuf, ProjectConfig)>, Failure> {
    let found: Vec<PathBuf> = FILE_NAMES
        .iter()
        .map(|n| repo.join(n))
        .filter(|p| p.is_file())
        .collect();
    let path = match found.as_slice() {
        [] => return Ok(None),
        [one] => one.clone(),
        _ => {
            return Err(Failure::coded(
                ErrorCode::AmbiguousConfig,
                format!(
                    "`{}` has both {} and {}: keep one",
                    repo.display(),
                    FILE_NAMES[0],
                    FILE_NAMES[1]
                ),
            ));
        }
    };
    let text = std::fs::read_to_string(&path).map_err(|e| {
        Failure::coded(
            ErrorCode::ConfigUnreadable,
            format!("cannot read `{}`: {e}", path.display()),
        )
    })?;
    let config = parse(&text).map_err(|e| {
        Failure::coded(
            ErrorCode::InvalidConfig,
            format!("{}: {}", path.display(), e.trim_end()),
        )
    })?;
    tracing::info!(file = %path.display(), "project config");
    Ok(Some((path, config)))
}

/// Parses the file's text; the error names the line and the key.
pub fn parse(text: &str) -> Result<ProjectConfig, String> {
    toml::from_str(text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_key_and_refuses_unknown_ones() {
        let c = parse(
            "model = \"gpt-4o\"\nbudget = 8000\nprofile = \"plan\"\ncompression = \"light\"\n\
             include = [\"src/**\"]\nexclude = [\"*.snap\"]\n",
        )
        .unwrap();
        assert_eq!(c.model.as_deref(), Some("gpt-4o"));
        assert_eq!(c.budget, Some(8000));
        assert!(matches!(c.profile, Some(Named(ProfileArg::Plan))));
        assert!(matches!(c.compression, Some(Named(CompressionArg::Light))));
        assert_eq!(c.include, ["src/**"]);
        assert_eq!(c.exclude, ["*.snap"]);

        let e = parse("budgett = 100\n").unwrap_err();
        assert!(
            e.contains("unknown field `budgett`") && e.contains("line 1"),
            "{e}"
        );
        let e = parse("profile = \"fast\"\n").unwrap_err();
        assert!(
            e.contains("`fast` is not one of: plan, expand, repair"),
            "{e}"
        );
        let e = parse("budget = \"lots\"\n").unwrap_err();
        assert!(e.contains("budget"), "{e}");
    }
}
