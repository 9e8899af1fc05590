//! The check kept up to date run by run: what the full check recounts from scratch (bronze's
//! events and offsets, distinct events, each order's newest event, placed events per hour, the
//! rows of `orders` and `hourly_sales`) is state (`store.rs`), updated from the table files it
//! has not counted yet, so a check costs what the run added. Its lines come from the same
//! function as the full check's, and must always be the same (`reckon check --full` recounts).
//!
//! restore: the state, the tables as they are now, and what their commits since the versions
//! counted changed (`log.rs`). read: the rows of their new files (and, for `orders`, which MERGE
//! rewrites, the files gone). process: the state updated in one transaction, the lines. commit:
//! the transaction, with the versions counted. A compaction's files are followed in the state
//! without a read; a table that only appends but lost rows (or was made again) is counted again
//! from scratch.

mod files;
mod held;
mod log;
mod rows;
mod store;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use app::model::FlowRun;
use deltalake::DeltaTable;
use sqlx::{Sqlite, Transaction};

use super::{Recount, Report, offsets, report};
use crate::engine::course::gold::GoldState;
use crate::engine::flow::FlowError;
use crate::engine::flow::{Flow, FlowContext};
use crate::engine::tables::{self, TableName};
use log::{Changes, Log, NONE_COUNTED, Since};
use rows::{BronzeRow, HourRow, SilverRow};
use store::Store;

/// The incremental check: the check every pipeline run ends with.
pub struct Check;

/// The state's file in a lab's state folder.
pub fn state_path(cx: &FlowContext) -> PathBuf {
    cx.state_dir.join("check.sqlite")
}

/// The state, a transaction on it, the partitions it holds offsets of, the lab's tables as
/// they are now, and what changed in each since the version counted.
pub struct Restored {
    store: Store,
    tx: Option<Transaction<'static, Sqlite>>,
    holding: BTreeSet<i32>,
    tables: BTreeMap<TableName, Option<DeltaTable>>,
    since: BTreeMap<TableName, Since>,
}

/// What the tables hold that the state has not counted.
pub struct NewRows {
    /// Count everything again (why is logged): an append-only table lost rows, say.
    from_scratch: bool,
    files: BTreeMap<TableName, Changes>,
    /// The version each table is counted to once these rows are in.
    versions: BTreeMap<TableName, i64>,
    bronze: Vec<BronzeRow>,
    offsets: Vec<(i32, i64)>,
    rejected: i64,
    silver: Vec<(String, Vec<SilverRow>)>,
    hours: Vec<HourRow>,
    read_to: BTreeMap<i32, i64>,
    watermark: Option<i64>,
}

#[async_trait::async_trait]
impl Flow for Check {
    type State = Restored;
    type Input = NewRows;
    type Output = Report;
    type Done = Report;

    fn name(&self) -> &str {
        "check"
    }

    fn target(&self) -> Option<&str> {
        None
    }

    async fn restore(&mut self, cx: &FlowContext, _: &mut FlowRun) -> Result<Restored, FlowError> {
        let store = Store::open(&state_path(cx)).await?;
        let mut tx = store.begin().await?;
        let mut tables = BTreeMap::new();
        let mut since = BTreeMap::new();
        for name in TableName::ALL {
            let table = cx.tables.open(name).await?;
            let key = files::version_counter(name.as_str());
            let counted_to = store::counter(&mut tx, &key).await;
            let counted_to = counted_to.map_err(|e| store.error(e))?;
            let changed = match log::commits(name, table.as_ref(), counted_to).await? {
                Log::Recount(why) => Since::Recount(why),
                Log::Commits(commits) => {
                    let removed = log::removed(&commits);
                    let counted = files::which_covered(&mut tx, name.as_str(), removed).await;
                    let counted = counted.map_err(|e| store.error(e))?;
                    log::classify(name, &commits, name == TableName::Orders, &counted)
                }
            };
            tables.insert(name, table);
            since.insert(name, changed);
        }
        let holding = held::holding(&mut tx).await.map_err(|e| store.error(e))?;
        Ok(Restored {
            store,
            tx: Some(tx),
            holding,
            tables,
            since,
        })
    }

    async fn read(
        &mut self,
        cx: &FlowContext,
        r: &Restored,
        event: &mut FlowRun,
    ) -> Result<Option<NewRows>, FlowError> {
        let mut files = BTreeMap::new();
        let recount = r.since.values().find_map(|s| match s {
            Since::Recount(why) => Some(why),
            Since::Changes(_) => None,
        });
        for (name, table) in &r.tables {
            let changes = match (recount, &r.since[name]) {
                (None, Since::Changes(changes)) => changes.clone(),
                _ => Changes {
                    added: rows::all_files(table.as_ref())?,
                    ..Changes::default()
                },
            };
            files.insert(*name, changes);
        }
        if let Some(why) = recount {
            tracing::info!("the check counts every table from scratch: {why}");
        }
        let versions = r
            .tables
            .iter()
            .map(|(name, t)| (*name, t.as_ref().map_or(NONE_COUNTED, tables::version)))
            .collect();
        let added = |name: TableName| files[&name].added.clone();
        let bronze_batches =
            tables::read_files(&added(TableName::BronzeOrders), "bronze_orders").await?;
        let rejects =
            tables::read_files(&added(TableName::BronzeRejects), "bronze_rejects").await?;
        let mut offsets = rows::offsets(&bronze_batches, "bronze_orders' new files")?;
        let rejected = rows::offsets(&rejects, "bronze_rejects' new files")?;
        offsets.extend(&rejected);
        let mut silver = vec![];
        for path in added(TableName::Orders) {
            let batches = tables::read_files(std::slice::from_ref(&path), "orders").await?;
            silver.push((path, rows::silver(&batches)?));
        }
        let hours = rows::hours(
            &tables::read_files(&added(TableName::HourlySales), "hourly_sales").await?,
        )?;
        let bronze = rows::bronze(&bronze_batches)?;
        event.figures.rows_read = bronze.len() as u64;
        // What bronze says it read, and gold's watermark, as of these tables: kept with the
        // state, so its lines can be read back without the tables.
        let holding = r
            .holding
            .iter()
            .copied()
            .chain(offsets.iter().map(|(p, _)| *p));
        let bronze_table = r.tables[&TableName::BronzeOrders].as_ref();
        let read_to = offsets::read_to(cx, bronze_table, holding).await?;
        let watermark = GoldState::committed(cx).await?.and_then(|s| s.watermark());
        Ok(Some(NewRows {
            from_scratch: recount.is_some(),
            versions,
            read_to,
            watermark,
            files,
            bronze,
            offsets,
            rejected: rejected.len() as i64,
            silver,
            hours,
        }))
    }

    async fn process(
        &mut self,
        state: &mut Restored,
        new: NewRows,
        _: &mut FlowRun,
    ) -> Result<Report, FlowError> {
        let tx = state.tx.as_mut().expect("the check's transaction");
        let store = &state.store;
        apply(tx, new).await.map_err(|e| store.error(e))?;
        let counted = store::counted(&mut **tx)
            .await
            .map_err(|e| store.error(e))?;
        Ok(lines(counted))
    }

    async fn commit(
        &mut self,
        _: &FlowContext,
        mut r: Restored,
        report: Report,
        _: &mut FlowRun,
    ) -> Result<Report, FlowError> {
        let tx = r.tx.take().expect("the check's transaction");
        tx.commit().await.map_err(|e| r.store.error(e))?;
        r.store.close().await;
        Ok(report)
    }
}

/// The new rows into the state.
async fn apply(tx: &mut Transaction<'static, Sqlite>, mut new: NewRows) -> Result<(), sqlx::Error> {
    if new.from_scratch {
        store::wipe(tx).await?;
    }
    for (name, changes) in &new.files {
        files::move_files(tx, name.as_str(), &changes.moves).await?;
        let covered = [changes.added.as_slice(), &changes.moved].concat();
        files::cover(tx, name.as_str(), &covered, &changes.gone).await?;
    }
    for (name, version) in &new.versions {
        let key = files::version_counter(name.as_str());
        store::set_counter(tx, &key, Some(*version)).await?;
    }
    held::add_offsets(tx, &mut new.offsets).await?;
    store::add_counter(tx, "rejected", new.rejected).await?;
    store::add_bronze(tx, &new.bronze).await?;
    let gone_silver = &new.files[&TableName::Orders].gone;
    store::change_silver(tx, gone_silver, &new.silver).await?;
    store::settle_touched(tx).await?;
    store::add_written(tx, &new.hours).await?;
    held::set_read_to(tx, &new.read_to).await?;
    store::set_counter(tx, "watermark", new.watermark).await
}

/// The state's figures as the check's lines.
fn lines(c: store::Counted) -> Report {
    let highest = c
        .held
        .iter()
        .filter_map(|(p, ranges)| ranges.last().map(|(_, last)| (*p, *last)))
        .collect();
    let mut gaps: BTreeMap<i32, Vec<(i64, i64)>> = BTreeMap::new();
    for (p, ranges) in &c.held {
        for pair in ranges.windows(2) {
            gaps.entry(*p)
                .or_default()
                .push((pair[0].1 + 1, pair[1].0 - 1));
        }
    }
    let recount = Recount {
        events: c.events,
        offset_problems: offsets::describe(&c.twice, gaps, &highest, &c.read_to),
        distinct: c.distinct,
        rejected: c.rejected,
        orders: c.orders,
        differing: c.differing,
        hours: c.hours,
    };
    report(recount, c.watermark)
}

/// The lines of the last committed check, read from its state alone (no table is read, and a
/// check under way is not waited for); `None` before the lab's first check.
pub async fn committed_report(cx: &FlowContext) -> Result<Option<Report>, FlowError> {
    let path = state_path(cx);
    if !path.exists() {
        return Ok(None);
    }
    let store = Store::open_read_only(&path).await?;
    let counted = store.counted().await;
    store.close().await;
    Ok(Some(lines(counted?)))
}
