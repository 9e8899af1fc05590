//! "Are the numbers final up to when?" in plain words, for people who are not engineers: which
//! hours of `hourly_sales` are final, what would close the next one, and how the last run and
//! check went. Derived from the tables (truth) and the history (what happened when).

use app::model::{CostModel, Freshness, GoldBar, GoldChart, PipelineKind};
use arrow::datatypes::{Int64Type, TimestampMicrosecondType};
use chrono::{DateTime, Utc};

use super::last_run::said_of_last_run;
use crate::engine::columns::Columns;
use crate::engine::course::gold::GoldState;
use crate::engine::course::{DELAY_MICROS, HOUR_MICROS};
use crate::engine::event::format_micros;
use crate::engine::tables::TableName;
use crate::service::lab::{Lab, LabError};

/// `HH:MM` of a time in microseconds (as the check prints hours), with the day when asked.
pub fn clock(micros: i64, with_day: bool) -> String {
    let t = DateTime::<Utc>::from_timestamp_micros(micros).unwrap_or_default();
    if with_day {
        t.format("%-d %B %Y %H:%M").to_string()
    } else {
        t.format("%H:%M").to_string()
    }
}

/// The lab's freshness as of `now`, its cost priced by `model`: its project's when it runs one.
pub async fn freshness(
    lab: &Lab,
    now: DateTime<Utc>,
    model: &CostModel,
) -> Result<Freshness, LabError> {
    if lab.kind() == PipelineKind::Project {
        return super::project_freshness::freshness(lab, now, model).await;
    }
    let mut last_written: Option<i64> = None;
    let mut bars = vec![];
    for batch in crate::engine::render::rows(&lab.tables, TableName::HourlySales).await? {
        let columns = Columns::of(&batch, "hourly_sales");
        let hours = columns.primitive::<TimestampMicrosecondType>("hour")?;
        let orders = columns.primitive::<Int64Type>("orders")?;
        last_written = last_written.max(hours.iter().flatten().max());
        for i in 0..batch.num_rows() {
            bars.push((hours.value(i), orders.value(i), true));
        }
    }
    let state = GoldState::committed(&lab.flows()).await?;
    // Hours gold holds open: their counts so far, not final yet.
    if let Some(state) = &state {
        bars.extend(state.open_hours().map(|(h, t)| (h, t.orders, false)));
    }
    bars.sort();
    // The next hour to be final is the first one gold holds open with orders in it: an hour
    // without orders has nothing to become final.
    let next_hour = state
        .as_ref()
        .and_then(|s| s.open_hours().next().map(|(h, _)| h));
    let closes_at = next_hour.map(|h| h + HOUR_MICROS + DELAY_MICROS);
    let one_day = match (last_written, closes_at) {
        (Some(a), Some(b)) => a.div_euclid(24 * HOUR_MICROS) == b.div_euclid(24 * HOUR_MICROS),
        _ => true,
    };

    let mut sentences = vec![];
    match last_written {
        Some(h) => sentences.push(format!(
            "Hourly sales are final through the {} hour.",
            clock(h, !one_day)
        )),
        None => sentences.push("No hour of sales is final yet.".to_string()),
    }
    if let (Some(h), Some(at)) = (next_hour, closes_at) {
        sentences.push(format!(
            "The {} hour will be final once an order placed at {} or later arrives.",
            clock(h, !one_day),
            clock(at, !one_day)
        ));
    }

    let said = said_of_last_run(lab, now, None).await?;
    let left_out = said.left_out();
    sentences.push(said.sentence);
    sentences.extend(left_out);
    Ok(Freshness {
        late_hours: said.late.len() as u64,
        light: said.light,
        final_through: last_written.map(format_micros),
        next_hour: next_hour.map(format_micros),
        closes_with_order_at: closes_at.map(format_micros),
        last_run_at: said.last_run_at,
        last_check: said.last_check,
        sentences,
        chart: (!bars.is_empty()).then(|| GoldChart {
            title: "orders per hour (hourly_sales)".into(),
            bars: bars
                .into_iter()
                .map(|(hour, orders, done)| GoldBar {
                    label: clock(hour, !one_day),
                    value: orders,
                    r#final: done,
                })
                .collect(),
            final_rule: "An hour is final once the watermark (the newest order time less one \
                         hour) passes its end; the pale bars are the counts so far of hours \
                         still open."
                .into(),
        }),
        cost: super::cost::of_lab(lab, model).await?,
    })
}
