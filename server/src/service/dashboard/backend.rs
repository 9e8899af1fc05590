//! The backend the pages call (server functions and the JSON API alike): each answer is a page
//! model from `service::pages`, or a write through the lab.

use app::api::{ApiError, Backend, EventForm};
use app::model::*;
use chrono::Utc;

use super::Dashboard;
use super::settings::Change;
use crate::engine::check::Check;
use crate::engine::flow::Runner;
use crate::engine::scenario::Scenario;
use crate::engine::tables::TableName;
use crate::service::error::failed;
use crate::service::pages::{freshness, hours, pipeline, produce, runs, tables, topic};

#[async_trait::async_trait]
impl Backend for Dashboard {
    async fn freshness(&self) -> Result<Freshness, ApiError> {
        freshness::freshness(&self.lab, Utc::now())
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

    async fn hours(&self) -> Result<Vec<HourRow>, ApiError> {
        let report = {
            let mut recount = self.recount.lock().await;
            match recount.as_ref() {
                Some((seen, report)) if *seen == self.lab.tables.fingerprint() => report.clone(),
                _ => {
                    // The recount reads bronze, silver and gold as one moment: not beside a run.
                    let _lock = self.lab.lock().map_err(failed)?;
                    let fingerprint = self.lab.tables.fingerprint();
                    let report = Runner::new(self.lab.flows())
                        .run(Check)
                        .await
                        .map_err(failed)?;
                    *recount = Some((fingerprint, report.clone()));
                    report
                }
            }
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

    async fn table(&self, name: &str, version: Option<i64>) -> Result<TableView, ApiError> {
        let table = TableName::parse(name).map_err(|_| {
            ApiError::field(
                "table",
                format!(
                    "one of {}, not {name:?}",
                    TableName::ALL.map(TableName::as_str).join(", ")
                ),
            )
        })?;
        tables::page(&self.lab, table, version).await
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
        })
    }

    async fn update_settings(
        &self,
        schedule_seconds: Option<Option<u64>>,
        dedup: Option<bool>,
        public: Option<bool>,
    ) -> Result<Settings, ApiError> {
        let change = Change {
            schedule_seconds,
            dedup,
            public,
        };
        self.settings.change(change).await?;
        self.announce("settings");
        self.settings().await
    }

    async fn reset(&self) -> Result<Settings, ApiError> {
        // A lab's own topic (`orders.<lab>`) is Reckon's to delete on any broker; `default`'s
        // may be the shop's, and is reset only on the local broker (SPEC §5).
        let own_topic = self.lab.config.lab != DEFAULT_LAB;
        self.lab.reset(own_topic).await.map_err(failed)?;
        self.announce("reset");
        self.settings().await
    }
}
