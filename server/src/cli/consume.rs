//! `reckon consume --group G`: the course's demo of consumer-group offsets, printed as `kcat`
//! would (partition, offset, value), with where each partition resumed and why on stderr. The
//! group is the lab's (`service/pages/consumers.rs`), as the topic page's consumer uses.

use crate::Lab;
use crate::service::pages::consumers::{group_id, record, said_of_read, validate_group};

pub async fn execute(
    lab: &Lab,
    group: &str,
    from_beginning: bool,
    max: usize,
    json: bool,
) -> anyhow::Result<()> {
    validate_group(group).map_err(|e| anyhow::anyhow!("{e}"))?;
    let kafka = lab.kafka().await?;
    let mut read = kafka.consume_group(
        &lab.config.topic,
        &group_id(lab, group),
        from_beginning,
        max,
    )?;
    read.group = group.to_string();
    read.sentences = said_of_read(&read);
    record(lab, &read).await;
    if json {
        println!("{}", serde_json::to_string_pretty(&read)?);
        return Ok(());
    }
    for m in &read.messages {
        println!("{}\t{}\t{}", m.partition, m.offset, m.value);
    }
    for sentence in &read.sentences {
        eprintln!("{sentence}");
    }
    eprintln!(
        "group {} is Kafka's group id {}; committed: {:?}",
        read.group, read.group_id, read.committed
    );
    Ok(())
}
