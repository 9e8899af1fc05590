//! What stands in front of the handlers: writes from other sites are refused, and sends (the API's
//! produce and the produce forms) are rate limited per client and lab.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use app::api::ApiError;
use axum::extract::{Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use blake2::{Blake2s256, Digest};

use super::AppState;
use super::api::Failure;
use crate::auth;
use crate::config::DEFAULT_LAB;

/// How many sends a client may make to a lab: `burst` at once, then `per_second`.
#[derive(Debug, Clone, Copy)]
pub struct ProduceLimit {
    pub burst: u32,
    pub per_second: f64,
}

impl Default for ProduceLimit {
    /// Generous for a person clicking and for the course's scripts; a runaway loop is slowed.
    fn default() -> Self {
        Self {
            burst: 50,
            per_second: 20.0,
        }
    }
}

/// Token buckets, one per client and lab.
pub struct RateLimiter {
    limit: ProduceLimit,
    buckets: Mutex<HashMap<[u8; 32], (f64, Instant)>>,
}

impl RateLimiter {
    pub fn new(limit: ProduceLimit) -> Self {
        Self {
            limit,
            buckets: Mutex::default(),
        }
    }

    /// Takes one send from `key`'s bucket; `Err(seconds)` until the next is allowed.
    fn take(&self, key: [u8; 32]) -> Result<(), f64> {
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        // Full buckets are forgotten: the map holds only clients sending now.
        let limit = self.limit;
        buckets.retain(|_, (tokens, at)| {
            *tokens + at.elapsed().as_secs_f64() * limit.per_second < limit.burst as f64
        });
        let (tokens, at) = buckets.entry(key).or_insert((limit.burst as f64, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * limit.per_second)
            .min(limit.burst as f64);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err((1.0 - *tokens) / limit.per_second)
        }
    }
}

/// Whether a request sends events: the API's produce, or a produce form's server function.
fn is_send(request: &Request) -> bool {
    let path = request.uri().path();
    request.method() == Method::POST
        && (path.ends_with("/produce")
            || matches!(path, "/fn/produce" | "/fn/send_batch" | "/fn/send_again"))
}

/// What a send is limited as: the API's produce of a lab (however its path is spelled; the
/// unscoped one is lab `default`), or a produce form's server function.
fn send_kind(path: &str) -> String {
    let path = percent_encoding::percent_decode_str(path).decode_utf8_lossy();
    match path
        .strip_prefix("/api/labs/")
        .and_then(|rest| rest.strip_suffix("/produce"))
    {
        Some(lab) => format!("produce:{lab}"),
        None if path == "/api/produce" => format!("produce:{DEFAULT_LAB}"),
        None => path.into_owned(),
    }
}

/// Rate limits sends per client (its token or session) and lab (the path's, or the form's page).
pub async fn limit_sends(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if !is_send(&request) {
        return next.run(request).await;
    }
    let headers = request.headers();
    let client = auth::bearer(headers)
        .or_else(|| auth::cookie(headers, auth::SESSION_COOKIE))
        .unwrap_or("anonymous");
    let mut digest = Blake2s256::new();
    digest.update(client.as_bytes());
    digest.update([0]);
    digest.update(send_kind(request.uri().path()).as_bytes());
    if let Err(wait) = state.produce_limit.take(digest.finalize().into()) {
        let seconds = wait.ceil().max(1.0) as u64;
        let mut response = Failure::from(ApiError::TooMany(format!(
            "too many sends: at most {} at once, then {} a second; try again in {seconds} s",
            state.produce_limit.limit.burst, state.produce_limit.limit.per_second
        )))
        .into_response();
        if let Ok(value) = seconds.to_string().parse() {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        return response;
    }
    next.run(request).await
}

/// Whether a `Host` header names this machine (`localhost`, `127.0.0.1:3000`, `[::1]:3000`).
fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Refuses a write whose `Origin` is another site: with the cookie's SameSite=Strict and the forms'
/// CSRF tokens, the third guard against a page elsewhere posting to this server. Without tokens
/// (a single-user server on loopback) it also refuses a request for a `Host` that is not this
/// machine: a page elsewhere that made its own name resolve to 127.0.0.1 (DNS rebinding).
pub async fn refuse_cross_site(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok());
    if !state.labs.auth.enabled()
        && let Some(host) = host.filter(|h| !is_loopback_host(h))
    {
        return Failure::from(ApiError::Forbidden(format!(
            "this server asks for no token, so it serves only this machine, not {host:?}; set \
             an instructor token to serve others"
        )))
        .into_response();
    }
    let safe = matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    if !safe && let Some(origin) = request.headers().get(header::ORIGIN) {
        let origin_host = origin
            .to_str()
            .ok()
            .and_then(|o| o.split_once("://"))
            .map(|(_, rest)| rest.trim_end_matches('/'));
        if host.is_none() || origin_host != host {
            return Failure::from(ApiError::Forbidden(format!(
                "a write from another site ({}) is refused",
                origin.to_str().unwrap_or("?")
            )))
            .into_response();
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_refuses_until_it_refills() {
        let limiter = RateLimiter::new(ProduceLimit {
            burst: 3,
            per_second: 1.0,
        });
        let key = [1; 32];
        for _ in 0..3 {
            assert!(limiter.take(key).is_ok());
        }
        let wait = limiter.take(key).unwrap_err();
        assert!(wait > 0.9 && wait <= 1.0, "{wait}");
        assert!(
            limiter.take([2; 32]).is_ok(),
            "another client has its own bucket"
        );
    }

    #[test]
    fn a_lab_is_limited_as_one_however_its_path_is_spelled() {
        assert_eq!(
            send_kind("/api/labs/%61nn/produce"),
            send_kind("/api/labs/ann/produce")
        );
        assert_eq!(
            send_kind("/api/produce"),
            send_kind("/api/labs/default/produce")
        );
        assert_ne!(
            send_kind("/api/labs/bob/produce"),
            send_kind("/api/labs/ann/produce")
        );
    }

    #[test]
    fn loopback_hosts_are_this_machine() {
        for host in [
            "localhost:3000",
            "127.0.0.1:3000",
            "127.0.0.2",
            "[::1]:3000",
            "LOCALHOST",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:3000",
            "10.0.0.5:3000",
            "[2001:db8::1]:80",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }
}
