//! Where the figures go: `bench/labs_load.json`, and `bench/results.md`'s labs-load section.

use std::path::Path;

use serde_json::Value;

const START: &str = "<!-- labs load: written by `make bench` -->";
const END: &str = "<!-- end of labs load -->";

/// Writes `bench/labs_load.json` and the figures into `bench/results.md` between its markers.
pub fn record(result: &Value) -> anyhow::Result<()> {
    if reckon::bench::smoke() {
        println!("smoke run: bench/results.md and bench/labs_load.json left as they are");
        return Ok(());
    }
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench");
    std::fs::write(
        bench.join("labs_load.json"),
        serde_json::to_string_pretty(result)? + "\n",
    )?;
    let row = |kind: &str| {
        let l = &result["latency"][kind];
        format!(
            "| {kind} | {} | {:.1} | {:.1} |\n",
            l["reads"],
            l["p50_ms"].as_f64().unwrap_or(0.0),
            l["p99_ms"].as_f64().unwrap_or(0.0)
        )
    };
    // Each route alone: which reads are the slow ones.
    let routes: String = result["latency_by"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(name, _)| name.starts_with('/'))
        .map(|(name, l)| {
            format!(
                "| `{name}` | {} | {:.1} | {:.1} |\n",
                l["reads"],
                l["p50_ms"].as_f64().unwrap_or(0.0),
                l["p99_ms"].as_f64().unwrap_or(0.0)
            )
        })
        .collect();
    let section = format!(
        "{START}\n{} viewers, each reading a page or an API route {}, for {} s over a real socket, \
         with viewer tokens, while the learners of {} labs sent the course's batches and ran after each \
         ({} runs). Error answers: {}{}.\n\n\
         | reads | count | p50 ms | p99 ms |\n|---|---|---|---|\n{}{}{}{routes}\n\
         Then {} senders at once, each sending one event at a time to its lab's API (one shared \
         Kafka producer in the server): {:.0} sends a second.\n\n\
         | sends | count | p50 ms | p99 ms |\n|---|---|---|---|\n{}\n\
         Before the load, one lab ran {} times (a course batch sent, then a run): the server's \
         resident memory was {:.0} MiB after 10 runs and {:.0} MiB after {} ({:+.1} %; target: \
         within 10 %).\n{END}",
        result["readers"],
        match result["every_seconds"].as_u64() {
            Some(0) | None => "back to back".to_string(),
            Some(s) => format!("every {s} s"),
        },
        result["seconds"],
        result["labs"],
        result["runs"],
        result["errors"],
        match result["first_errors"].as_array() {
            Some(first) if !first.is_empty() => format!(
                " (the first: {})",
                first
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            _ => String::new(),
        },
        row("page"),
        row("api"),
        row("all"),
        result["senders"],
        result["sends_per_second"].as_f64().unwrap_or(0.0),
        row("send"),
        result["rss_mib"]["runs"],
        result["rss_mib"]["after_10_runs"].as_f64().unwrap_or(0.0),
        result["rss_mib"]["after_runs"].as_f64().unwrap_or(0.0),
        result["rss_mib"]["runs"],
        (result["rss_mib"]["after_runs"].as_f64().unwrap_or(0.0)
            / result["rss_mib"]["after_10_runs"].as_f64().unwrap_or(1.0)
            - 1.0)
            * 100.0,
    );
    let path = bench.join("results.md");
    let text = std::fs::read_to_string(&path)?;
    let text = match (text.find(START), text.find(END)) {
        (Some(start), Some(end)) => {
            format!("{}{section}{}", &text[..start], &text[end + END.len()..])
        }
        _ => format!("{text}\n## The shared lab under load\n\n{section}\n"),
    };
    std::fs::write(&path, text)?;
    println!("recorded in bench/results.md and bench/labs_load.json");
    Ok(())
}
