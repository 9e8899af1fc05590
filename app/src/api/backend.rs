//! What the pages ask of the server, declared here and implemented there: the [`Server`] of labs
//! and each lab's [`Backend`]. The wasm build sees only the plain types.

use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use crate::error::ApiError;
#[cfg(feature = "ssr")]
use crate::model::*;

/// An event as the produce form sends it: every field as typed, checked by the server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventForm {
    pub order_id: String,
    pub customer_id: String,
    pub status: String,
    pub amount: String,
    pub event_time: String,
}

/// What a request asks of a lab; the server allows it or answers 401/403.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The freshness and reconciliation pages and live updates: anyone, if the lab is public.
    Public,
    /// Every other page and read of the lab.
    Read,
    /// Produce, run, reset, settings, viewer tokens: the lab's learner or the instructor.
    Write,
    /// Create and delete labs: the instructor.
    Manage,
}

/// The server's labs, and who may open which: what every server function goes through first.
#[cfg(feature = "ssr")]
#[async_trait::async_trait]
pub trait Server: Send + Sync {
    /// Lab `lab`, if the request with these headers may `access` it. A signed-in browser's
    /// writes must carry its session's CSRF token as `csrf`.
    async fn open(
        &self,
        headers: &http::HeaderMap,
        lab: &str,
        access: Access,
        csrf: Option<&str>,
    ) -> Result<std::sync::Arc<dyn Backend>, ApiError>;
    /// Who is asking, and which labs they may open.
    async fn session(&self, headers: &http::HeaderMap) -> SessionView;
    /// The labs this person may open, each summed up (the instructor's overview).
    async fn labs(&self, headers: &http::HeaderMap) -> Result<Vec<LabSummary>, ApiError>;
    /// Makes a lab; answers its learner token, shown once.
    async fn create_lab(
        &self,
        headers: &http::HeaderMap,
        name: &str,
        csrf: Option<&str>,
    ) -> Result<NewToken, ApiError>;
    /// Makes a lab and a learner token for each line of `list` not made into one before in
    /// class `class`; answers them, shown once.
    async fn create_class(
        &self,
        headers: &http::HeaderMap,
        class: &str,
        list: &str,
        csrf: Option<&str>,
    ) -> Result<ClassMade, ApiError>;
    /// A new learner token for lab `lab`, replacing the lost one (the instructor only).
    async fn replace_token(
        &self,
        headers: &http::HeaderMap,
        lab: &str,
        csrf: Option<&str>,
    ) -> Result<NewToken, ApiError>;
    /// Deletes every lab of class `class`, and the class; without `confirm`, only says what
    /// that would delete (409). The labs deleted.
    async fn delete_class(
        &self,
        headers: &http::HeaderMap,
        class: &str,
        confirm: bool,
        csrf: Option<&str>,
    ) -> Result<Vec<String>, ApiError>;
    /// Marks milestone `milestone` of lab `lab` accepted by hand, with why (the instructor
    /// only): the lab's milestones then.
    async fn accept_milestone(
        &self,
        headers: &http::HeaderMap,
        (lab, milestone): (&str, &str),
        note: &str,
        csrf: Option<&str>,
    ) -> Result<LabProgress, ApiError>;
    /// A token that opens class `class`'s board and no lab (the instructor only); with
    /// `hide_names`, the board it opens names no one.
    async fn class_viewer_token(
        &self,
        headers: &http::HeaderMap,
        class: &str,
        hide_names: bool,
        csrf: Option<&str>,
    ) -> Result<NewToken, ApiError>;
    /// Class `class`'s board: each of its labs' milestones (the instructor only).
    async fn class_progress(
        &self,
        headers: &http::HeaderMap,
        class: &str,
    ) -> Result<ClassProgress, ApiError>;
    /// Deletes a lab: its topic, its folder and its history.
    async fn delete_lab(
        &self,
        headers: &http::HeaderMap,
        name: &str,
        csrf: Option<&str>,
    ) -> Result<(), ApiError>;
    /// A new read-only token for a lab, shown once.
    async fn viewer_token(
        &self,
        headers: &http::HeaderMap,
        lab: &str,
        csrf: Option<&str>,
    ) -> Result<NewToken, ApiError>;
}

/// What the pages need from the engine. Declared here, implemented by the server, provided as
/// Leptos context; the wasm build never sees it.
#[cfg(feature = "ssr")]
#[async_trait::async_trait]
pub trait Backend: Send + Sync {
    async fn freshness(&self) -> Result<Freshness, ApiError>;
    async fn runs(&self, before: Option<i64>, limit: i64) -> Result<RunsPage, ApiError>;
    async fn run(&self, id: i64) -> Result<RunDetail, ApiError>;
    /// Starts a pipeline run; with `wait`, answers when it ends.
    async fn start_run(&self, started_by: &'static str, wait: bool)
    -> Result<RunStarted, ApiError>;
    /// Stops the lab's run in progress at once (its process is killed; the run is recorded as
    /// cancelled and the next run recovers as after a crash). Whether there was one.
    async fn cancel_run(&self) -> Result<bool, ApiError>;
    async fn hours(&self) -> Result<Vec<HourRow>, ApiError>;
    async fn produce_event(
        &self,
        event: EventForm,
        source: &str,
        and_run: bool,
    ) -> Result<Sent, ApiError>;
    async fn produce_batch(
        &self,
        scenario: &str,
        batch: &str,
        and_run: bool,
    ) -> Result<Sent, ApiError>;
    /// Sends an event sent before (by its history id) again, as the shop's system would.
    async fn send_again(&self, id: i64, and_run: bool) -> Result<Sent, ApiError>;
    async fn produce_page(&self) -> Result<ProducePage, ApiError>;
    async fn topic(&self) -> Result<TopicView, ApiError>;
    async fn table(
        &self,
        name: &str,
        version: Option<i64>,
        wanted: &RowsWanted,
    ) -> Result<TableView, ApiError>;
    async fn pipeline(&self) -> Result<PipelineView, ApiError>;
    async fn settings(&self) -> Result<Settings, ApiError>;
    async fn update_settings(&self, change: SettingsChange) -> Result<Settings, ApiError>;
    async fn reset(&self) -> Result<Settings, ApiError>;
    /// Which pipeline the lab runs: the course's streams or its own project.
    async fn kind(&self) -> PipelineKind;
    /// The lab's pipeline code: its project's files, or none for the course's streams.
    async fn code(&self) -> Result<ProjectCode, ApiError>;
    /// Saves one project file if the project with it still reads into a graph; else a 400 at
    /// the error's line and column, and nothing is saved.
    async fn save_file(&self, path: &str, text: &str) -> Result<ProjectCode, ApiError>;
    /// Analyses every flow of the lab's project over its tables, without reading a row, in a
    /// process of its own (PIPELINES section 2).
    async fn validate(&self) -> Result<Validation, ApiError>;
    /// Switches the lab to week 14's example project (`confirm`: its tables may be reset).
    async fn start_example(&self, example: Example, confirm: bool)
    -> Result<ProjectCode, ApiError>;
    /// Switches the lab back to the course's streams (`confirm`: its tables may be reset).
    async fn use_course(&self, confirm: bool) -> Result<ProjectCode, ApiError>;
    /// Every file in the lab's `landing/` folder, with what the runs made of it.
    async fn landing(&self) -> Result<Vec<LandedFile>, ApiError>;
    /// Lands days `A-B` of the example's files (and its bad rows).
    async fn land_example(
        &self,
        days: Option<&str>,
        bad_rows: bool,
    ) -> Result<Vec<LandedFile>, ApiError>;
    /// Keeps uploaded files under `landing/`: each path is checked before any is written.
    async fn upload(&self, files: Vec<(String, Vec<u8>)>) -> Result<Vec<LandedFile>, ApiError>;
    /// The project's graph, laid out (`None` for the course's streams).
    async fn graph(&self) -> Result<Option<ProjectGraph>, ApiError>;
    async fn events(&self, run: Option<i64>) -> Result<EventLog, ApiError>;
    /// Data quality; the rows set aside by rule `rule` (`table.rule`) alone when given.
    async fn quality(&self, run: Option<i64>, rule: Option<&str>) -> Result<Quality, ApiError>;
    /// A project lab's check of every table (PIPELINES §9), run in a child process; a course
    /// lab's is empty (its Reconciliation is `hours`).
    async fn project_check(&self) -> Result<ProjectCheck, ApiError>;
    /// The late ledger: every row a windowed table read too late (table `table`'s alone).
    async fn late(&self, table: Option<&str>) -> Result<LateLedger, ApiError>;
    /// One key's versions in an AUTO CDC target.
    async fn key_history(&self, table: &str, key: &str) -> Result<KeyHistory, ApiError>;
    /// Gold replayed with another watermark delay (`2h`, `90m`, `90`), writing nothing.
    async fn whatif(&self, delay: &str) -> Result<WhatIf, ApiError>;
    /// Reads the lab's topic in one of its consumer groups, committing as it goes.
    async fn consume(&self, request: ConsumeRequest) -> Result<GroupRead, ApiError>;
    /// The lab's milestones, each proved from what the lab did (issue "The classroom").
    async fn progress(&self) -> Result<LabProgress, ApiError>;
    /// The lab's writing tasks, each with its newest text.
    async fn writings(&self) -> Result<Vec<Writing>, ApiError>;
    /// Saves a writing task's text (kept with its time; the newest counts).
    async fn save_writing(&self, task: &str, text: &str) -> Result<Writing, ApiError>;
}
