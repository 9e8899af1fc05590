//! What can go wrong behind a page, a server function or an API call: one type, one JSON shape.

use std::fmt;

use leptos::server_fn::codec::JsonEncoding;
use leptos::server_fn::error::{FromServerFnError, ServerFnErrorErr};
use serde::{Deserialize, Serialize};

/// What can go wrong behind a page or an API call, in words the person who clicked can act on.
/// Pages, server functions and the JSON API all carry it as `{"error", "field"?, "status"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "ErrorBody", try_from = "ErrorBody")]
pub enum ApiError {
    /// Bad input: which field, and what is wrong with it. Nothing was written.
    Field {
        field: String,
        message: String,
    },
    /// Bad input in a file: which file (as `field`), where in it, and what is wrong. Nothing was
    /// written.
    AtLine {
        field: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// Another run of the lab is going on.
    Busy(String),
    NotFound(String),
    /// No token, or one the server does not know: sign in.
    Unauthorized(String),
    /// A token that does not allow this (a viewer producing, a learner in another lab).
    Forbidden(String),
    /// More than a limit allows (an upload's size or count): nothing was written.
    TooLarge(String),
    /// Too many requests of one kind in a short time: wait and try again.
    TooMany(String),
    /// Anything else (Kafka down, a table unreadable, ...).
    Failed(String),
}

impl ApiError {
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Field {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The HTTP status that says what kind of error this is.
    pub fn status(&self) -> u16 {
        match self {
            Self::Field { .. } | Self::AtLine { .. } => 400,
            Self::Unauthorized(_) => 401,
            Self::Forbidden(_) => 403,
            Self::NotFound(_) => 404,
            Self::Busy(_) => 409,
            Self::TooLarge(_) => 413,
            Self::TooMany(_) => 429,
            Self::Failed(_) => 500,
        }
    }

    /// The field this error is about, if it is about one.
    pub fn field_name(&self) -> Option<&str> {
        match self {
            Self::Field { field, .. } | Self::AtLine { field, .. } => Some(field),
            _ => None,
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Field { field, message } => write!(f, "{field}: {message}"),
            Self::AtLine {
                field,
                line,
                column,
                message,
            } => write!(f, "{field}:{line}:{column}: {message}"),
            Self::Busy(m)
            | Self::NotFound(m)
            | Self::Unauthorized(m)
            | Self::Forbidden(m)
            | Self::TooLarge(m)
            | Self::TooMany(m)
            | Self::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ApiError {}

/// An [`ApiError`] as JSON: what is wrong in words, the field at fault, the HTTP status.
#[derive(Serialize, Deserialize)]
struct ErrorBody {
    error: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    field: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    line: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    column: Option<usize>,
    status: u16,
}

impl From<ApiError> for ErrorBody {
    fn from(e: ApiError) -> Self {
        let (line, column) = match &e {
            ApiError::AtLine { line, column, .. } => (Some(*line), Some(*column)),
            _ => (None, None),
        };
        Self {
            error: e.to_string(),
            field: e.field_name().map(str::to_string),
            line,
            column,
            status: e.status(),
        }
    }
}

impl TryFrom<ErrorBody> for ApiError {
    type Error = String;

    fn try_from(body: ErrorBody) -> Result<Self, String> {
        let ErrorBody {
            error,
            field,
            line,
            column,
            status,
        } = body;
        if let (400, Some(field), Some(line), Some(column)) = (status, &field, line, column) {
            let prefix = format!("{field}:{line}:{column}: ");
            let message = error.strip_prefix(&prefix).unwrap_or(&error).to_string();
            return Ok(Self::AtLine {
                field: field.clone(),
                line,
                column,
                message,
            });
        }
        Ok(match (status, field) {
            (400, Some(field)) => {
                let message = error
                    .strip_prefix(&format!("{field}: "))
                    .unwrap_or(&error)
                    .to_string();
                Self::Field { field, message }
            }
            (401, _) => Self::Unauthorized(error),
            (403, _) => Self::Forbidden(error),
            (404, _) => Self::NotFound(error),
            (409, _) => Self::Busy(error),
            (413, _) => Self::TooLarge(error),
            (429, _) => Self::TooMany(error),
            (500, _) => Self::Failed(error),
            (other, _) => return Err(format!("an error with status {other}: {error}")),
        })
    }
}

impl FromServerFnError for ApiError {
    type Encoder = JsonEncoding;

    /// Arguments that do not parse (`limit=abc`, a duplicated `lab=`) are bad input: 400,
    /// naming the argument when the parser does.
    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        match value {
            ServerFnErrorErr::Args(e)
            | ServerFnErrorErr::Deserialization(e)
            | ServerFnErrorErr::MissingArg(e) => {
                let named = e.split('`').nth(1).filter(|n| {
                    !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                });
                Self::field(named.unwrap_or("arguments"), e.clone())
            }
            other => Self::Failed(other.to_string()),
        }
    }
}
