//! Gold's state between runs: open hours, duplicate keys within the watermark, the watermark and
//! the dedup setting, written to a file named by the bronze version it covers before the Delta
//! commit that stores that version: the commit decides which state file is current.
//!
//! The state committed last is also held parsed in memory (`engine/state.rs`): a big lab's state
//! holds tens of thousands of duplicate keys, and each run (gold's restore, the check's watermark)
//! and each page showing open hours would otherwise parse it whole.

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::APP_ID;
use crate::engine::course::{DELAY_MICROS, DropReason, HOUR_MICROS};
use crate::engine::flow::FlowContext;
use crate::engine::flow::FlowError;
use crate::engine::state;
use crate::engine::streaming::tumbling::{Fate, Windows};
use crate::engine::tables::{TableName, Tables};

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

/// Everything gold remembers between runs: its hours are tumbling windows of one hour
/// (`engine/streaming/tumbling.rs`, a project's windowed flows' too), without group keys,
/// adding up orders and revenue, with (order_id, status) as the duplicate key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoldState {
    /// Its delay is SPEC §3's hour, or another in a what-if replay; `dedup` is fixed when the
    /// state starts.
    pub windows: Windows<(), (i64, String), HourTotal>,
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
    pub(super) fn new(dedup: bool) -> Self {
        Self::with_delay(dedup, DELAY_MICROS)
    }

    /// A state that starts empty with another delay: the what-if's, never saved.
    pub(super) fn with_delay(dedup: bool, delay: i64) -> Self {
        Self {
            windows: Windows::new(HOUR_MICROS, delay, dedup),
        }
    }

    pub fn dedup(&self) -> bool {
        self.windows.dedup
    }

    /// Microseconds; `None` until the first placed event.
    pub fn watermark(&self) -> Option<i64> {
        self.windows.watermark
    }

    /// Hours not yet written: their start and counts so far, oldest first.
    pub fn open_hours(&self) -> impl Iterator<Item = (i64, &HourTotal)> {
        self.windows.open.iter().map(|((h, ()), t)| (*h, t))
    }

    /// The hour starting at `hour`, if it is open.
    pub fn open_hour(&self, hour: i64) -> Option<&HourTotal> {
        self.windows.open.get(&(hour, ()))
    }

    /// The state as of gold's last commit, or `None` before gold's first run.
    pub async fn committed(cx: &FlowContext) -> Result<Option<Arc<GoldState>>, FlowError> {
        let Some(table) = cx.tables.open(TableName::HourlySales).await? else {
            return Ok(None);
        };
        let Some(version) = cx.tables.txn_version(&table, APP_ID).await? else {
            return Ok(None);
        };
        state::committed(&cx.tables, &cx.gold_state_dir(), version, Self::load).map(Some)
    }

    /// The state committed as `bronze_version`, to be changed by a run: taken from memory when
    /// it is held there (held again by [`GoldState::kept_as`] once the run commits).
    pub(super) fn restore(
        tables: &Tables,
        dir: &Path,
        bronze_version: i64,
    ) -> Result<Self, FlowError> {
        state::restore(tables, dir, bronze_version, Self::load)
    }

    /// Holds this state in memory as the one committed for `bronze_version`: call it only once
    /// the commit naming that version is made.
    pub(super) fn kept_as(self, tables: &Tables, dir: &Path, bronze_version: i64) {
        state::keep(tables, dir, bronze_version, Arc::new(self));
    }

    pub(super) fn load(dir: &Path, bronze_version: i64) -> Result<Self, FlowError> {
        let file: StateFile = state::load(dir, bronze_version)?;
        let mut windows = Windows::new(HOUR_MICROS, DELAY_MICROS, file.dedup);
        windows.watermark = file.watermark;
        windows.open = file
            .open_hours
            .into_iter()
            .map(|(h, t)| ((h, ()), t))
            .collect();
        windows.keys = file
            .dedup_keys
            .into_iter()
            .map(|k| ((k.order_id, k.status), k.first_event_time))
            .collect();
        Ok(Self { windows })
    }

    /// Writes the state for `bronze_version` durably; it becomes current only with the commit.
    pub(super) fn save(&self, dir: &Path, bronze_version: i64) -> Result<(), FlowError> {
        let mut keys: Vec<DedupKey> = self
            .windows
            .keys
            .iter()
            .map(|((order_id, status), t)| DedupKey {
                order_id: *order_id,
                status: status.clone(),
                first_event_time: *t,
            })
            .collect();
        keys.sort_unstable_by(|a, b| (a.order_id, &a.status).cmp(&(b.order_id, &b.status)));
        let file = StateFile {
            bronze_version,
            dedup: self.dedup(),
            watermark: self.watermark(),
            open_hours: self.open_hours().map(|(h, t)| (h, *t)).collect(),
            dedup_keys: keys,
        };
        state::save(dir, bronze_version, &file)
    }

    /// One placed event, read in order while the watermark was `before`; returns why it was
    /// dropped, if it was.
    pub(super) fn add(
        &mut self,
        order_id: i64,
        status: &str,
        amount_cents: i128,
        event_time: i64,
        before: Option<i64>,
    ) -> Option<DropReason> {
        let fate = self.windows.place(
            (event_time, before),
            (),
            || (order_id, status.to_string()),
            HourTotal::default,
            |total| {
                total.orders += 1;
                total.revenue_cents += amount_cents;
            },
        );
        match fate {
            Fate::Late => Some(DropReason::Late),
            Fate::Duplicate => Some(DropReason::Duplicate),
            Fate::Counted | Fate::Filtered => None,
        }
    }

    /// Moves the watermark and pops every hour it closes, oldest first.
    pub(super) fn advance(&mut self, latest_event_time: Option<i64>) -> Vec<(i64, HourTotal)> {
        let closed = self.windows.advance(latest_event_time);
        closed.into_iter().map(|((h, ()), t)| (h, t)).collect()
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
            let before = state.watermark();
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

    /// A state with one placed event, saved as version 7 in `dir`.
    fn saved_state(dir: &Path) -> GoldState {
        let mut state = GoldState::new(true);
        state.add(1, "placed", 100, t(9, 5), None);
        state.advance(Some(t(9, 5)));
        state.save(dir, 7).unwrap();
        state
    }

    #[test]
    fn a_kept_state_is_used_only_while_its_file_is_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let tables = Tables::new(dir.path().join("tables"), None);
        let state = saved_state(dir.path());
        state.clone().kept_as(&tables, dir.path(), 7);
        assert_eq!(GoldState::restore(&tables, dir.path(), 7).unwrap(), state);
        // Taken by that run: the next one (the run failed) reads the file.
        assert_eq!(GoldState::restore(&tables, dir.path(), 7).unwrap(), state);
        // Another process (or a reset and new runs) wrote that version again: the file wins.
        state.clone().kept_as(&tables, dir.path(), 7);
        let mut other = GoldState::new(true);
        other.add(2, "placed", 300, t(10, 5), None);
        std::thread::sleep(std::time::Duration::from_millis(10));
        other.save(dir.path(), 7).unwrap();
        assert_eq!(GoldState::restore(&tables, dir.path(), 7).unwrap(), other);
        // A version other than the kept one is read from its file.
        other.clone().kept_as(&tables, dir.path(), 7);
        state.save(dir.path(), 8).unwrap();
        assert_eq!(GoldState::restore(&tables, dir.path(), 8).unwrap(), state);
    }

    #[test]
    fn state_survives_a_save_and_load() {
        let dir = tempfile::tempdir().unwrap();
        let state = saved_state(dir.path());
        assert_eq!(GoldState::load(dir.path(), 7).unwrap(), state);
    }
}
