//! A lab's runs of a declarative pipeline: the project's flows in the graph's order, by the same
//! runner as the course's streams, under the lab's lock, recorded as one run. A flow whose input
//! failed is skipped; the others run.

use std::collections::BTreeSet;
use std::path::Path;

use app::model::{CheckLine, FlowRun, FlowStatus, Verdict};

use super::{Lab, LabError};
use crate::engine::flow::Runner;
use crate::engine::flow::{FlowContext, Refusal};
use deltalake::kernel::Transaction;

use crate::engine::declarative::check;
use crate::engine::declarative::declared::{self, Declared};
use crate::engine::declarative::graph::{self, Graph, ProjectError};
use crate::engine::tables::{self, TableError};

/// What a pipeline run did: its history id, and each flow's event in the order they ran.
#[derive(Debug)]
pub struct ProjectRun {
    pub id: Option<i64>,
    pub events: Vec<FlowRun>,
    /// The check's lines after the flows (AUTO CDC targets against their events).
    pub findings: Vec<CheckLine>,
    /// How long the check took.
    pub check_ms: u64,
}

/// The first failed flow's error, as a run's: `flow <name>: <error>`.
fn first_error(events: &[FlowRun]) -> Option<String> {
    events
        .iter()
        .find_map(|e| e.error.as_ref().map(|m| format!("flow {}: {m}", e.flow)))
}

impl ProjectRun {
    pub fn failed(&self) -> bool {
        self.events.iter().any(|e| e.status == FlowStatus::Failed)
    }

    /// The first failed flow's error, as the run's.
    pub fn error(&self) -> Option<String> {
        first_error(&self.events)
    }

    pub fn has_problem(&self) -> bool {
        self.findings.iter().any(|f| f.verdict == Verdict::Problem)
    }
}

impl Lab {
    /// Reads a project folder into its graph (nothing runs).
    pub fn project(&self, dir: &Path) -> Result<Graph, ProjectError> {
        graph::load(dir)
    }

    /// Runs a project's flows once, in order; `full_refresh` names tables emptied first.
    pub async fn run_project(
        &self,
        graph: &Graph,
        full_refresh: &[String],
    ) -> Result<ProjectRun, LabError> {
        self.run_project_with(graph, full_refresh, |_| {}).await
    }

    /// A project run that tells `started` its history id (`None` without a history) once it
    /// holds the lab's lock.
    pub async fn run_project_with(
        &self,
        graph: &Graph,
        full_refresh: &[String],
        started: impl FnOnce(Option<i64>),
    ) -> Result<ProjectRun, LabError> {
        if let Some(refusal) = graph.refresh_refused(full_refresh) {
            return Err(LabError::Flow(Refusal::Refresh(refusal).into()));
        }
        let _lock = self.lock()?;
        // Every flow analysed before anything is written: one that does not resolve refuses
        // the run at its place (PIPELINES §2).
        declared::validate::validate(&self.flows(), graph)
            .await
            .map_err(|e| LabError::Flow(e.into()))?;
        for name in full_refresh {
            self.refresh(name).await?;
        }
        let cx = self.project_flows(graph).await?;
        let id = self.start_record().await;
        started(id);
        let mut runner = Runner::new(cx.clone());
        let mut failed: BTreeSet<&str> = BTreeSet::new();
        for flow in &graph.flows {
            let target = graph
                .dataset(&flow.target)
                .expect("the graph holds every flow's target");
            if flow.upstream.iter().any(|t| failed.contains(t.as_str())) {
                runner.skip(&flow.name, Some(&flow.target));
                failed.insert(&flow.target);
                continue;
            }
            let declared = Declared {
                flow,
                target,
                run: id,
            };
            if runner.run(declared).await.is_err() {
                failed.insert(&flow.target);
            }
        }
        let events = runner.into_events();
        let error = first_error(&events).map(|m| LabError::Flow(Refusal::FlowFailed(m).into()));
        let checking = std::time::Instant::now();
        let findings = match check::check(&cx, graph, check::Scope::LastRun).await {
            Ok(lines) => lines,
            Err(e) => vec![CheckLine::says(
                Verdict::Problem,
                format!("the check could not read the tables: {e}"),
            )],
        };
        let check_ms = checking.elapsed().as_millis() as u64;
        self.finish_record(id, &events, &findings, error.as_ref())
            .await;
        Ok(ProjectRun {
            id,
            events,
            findings,
            check_ms,
        })
    }

    /// The context `graph`'s flows run in: the lab's, with its broker when a flow reads Kafka.
    pub async fn project_flows(&self, graph: &Graph) -> Result<FlowContext, LabError> {
        let mut cx = self.flows();
        if graph.reads_kafka() {
            cx.kafka = Some(self.kafka().await?);
        }
        Ok(cx)
    }

    /// Empties a dataset for a full refresh: its table, its state, its quarantined and late rows.
    async fn refresh(&self, name: &str) -> Result<(), LabError> {
        let cx = self.flows();
        cx.tables.remove_named(name)?;
        let state = declared::state_dir(&cx, name);
        if let Err(e) = std::fs::remove_dir_all(&state)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            return Err(LabError::Io {
                path: state,
                source: e,
            });
        }
        for side in declared::side::SIDES {
            let Some(kept) = cx.tables.open_named(side.name).await? else {
                continue;
            };
            // Its rows go, and its count of commits starts again with the table's.
            let restart = Transaction::new(side.app_id(name), 0);
            let committed = tables::commit_properties(&kept, vec![restart]);
            kept.delete()
                .with_predicate(format!("\"table\" = '{}'", name.replace('\'', "''")))
                .with_commit_properties(committed)
                .await
                .map_err(|source| TableError::Delta {
                    table: side.name.to_string(),
                    source,
                })?;
        }
        Ok(())
    }
}
