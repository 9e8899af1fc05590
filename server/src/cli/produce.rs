//! `reckon produce`: one batch of a scenario, or one event, sent to the lab's topic.

use anyhow::{Context, bail};

use crate::engine::event::OrderEvent;
use crate::engine::scenario::Scenario;
use crate::service::lab::Lab;

pub async fn execute(
    lab: &Lab,
    scenario: Option<String>,
    batch: Option<String>,
    event: Option<String>,
) -> anyhow::Result<()> {
    let (events, source) = match (scenario, batch, event) {
        (Some(scenario), Some(batch), None) => {
            let scenario = Scenario::load(&scenario)?;
            let source = format!("scenario:{}:{batch}", scenario.name);
            (scenario.batch(&batch)?.to_vec(), source)
        }
        (None, None, Some(event)) => (
            vec![OrderEvent::parse(event.as_bytes()).context("event")?],
            "cli".into(),
        ),
        _ => bail!("produce: give --scenario FILE --batch N, or --event JSON"),
    };
    for (event, sent) in events.iter().zip(lab.produce(&events, &source).await?) {
        println!(
            "sent order {} ({}) to partition {} offset {}",
            event.order_id, event.status, sent.partition, sent.offset
        );
    }
    Ok(())
}
