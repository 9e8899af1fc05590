//! Live announcements (server-sent events) and the share of them one client may hold. A stream
//! holds its connection for as long as the page is open, so without a share one client could
//! hold every connection the server accepts and leave the rest of the lab without a dashboard.

use std::convert::Infallible;
use std::sync::Arc;

use app::api::{Access, ApiError};
use app::model::Announcement;
use axum::extract::State;
use axum::http::{Extensions, HeaderMap};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;

use super::AppState;
use super::api::{Failure, Params, open};
use crate::limit::{self, Share};

/// Live streams at once for a client that proved who it is (a verified token or a session):
/// a person with many tabs open.
pub const PER_CLIENT: usize = 16;
/// Live streams at once from one address for clients that did not (public labs' viewers): a
/// classroom behind one address.
pub const PER_ADDRESS: usize = 64;

/// How often a quiet stream checks that its caller may still read the lab.
pub const RECHECK: std::time::Duration = std::time::Duration::from_secs(5);

/// The live streams open, by client.
pub type Shares = limit::Shares<Vec<u8>>;

/// A place for one more live stream of `client`, if it holds fewer than `most`.
fn take(shares: &Arc<Shares>, client: Vec<u8>, most: usize) -> Result<Share<Vec<u8>>, ApiError> {
    shares.take(client, most).ok_or_else(|| {
        ApiError::TooMany(format!(
            "too many live streams: at most {most} at once for one client; close a tab of the \
             dashboard and reload this one"
        ))
    })
}

/// Server-sent events: one message per announcement (run-started, run-finished, sent, reset,
/// settings), until the server stops or the caller may no longer read the lab (it went private,
/// was deleted, or the caller's session ended): access is checked again before every message.
/// Access is also checked every [`RECHECK`] with no message: a signed-out session's stream ends
/// then, not at the next announcement (which may be an hour away).
/// A client holds at most [`PER_CLIENT`] streams, an address's unproven clients [`PER_ADDRESS`].
pub async fn live(
    State(state): State<AppState>,
    params: Params,
    headers: HeaderMap,
    extensions: Extensions,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Failure> {
    let receiver = open(&state, &headers, &params, Access::Public)
        .await?
        .subscribe();
    let held = match state.labs.auth.known_client(&headers) {
        Some(client) => take(&state.live, client, PER_CLIENT),
        None => {
            let address = super::guard::address(&extensions);
            take(&state.live, address.into_bytes(), PER_ADDRESS)
        }
    }?;
    let listener = Listener {
        state,
        headers,
        params,
        receiver,
        _held: held,
    };
    let stream = futures::stream::unfold(listener, |mut listener| async move {
        let data = listener.next().await?;
        Some((Ok(Event::default().data(data)), listener))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// One live subscription and what it needs to check its access again.
struct Listener {
    state: AppState,
    headers: HeaderMap,
    params: Params,
    receiver: tokio::sync::broadcast::Receiver<Announcement>,
    _held: Share<Vec<u8>>,
}

impl Listener {
    /// The next announcement, or `None` when the stream ends.
    async fn next(&mut self) -> Option<String> {
        let mut stopping = self.state.stopping.clone();
        let mut recheck = tokio::time::interval_at(tokio::time::Instant::now() + RECHECK, RECHECK);
        loop {
            if *stopping.borrow() {
                return None;
            }
            let message = tokio::select! {
                message = self.receiver.recv() => message,
                _ = recheck.tick() => {
                    if !self.may_read().await {
                        return None;
                    }
                    continue;
                }
                changed = stopping.changed() => {
                    if changed.is_err() {
                        return None;
                    }
                    continue;
                }
            };
            let data = match message {
                Ok(announced) => data(announced),
                // Missed some: one message makes the page reload all the same.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    data(Announcement::Lagged)
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            };
            if !self.may_read().await {
                return None;
            }
            return Some(data);
        }
    }

    /// Whether the caller may still read the lab.
    async fn may_read(&self) -> bool {
        open(&self.state, &self.headers, &self.params, Access::Public)
            .await
            .is_ok()
    }
}

/// An announcement as the stream sends it: `{"event": "run-started"}`.
fn data(announced: Announcement) -> String {
    serde_json::to_string(&announced).unwrap_or_else(|_| "{\"event\":\"lagged\"}".into())
}
