//! What one operation of the API is: who may call it, what it takes, what it answers
//! ([`super::operations`] lists them, [`super::errors`] adds the codes of their kinds).

use ctxgate_core::error_code::ErrorCode;
use schemars::{Schema, SchemaGenerator};

/// How a type's schema is written into the document: a `$ref` to `components/schemas`.
pub(super) type SchemaOf = fn(&mut SchemaGenerator) -> Schema;

/// Who may call an operation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    /// Anyone.
    Public,
    /// An organisation's API key.
    Key,
    /// The admin secret.
    Admin,
}

/// What an operation's request carries.
pub(super) enum Body {
    /// Nothing.
    None,
    /// JSON of this type.
    Json(SchemaOf),
    /// Raw bytes (an index object).
    Bytes,
    /// JSON of this type, authenticated by a signature over its raw bytes (a forge's webhook
    /// delivery): read as bytes, so the JSON body's own error codes do not apply.
    Signed(SchemaOf),
}

/// A successful answer.
pub(super) struct Answer {
    /// Its status.
    pub status: u16,
    /// What it means.
    pub description: &'static str,
    /// Its JSON body's type; `None` for an empty body.
    pub body: Option<SchemaOf>,
}

/// One operation of the API.
pub(super) struct Operation {
    /// `get`, `post`, ...
    pub method: &'static str,
    /// The path, parameters in braces.
    pub path: &'static str,
    /// The `operationId`.
    pub id: &'static str,
    /// One line.
    pub summary: &'static str,
    /// More, when there is more to say.
    pub description: Option<&'static str>,
    /// Who may call it.
    pub access: Access,
    /// What the request carries.
    pub body: Body,
    /// Whether it reserves quota (so a refusal is 429 `quota_exceeded`).
    pub metered: bool,
    /// Whether it reads a project's index (so the index's own failures can answer).
    pub reads_index: bool,
    /// Its successful answers.
    pub answers: Vec<Answer>,
    /// The error codes its handler adds (each under the statuses the registry gives it).
    pub own_errors: Vec<ErrorCode>,
    /// Request headers it reads (name, what it is), all optional: a missing one has its code.
    pub headers: Vec<(&'static str, &'static str)>,
}
