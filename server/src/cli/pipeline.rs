//! `reckon pipeline ...` (PIPELINES §6): run a project, show its graph, read the event log, and
//! week 14's support example with its landed files.

use std::path::PathBuf;
use std::process::ExitCode;

use app::model::{FlowRun, FlowStatus};
use clap::Subcommand;
use serde_json::{Value, json};

use crate::engine::declarative::declared;
use crate::engine::declarative::graph::FlowKind;
use crate::engine::declarative::sql::Format;
use crate::engine::declarative::{example, key_history};
use crate::service::lab::Lab;

#[derive(Subcommand)]
pub enum PipelineCommand {
    /// Run a project's flows once (exit 0: ok, 1: a flow failed, 2: bad input).
    Run {
        project: PathBuf,
        /// Tables to empty and read again from every source (comma separated).
        #[arg(long, value_delimiter = ',')]
        full_refresh: Vec<String>,
    },
    /// Analyse every flow without running it: names, columns and types resolved (exit 0: all
    /// resolve, 2: one does not, named at its file, line and column). Nothing is written.
    Validate { project: PathBuf },
    /// A project's datasets, flows and edges.
    Graph {
        project: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// The event log: one event per flow per run, oldest first.
    Events {
        #[arg(long)]
        run: Option<i64>,
        #[arg(long)]
        json: bool,
    },
    /// One key of an AUTO CDC target: its versions and the change events that made each.
    History {
        table: String,
        /// The key's value (several key columns: their values joined by `,`).
        key: String,
        #[arg(long)]
        json: bool,
    },
    /// Check a project's tables against their sources: AUTO CDC targets against their events,
    /// windowed tables window by window against a recount of their events (exit 1 on a PROBLEM).
    Check {
        project: PathBuf,
        #[arg(long)]
        json: bool,
        /// Recount from scratch (the check of a project always does, for now).
        #[arg(long)]
        full: bool,
    },
    /// The late ledger: every row a windowed table read after its window had closed, with its
    /// window, the watermark then, the run that read it and where it came from.
    Late {
        table: String,
        #[arg(long)]
        json: bool,
    },
    /// Write an example project into DIR: `support` (week 14) or `shop` (module 9, reading the
    /// lab's topic: --topic, `orders` by default).
    Example {
        /// `support` or `shop`.
        name: String,
        dir: PathBuf,
        #[arg(long, default_value = "json")]
        format: String,
        /// In the course's own Python: `support`, the guided lab as printed (reading Parquet) and
        /// the challenge; `shop`, module 9's bronze and hourly table.
        #[arg(long)]
        python: bool,
    },
    /// Land the support example's daily ticket and account files in <data>/landing/.
    Land {
        /// `support`, the one example.
        name: String,
        /// Days A-B of 1-35.
        #[arg(long)]
        days: Option<String>,
        /// Land the bad-rows file (alone, unless --days is given too).
        #[arg(long)]
        bad_rows: bool,
        #[arg(long, default_value = "json")]
        format: String,
        /// Tickets a day on average (benchmarks land about 28,600 a day for 1 M tickets).
        #[arg(long, default_value_t = example::TICKETS_PER_DAY,
              value_parser = clap::value_parser!(u32).range(1..=250_000))]
        tickets_per_day: u32,
    },
}

fn format(text: &str) -> anyhow::Result<Format> {
    match text {
        "json" => Ok(Format::Json),
        "parquet" => Ok(Format::Parquet),
        other => anyhow::bail!("--format: json or parquet, not {other:?}"),
    }
}

/// Prints the check's lines for the project's tables (as a JSON array with `json`); whether one
/// is a PROBLEM.
pub async fn check(
    lab: &Lab,
    graph: &crate::engine::declarative::graph::Graph,
    json: bool,
) -> anyhow::Result<bool> {
    let scope = crate::engine::declarative::check::Scope::Every;
    let cx = lab.project_flows(graph).await?;
    let lines = crate::engine::declarative::check::check(&cx, graph, scope).await?;
    match json {
        true => println!("{}", serde_json::to_string_pretty(&lines)?),
        false => lines.iter().for_each(|l| println!("{l}")),
    }
    Ok(lines
        .iter()
        .any(|l| l.verdict == app::model::Verdict::Problem))
}

/// The ledger in lines: `09:50 order_id 1006, ... (partition 2, offset 2): window 09:00-10:00
/// had closed, the watermark was 10:05 when run 5 read it`.
fn print_late(ledger: &app::model::LateLedger) {
    if ledger.rows.is_empty() {
        println!("no late rows: every row read so far was on time for its window");
    }
    for r in &ledger.rows {
        let source = r
            .source
            .as_ref()
            .map(|s| format!(", from {s}"))
            .unwrap_or_default();
        println!(
            "{} {}{source}: window [{}, {}) had closed, the watermark was {} when run {} read it",
            r.event_time,
            r.row,
            r.window_start,
            r.window_end,
            r.watermark.as_deref().unwrap_or("unset"),
            r.run.map_or("?".to_string(), |n| n.to_string())
        );
    }
    if ledger.more > 0 {
        println!("... and {} more (--json for every row shown)", ledger.more);
    }
}

fn support(name: &str) -> anyhow::Result<()> {
    match name {
        "support" => Ok(()),
        other => anyhow::bail!("the one example is `support`, not {other:?}"),
    }
}

/// An event as PIPELINES §6 names its fields.
pub fn event_json(run: i64, e: &FlowRun) -> Value {
    let n = &e.figures;
    json!({
        "run": run, "flow": e.flow, "target": e.target, "status": e.status,
        "input_rows": n.rows_read, "output_rows": n.rows_written,
        "duplicate_rows": n.rows_duplicate, "dropped_rows": n.rows_dropped,
        "upserted": n.rows_upserted, "deleted": n.rows_deleted,
        "expectations": n.expectations, "files": n.files,
        "source_versions": n.source_versions,
        "definition_changed": n.definition_changed,
        "started_at": e.started_at, "duration_ms": e.duration_ms, "error": e.error,
    })
}

/// One line of `pipeline run` for a flow.
fn line(e: &FlowRun) -> String {
    let n = &e.figures;
    let mut text = format!(
        "{:<27} {:<10}in {}, out {}",
        e.flow,
        e.status.as_str(),
        n.rows_read,
        n.rows_written
    );
    if n.definition_changed {
        text += ", definition changed";
    }
    if n.rows_duplicate > 0 {
        text += &format!(", duplicate {}", n.rows_duplicate);
    }
    if n.rows_dropped > 0 {
        text += &format!(", dropped {}", n.rows_dropped);
    }
    if n.rows_upserted + n.rows_deleted > 0 {
        text += &format!(
            " (upserted {}, deleted {})",
            n.rows_upserted, n.rows_deleted
        );
    }
    for rule in n.expectations.iter().filter(|r| r.failed > 0) {
        text += &format!("; {} failed {}", rule.name, rule.failed);
    }
    let files = n.files.iter().filter(|f| !f.changed).count();
    if files > 0 {
        text += &format!("; {files} new file(s)");
    }
    for changed in n.files.iter().filter(|f| f.changed) {
        text += &format!(
            "; {} changed after it was loaded: not read again",
            changed.path
        );
    }
    if let Some(error) = &e.error {
        text += &format!("\n    {error}");
    }
    text
}

pub async fn execute(lab: &Lab, command: PipelineCommand) -> anyhow::Result<ExitCode> {
    match command {
        PipelineCommand::Run {
            project,
            full_refresh,
        } => {
            let graph = match lab.project(&project) {
                Ok(graph) => graph,
                Err(e) => {
                    eprintln!("error: {e}");
                    return Ok(ExitCode::from(2));
                }
            };
            let run = lab.run_project(&graph, &full_refresh).await?;
            run.events.iter().for_each(|e| println!("{}", line(e)));
            run.findings.iter().for_each(|l| println!("{l}"));
            let problems = run.has_problem();
            let failed = run
                .events
                .iter()
                .filter(|e| e.status == FlowStatus::Failed)
                .count();
            let skipped = run
                .events
                .iter()
                .filter(|e| e.status == FlowStatus::Skipped)
                .count();
            let id = run
                .id
                .map(|i| format!("run #{i}"))
                .unwrap_or_else(|| "run".into());
            match failed {
                0 => println!("{id}: COMPLETED, {} flows", run.events.len()),
                _ => println!("{id}: FAILED, {failed} flow(s) failed, {skipped} skipped"),
            }
            if run.events.iter().all(|e| e.status == FlowStatus::Idle) {
                println!(
                    "nothing was new: every flow was idle. Land files first (`reckon pipeline \
                     land support`, or the dashboard's Landing page), then run again."
                );
            }
            return Ok(ExitCode::from(u8::from(run.failed() || problems)));
        }
        PipelineCommand::Check {
            project,
            json,
            full: _,
        } => {
            let graph = lab.project(&project)?;
            return Ok(ExitCode::from(u8::from(check(lab, &graph, json).await?)));
        }
        PipelineCommand::Late { table, json } => {
            let ledger = crate::service::pages::late::ledger(lab, Some(&table))
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            match json {
                true => println!("{}", serde_json::to_string_pretty(&ledger.rows)?),
                false => print_late(&ledger),
            }
        }
        PipelineCommand::History { table, key, json } => {
            let history = key_history::key_history(&lab.flows(), &table, &key).await?;
            if json {
                println!("{}", serde_json::to_string(&history)?);
                return Ok(ExitCode::SUCCESS);
            }
            println!(
                "{} {}: {} version(s)",
                history.table,
                history.key,
                history.versions.len()
            );
            for v in &history.versions {
                let values: Vec<String> =
                    v.values.iter().map(|(c, x)| format!("{c}={x}")).collect();
                match &v.start {
                    Some(start) => println!(
                        "[{start}, {})  {}",
                        v.end.as_deref().unwrap_or("current"),
                        values.join(" ")
                    ),
                    None => println!("{}", values.join(" ")),
                }
                for e in &v.events {
                    let late = e
                        .late_after
                        .as_ref()
                        .map(|s| format!("  late: applied after {s}"))
                        .unwrap_or_default();
                    println!(
                        "    {}  {:<6}  {}  (commit {}){late}",
                        e.sequence, e.op, e.source, e.commit
                    );
                }
            }
        }
        PipelineCommand::Validate { project } => {
            let graph = match lab.project(&project) {
                Ok(graph) => graph,
                Err(e) => {
                    eprintln!("error: {e}");
                    return Ok(ExitCode::from(2));
                }
            };
            match declared::validate::validate(&lab.flows(), &graph).await {
                Ok(validated) => {
                    println!("ok: {} flow(s) resolve", validated.resolved.len());
                    for (flow, source) in &validated.by_name_only {
                        println!(
                            "    {flow}: resolved by name only until {source} has columns \
                             (its first run checks it)"
                        );
                    }
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    return Ok(ExitCode::from(2));
                }
            }
        }
        PipelineCommand::Graph { project, json } => {
            let graph = lab.project(&project)?;
            if json {
                let datasets: Vec<Value> = graph
                    .datasets
                    .iter()
                    .map(|d| {
                        json!({"name": d.name, "kind": d.kind.as_str(), "comment": d.comment,
                        "expectations": d.expectations.iter().map(|e| &e.name).collect::<Vec<_>>()})
                    })
                    .collect();
                let flows: Vec<Value> = graph
                    .flows
                    .iter()
                    .map(|f| json!({"name": f.name, "target": f.target,
                        "kind": match f.kind { FlowKind::Append => "append", FlowKind::Materialize => "materialize", FlowKind::AutoCdc => "auto_cdc" },
                        "reads": f.upstream}))
                    .collect();
                println!(
                    "{}",
                    json!({"name": graph.name, "datasets": datasets, "flows": flows})
                );
            } else {
                for f in &graph.flows {
                    let reads: Vec<&str> = f.upstream.iter().map(String::as_str).collect();
                    let from = if reads.is_empty() {
                        "files".to_string()
                    } else {
                        reads.join(", ")
                    };
                    println!("{from} -> {} ({})", f.target, f.name);
                }
            }
        }
        PipelineCommand::Events { run, json } => {
            let history = lab
                .history()
                .ok_or_else(|| anyhow::anyhow!("this lab keeps no history"))?;
            for (id, event) in history.events(&lab.config.lab, run).await? {
                if json {
                    println!("{}", event_json(id, &event));
                } else {
                    println!("#{id} {}", line(&event));
                }
            }
        }
        PipelineCommand::Example {
            name,
            dir,
            format: f,
            python,
        } => {
            match name.as_str() {
                "shop" if python => example::python::write_shop(&dir, &lab.config.topic_named())?,
                "shop" => example::shop::write_project(&dir, &lab.config.topic_named())?,
                "support" if python => example::python::write_project(&dir)?,
                _ => {
                    support(&name)?;
                    example::write_project(&dir, format(&f)?)?;
                }
            }
            println!("wrote the {name} project into {}", dir.display());
        }
        PipelineCommand::Land {
            name,
            days,
            bad_rows,
            format: f,
            tickets_per_day,
        } => {
            support(&name)?;
            let days = match (days.as_deref(), bad_rows) {
                (Some(range), _) => {
                    Some(example::days(range).map_err(|e| anyhow::anyhow!("--days: {e}"))?)
                }
                (None, true) => None,
                (None, false) => Some((1, example::DAYS)),
            };
            let written = example::land(
                &lab.config.data_dir,
                days.unwrap_or((1, 0)),
                bad_rows,
                format(&f)?,
                tickets_per_day,
            )?;
            println!(
                "landed {} file(s) in {}",
                written.len(),
                lab.config.data_dir.join("landing").display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
