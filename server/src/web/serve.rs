//! Serving the dashboard on a socket: hyper's connections with a header-read timeout (a client
//! that connects and sends half a request, or idles between requests, is closed), a bound on
//! open connections (so they cannot use up the process's files), a share of them per address (so
//! one machine cannot hold them all), and a graceful stop.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

use super::{AppState, app};
use crate::limit::Shares;

/// How long clients may hold a connection without using it, and how many may be open.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// From a connection's start, or the end of its last answer, to the end of the next
    /// request's headers.
    pub header_read: Duration,
    /// Connections open at once; more wait in the listen queue until one closes. `None`: half
    /// the process's open-file limit, raised to its hard limit when serving starts.
    pub max_connections: Option<usize>,
    /// Connections one address (an IPv6 one with its /64) may hold at once; one more is answered
    /// 429 and closed. `None`: a quarter of `max_connections`, so it takes four machines to fill
    /// the server, while a classroom behind one address (a hundred browsers, six connections
    /// each) fits.
    pub per_address: Option<usize>,
    /// How long a stop waits for open requests before closing their connections.
    pub shutdown_grace: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            header_read: Duration::from_secs(10),
            max_connections: None,
            per_address: None,
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

/// Connections at once: well under the process's open-file limit (raised to its hard limit
/// first), leaving room for tables, Kafka and SQLite.
fn connections_within_file_limit() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    let files = unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            1024
        } else {
            if limit.rlim_cur < limit.rlim_max {
                let raised = libc::rlimit {
                    rlim_cur: limit.rlim_max.min(65_536),
                    rlim_max: limit.rlim_max,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                    limit = raised;
                }
            }
            limit.rlim_cur
        }
    };
    (files.saturating_sub(256) as usize).clamp(64, 16_384) / 2
}

/// Serves the dashboard on `listener` until `shutdown` resolves, with the schedule running;
/// then lets requests and the run in progress finish.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, state, shutdown, Timeouts::default()).await
}

/// [`serve`] with other timeouts and bounds.
pub async fn serve_with(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
    timeouts: Timeouts,
) -> std::io::Result<()> {
    state.labs.start_schedules();
    let stop = state.stop.clone();
    let labs = state.labs.clone();
    let router = app(state);
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(timeouts.header_read);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(timeouts.header_read)
        .keep_alive_timeout(timeouts.header_read);
    let graceful = GracefulShutdown::new();
    let connections = timeouts
        .max_connections
        .unwrap_or_else(connections_within_file_limit);
    let slots = Arc::new(Semaphore::new(connections.max(1)));
    let per_address = timeouts.per_address.unwrap_or(connections / 4).max(1);
    let addresses = Arc::new(Shares::<IpAddr>::default());
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot,
            () = &mut shutdown => break,
        };
        let Ok(slot) = slot else { break };
        let (stream, address) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // Out of files or the like: wait a little rather than spin.
                Err(e) => {
                    tracing::warn!("accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let client = super::guard::client_address(address.ip());
        let Some(share) = addresses.take(client, per_address) else {
            tokio::spawn(refuse(stream, address, per_address));
            continue;
        };
        let service = router
            .clone()
            .map_request(move |request: hyper::Request<Incoming>| {
                let mut request = request.map(axum::body::Body::new);
                request
                    .extensions_mut()
                    .insert(ConnectInfo::<SocketAddr>(address));
                request
            });
        let (builder, watcher) = (builder.clone(), graceful.watcher());
        let first_byte = timeouts.header_read;
        tokio::spawn(async move {
            // hyper's header timeout starts at a request's first byte, and the protocol's
            // detection waits for that byte without one: a client that sends nothing within the
            // header timeout is closed here, or silent sockets would hold every slot.
            let mut first = [0u8; 1];
            match tokio::time::timeout(first_byte, stream.peek(&mut first)).await {
                Ok(Ok(1..)) => {}
                _ => {
                    drop((slot, share));
                    return;
                }
            }
            let connection = builder
                .serve_connection_with_upgrades(
                    TokioIo::new(stream),
                    TowerToHyperService::new(service),
                )
                .into_owned();
            if let Err(e) = watcher.watch(connection).await {
                tracing::debug!("connection from {address}: {e}");
            }
            drop((slot, share));
        });
    }
    drop(listener);
    stop.send_replace(true);
    if tokio::time::timeout(timeouts.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            "requests still open after {:?}: closed",
            timeouts.shutdown_grace
        );
    }
    labs.finish().await;
    Ok(())
}

/// Answers a connection past its address's share with 429 before its request is read, then
/// closes it (the request, if it came, read and dropped): a browser shows the words, and the
/// connection never takes a slot.
async fn refuse(mut stream: tokio::net::TcpStream, address: SocketAddr, most: usize) {
    let words = format!(
        "too many connections from {}: at most {most} at once from one address (an IPv6 \
         address counts with its /64)\n",
        address.ip()
    );
    let answer = format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: text/plain; charset=utf-8\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{words}",
        words.len()
    );
    tracing::debug!("connection from {address} refused: {most} open from its address");
    let answered = async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await?;
        // The request read and dropped: a socket closed with unread bytes resets the connection,
        // and the client may lose the answer with it.
        let mut request = [0; 2048];
        stream.read(&mut request).await
    };
    // Bounded, so a flood of refused connections holds few files: a client that neither sends
    // nor reads in that time only loses its answer.
    let _ = tokio::time::timeout(Duration::from_millis(200), answered).await;
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}
