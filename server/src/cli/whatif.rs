//! `reckon whatif --delay 2h`: gold replayed with another watermark delay, printed as a table of
//! hours (today beside the delay asked), the events that change side, and what that means.

use app::model::{CountedHour, WhatIf};

use crate::Lab;

pub async fn execute(lab: &Lab, delay: &str, json: bool) -> anyhow::Result<()> {
    let answer = crate::service::pages::whatif::whatif(lab, delay)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
    } else {
        print!("{}", table(&answer));
    }
    Ok(())
}

/// The hours side by side, the changed events, then the sentences.
fn table(w: &WhatIf) -> String {
    let cell = |h: &Option<CountedHour>| match h {
        None => "-".to_string(),
        Some(h) => format!(
            "{:>4} {:>10}  {}",
            h.orders,
            h.revenue,
            h.final_after
                .map_or("open".into(), |n| format!("final after {}", w.run_label(n)))
        ),
    };
    let mut out = format!(
        "{:<22} {:<36} {}\n",
        "hour",
        format!("delay {} min (today)", w.actual_delay_minutes),
        format!("delay {} min", w.delay_minutes)
    );
    for h in &w.hours {
        out += &format!(
            "{:<22} {:<36} {}\n",
            h.hour,
            cell(&h.now),
            cell(&h.with_delay)
        );
    }
    for c in &w.changed {
        out += &format!(
            "order {} at {} (partition {} offset {}, read in {}): {} today, {} with {} min\n",
            c.order_id,
            c.event_time,
            c.partition,
            c.offset,
            w.run_label(c.run),
            c.now.as_str(),
            c.with_delay.as_str(),
            w.delay_minutes
        );
    }
    for s in &w.sentences {
        out += s;
        out.push('\n');
    }
    out
}
