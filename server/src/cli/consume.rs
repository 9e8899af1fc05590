//! `reckon consume --group G`: the course's demo of consumer-group offsets, printed as `kcat`
//! would (partition, offset, value), with where each partition resumed and why on stderr.

use crate::kafka::Kafka;

pub fn execute(
    kafka: &Kafka,
    topic: &str,
    group: &str,
    from_beginning: bool,
    max: usize,
    json: bool,
) -> anyhow::Result<()> {
    let read = kafka.consume_group(topic, group, from_beginning, max)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&read)?);
        return Ok(());
    }
    for r in &read.resumed {
        let why = match r.from {
            "committed" => "the group's committed offset",
            "beginning" => "no commit yet: from the beginning",
            _ => "no commit yet: from the end (add --from-beginning)",
        };
        eprintln!(
            "partition {}: resumed at offset {} ({why})",
            r.partition, r.offset
        );
    }
    for m in &read.messages {
        println!("{}\t{}\t{}", m.partition, m.offset, m.value);
    }
    eprintln!(
        "read {} message(s) in group {}; committed: {:?}",
        read.messages.len(),
        read.group,
        read.committed
    );
    Ok(())
}
