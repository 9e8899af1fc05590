//! A lab's runs: its flows (bronze, silver, gold, then the check) run in order by one runner,
//! under the lab's lock, and recorded as one run with one event per flow.

use std::sync::Arc;

use app::model::{CheckLine, FlowRun};

use super::{Lab, LabError, Streams};
use crate::engine::course::bronze::Bronze;
use crate::engine::course::check::{Check, FullCheck, Report};
use crate::engine::course::gold::Gold;
use crate::engine::course::silver::Silver;
use crate::engine::flow::Runner;
use crate::engine::tables::TableName;
use crate::kafka::Kafka;

impl Streams {
    fn bronze(self) -> bool {
        matches!(self, Streams::All | Streams::Bronze)
    }

    fn silver(self) -> bool {
        matches!(self, Streams::All | Streams::Silver)
    }

    fn gold(self) -> bool {
        matches!(self, Streams::All | Streams::Gold)
    }
}

/// The flows a run of `streams` (and the check, with `check`) runs, in order, with their targets.
fn plan(streams: Option<Streams>, check: bool) -> Vec<(&'static str, Option<&'static str>)> {
    let on = |pick: fn(Streams) -> bool| streams.is_some_and(pick);
    [
        (on(Streams::bronze), "bronze", Some(TableName::BronzeOrders)),
        (on(Streams::silver), "silver", Some(TableName::Orders)),
        (on(Streams::gold), "gold", Some(TableName::HourlySales)),
        (check, "check", None),
    ]
    .into_iter()
    .filter(|(runs, ..)| *runs)
    .map(|(_, name, target)| (name, target.map(TableName::as_str)))
    .collect()
}

impl Lab {
    /// Runs streams in order (bronze, silver, gold), under the lab's lock.
    pub async fn run(&self, which: Streams, dedup: bool) -> Result<Vec<FlowRun>, LabError> {
        let kafka = match which.bronze() {
            true => Some(self.kafka().await?),
            false => None,
        };
        let _lock = self.lock()?;
        let (events, _) = self
            .run_recorded(kafka.as_ref(), Some(which), dedup, false, |_| {})
            .await?;
        Ok(events)
    }

    /// A pipeline run (SPEC §3): bronze, silver, gold, then the check, recorded as one run.
    pub async fn pipeline(&self, dedup: bool) -> Result<(Vec<FlowRun>, Report), LabError> {
        self.pipeline_with(dedup, |_| {}).await
    }

    /// A pipeline run that tells `started` its history id (`None` without a history) once it
    /// holds the lab's lock: the server answers "run #7 started" before the run ends.
    pub async fn pipeline_with(
        &self,
        dedup: bool,
        started: impl FnOnce(Option<i64>),
    ) -> Result<(Vec<FlowRun>, Report), LabError> {
        let kafka = self.kafka().await?;
        let _lock = self.lock()?;
        let (events, report) = self
            .run_recorded(Some(&kafka), Some(Streams::All), dedup, true, started)
            .await?;
        Ok((events, report.unwrap_or_default()))
    }

    /// Checks the tables against bronze (SPEC §4), under the lab's lock: a check beside a run
    /// would compare bronze's new rows with silver and gold that have not read them yet.
    pub async fn check(&self) -> Result<Report, LabError> {
        let _lock = self.lock()?;
        self.check_locked().await
    }

    /// The full check (`reckon check --full`): every table recounted from scratch, with the
    /// lab's lock held. It changes nothing, so it is not recorded as a run.
    pub async fn check_full(&self) -> Result<Report, LabError> {
        let _lock = self.lock()?;
        Ok(Runner::new(self.flows()).run(FullCheck).await?)
    }

    pub(super) async fn check_locked(&self) -> Result<Report, LabError> {
        let (_, report) = self.run_recorded(None, None, false, true, |_| {}).await?;
        Ok(report.unwrap_or_default())
    }

    /// Runs flows (the lab's lock held) and records them as one run in the history: each flow's
    /// event, the flows a failure kept from running as skipped, and the check's lines.
    pub(super) async fn run_recorded(
        &self,
        kafka: Option<&Arc<Kafka>>,
        streams: Option<Streams>,
        dedup: bool,
        check: bool,
        started: impl FnOnce(Option<i64>),
    ) -> Result<(Vec<FlowRun>, Option<Report>), LabError> {
        let id = self.start_record().await;
        started(id);
        let mut runner = Runner::new(self.flows());
        let result = run_flows(&mut runner, kafka, streams, dedup, check).await;
        match &result {
            Ok(Some(report)) => {
                self.compact().await;
                // A check that found a PROBLEM keeps the earlier versions to look into.
                if !report.has_problem() {
                    self.vacuum().await;
                }
            }
            Ok(None) => {}
            Err(_) => runner.skip_rest(&plan(streams, check)),
        }
        let events = runner.into_events();
        let findings = match &result {
            Ok(Some(report)) => report.findings.as_slice(),
            _ => &[],
        };
        self.finish_record(id, &events, findings, result.as_ref().err())
            .await;
        result.map(|report| (events, report))
    }

    pub(super) async fn start_record(&self) -> Option<i64> {
        let history = self.history()?;
        match history.start_run(&self.config.lab, self.started_by).await {
            Ok(id) => Some(id),
            Err(e) => {
                tracing::warn!("could not record a run in the history: {e}");
                None
            }
        }
    }

    pub(super) async fn finish_record(
        &self,
        id: Option<i64>,
        events: &[FlowRun],
        findings: &[CheckLine],
        error: Option<&LabError>,
    ) {
        let Some(id) = id else { return };
        let error = error.map(|e| e.to_string());
        self.record("a run", |h| async move {
            h.finish_run(id, events, findings, error.as_deref()).await
        })
        .await;
    }
}

async fn run_flows(
    runner: &mut Runner,
    kafka: Option<&Arc<Kafka>>,
    streams: Option<Streams>,
    dedup: bool,
    check: bool,
) -> Result<Option<Report>, LabError> {
    if let (Some(kafka), Some(s)) = (kafka, streams)
        && s.bronze()
    {
        runner
            .run(Bronze {
                kafka: kafka.clone(),
            })
            .await?;
    }
    if streams.is_some_and(Streams::silver) {
        runner.run(Silver).await?;
    }
    if streams.is_some_and(Streams::gold) {
        runner.run(Gold { dedup }).await?;
    }
    match check {
        true => Ok(Some(runner.run(Check).await?)),
        false => Ok(None),
    }
}
