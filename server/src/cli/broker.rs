//! `reckon broker start|stop|status`: the machine's local Kafka broker.

use std::process::ExitCode;

use crate::config::LocalBroker;
use crate::kafka::broker::Started;

/// `reckon broker start|stop|status`: needs no lab.
pub async fn execute(broker: &LocalBroker, action: &str) -> anyhow::Result<ExitCode> {
    match action {
        "start" => match broker.start().await? {
            Started::AlreadyRunning => {
                println!("running on 127.0.0.1:{}", broker.port)
            }
            Started::Now { pid } => {
                println!(
                    "started on 127.0.0.1:{} (pid {pid}, home {})",
                    broker.port,
                    broker.home.display()
                )
            }
        },
        "stop" => {
            if broker.stop().await? {
                println!("stopped");
            } else {
                println!("not running");
            }
        }
        _ => {
            let status = broker.status();
            match (status.answers, status.started_by_reckon) {
                (true, Some(p)) => println!(
                    "running on 127.0.0.1:{} (pid {}, home {})",
                    status.port,
                    p.pid,
                    p.home.display()
                ),
                (true, None) => println!(
                    "running on 127.0.0.1:{} (not started by Reckon)",
                    status.port
                ),
                (false, Some(p)) => println!(
                    "starting or stuck: pid {} does not answer on 127.0.0.1:{}",
                    p.pid, status.port
                ),
                (false, None) => println!("not running"),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
