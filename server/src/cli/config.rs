//! The command line's global arguments made into the lab's [`Config`], each checked and named
//! when wrong.

use std::time::Duration;

use super::args::Cli;
use crate::config::{self, Config, ConfigError, invalid};

/// The config `cli`'s global arguments describe, or the first flag that cannot be.
pub fn config(cli: &Cli) -> Result<Config, ConfigError> {
    config::validate_topic(&cli.topic)?;
    if cli.partitions < 1 {
        return Err(invalid(
            "partitions",
            format!("must be at least 1, got {}", cli.partitions),
        ));
    }
    if let Some(brokers) = &cli.brokers
        && brokers.trim().is_empty()
    {
        return Err(invalid("brokers", "must be HOST:PORT[,HOST:PORT...]"));
    }
    // The command line's flag is --lab.
    config::validate_lab_name(&cli.lab).map_err(|e| invalid("lab", e.why))?;
    let mut config = Config::new(&cli.data);
    config.brokers = cli.brokers.clone();
    config.topic = cli.topic.clone();
    config.partitions = cli.partitions;
    config.compact_after = cli.compact_after;
    config.vacuum_after = config::vacuum_after(cli.vacuum_after)
        .expect("--vacuum-after was checked as it was parsed");
    config.lock_wait = Duration::from_secs(cli.lock_wait);
    config.crash_at = cli.crash_at.clone();
    config.local_broker.port = cli.broker_port;
    config.local_broker.controller_port = cli.broker_port.checked_add(1).ok_or_else(|| {
        invalid(
            "broker-port",
            "too large: the controller listens on the next port",
        )
    })?;
    if let Some(home) = &cli.broker_home {
        config.local_broker.home = home.clone();
    }
    if let Some(libs) = &cli.kafka_libs {
        config.local_broker.kafka_libs = libs.clone();
    }
    Ok(config.for_lab(&cli.lab))
}
