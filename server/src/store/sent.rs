//! Events sent to a lab's topic through Reckon, and where Kafka stored them.

use app::model::{ProducedEvent, SentAt};

use super::{History, HistoryError, now};
use crate::engine::event::{OrderEvent, format_cents, format_micros};

#[derive(sqlx::FromRow)]
struct SentRow {
    id: i64,
    produced_at: String,
    source: String,
    partition: i32,
    offset: i64,
    event: String,
}

impl TryFrom<SentRow> for ProducedEvent {
    type Error = HistoryError;

    fn try_from(row: SentRow) -> Result<Self, HistoryError> {
        let event = OrderEvent::parse(row.event.as_bytes())
            .map_err(|e| HistoryError::unreadable(format!("sent event #{}", row.id), e))?;
        Ok(ProducedEvent {
            id: row.id,
            produced_at: row.produced_at,
            source: row.source,
            partition: row.partition,
            offset: row.offset,
            order_id: event.order_id,
            customer_id: event.customer_id,
            status: event.status,
            amount: format_cents(event.amount_cents),
            event_time: format_micros(event.event_time_micros),
        })
    }
}

impl History {
    /// Records events sent to the lab's topic and where they landed.
    pub async fn record_produced(
        &self,
        lab: &str,
        topic: &str,
        source: &str,
        events: &[OrderEvent],
        sent: &[SentAt],
    ) -> Result<(), HistoryError> {
        let mut tx = self.write().await?;
        let at = now();
        for (event, sent) in events.iter().zip(sent) {
            sqlx::query(
                "INSERT INTO produced_events (lab, produced_at, source, topic, \"partition\", \"offset\", event) \
                 VALUES (?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(lab)
            .bind(&at)
            .bind(source)
            .bind(topic)
            .bind(sent.partition)
            .bind(sent.offset)
            .bind(event.to_json())
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Events sent to the lab through Reckon, newest first.
    pub async fn produced(
        &self,
        lab: &str,
        limit: i64,
    ) -> Result<Vec<ProducedEvent>, HistoryError> {
        let rows: Vec<SentRow> = sqlx::query_as(
            "SELECT id, produced_at, source, \"partition\", \"offset\", event FROM produced_events \
             WHERE lab = ? ORDER BY id DESC LIMIT ?",
        )
        .bind(lab)
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        rows.into_iter().map(ProducedEvent::try_from).collect()
    }

    /// An event sent to the lab before, by its id.
    pub async fn produced_event(
        &self,
        lab: &str,
        id: i64,
    ) -> Result<Option<OrderEvent>, HistoryError> {
        let json: Option<String> =
            sqlx::query_scalar("SELECT event FROM produced_events WHERE lab = ? AND id = ?")
                .bind(lab)
                .bind(id)
                .fetch_optional(self.pool())
                .await?;
        json.map(|json| {
            OrderEvent::parse(json.as_bytes())
                .map_err(|e| HistoryError::unreadable(format!("sent event #{id}"), e))
        })
        .transpose()
    }

    /// The largest order id sent to the lab through Reckon.
    pub async fn max_order_id(&self, lab: &str) -> Result<Option<i64>, HistoryError> {
        Ok(sqlx::query_scalar(
            "SELECT max(CAST(json_extract(event, '$.order_id') AS INTEGER)) FROM produced_events WHERE lab = ?",
        )
        .bind(lab)
        .fetch_one(self.pool())
        .await?)
    }
}
