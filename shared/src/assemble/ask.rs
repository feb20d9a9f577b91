//! What a caller asks, checked once for every surface: the query, the profile and the error
//! output a `repair` answers.
//!
//! The API (`/v1/context`, `/v1/search`, `/v1/history/compact`, the MCP tools) and the CLI
//! (`ctxgate assemble`) read these from different places — a JSON body, flags and files — but
//! the rules are the same, so they live here and the surfaces only map an [`AskError`] to an
//! HTTP status or an exit code. Each error's [`AskError::code`] is the machine-readable code
//! clients already match on.

use crate::compress::Compression;
use crate::error_code::ErrorCode;
use crate::profile::Profile;

/// Longest query the served API accepts, in bytes.
pub const MAX_QUERY_BYTES: usize = 64 * 1024;
/// Longest error output (`profile: repair`) the served API accepts, in bytes.
pub const MAX_ERROR_OUTPUT_BYTES: usize = 256 * 1024;

/// How much one ask may carry. A served request is bounded so that one call cannot make the
/// server tokenize megabytes; the CLI reads the user's own files on the user's own machine,
/// where only the budget bounds them (a query too long for it is refused when composing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest query, in bytes.
    pub query_bytes: usize,
    /// Longest error output, in bytes.
    pub error_output_bytes: usize,
}

impl Limits {
    /// The bounds of the served API.
    pub const SERVED: Limits = Limits {
        query_bytes: MAX_QUERY_BYTES,
        error_output_bytes: MAX_ERROR_OUTPUT_BYTES,
    };
    /// No bound beyond the budget (the CLI).
    pub const LOCAL: Limits = Limits {
        query_bytes: usize::MAX,
        error_output_bytes: usize::MAX,
    };
}

/// Why an ask was refused. The messages name the API's fields; a surface with other names for
/// them (the CLI's flags) words those few itself.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    /// The query has no words.
    #[error("the query is empty")]
    QueryEmpty,
    /// The query is over [`Limits::query_bytes`].
    #[error("the query has {len} bytes; the limit is {limit}")]
    QueryTooLarge {
        /// The query's length in bytes.
        len: usize,
        /// The limit it broke.
        limit: usize,
    },
    /// A named option (`profile`, `compression`) has no such value.
    #[error("{option} `{name}` is not available; use one of: {known}")]
    UnsupportedOption {
        /// The option.
        option: &'static str,
        /// The value asked for.
        name: String,
        /// The values there are.
        known: &'static str,
    },
    /// The error output is over [`Limits::error_output_bytes`].
    #[error("the error output has {len} bytes; the limit is {limit}")]
    ErrorOutputTooLarge {
        /// The error output's length in bytes.
        len: usize,
        /// The limit it broke.
        limit: usize,
    },
    /// `repair` was asked for without error output (or with blank error output).
    #[error("profile repair needs the error output: give error_output")]
    ErrorOutputMissing,
    /// Error output came with a profile that does not read it.
    #[error("error_output is read by profile repair only, not `{}`", .profile.name())]
    ErrorOutputUnused {
        /// The profile asked for.
        profile: Profile,
    },
}

impl AskError {
    /// The machine-readable code (the API's `error.code`, the CLI's JSON error code).
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::QueryEmpty => ErrorCode::QueryEmpty,
            Self::QueryTooLarge { .. } => ErrorCode::QueryTooLarge,
            Self::UnsupportedOption { .. } => ErrorCode::UnsupportedOption,
            Self::ErrorOutputTooLarge { .. } => ErrorCode::ErrorOutputTooLarge,
            Self::ErrorOutputMissing => ErrorCode::ErrorOutputMissing,
            Self::ErrorOutputUnused { .. } => ErrorCode::ErrorOutputUnused,
        }
    }
}

/// Checks a query that must be asked: not blank, within `limits`.
pub fn check_query(query: &str, limits: &Limits) -> Result<(), AskError> {
    if query.trim().is_empty() {
        return Err(AskError::QueryEmpty);
    }
    check_query_size(query, limits)
}

/// Checks only the size of a query that may be blank (history compaction's recall query, which
/// is optional).
pub fn check_query_size(query: &str, limits: &Limits) -> Result<(), AskError> {
    if query.len() > limits.query_bytes {
        return Err(AskError::QueryTooLarge {
            len: query.len(),
            limit: limits.query_bytes,
        });
    }
    Ok(())
}

/// The profile named `name`.
pub fn parse_profile(name: &str) -> Result<Profile, AskError> {
    Profile::from_name(name).map_err(|known| AskError::UnsupportedOption {
        option: "profile",
        name: name.to_string(),
        known,
    })
}

/// The compression level named `name`; none asked is [`Compression::None`].
pub fn parse_compression(name: Option<&str>) -> Result<Compression, AskError> {
    match name {
        None => Ok(Compression::None),
        Some(c) => Compression::from_name(c).map_err(|known| AskError::UnsupportedOption {
            option: "compression",
            name: c.to_string(),
            known,
        }),
    }
}

/// The profile an ask runs under: the one asked for, else `repair` when error output comes
/// with it and `expand` when none does. Only `repair` reads error output, and it needs some:
/// either mismatch is refused, so a client never silently loses what it sent.
pub fn choose_profile(
    asked: Option<Profile>,
    error_output_given: bool,
) -> Result<Profile, AskError> {
    let profile = match (asked, error_output_given) {
        (Some(p), _) => p,
        (None, true) => Profile::Repair,
        (None, false) => Profile::Expand,
    };
    match (error_output_given, profile) {
        (true, Profile::Repair) | (false, Profile::Plan | Profile::Expand) => Ok(profile),
        (true, other) => Err(AskError::ErrorOutputUnused { profile: other }),
        (false, Profile::Repair) => Err(AskError::ErrorOutputMissing),
    }
}

/// Checks the error output a `repair` reads: within `limits` and not blank.
pub fn check_error_output(text: &str, limits: &Limits) -> Result<(), AskError> {
    if text.len() > limits.error_output_bytes {
        return Err(AskError::ErrorOutputTooLarge {
            len: text.len(),
            limit: limits.error_output_bytes,
        });
    }
    if text.trim().is_empty() {
        return Err(AskError::ErrorOutputMissing);
    }
    Ok(())
}

/// The profile an API request asks for by name and the error output it brings, checked:
/// [`parse_profile`], [`choose_profile`], then [`check_error_output`] on what `repair` reads.
pub fn profile_and_error_output(
    profile: Option<&str>,
    error_output: Option<String>,
    limits: &Limits,
) -> Result<(Profile, Option<String>), AskError> {
    let asked = profile.map(parse_profile).transpose()?;
    let profile = choose_profile(asked, error_output.is_some())?;
    if let Some(e) = &error_output {
        check_error_output(e, limits)?;
    }
    Ok((profile, error_output))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_not_blank_and_within_the_limit() {
        let s = &Limits::SERVED;
        assert_eq!(check_query("  \n", s), Err(AskError::QueryEmpty));
        assert_eq!(check_query("x", s), Ok(()));
        let long = "x".repeat(MAX_QUERY_BYTES + 1);
        let err = check_query(&long, s).unwrap_err();
        assert_eq!(err.code(), "query_too_large");
        assert_eq!(
            err.to_string(),
            format!("the query has {} bytes; the limit is 65536", long.len())
        );
        assert_eq!(check_query(&long, &Limits::LOCAL), Ok(()));
        assert_eq!(check_query_size("", s), Ok(()));
    }

    #[test]
    fn the_profile_follows_the_error_output() {
        let s = &Limits::SERVED;
        let repair = profile_and_error_output(None, Some("Traceback".into()), s);
        assert_eq!(repair, Ok((Profile::Repair, Some("Traceback".into()))));
        assert_eq!(
            profile_and_error_output(None, None, s),
            Ok((Profile::Expand, None))
        );
        let code = |p: Option<&str>, e: Option<&str>| {
            profile_and_error_output(p, e.map(str::to_string), s)
                .unwrap_err()
                .code()
        };
        assert_eq!(code(Some("fix"), None), "unsupported_option");
        assert_eq!(code(Some("repair"), None), "error_output_missing");
        assert_eq!(code(Some("repair"), Some("  ")), "error_output_missing");
        assert_eq!(code(Some("plan"), Some("err")), "error_output_unused");
        let huge = "e".repeat(MAX_ERROR_OUTPUT_BYTES + 1);
        assert_eq!(code(None, Some(&huge)), "error_output_too_large");
        assert_eq!(
            parse_compression(Some("tiny")).unwrap_err().to_string(),
            "compression `tiny` is not available; use one of: none, light, medium, aggressive"
        );
    }
}
