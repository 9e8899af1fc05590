//! "Are the numbers final up to when?" for a lab that runs a declarative project, in words a
//! manager reads: how far each landed source is loaded, whether the gold tables include every
//! row landed so far, how many rows rules set aside, and a gold table's numbers by day with the
//! final days told apart.

use app::model::{CostModel, Freshness, GoldBar, GoldChart, LandedFile, Light};
use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType, Date32Type, Int64Type};
use chrono::{DateTime, NaiveDate, Utc};

use super::last_run::said_of_last_run;
use super::project_files::landing;
use crate::engine::declarative::declared::QUARANTINE;
use crate::engine::declarative::graph::Graph;
use crate::engine::declarative::parse::Kind;
use crate::engine::declarative::sql::Source;
use crate::engine::{render, tables};
use crate::service::lab::workspace::LANDING;
use crate::service::lab::{Lab, LabError};

/// The folders under `landing/` the project reads, in the order its flows name them.
fn sources(graph: &Graph) -> Vec<String> {
    let mut folders = vec![];
    for flow in &graph.flows {
        for read in flow.reads() {
            if let Source::Files { path, .. } = &read.source {
                let folder = path.trim_start_matches(&format!("{LANDING}/")).to_string();
                if !folders.contains(&folder) {
                    folders.push(folder);
                }
            }
        }
    }
    folders
}

/// A file's day, when its name is one (`2026-11-04.json`).
fn day_of(path: &str) -> Option<NaiveDate> {
    let name = path.rsplit('/').next()?;
    NaiveDate::parse_from_str(name.split('.').next()?, "%Y-%m-%d").ok()
}

/// "Tickets are loaded through 2026-11-04 (day 35)", or what is still waiting.
fn source_sentence(folder: &str, files: &[LandedFile]) -> String {
    let mine: Vec<&LandedFile> = files
        .iter()
        .filter(|f| f.path.starts_with(&format!("{folder}/")))
        .collect();
    let mut name = folder.replace(['/', '_'], " ");
    if let Some(first) = name.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    let waiting = mine.iter().filter(|f| f.read_by_run.is_none()).count();
    let days: Vec<NaiveDate> = mine.iter().filter_map(|f| day_of(&f.path)).collect();
    let loaded_days: Vec<NaiveDate> = mine
        .iter()
        .filter(|f| f.read_by_run.is_some())
        .filter_map(|f| day_of(&f.path))
        .collect();
    let through = match (loaded_days.iter().max(), days.iter().min()) {
        (Some(last), Some(first)) => format!(
            "{name} are loaded through {last} (day {})",
            (*last - *first).num_days() + 1
        ),
        _ if mine.iter().any(|f| f.read_by_run.is_some()) => {
            format!("{name}: {} file(s) loaded", mine.len() - waiting)
        }
        _ => format!("No {} are loaded yet", name.to_lowercase()),
    };
    match waiting {
        0 => format!("{through}."),
        n => format!("{through}; {n} file(s) landed since and wait for the next run."),
    }
}

/// A dataset's name as words: `gold_escalation_rate_by_plan` -> "escalation rate by plan".
fn in_words(name: &str) -> String {
    let name = name
        .strip_prefix("gold_")
        .or_else(|| name.strip_suffix("_gold"))
        .unwrap_or(name);
    name.replace('_', " ")
}

/// A day of the chart is final once files of `after` later days have loaded (a day's rows may
/// still arrive on the days after it): with files loaded through `newest`, through this day.
fn final_through_day(newest: Option<NaiveDate>, after: u32) -> Option<NaiveDate> {
    newest.and_then(|d| d.checked_sub_days(chrono::Days::new(after.into())))
}

/// The rule, said on the page.
fn final_rule(after: u32) -> String {
    let days = match after {
        1 => "the next day's files have".to_string(),
        n => format!("files of {n} later days have"),
    };
    format!(
        "A day is final once {days} loaded: a day's rows may still arrive after it. The project \
         sets this with reckon.finalAfterDays in spark-pipeline.yml's configuration."
    )
}

/// The first materialized view with a date column and a whole-number column: its numbers
/// summed by day, each final through `final_through` (see [`final_through_day`]).
async fn gold_chart(
    lab: &Lab,
    graph: &Graph,
    final_through: Option<NaiveDate>,
) -> Result<Option<GoldChart>, LabError> {
    for dataset in graph
        .datasets
        .iter()
        .filter(|d| d.kind == Kind::MaterializedView)
    {
        let Some(table) = lab.tables.open_named(&dataset.name).await? else {
            continue;
        };
        let schema = tables::arrow_schema(&table)?;
        let date = schema
            .fields()
            .iter()
            .find(|f| f.data_type() == &DataType::Date32);
        let number = schema
            .fields()
            .iter()
            .find(|f| f.data_type() == &DataType::Int64);
        let (Some(date), Some(number)) = (date, number) else {
            continue;
        };
        let ctx = tables::session(&table, "g").await?;
        let sql = format!(
            "SELECT \"{d}\" AS day, CAST(sum(\"{n}\") AS BIGINT) AS total FROM g \
             WHERE \"{d}\" IS NOT NULL GROUP BY \"{d}\" ORDER BY \"{d}\"",
            d = date.name(),
            n = number.name()
        );
        let mut bars = vec![];
        for batch in tables::query(&ctx, &dataset.name, &sql).await? {
            let days = batch.column(0).as_primitive::<Date32Type>();
            let totals = batch.column(1).as_primitive::<Int64Type>();
            for i in 0..batch.num_rows() {
                let date = days.value_as_date(i);
                let day = date.map(|d| d.to_string()).unwrap_or_default();
                let value = if totals.is_valid(i) {
                    totals.value(i)
                } else {
                    0
                };
                bars.push(GoldBar {
                    label: day,
                    value,
                    r#final: date.zip(final_through).is_some_and(|(d, f)| d <= f),
                });
            }
        }
        return Ok(Some(GoldChart {
            title: format!(
                "{} per {}, {}",
                number.name().replace('_', " "),
                date.name().replace('_', " "),
                in_words(&dataset.name)
            ),
            bars,
            final_rule: final_rule(graph.final_after_days),
        }));
    }
    Ok(None)
}

pub async fn freshness(
    lab: &Lab,
    now: DateTime<Utc>,
    model: &CostModel,
) -> Result<Freshness, LabError> {
    let mut sentences = vec![];
    let graph = match lab.project_graph().await {
        Ok(graph) => graph,
        Err(e) => {
            return Ok(Freshness {
                light: Light::Red,
                sentences: vec![format!("The pipeline's code does not read: {e}.")],
                ..Default::default()
            });
        }
    };
    let files = landing(lab).await?;
    let folders = sources(&graph);
    // Files the project reads that no run has read yet (others in landing/ are not its).
    let waiting = files
        .iter()
        .filter(|f| f.read_by_run.is_none())
        .filter(|f| folders.iter().any(|d| f.path.starts_with(&format!("{d}/"))))
        .count();
    // The newest day whose files the project has loaded, and so the day its numbers are
    // final through.
    let newest = files
        .iter()
        .filter(|f| f.read_by_run.is_some())
        .filter(|f| folders.iter().any(|d| f.path.starts_with(&format!("{d}/"))))
        .filter_map(|f| day_of(&f.path))
        .max();
    let final_through = final_through_day(newest, graph.final_after_days);
    let chart = gold_chart(lab, &graph, final_through).await?;
    // Said first: final up to when.
    let shown = chart
        .as_ref()
        .map(|c| c.bars.as_slice())
        .unwrap_or_default();
    let last_final = shown
        .iter()
        .rev()
        .find(|b| b.r#final)
        .map(|b| b.label.clone());
    let not_final = shown.iter().filter(|b| !b.r#final).count();
    // Windowed tables are final through their last window written (`window_freshness.rs`).
    let windows = super::window_freshness::said(lab, &graph).await?;
    let last_final = last_final.or(windows.final_through);
    sentences.push(match (&last_final, not_final) {
        (Some(day), 0) => format!("The numbers are final through {day}."),
        (Some(day), n) => format!(
            "The numbers are final through {day}; the {} after it {} not final yet.",
            if n == 1 {
                "day".to_string()
            } else {
                format!("{n} days")
            },
            if n == 1 { "is" } else { "are" }
        ),
        (None, _) if !shown.is_empty() => "No day's numbers are final yet.".to_string(),
        (None, _) => "There are no numbers yet.".to_string(),
    });
    sentences.extend(windows.sentences);
    for folder in folders {
        sentences.push(source_sentence(&folder, &files));
    }
    let golds: Vec<String> = graph
        .datasets
        .iter()
        .filter(|d| d.kind == Kind::MaterializedView)
        // A short comment reads as words ("the daily status counts by account"); else the
        // name, as words.
        .map(|d| match &d.comment {
            Some(c) if c.len() <= 40 && !c.contains(':') => format!("the {}", c.to_lowercase()),
            _ => format!("the {}", in_words(&d.name)),
        })
        .collect();
    if !golds.is_empty() {
        let include = match waiting {
            0 => "include every row landed so far",
            _ => "do not include the files still waiting",
        };
        let mut text = format!("{} {include}.", golds.join(" and "));
        if let Some(first) = text.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        sentences.push(text);
    }
    if let Some(table) = lab.tables.open_named(QUARANTINE).await? {
        match render::count_rows(&table, QUARANTINE).await? {
            0 => {}
            1 => sentences.push("1 row was set aside for breaking a quality rule.".into()),
            n => sentences.push(format!(
                "{n} rows were set aside for breaking quality rules."
            )),
        }
    }
    let said = said_of_last_run(
        lab,
        now,
        Some("its tables have nothing for the check to recompute"),
    )
    .await?;
    let left_out = said.left_out();
    sentences.push(said.sentence);
    sentences.extend(left_out);
    let mut light = said.light;
    if waiting > 0 && light == Light::Green {
        light = Light::Amber;
    }
    if chart.is_some() {
        sentences.push(final_rule(graph.final_after_days));
    }
    Ok(Freshness {
        light,
        final_through: last_final,
        late_hours: said.late.len() as u64,
        last_run_at: said.last_run_at,
        last_check: said.last_check,
        sentences,
        chart,
        cost: super::cost::of_lab(lab, model).await?,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, run: Option<i64>) -> LandedFile {
        LandedFile {
            path: path.into(),
            size: 1,
            landed_at: String::new(),
            read_by_run: run,
            rows: None,
            rescued: None,
            dropped: 0,
            changed_after_load: false,
        }
    }

    #[test]
    fn a_day_is_final_once_files_of_the_set_number_of_later_days_have_loaded() {
        let day = |d: &str| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok();
        assert_eq!(final_through_day(day("2026-11-04"), 1), day("2026-11-03"));
        assert_eq!(final_through_day(day("2026-11-04"), 3), day("2026-11-01"));
        assert_eq!(final_through_day(None, 1), None);
        assert!(final_rule(1).contains("the next day's files"));
        assert!(final_rule(2).contains("files of 2 later days"));
        assert_eq!(
            in_words("gold_escalation_rate_by_plan"),
            "escalation rate by plan"
        );
    }

    #[test]
    fn a_source_is_loaded_through_its_newest_day_read() {
        let files = [
            file("tickets/2026-10-01.json", Some(1)),
            file("tickets/2026-10-02.json", Some(1)),
            file("tickets/2026-10-03.json", None),
            file("accounts/2026-10-01.json", Some(1)),
        ];
        assert_eq!(
            source_sentence("tickets", &files),
            "Tickets are loaded through 2026-10-02 (day 2); 1 file(s) landed since and wait for the next run."
        );
        assert_eq!(
            source_sentence("accounts", &files),
            "Accounts are loaded through 2026-10-01 (day 1)."
        );
        assert_eq!(
            source_sentence("refunds", &files),
            "No refunds are loaded yet."
        );
    }
}
