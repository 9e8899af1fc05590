//! Signing a browser in and out: a token typed on `/login` becomes a session cookie (HttpOnly,
//! SameSite=Strict), so the pages never hold the token itself.

use std::collections::HashMap;

use axum::Form;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

use super::AppState;
use crate::access::{SESSION_COOKIE, Who};

/// `POST /login` with `token` (and `next`, the page to return to): on success a session cookie
/// and a redirect to the lab; on failure back to the form, which says so.
pub async fn sign_in(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let auth = &state.labs.auth;
    if !auth.enabled() {
        return Redirect::to("/").into_response();
    }
    let token = form.get("token").map_or("", |t| t.trim());
    let who = match auth.who(token).await {
        Ok(who) => who,
        Err(e) => return super::api::Failure::from(e).into_response(),
    };
    let home = match &who {
        Who::Anonymous => return Redirect::to("/login?failed=1").into_response(),
        Who::Learner(lab) | Who::Viewer(lab) => format!("/labs/{lab}"),
        Who::ClassViewer(class) => format!("/classes/{class}"),
        Who::Instructor | Who::Local => "/labs".to_string(),
    };
    let next = form
        .get("next")
        .filter(|n| is_local_path(n))
        .cloned()
        .unwrap_or(home);
    let session = match auth.start_session(who, token) {
        Ok(session) => session,
        Err(e) => return super::api::Failure::from(e).into_response(),
    };
    let secure = headers
        .get("x-forwarded-proto")
        .is_some_and(|p| p == "https");
    let cookie = format!(
        "{SESSION_COOKIE}={session}; Path=/; HttpOnly; SameSite=Strict; Max-Age=43200{}",
        if secure { "; Secure" } else { "" }
    );
    with_cookie(Redirect::to(&next), &cookie)
}

/// `POST /logout`: ends the session and clears the cookie.
pub async fn sign_out(State(state): State<AppState>, headers: HeaderMap) -> Response {
    state.labs.auth.end_session(&headers);
    let cookie = format!("{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
    with_cookie(Redirect::to("/login"), &cookie)
}

/// Whether `next` is a path on this site: a crafted one must not send the browser elsewhere
/// (`//host`, `/\\host`, or a tab or newline that browsers drop to make `//host`).
fn is_local_path(next: &str) -> bool {
    next.starts_with('/')
        && !next.starts_with("//")
        && next
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/-_.?=&%".contains(c))
}

fn with_cookie(redirect: Redirect, cookie: &str) -> Response {
    let mut response = redirect.into_response();
    match HeaderValue::from_str(cookie) {
        Ok(value) => {
            response.headers_mut().insert(header::SET_COOKIE, value);
            response
        }
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::is_local_path;

    #[test]
    fn only_paths_on_this_site_are_returned_to() {
        assert!(is_local_path("/labs/ann/produce?preset=late"));
        for elsewhere in [
            "//evil.example",
            "/\\evil.example",
            "/\t/evil.example",
            "https://evil.example",
            "evil",
        ] {
            assert!(!is_local_path(elsewhere), "{elsewhere}");
        }
    }
}
