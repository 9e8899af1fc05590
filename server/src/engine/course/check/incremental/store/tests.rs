//! The state's counting and its upgrade, on a state in a temp folder.

use super::*;

/// A placed event of order `order_id` stored by bronze run `run` at `(partition, offset)`.
fn placed(order_id: i64, amount: i64, run: i64, (partition, offset): (i32, i64)) -> BronzeRow {
    BronzeRow {
        order_id,
        customer_id: "C1".into(),
        status: "placed".into(),
        amount,
        event_time: 5 * HOUR_MICROS + 60,
        ingested: run,
        partition,
        offset,
    }
}

#[tokio::test]
async fn an_hour_counts_each_event_once_with_the_amount_of_its_first_stored_copy() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("check.sqlite")).await.unwrap();
    let mut tx = store.begin().await.unwrap();
    // Two copies in one run: one event, the amount of the copy read first (lower offset).
    let run = [
        placed(1, 700, 1, (1, 9)),
        placed(1, 500, 1, (1, 4)),
        placed(2, 100, 1, (0, 1)),
    ];
    add_bronze(&mut tx, &run).await.unwrap();
    // Copies in a later run were stored after, whatever their partition: gold read the
    // first run's copy and dropped these, so nothing changes.
    let later = [placed(1, 300, 2, (0, 2)), placed(2, 900, 2, (0, 8))];
    add_bronze(&mut tx, &later).await.unwrap();
    let counted = counted(&mut tx).await.unwrap();
    assert_eq!(counted.distinct, 2);
    let hours: Vec<_> = counted.hours.iter().map(|h| (h.hour, h.known)).collect();
    assert_eq!(hours, vec![(5 * HOUR_MICROS, (2, 600))]);
}

#[tokio::test]
async fn a_state_of_an_older_layout_is_emptied_for_a_recount() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("check.sqlite");
    {
        let old = sqlx::SqlitePool::connect(&format!("sqlite://{}?mode=rwc", path.display()))
            .await
            .unwrap();
        sqlx::raw_sql(
            "CREATE TABLE events (order_id INTEGER NOT NULL, status TEXT NOT NULL, \
             event_time INTEGER NOT NULL, part INTEGER NOT NULL, off INTEGER NOT NULL, \
             amount INTEGER NOT NULL, PRIMARY KEY (order_id, status, event_time)); \
             CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER); \
             INSERT INTO counters VALUES ('events', 7);",
        )
        .execute(&old)
        .await
        .unwrap();
        old.close().await;
    }
    let store = Store::open(&path).await.unwrap();
    let mut tx = store.begin().await.unwrap();
    assert_eq!(counter(&mut tx, "events").await.unwrap(), None);
    add_bronze(&mut tx, &[placed(1, 100, 1, (0, 0))])
        .await
        .unwrap();
    assert_eq!(counted(&mut tx).await.unwrap().distinct, 1);
}
