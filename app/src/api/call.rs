//! What every server function does first: find the server and the request's headers, open the
//! lab for the access it needs, and turn a panic or a refusal into an answer.

use leptos::prelude::*;

use super::backend::{Access, Backend, Server};
use crate::error::ApiError;

pub(super) fn server() -> Result<(std::sync::Arc<dyn Server>, http::HeaderMap), ApiError> {
    let server = use_context::<std::sync::Arc<dyn Server>>()
        .ok_or_else(|| ApiError::Failed("the server provided no labs".into()))?;
    let headers = use_context::<http::request::Parts>()
        .map(|parts| parts.headers)
        .unwrap_or_default();
    Ok((server, headers))
}

/// The lab a page or form works on, if this request may `access` it.
pub(super) async fn open(
    lab: &str,
    access: Access,
    csrf: &Option<String>,
) -> Result<std::sync::Arc<dyn Backend>, ApiError> {
    let (server, headers) = server()?;
    refused_with_status(server.open(&headers, lab, access, csrf.as_deref()).await)
}

/// A refusal answers with its status (401, 403, 404), for scripts calling a server function.
/// A plain form post (it accepts HTML) keeps Leptos's redirect back to the page, which shows it.
pub(super) fn refused_with_status<T>(answer: Result<T, ApiError>) -> Result<T, ApiError> {
    if let Err(e) = &answer {
        let accepts_html = use_context::<http::request::Parts>().is_some_and(|parts| {
            parts
                .headers
                .get(http::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.contains("text/html"))
        });
        let options = use_context::<leptos_axum::ResponseOptions>();
        if let (false, Some(options), Ok(status)) = (
            accepts_html,
            options,
            http::StatusCode::from_u16(e.status()),
        ) {
            options.set_status(status);
        }
    }
    answer
}

/// Runs a server function's work, a panic in it becoming an error: the page rendering it shows
/// that error instead of waiting forever for a value that never comes.
pub(super) async fn guarded<T>(
    work: impl std::future::Future<Output = Result<T, ApiError>>,
) -> Result<T, ApiError> {
    use futures::FutureExt;
    std::panic::AssertUnwindSafe(work)
        .catch_unwind()
        .await
        .unwrap_or_else(|_| {
            Err(ApiError::Failed(
                "the server failed to answer (an internal error, logged); other pages work".into(),
            ))
        })
}

/// A checkbox's value: present (any value) when ticked.
pub(super) fn ticked(value: &Option<String>) -> bool {
    value.as_deref().is_some_and(|v| v != "false")
}
