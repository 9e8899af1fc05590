//! `reckon serve`: the dashboard and the JSON API for every lab, until a signal stops it.

use anyhow::{Context, bail};
use app::api::Backend;

use super::args::ServeArgs;
use crate::config::{Rates, Serving};
use crate::service::lab::Lab;
use crate::service::labs::Labs;
use crate::web;

/// Without an instructor token the dashboard asks nobody who they are, so it serves this machine
/// only: an address other machines reach is refused before anything starts.
async fn refuse_unprotected(addr: &str) -> anyhow::Result<()> {
    let resolved: Vec<std::net::SocketAddr> = tokio::net::lookup_host(addr)
        .await
        .with_context(|| format!("addr: {addr:?} is not a HOST:PORT address"))?
        .collect();
    if let Some(open) = resolved.iter().find(|a| !a.ip().is_loopback()) {
        bail!(
            "addr: {addr} ({}) is reachable from other machines, and without an instructor token \
             the dashboard asks nobody for one: anyone reaching it could send events, run and reset. \
             Set RECKON_INSTRUCTOR_TOKEN (every page and write then needs a token), or serve on a \
             loopback address (the default 127.0.0.1:3000)",
            open.ip()
        );
    }
    Ok(())
}

pub async fn execute(lab: &Lab, args: ServeArgs) -> anyhow::Result<()> {
    // Trimmed as the headers and the sign-in form are: a token read from a file keeps its
    // newline.
    let instructor_token = args
        .instructor_token
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty());
    let mut config = lab.config.clone();
    config.serving = Serving {
        instructor_token,
        max_runs: args.max_runs,
        rates: Rates {
            sends: crate::limit::Rate {
                burst: args.produce_burst,
                per_second: args.produce_rate,
            },
            ..Default::default()
        },
        ..Default::default()
    };
    config.serving.validate()?;
    if config.serving.instructor_token.is_none() {
        refuse_unprotected(&args.addr).await?;
    }
    if config.lab != app::model::DEFAULT_LAB {
        bail!("lab: the server serves every lab; start it without --lab");
    }
    // Start the local broker now, not at the first click.
    lab.kafka().await?;
    let listener = tokio::net::TcpListener::bind(&args.addr)
        .await
        .with_context(|| format!("addr: cannot listen on {}", args.addr))?;
    let labs = Labs::open(config).await?;
    println!("Reckon's dashboard: http://{}", listener.local_addr()?);
    if let Some(seconds) = args.schedule {
        labs.default_lab()
            .update_settings(app::model::SettingsChange {
                schedule_seconds: Some((seconds > 0).then_some(seconds)),
                ..Default::default()
            })
            .await
            .map_err(|e| anyhow::anyhow!("schedule: {e}"))?;
    }
    let state = web::AppState::new(labs, args.site);
    web::serve(listener, state, web::shutdown_signal()).await?;
    Ok(())
}
