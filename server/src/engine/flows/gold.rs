//! gold: `bronze_orders` -> `hourly_sales`, orders and revenue per event-time hour with a 1-hour
//! watermark and (by default) duplicates dropped within it: the semantics of SPEC §3's Spark query,
//! run by run. Open hours, duplicate keys, the watermark and the dedup setting are state, written
//! to a file named by the bronze version it covers before the Delta commit that stores that
//! version: the commit decides which state file is current, so a crash anywhere is invisible.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{ArrayRef, AsArray, Decimal128Array, Int64Array, TimestampMicrosecondArray};
use arrow::datatypes::{Decimal128Type, Int32Type, Int64Type, TimestampMicrosecondType};
use arrow::record_batch::RecordBatch;
use deltalake::kernel::Transaction;
use serde::{Deserialize, Serialize};

use super::{
    DELAY_MICROS, DROPPED_LISTED, DroppedEvent, HOUR_MICROS, SourceRange, StreamError, StreamRun,
    pending, query_bronze_changes, show_time,
};
use crate::engine::crash::{CrashPoint, Moment};
use crate::engine::event::format_micros;
use crate::engine::tables::{self, TableError, TableName};
use crate::service::lab::Lab;

/// The `txn` app id under which gold stores the bronze version its output and state cover.
pub const APP_ID: &str = "hourly_sales/bronze_orders";

/// Placed events of the new bronze commits, in the order Spark would read them.
const PLACED_IN_ORDER: &str = r#"
    SELECT order_id, arrow_cast(status, 'Utf8') AS status, amount, event_time, "partition", "offset"
    FROM changes WHERE status = 'placed'
    ORDER BY _commit_version, "partition", "offset""#;

/// An hour still open: counted so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HourTotal {
    pub orders: i64,
    pub revenue_cents: i128,
}

/// A (order_id, status) seen within the watermark, remembered until it expires.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct DedupKey {
    order_id: i64,
    status: String,
    first_event_time: i64,
}

/// Everything gold remembers between runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoldState {
    /// Duplicates dropped within the watermark; fixed when the state starts.
    pub dedup: bool,
    /// Microseconds; `None` until the first placed event.
    pub watermark: Option<i64>,
    /// Hours not yet written, by window start.
    pub open_hours: BTreeMap<i64, HourTotal>,
    /// (order_id, status) -> first event time, while the watermark keeps it.
    dedup_keys: HashMap<(i64, String), i64>,
}

#[derive(Serialize, Deserialize)]
struct StateFile {
    bronze_version: i64,
    dedup: bool,
    watermark: Option<i64>,
    open_hours: Vec<(i64, HourTotal)>,
    dedup_keys: Vec<DedupKey>,
}

impl GoldState {
    fn new(dedup: bool) -> Self {
        Self {
            dedup,
            watermark: None,
            open_hours: BTreeMap::new(),
            dedup_keys: HashMap::new(),
        }
    }

    fn path(dir: &Path, bronze_version: i64) -> PathBuf {
        dir.join(format!("{bronze_version:020}.json"))
    }

    /// The state as of gold's last commit, or `None` before gold's first run.
    pub async fn committed(lab: &Lab) -> Result<Option<GoldState>, StreamError> {
        let Some(table) = lab.tables.open(TableName::HourlySales).await? else {
            return Ok(None);
        };
        let Some(version) = tables::txn_version(&table, APP_ID).await? else {
            return Ok(None);
        };
        Self::load(&lab.gold_state_dir(), version).map(Some)
    }

    fn load(dir: &Path, bronze_version: i64) -> Result<Self, StreamError> {
        let path = Self::path(dir, bronze_version);
        let state_err = |detail: String| StreamError::State {
            path: path.display().to_string(),
            detail,
        };
        let text = fs::read(&path).map_err(|e| {
            state_err(format!(
                "{e} (the state committed with bronze version {bronze_version} is gone)"
            ))
        })?;
        let file: StateFile =
            serde_json::from_slice(&text).map_err(|e| state_err(e.to_string()))?;
        Ok(Self {
            dedup: file.dedup,
            watermark: file.watermark,
            open_hours: file.open_hours.into_iter().collect(),
            dedup_keys: file
                .dedup_keys
                .into_iter()
                .map(|k| ((k.order_id, k.status), k.first_event_time))
                .collect(),
        })
    }

    /// Writes the state for `bronze_version` durably; it becomes current only with the commit.
    fn save(&self, dir: &Path, bronze_version: i64) -> Result<(), StreamError> {
        let path = Self::path(dir, bronze_version);
        let state_err = |e: std::io::Error| StreamError::State {
            path: path.display().to_string(),
            detail: e.to_string(),
        };
        let mut keys: Vec<DedupKey> = self
            .dedup_keys
            .iter()
            .map(|((order_id, status), t)| DedupKey {
                order_id: *order_id,
                status: status.clone(),
                first_event_time: *t,
            })
            .collect();
        keys.sort_by(|a, b| (a.order_id, &a.status).cmp(&(b.order_id, &b.status)));
        let file = StateFile {
            bronze_version,
            dedup: self.dedup,
            watermark: self.watermark,
            open_hours: self.open_hours.iter().map(|(h, t)| (*h, *t)).collect(),
            dedup_keys: keys,
        };
        fs::create_dir_all(dir).map_err(state_err)?;
        let tmp = path.with_extension("json.tmp");
        let mut out = fs::File::create(&tmp).map_err(state_err)?;
        out.write_all(&serde_json::to_vec(&file).unwrap_or_default())
            .map_err(state_err)?;
        out.sync_all().map_err(state_err)?;
        fs::rename(&tmp, &path).map_err(state_err)?;
        fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(state_err)?;
        Ok(())
    }

    /// One placed event, read in order; returns why it was dropped, if it was.
    fn add(
        &mut self,
        order_id: i64,
        status: &str,
        amount_cents: i128,
        event_time: i64,
        before: Option<i64>,
    ) -> Option<&'static str> {
        let hour = event_time.div_euclid(HOUR_MICROS) * HOUR_MICROS;
        if self.dedup {
            // dropDuplicatesWithinWatermark drops what is at or behind the watermark.
            if before.is_some_and(|w| event_time <= w) {
                return Some("late");
            }
            let key = (order_id, status.to_string());
            if self.dedup_keys.contains_key(&key) {
                return Some("duplicate");
            }
            self.dedup_keys.insert(key, event_time);
        } else if before.is_some_and(|w| hour + HOUR_MICROS <= w) {
            // The window aggregation drops an event whose hour the watermark has closed.
            return Some("late");
        }
        let total = self.open_hours.entry(hour).or_default();
        total.orders += 1;
        total.revenue_cents += amount_cents;
        None
    }

    /// Moves the watermark and pops every hour it closes, oldest first.
    fn advance(&mut self, latest_event_time: Option<i64>) -> Vec<(i64, HourTotal)> {
        if let Some(latest) = latest_event_time {
            let candidate = latest - DELAY_MICROS;
            self.watermark = Some(self.watermark.map_or(candidate, |w| w.max(candidate)));
        }
        let Some(watermark) = self.watermark else {
            return vec![];
        };
        self.dedup_keys
            .retain(|_, first| watermark < *first + DELAY_MICROS);
        let still_open = self.open_hours.split_off(&(watermark - HOUR_MICROS + 1));
        std::mem::replace(&mut self.open_hours, still_open)
            .into_iter()
            .collect()
    }
}

pub async fn run(lab: &Lab, dedup: bool) -> Result<StreamRun, StreamError> {
    let started = Instant::now();
    let mut record = StreamRun::new("gold");
    let bronze = lab.tables.open_or_create(TableName::BronzeOrders).await?;
    let hourly = lab.tables.open_or_create(TableName::HourlySales).await?;
    let state_dir = lab.gold_state_dir();
    let processed = tables::txn_version(&hourly, APP_ID).await?;
    let mut state = match processed {
        Some(v) => GoldState::load(&state_dir, v)?,
        None => GoldState::new(dedup),
    };
    if state.dedup != dedup {
        let word = |on: bool| if on { "on" } else { "off" };
        return Err(StreamError::DedupSettingFixed {
            started: word(state.dedup),
            asked: word(dedup),
        });
    }
    record.watermark_before = show_time(state.watermark);
    record.watermark_after = record.watermark_before.clone();
    let Some((first, current)) = pending(&bronze, processed) else {
        record.duration_ms = started.elapsed().as_millis() as u64;
        return Ok(record);
    };
    record.source = SourceRange::Versions {
        table: TableName::BronzeOrders.to_string(),
        first,
        last: current,
    };
    let (_, placed) = query_bronze_changes(&bronze, (first, current), PLACED_IN_ORDER).await?;
    CrashPoint::abort_if(lab.config.crash_at, "gold", Moment::AfterRead);

    let before = state.watermark;
    let mut latest: Option<i64> = None;
    for batch in &placed {
        let order_id = batch.column(0).as_primitive::<Int64Type>();
        let status = batch.column(1).as_string::<i32>();
        let amount = batch.column(2).as_primitive::<Decimal128Type>();
        let event_time = batch.column(3).as_primitive::<TimestampMicrosecondType>();
        let partition = batch.column(4).as_primitive::<Int32Type>();
        let offset = batch.column(5).as_primitive::<Int64Type>();
        for i in 0..batch.num_rows() {
            record.rows_read += 1;
            let t = event_time.value(i);
            latest = Some(latest.map_or(t, |l| l.max(t)));
            let Some(reason) = state.add(
                order_id.value(i),
                status.value(i),
                amount.value(i),
                t,
                before,
            ) else {
                continue;
            };
            match reason {
                "late" => record.rows_late += 1,
                _ => record.rows_duplicate += 1,
            }
            if record.dropped.len() < DROPPED_LISTED {
                record.dropped.push(DroppedEvent {
                    order_id: order_id.value(i),
                    status: status.value(i).to_string(),
                    event_time: format_micros(t),
                    partition: partition.value(i),
                    offset: offset.value(i),
                    reason: reason.into(),
                });
            }
        }
    }
    let closed = state.advance(latest);
    record.watermark_after = show_time(state.watermark);
    record.hours_closed = closed.iter().map(|(h, _)| format_micros(*h)).collect();
    record.rows_written = closed.len() as u64;

    state.save(&state_dir, current)?;
    let table = tables::append(
        hourly,
        vec![hours_batch(&closed)?],
        vec![Transaction::new(APP_ID, current)],
    )
    .await?;
    record.table_version = Some(tables::version(&table));
    CrashPoint::abort_if(lab.config.crash_at, "gold", Moment::AfterCommit);
    remove_old_states(&state_dir, current);
    record.duration_ms = started.elapsed().as_millis() as u64;
    Ok(record)
}

fn hours_batch(closed: &[(i64, HourTotal)]) -> Result<RecordBatch, TableError> {
    let arrow = |source| TableError::Arrow {
        table: TableName::HourlySales.to_string(),
        source,
    };
    let hours = TimestampMicrosecondArray::from_iter_values(closed.iter().map(|(h, _)| *h))
        .with_timezone("UTC");
    let orders = Int64Array::from_iter_values(closed.iter().map(|(_, t)| t.orders));
    let revenue = Decimal128Array::from_iter_values(closed.iter().map(|(_, t)| t.revenue_cents))
        .with_precision_and_scale(18, 2)
        .map_err(arrow)?;
    let columns: Vec<ArrayRef> = vec![Arc::new(hours), Arc::new(orders), Arc::new(revenue)];
    RecordBatch::try_new(TableName::HourlySales.schema(), columns).map_err(arrow)
}

/// Keeps the current state and the one before it (for reading after a crash); older ones go.
fn remove_old_states(dir: &Path, current: i64) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut versions: Vec<(i64, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let version = name.strip_suffix(".json")?.parse::<i64>().ok()?;
            Some((version, e.path()))
        })
        .collect();
    versions.sort();
    for (version, path) in versions {
        // States above `current` were written by a run that crashed before its commit.
        if version < current - 1 || version > current {
            let _ = fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(hh: i64, mm: i64) -> i64 {
        // 2026-10-01T00:00:00Z
        1_790_812_800_000_000 + hh * HOUR_MICROS + mm * 60_000_000
    }

    /// Feeds runs of (order_id, hh, mm, cents) and returns the hours written, in order.
    fn play(dedup: bool, runs: &[&[(i64, i64, i64, i128)]]) -> Vec<(i64, HourTotal)> {
        let mut state = GoldState::new(dedup);
        let mut written = vec![];
        for events in runs {
            let before = state.watermark;
            let mut latest = None;
            for &(id, hh, mm, cents) in *events {
                latest = Some(latest.map_or(t(hh, mm), |l: i64| l.max(t(hh, mm))));
                state.add(id, "placed", cents, t(hh, mm), before);
            }
            written.extend(state.advance(latest));
        }
        written
    }

    const COURSE: [&[(i64, i64, i64, i128)]; 6] = [
        &[(1001, 9, 5, 2500), (1002, 9, 20, 1850), (1003, 9, 45, 2500)],
        &[(1004, 10, 5, 3000), (1007, 10, 40, 2500)],
        &[(1005, 11, 5, 1825)],
        &[(1005, 11, 5, 1825)],
        &[(1006, 9, 50, 2200), (1008, 12, 10, 4000)],
        &[(1009, 13, 20, 3000)],
    ];

    #[test]
    fn course_with_dedup_matches_the_seed() {
        let written = play(true, &COURSE);
        let hours: Vec<_> = written
            .iter()
            .map(|(h, t)| (*h, t.orders, t.revenue_cents))
            .collect();
        assert_eq!(
            hours,
            vec![(t(9, 0), 3, 6850), (t(10, 0), 2, 5500), (t(11, 0), 1, 1825)]
        );
    }

    #[test]
    fn course_without_dedup_counts_1005_twice() {
        let written = play(false, &COURSE);
        assert_eq!(
            written[2].1,
            HourTotal {
                orders: 2,
                revenue_cents: 3650
            }
        );
        assert_eq!(written[0].1.orders, 3, "1006 is late for 09:00 either way");
    }

    #[test]
    fn everything_in_one_run_is_on_time() {
        let all: Vec<_> = COURSE.iter().flat_map(|r| r.iter().copied()).collect();
        let written = play(true, &[&all]);
        assert_eq!(
            written[0].1,
            HourTotal {
                orders: 4,
                revenue_cents: 9050
            }
        );
        assert_eq!(written.len(), 3);
    }

    #[test]
    fn state_survives_a_save_and_load() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = GoldState::new(true);
        state.add(1, "placed", 100, t(9, 5), None);
        state.advance(Some(t(9, 5)));
        state.save(dir.path(), 7).unwrap();
        assert_eq!(GoldState::load(dir.path(), 7).unwrap(), state);
    }
}
