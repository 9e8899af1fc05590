//! The backend the pages call (server functions and the JSON API alike): each answer is a page
//! model from `service::pages`, or a write through the lab.

use app::api::{ApiError, Backend, EventForm};
use app::model::*;
use chrono::Utc;

use super::LabRunner;
use super::reader::Asked;

/// The name under which a lab keeps its project's last check, with the table versions it saw.
const PROJECT_CHECK: &str = "project check";
use crate::engine::course::check::{Check, Report, committed_report};
use crate::engine::declarative::{example, key_history};
use crate::engine::flow::Runner;
use crate::engine::flow::{FlowError, Refusal};
use crate::engine::scenario::Scenario;
use crate::service::error::{failed, refused};
use crate::service::pages::{
    consumers, freshness, hours, late, pipeline, produce, project_files, quality, runs, tables,
    topic, whatif,
};

#[async_trait::async_trait]
impl Backend for LabRunner {
    async fn freshness(&self) -> Result<Freshness, ApiError> {
        freshness::freshness(&self.lab, Utc::now(), &self.cost_model())
            .await
            .map_err(failed)
    }

    async fn runs(&self, before: Option<i64>, limit: i64) -> Result<RunsPage, ApiError> {
        runs::page(&self.lab, before, limit).await
    }

    async fn run(&self, id: i64) -> Result<RunDetail, ApiError> {
        runs::run(&self.lab, id).await
    }

    async fn start_run(
        &self,
        started_by: &'static str,
        wait: bool,
    ) -> Result<RunStarted, ApiError> {
        self.start(started_by, wait).await
    }

    async fn cancel_run(&self) -> Result<bool, ApiError> {
        Ok(self.cancel())
    }

    async fn hours(&self) -> Result<Vec<HourRow>, ApiError> {
        // The last check's figures, kept with its state: no recount, no wait on a run.
        let report = match committed_report(&self.lab.flows()).await.map_err(failed)? {
            Some(report) => report,
            // No check committed yet. While a run holds the lab, its check is coming: nothing is
            // checked yet, and the page says so rather than wait for the run. Otherwise (tables
            // from before checks kept state) one check, under the lab's lock.
            None => match self.lab.try_lock().map_err(failed)? {
                Some(_lock) => Runner::new(self.lab.flows())
                    .run(Check)
                    .await
                    .map_err(failed)?,
                None => Report::not_yet(),
            },
        };
        hours::page(&self.lab, &report).await
    }

    async fn produce_event(
        &self,
        form: EventForm,
        source: &str,
        and_run: bool,
    ) -> Result<Sent, ApiError> {
        self.produce_parsed(produce::parse_form(&form)?, source, and_run)
            .await
    }

    async fn produce_batch(
        &self,
        scenario: &str,
        batch: &str,
        and_run: bool,
    ) -> Result<Sent, ApiError> {
        if scenario != "course" {
            return Err(ApiError::field(
                "scenario",
                format!("the server plays the built-in scenario `course`, not {scenario:?}"),
            ));
        }
        let course = Scenario::load("course").map_err(failed)?;
        let events = course.batch(batch).map_err(|_| {
            let known: Vec<&str> = course.batches.keys().map(String::as_str).collect();
            ApiError::field(
                "batch",
                format!("the course has batches {}, not {batch:?}", known.join(", ")),
            )
        })?;
        let sent = self
            .lab
            .produce(events, &format!("scenario:course:{batch}"))
            .await
            .map_err(failed)?;
        self.sent(sent, and_run).await
    }

    async fn send_again(&self, id: i64, and_run: bool) -> Result<Sent, ApiError> {
        let event = crate::service::pages::history(&self.lab)?
            .produced_event(&self.lab.config.lab, id)
            .await
            .map_err(failed)?
            .ok_or_else(|| ApiError::field("id", format!("no event #{id} was sent to this lab")))?;
        let sent = self
            .lab
            .produce(&[event], "send-again")
            .await
            .map_err(failed)?;
        self.sent(sent, and_run).await
    }

    async fn produce_page(&self) -> Result<ProducePage, ApiError> {
        produce::page(&self.lab).await
    }

    async fn topic(&self) -> Result<TopicView, ApiError> {
        topic::page(&self.lab).await
    }

    async fn table(
        &self,
        name: &str,
        version: Option<i64>,
        wanted: &RowsWanted,
    ) -> Result<TableView, ApiError> {
        tables::page(&self.lab, name, version, wanted).await
    }

    async fn pipeline(&self) -> Result<PipelineView, ApiError> {
        pipeline::page(&self.lab).await
    }

    async fn settings(&self) -> Result<Settings, ApiError> {
        let dedup_in_effect = self.dedup_in_effect().await?;
        let current = self.settings.current();
        Ok(Settings {
            schedule_seconds: current.schedule_seconds,
            dedup: current.dedup,
            dedup_in_effect,
            public: current.public,
            run_on_arrival: current.run_on_arrival,
            cost: current.cost,
        })
    }

    async fn update_settings(&self, change: SettingsChange) -> Result<Settings, ApiError> {
        let arrival_on = change.run_on_arrival == Some(true);
        self.settings.change(change).await?;
        if arrival_on {
            self.arrival_watched().await;
        }
        self.announce(Announcement::Settings);
        self.settings().await
    }

    async fn reset(&self) -> Result<Settings, ApiError> {
        // A lab's own topic (`orders.<lab>`) is Reckon's to delete on any broker; `default`'s
        // may be the shop's, and is reset only on the local broker (SPEC §5).
        let own_topic = self.lab.config.lab != DEFAULT_LAB;
        self.cool();
        self.lab.reset(own_topic).await.map_err(failed)?;
        self.announce(Announcement::Reset);
        self.settings().await
    }

    async fn kind(&self) -> PipelineKind {
        self.lab.kind()
    }

    async fn code(&self) -> Result<ProjectCode, ApiError> {
        project_files::code(&self.lab)
    }

    async fn save_file(&self, path: &str, text: &str) -> Result<ProjectCode, ApiError> {
        // The project as it would be is read in a child process (`child::check_project`).
        // Its flows are analysed too: a flow that does not resolve is kept, and said.
        let (lab, limits) = (self.lab.clone(), self.run_limits);
        let (path, text) = (path.to_string(), text.to_string());
        let handle = tokio::runtime::Handle::current();
        let read = tokio::task::spawn_blocking(move || {
            lab.save_project_file(&path, &text, |dir| {
                handle.block_on(super::child::check_project(
                    &lab,
                    dir,
                    &limits,
                    Asked::Validate,
                ))
            })
        })
        .await
        .map_err(|e| ApiError::Failed(format!("saving the file: {e}")))?
        .map_err(refused)?;
        self.announce(Announcement::Code);
        Ok(ProjectCode {
            validation: read.validation,
            ..project_files::code(&self.lab)?
        })
    }

    async fn validate(&self) -> Result<Validation, ApiError> {
        if self.lab.kind() == PipelineKind::Course {
            return Err(ApiError::field(
                "lab",
                "this lab runs the course's streams, which are Reckon's own code; start a \
                 project to validate one",
            ));
        }
        let dir = self.lab.project_dir();
        let read = super::child::check_project(&self.lab, &dir, &self.run_limits, Asked::Validate)
            .await
            .map_err(refused)?;
        read.validation
            .ok_or_else(|| ApiError::Failed("the project's check did not validate it".into()))
    }

    async fn start_example(
        &self,
        example: Example,
        confirm: bool,
    ) -> Result<ProjectCode, ApiError> {
        self.switch(PipelineKind::Project, example, confirm).await
    }

    async fn use_course(&self, confirm: bool) -> Result<ProjectCode, ApiError> {
        self.switch(PipelineKind::Course, Example::default(), confirm)
            .await
    }

    async fn landing(&self) -> Result<Vec<LandedFile>, ApiError> {
        project_files::landing(&self.lab).await.map_err(failed)
    }

    async fn land_example(
        &self,
        days: Option<&str>,
        bad_rows: bool,
    ) -> Result<Vec<LandedFile>, ApiError> {
        let days = days
            .map(example::days)
            .transpose()
            .map_err(|e| ApiError::field("days", e))?;
        if days.is_none() && !bad_rows {
            return Err(ApiError::field(
                "days",
                "name days to land (1-30), or ask for the bad rows",
            ));
        }
        // In the format the lab's project reads its tickets: the course's Python reads Parquet.
        let mut format = crate::engine::declarative::sql::Format::Json;
        if self.lab.kind() == PipelineKind::Project {
            let graph = self.lab.project_graph().await.map_err(refused)?;
            let reads = graph.flows.iter().flat_map(|f| f.query.reads.iter());
            if reads.into_iter().any(|r| {
                matches!(
                    r.source,
                    crate::engine::declarative::sql::Source::Files {
                        format: crate::engine::declarative::sql::Format::Parquet,
                        ..
                    }
                )
            }) {
                format = crate::engine::declarative::sql::Format::Parquet;
            }
        }
        self.lab
            .land_example(days, bad_rows, format)
            .map_err(refused)?;
        self.landed().await
    }

    async fn upload(&self, files: Vec<(String, Vec<u8>)>) -> Result<Vec<LandedFile>, ApiError> {
        self.lab.upload(&files).map_err(refused)?;
        self.landed().await
    }

    async fn graph(&self) -> Result<Option<ProjectGraph>, ApiError> {
        Ok(pipeline::page(&self.lab).await?.project)
    }

    async fn events(&self, run: Option<i64>) -> Result<EventLog, ApiError> {
        quality::events(&self.lab, run).await
    }

    async fn quality(&self, run: Option<i64>, rule: Option<&str>) -> Result<Quality, ApiError> {
        quality::quality(&self.lab, run, rule).await
    }

    async fn project_check(&self) -> Result<ProjectCheck, ApiError> {
        if self.lab.kind() != PipelineKind::Project {
            return Ok(ProjectCheck::default());
        }
        // The learner's queries run again: in a child process, and once per state of the tables.
        let stamp = late::tables_stamp(&self.lab).await?;
        type Kept = (Vec<(String, i64)>, ProjectCheck);
        if let Some(kept) = self.lab.tables.kept_state::<Kept>(PROJECT_CHECK, false)
            && kept.0 == stamp
        {
            return Ok(kept.1.clone());
        }
        let dir = self.lab.project_dir();
        let read = super::child::check_project(&self.lab, &dir, &self.run_limits, Asked::Check)
            .await
            .map_err(refused)?;
        let checked = read.check.unwrap_or_default();
        if checked.error.is_none() {
            let kept: Kept = (stamp, checked.clone());
            self.lab
                .tables
                .keep_state(PROJECT_CHECK, std::sync::Arc::new(kept));
        }
        Ok(checked)
    }

    async fn late(&self, table: Option<&str>) -> Result<LateLedger, ApiError> {
        late::ledger(&self.lab, table).await
    }

    async fn key_history(&self, table: &str, key: &str) -> Result<KeyHistory, ApiError> {
        key_history::key_history(&self.lab.flows(), table, key)
            .await
            .map_err(|e| match e {
                // No such table or key: the question's, not the server's.
                FlowError::Refused(Refusal::NotFound(m)) => ApiError::field("key", m),
                other => failed(other),
            })
    }

    async fn whatif(&self, delay: &str) -> Result<WhatIf, ApiError> {
        whatif::whatif(&self.lab, delay).await
    }

    async fn consume(&self, request: ConsumeRequest) -> Result<GroupRead, ApiError> {
        consumers::consume(&self.lab, &request).await
    }

    async fn progress(&self) -> Result<LabProgress, ApiError> {
        self.progress.progress(&self.lab).await
    }

    async fn writings(&self) -> Result<Vec<Writing>, ApiError> {
        crate::service::progress::writing::all(&self.lab).await
    }

    async fn save_writing(&self, task: &str, text: &str) -> Result<Writing, ApiError> {
        crate::service::progress::writing::save(&self.lab, task, text).await
    }
}
