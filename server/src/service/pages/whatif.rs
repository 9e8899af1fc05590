//! The what-if on the reconciliation page and `reckon whatif`: gold replayed with another
//! watermark delay (`engine/flows/gold/whatif.rs`), and what that changes, in plain words.

use app::api::ApiError;
use app::model::{CountedHour, EventFate, WhatIf};
use chrono::DateTime;

use super::freshness::clock;
use crate::service::error::failed;
use crate::service::lab::Lab;

/// The longest delay the what-if replays: a week.
pub const MAX_DELAY_MINUTES: i64 = 7 * 24 * 60;

/// Hours described one by one; the rest are counted.
const HOURS_DESCRIBED: usize = 6;

/// `2h`, `90m`, `90min` or `90` (minutes) into minutes, between 0 and a week.
pub fn parse_delay(text: &str) -> Result<i64, String> {
    let t = text.trim().to_ascii_lowercase();
    let (number, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t.as_str(), ""),
    };
    let scale = match unit.trim() {
        "" | "m" | "min" | "mins" | "minutes" => 1,
        "h" | "hour" | "hours" => 60,
        other => {
            return Err(format!(
                "{other:?} is not a unit; write minutes (90, 90m) or hours (2h)"
            ));
        }
    };
    let minutes = number
        .parse::<i64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("{text:?} is not a whole number of minutes or hours"))?;
    if minutes > MAX_DELAY_MINUTES {
        return Err(format!(
            "at most a week ({MAX_DELAY_MINUTES} minutes), got {minutes}"
        ));
    }
    Ok(minutes)
}

/// The lab's gold replayed with the `delay` asked (as [`parse_delay`] reads it), with what it
/// changes in words. Reads committed tables only; writes nothing.
pub async fn whatif(lab: &Lab, delay: &str) -> Result<WhatIf, ApiError> {
    let minutes = parse_delay(delay).map_err(|m| ApiError::field("delay", m))?;
    let mut answer = crate::engine::course::gold::what_if(&lab.flows(), minutes)
        .await
        .map_err(failed)?;
    if let Some(history) = lab.history() {
        let runs = history
            .runs_by_table_version(&lab.config.lab, "gold")
            .await
            .map_err(failed)?;
        for run in &mut answer.runs {
            run.run_id = runs.get(&run.gold_version).copied();
        }
    }
    answer.sentences = sentences(&answer);
    Ok(answer)
}

/// What the asked delay changes, for a learner.
pub fn sentences(w: &WhatIf) -> Vec<String> {
    if w.runs.is_empty() {
        return vec!["Gold has not run yet: there is nothing to replay.".into()];
    }
    let mut out = vec![format!(
        "{} of gold's runs replayed over bronze's placed events, each reading what it read then, \
         with a watermark delay of {} minutes beside today's {}.",
        w.runs.len(),
        w.delay_minutes,
        w.actual_delay_minutes
    )];
    if w.bronze_not_read > 0 {
        out.push(format!(
            "{} bronze commit(s) gold has not read yet are left out.",
            w.bronze_not_read
        ));
    }
    if !w.matches_table {
        out.push(
            "Careful: replayed with today's delay, gold does not write the rows hourly_sales \
             holds, so this replay is not true to what happened."
                .into(),
        );
    }
    out.push(changed_sentence(w));
    let days: std::collections::BTreeSet<&str> = w
        .hours
        .iter()
        .map(|h| h.hour.get(..10).unwrap_or(""))
        .collect();
    let differing: Vec<String> = w
        .hours
        .iter()
        .filter(|h| h.now != h.with_delay)
        .map(|h| {
            let at = DateTime::parse_from_rfc3339(&h.hour)
                .map(|t| clock(t.timestamp_micros(), days.len() > 1))
                .unwrap_or_else(|_| h.hour.clone());
            format!(
                "{at} would count {} (today: {}).",
                counted(w, h.with_delay.as_ref()),
                counted(w, h.now.as_ref())
            )
        })
        .collect();
    if differing.is_empty() {
        out.push("Every hour counts the same and is final after the same run.".into());
    }
    let more = differing.len().saturating_sub(HOURS_DESCRIBED);
    out.extend(differing.into_iter().take(HOURS_DESCRIBED));
    if more > 0 {
        out.push(format!("{more} more hour(s) differ; the table lists them."));
    }
    out.push(
        match w.delay_minutes.cmp(&w.actual_delay_minutes) {
            std::cmp::Ordering::Greater => {
                "A longer delay waits for more late events, so every hour is final later: \
                 completeness bought with freshness."
            }
            std::cmp::Ordering::Less => {
                "A shorter delay makes hours final sooner, and drops more late events: freshness \
                 bought with completeness."
            }
            std::cmp::Ordering::Equal => "This is the delay gold runs with.",
        }
        .into(),
    );
    out
}

fn changed_sentence(w: &WhatIf) -> String {
    if w.changed_total == 0 {
        return "No event changes side: each is counted or dropped as it is today.".into();
    }
    let gained = w
        .changed
        .iter()
        .filter(|c| c.with_delay == EventFate::Counted)
        .map(|c| format!("order {}", c.order_id))
        .collect::<Vec<_>>();
    let lost = w
        .changed
        .iter()
        .filter(|c| c.now == EventFate::Counted)
        .map(|c| format!("order {}", c.order_id))
        .collect::<Vec<_>>();
    let list = |v: &[String]| {
        if v.len() <= 5 {
            v.join(", ")
        } else {
            format!("{} and {} more", v[..5].join(", "), v.len() - 5)
        }
    };
    let mut parts = vec![];
    if !gained.is_empty() {
        parts.push(format!("counted instead of dropped: {}", list(&gained)));
    }
    if !lost.is_empty() {
        parts.push(format!("dropped instead of counted: {}", list(&lost)));
    }
    let listed = if w.changed.len() < w.changed_total {
        format!(" (the first {} listed)", w.changed.len())
    } else {
        String::new()
    };
    format!(
        "{} event(s) change side{listed}; {}.",
        w.changed_total,
        parts.join("; ")
    )
}

/// "4 orders, 90.50, final after run #5" or "…, still open".
fn counted(w: &WhatIf, hour: Option<&CountedHour>) -> String {
    match hour {
        None => "nothing".into(),
        Some(h) => format!(
            "{} order{}, {}, {}",
            h.orders,
            if h.orders == 1 { "" } else { "s" },
            h.revenue,
            h.final_after.map_or("still open".into(), |n| format!(
                "final after {}",
                w.run_label(n)
            ))
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_read_in_minutes_or_hours() {
        assert_eq!(parse_delay("2h"), Ok(120));
        assert_eq!(parse_delay(" 90m "), Ok(90));
        assert_eq!(parse_delay("45"), Ok(45));
        assert_eq!(parse_delay("3 hours"), Ok(180));
        assert!(
            parse_delay("2d")
                .unwrap_err()
                .contains("\"d\" is not a unit")
        );
        // The field's name is the error's to add (`delay: ...`), said once.
        assert!(
            parse_delay("h")
                .unwrap_err()
                .starts_with("\"h\" is not a whole number")
        );
        assert!(parse_delay("20000").unwrap_err().contains("at most a week"));
    }
}
