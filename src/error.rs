//! Error types for inputs the library refuses. Rendering itself never fails: problems in
//! templates become [`Diagnostic`](crate::Diagnostic)s.
//!
//! Every error enum of the crate gives its `kind()` (what the bindings report) the same way:
//! its variant's name, derived by `strum::IntoStaticStr`, so a new variant needs no second
//! list to keep in step.

use strum::IntoStaticStr;
use thiserror::Error;

/// A context file that cannot be read.
#[derive(Debug, Error, Clone, PartialEq, Eq, IntoStaticStr)]
#[non_exhaustive]
pub enum ContextError {
    /// The file is not UTF-8.
    #[error("context is not valid UTF-8 (byte {offset})")]
    Utf8 {
        /// First invalid byte.
        offset: usize,
    },
    /// The file is JSON, but not an object.
    #[error("the context file must be a JSON object, found {found}")]
    NotAnObject {
        /// What it is instead (`an array`, `a number`, ...).
        found: &'static str,
    },
    /// A field with a value it cannot take.
    #[error("context field `{field}`: {problem}")]
    Field {
        /// The field (`provider_options.cache_ttl` for a provider option).
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// The file is not JSON of the context shape.
    #[error("context file, line {line} column {column}: {message}")]
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong (names unknown fields and tags).
        message: String,
    },
}

impl ContextError {
    /// The variant's name (`"Utf8"`, `"NotAnObject"`, `"Field"`, `"Json"`), as the bindings
    /// report it.
    pub fn kind(&self) -> &'static str {
        self.into()
    }
}

/// A template file that cannot be read.
#[derive(Debug, Error, Clone, PartialEq, Eq, IntoStaticStr)]
#[non_exhaustive]
pub enum TemplateError {
    /// The file is larger than [`Limits::template_bytes`](crate::Limits::template_bytes).
    #[error("template is {size} bytes, over the limit of {limit} bytes")]
    TooLarge {
        /// Size of the file.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The file is not UTF-8.
    #[error("template is not valid UTF-8 (byte {offset})")]
    Utf8 {
        /// First invalid byte.
        offset: usize,
    },
}

impl TemplateError {
    /// The variant's name (`"TooLarge"`, `"Utf8"`), as the bindings report it.
    pub fn kind(&self) -> &'static str {
        self.into()
    }
}
