//! The produce page: the form's fields as an event, the recent sends, and the presets (a late
//! event, the course's batches, the next order id).

use app::api::{ApiError, EventForm};
use app::model::ProducePage;
use chrono::{SecondsFormat, Utc};

use super::history;
use crate::engine::course::HOUR_MICROS;
use crate::engine::course::gold::GoldState;
use crate::engine::event::{OrderEvent, format_micros};
use crate::engine::scenario::Scenario;
use crate::service::error::failed;
use crate::service::lab::Lab;

/// Recent events the produce page lists.
const RECENT_EVENTS: i64 = 20;

/// `HH:MM` of a time in microseconds, as the check prints hours.
pub fn clock(micros: i64) -> String {
    super::freshness::clock(micros, false)
}

/// The produce form's fields as an event (SPEC §1), or the first field that is wrong.
pub fn parse_form(form: &EventForm) -> Result<OrderEvent, ApiError> {
    let order_id: i64 = form.order_id.trim().parse().map_err(|_| {
        ApiError::field(
            "order_id",
            format!("must be a whole number, got {:?}", form.order_id),
        )
    })?;
    let json = serde_json::json!({
        "order_id": order_id,
        "customer_id": form.customer_id.trim(),
        "status": form.status.trim(),
        "amount": form.amount.trim(),
        "event_time": form.event_time.trim(),
    });
    parse_event(json.to_string().as_bytes())
}

/// An event as the API receives it, its JSON text as sent; errors name the field.
pub fn parse_event(json: &[u8]) -> Result<OrderEvent, ApiError> {
    OrderEvent::parse(json).map_err(|e| match e.field {
        Some(field) => ApiError::field(field, e.reason),
        None => ApiError::Failed(e.reason),
    })
}

/// What the produce page shows besides its form.
pub async fn page(lab: &Lab) -> Result<ProducePage, ApiError> {
    let history = history(lab)?;
    let name = &lab.config.lab;
    let recent = history
        .produced(name, RECENT_EVENTS)
        .await
        .map_err(failed)?;
    let next_order_id = history
        .max_order_id(name)
        .await
        .map_err(failed)?
        .unwrap_or(1000)
        // Any whole number is an order id: the largest one has no next, and is offered again.
        .saturating_add(1);
    let watermark = GoldState::committed(&lab.flows())
        .await
        .map_err(failed)?
        .and_then(|s| s.watermark());
    // Half an hour behind the watermark: in an hour gold already closed, or about to drop.
    let late = watermark.map(|w| w - HOUR_MICROS / 2);
    let late_explanation = match (watermark, late) {
        (Some(w), Some(late)) => format!(
            "The watermark is {}. An order placed at {} is behind it: gold drops it as late and \
             counts it in no hour, and the check will show its hour as late.",
            clock(w),
            clock(late)
        ),
        _ => "No watermark yet: gold has not seen a placed order, so no event can be late.".into(),
    };
    let batches = Scenario::load("course")
        .map(|c| c.batches.keys().cloned().collect())
        .unwrap_or_default();
    Ok(ProducePage {
        recent,
        watermark: watermark.map(format_micros),
        late_event_time: late.map(format_micros),
        late_explanation,
        batches,
        next_order_id,
        now: Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true),
    })
}
