//! What stands in front of every handler, whatever router registered it (the JSON API, the
//! sign-in form, the server functions Leptos routes itself): writes from other sites are refused;
//! every write is rate limited per client, sends also per lab, sign-ins and unverified tokens per
//! address; and a server function's refusal answers with its status (400, 401, 403, 404, 429).

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use app::api::ApiError;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::api::Failure;
use crate::access;
use crate::config::Rates;
use crate::limit::{Limit, Rate};
use app::model::DEFAULT_LAB;

/// The limits of one server, by kind.
pub struct Limits {
    sends: Limit,
    writes: Limit,
    sign_ins: Limit,
    guesses: Limit,
}

impl Limits {
    pub fn new(rates: Rates) -> Self {
        Self {
            sends: Limit::new(rates.sends),
            writes: Limit::new(rates.writes),
            sign_ins: Limit::new(rates.sign_ins),
            guesses: Limit::new(rates.guesses),
        }
    }
}

/// Whether a request can change something: anything but a read.
pub fn is_write(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Whether a write sends events: the API's produce, or a produce form's server function.
fn is_send(path: &str) -> bool {
    path.ends_with("/produce")
        || matches!(path, "/fn/produce" | "/fn/send_batch" | "/fn/send_again")
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

/// 429 with `Retry-After`, saying what was limited.
fn too_many(what: &str, rate: Rate, wait: Duration) -> Response {
    let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
    let mut response = Failure::from(ApiError::TooMany(format!(
        "too many {what}: at most {} at once, then {} a second; try again in {seconds} s",
        rate.burst, rate.per_second
    )))
    .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, seconds.into());
    response
}

/// The most bytes a request's body may hold: an upload to a landing folder (`POST /api/landing`
/// or `POST /api/labs/{lab}/landing`) more than others. A server function whose name ends the
/// same way (`/fn/landing`, which only lists the folder) gets no more than any other body.
fn body_limit(method: &Method, path: &str) -> usize {
    // Read without allocating: every request passes here.
    let lab = path
        .strip_prefix("/api/labs/")
        .and_then(|rest| rest.strip_suffix("/landing"));
    let upload = path == "/api/landing" || lab.is_some_and(|l| !l.is_empty() && !l.contains('/'));
    match *method == Method::POST && upload {
        true => super::UPLOAD_LIMIT,
        false => super::BODY_LIMIT,
    }
}

/// Answers 413 for a body declared larger than its limit, and cuts off one that grows past it
/// (its reader then answers 413).
pub async fn limit_body(request: Request, next: Next) -> Response {
    let limit = body_limit(request.method(), request.uri().path());
    let declared = request
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let too_large = || {
        let e = ApiError::TooLarge(format!("the body may hold at most {limit} bytes"));
        Failure::from(e).into_response()
    };
    if declared.is_some_and(|n| n > limit as u64) {
        return too_large();
    }
    // A server function reads its body as its arguments and answers any error reading it as
    // bad input: a chunked body past the limit is read here first (at most the limit, 64 KiB),
    // so it is refused as too large.
    if request.uri().path().starts_with("/fn/") {
        let (parts, body) = request.into_parts();
        return match axum::body::to_bytes(body, limit).await {
            Ok(bytes) => {
                next.run(Request::from_parts(parts, Body::from(bytes)))
                    .await
            }
            Err(e) => match e.into_inner().is::<http_body_util::LengthLimitError>() {
                true => too_large(),
                false => Failure::from(ApiError::field("body", "the body could not be read"))
                    .into_response(),
            },
        };
    }
    next.run(request.map(|body| Body::new(http_body_util::Limited::new(body, limit))))
        .await
}

/// The address a request came from, as the accept loop marked it, as one client of the
/// per-address limits ([`client_address`]).
pub fn address(extensions: &http::Extensions) -> String {
    extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(a)| client_address(a.ip()).to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// The address that stands for one client in the per-address limits: an IPv4 address as it is
/// (also when it comes IPv4-mapped), an IPv6 address as its /64 network. One machine is commonly
/// handed a whole /64, and could otherwise take a new address for each request.
pub fn client_address(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !(u128::from(u64::MAX)))),
        },
    }
}

/// Holds a request with a token this server has not verified to the address's rate of guesses
/// (reads too: a read with a guessed lab token costs an argon2 as a write does), and every write
/// to the limits; then answers a server function's refusal with its status.
pub async fn limit_requests(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let limits = &state.limits;
    let headers = request.headers();
    let guessing = state.labs.auth.enabled() && access::bearer(headers).is_some();
    let write = is_write(request.method());
    if !guessing && !write {
        return next.run(request).await;
    }
    let address = address(request.extensions());
    let path = request.uri().path().to_string();
    let take = |limit: &Limit, what: &str, key: &[&[u8]]| {
        limit
            .take(key)
            .map_err(|wait| too_many(what, limit.rate(), wait))
    };
    let client = state.labs.auth.known_client(headers);
    let checks = || -> Result<(), Response> {
        if guessing && client.is_none() {
            take(
                &limits.guesses,
                "tries of unknown tokens",
                &[address.as_bytes()],
            )?;
        }
        if !write {
            return Ok(());
        }
        if path == "/login" {
            take(&limits.sign_ins, "sign-ins", &[address.as_bytes()])?;
        }
        let client = client.as_deref().unwrap_or(address.as_bytes());
        take(&limits.writes, "writes", &[client])?;
        if is_send(&path) {
            take(
                &limits.sends,
                "sends",
                &[client, send_kind(&path).as_bytes()],
            )?;
        }
        Ok(())
    };
    if let Err(refused) = checks() {
        return refused;
    }
    let response = next.run(request).await;
    if path.starts_with("/fn/") {
        with_refusal_status(response).await
    } else {
        response
    }
}

/// Server functions answer every error with 500; ours carry an [`ApiError`] whose kind has its
/// own status (a bad field 400, a refusal 401/403, too many 429), as the JSON API answers.
async fn with_refusal_status(response: Response) -> Response {
    if response.status() != StatusCode::INTERNAL_SERVER_ERROR {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, super::BODY_LIMIT).await else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    if let Ok(error) = serde_json::from_slice::<ApiError>(&bytes)
        && let Ok(status) = StatusCode::from_u16(error.status())
    {
        parts.status = status;
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// A handler that panicked answers 500 saying so (the panic is logged), never a dropped
/// connection or a page that waits forever.
pub fn panicked(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let what = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("a panic");
    tracing::error!("a request failed: {what}");
    Failure::from(ApiError::Failed(
        "the server failed to answer this request (an internal error, logged); other pages work"
            .into(),
    ))
    .into_response()
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
    fn an_ipv6_client_counts_as_its_64_and_a_mapped_ipv4_as_itself() {
        let client = |s: &str| client_address(s.parse().unwrap()).to_string();
        assert_eq!(client("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::");
        assert_eq!(
            client("2001:db8:1:2:bbbb::7"),
            client("2001:db8:1:2:aaaa::1")
        );
        assert_ne!(client("2001:db8:1:3::1"), client("2001:db8:1:2::1"));
        assert_eq!(client("::ffff:192.0.2.7"), "192.0.2.7");
        assert_eq!(client("192.0.2.7"), "192.0.2.7");
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
