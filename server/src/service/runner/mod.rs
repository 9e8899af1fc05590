//! One lab as the server runs it: the runs it starts (one at a time, beside CLI runs through the
//! lab's lock; `runs.rs`), its schedule, its settings in one store (`settings.rs`), live
//! announcements for the pages, and the backend the pages call (`backend.rs`).

mod arrival;
mod backend;
pub mod child;
mod files;
pub mod reader;
mod running;
mod runs;
pub mod settings;
pub mod worker;

use std::sync::{Arc, Mutex};

use app::api::ApiError;
use app::model::{Announcement, Sent, SentAt};
use tokio::sync::{Semaphore, broadcast};
use tokio::task::JoinHandle;

use crate::access::registry::Registry;
use crate::engine::course::gold::GoldState;
use crate::engine::event::OrderEvent;
use crate::engine::flow::FlowError;
use crate::service::error::failed;
use crate::service::lab::Lab;
use running::Running;
use settings::SettingsStore;

pub struct LabRunner {
    lab: Lab,
    settings: SettingsStore,
    running: Mutex<Option<Running>>,
    /// Announcements for `/api/live`: run-started, run-finished, sent, reset, settings.
    live: broadcast::Sender<Announcement>,
    /// The schedule's task while the server runs it.
    schedule_task: Mutex<Option<JoinHandle<()>>>,
    /// The landing folder's watcher task ("run when new files land") while the server runs it.
    arrival_task: Mutex<Option<JoinHandle<()>>>,
    /// Whether that task watches the folder now: a change of the setting to on is answered only
    /// once it does, so files landing right after the answer start a run (`arrival.rs`).
    watching: tokio::sync::watch::Sender<bool>,
    /// Runs at once across the server's labs: a run waits for one of these first.
    run_slots: Arc<Semaphore>,
    /// What each run's process may take.
    run_limits: crate::config::RunLimits,
    /// The lab's run process kept between runs.
    warm: Arc<child::Warm>,
    /// The lab's milestones as last computed (the class board reads every lab's).
    progress: crate::service::progress::Cached,
}

impl LabRunner {
    /// A dashboard for one of a server's labs (one that records to its history): its runs wait
    /// for one of `run_slots` and go within `run_limits`; `public` as the registry has it.
    pub fn new(
        lab: Lab,
        registry: Registry,
        (run_slots, run_limits): (Arc<Semaphore>, crate::config::RunLimits),
        public: bool,
    ) -> Arc<Self> {
        let settings = SettingsStore::open(
            &lab.config.lab,
            lab.config.data_dir.clone(),
            registry,
            public,
        );
        let (live, _) = broadcast::channel(64);
        Arc::new(Self {
            lab: lab.reading_projects_with(child::reader(run_limits)),
            settings,
            running: Mutex::new(None),
            live,
            schedule_task: Mutex::new(None),
            arrival_task: Mutex::new(None),
            watching: tokio::sync::watch::Sender::new(false),
            run_slots,
            run_limits,
            warm: Default::default(),
            progress: Default::default(),
        })
    }

    pub fn is_public(&self) -> bool {
        self.settings.current().public
    }

    /// Whether a run of this lab is going on (or waiting for a slot or the lab's lock).
    pub fn is_running(&self) -> bool {
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(Running::is_active)
    }

    /// Ends the lab's run process kept between runs, if any (its lab reset, switched or
    /// deleted): the next run starts a new one.
    pub fn cool(&self) {
        self.warm.cool();
    }

    /// The process id of the lab's run process kept between runs, if any.
    pub fn warm_pid(&self) -> Option<u32> {
        self.warm.pid()
    }

    /// How the cost of freshness prices a cluster for this lab (the instructor's setting).
    pub fn cost_model(&self) -> app::model::CostModel {
        self.settings.current().cost
    }

    pub fn lab(&self) -> &Lab {
        &self.lab
    }

    /// Announcements for live pages.
    pub fn subscribe(&self) -> broadcast::Receiver<Announcement> {
        self.live.subscribe()
    }

    fn announce(&self, what: Announcement) {
        // Nobody listening is fine: the pages show the same when they load.
        let _ = self.live.send(what);
    }

    /// Sends one checked event; with `and_run`, runs the pipeline after and waits for it.
    pub async fn produce_parsed(
        &self,
        event: OrderEvent,
        source: &str,
        and_run: bool,
    ) -> Result<Sent, ApiError> {
        let sent = self.lab.produce(&[event], source).await.map_err(failed)?;
        self.sent(sent, and_run).await
    }

    async fn sent(&self, sent: Vec<SentAt>, and_run: bool) -> Result<Sent, ApiError> {
        self.announce(Announcement::Sent);
        let run = match and_run {
            true => Some(self.start("send-and-run", true).await?),
            false => None,
        };
        Ok(Sent { sent, run })
    }

    async fn dedup_in_effect(&self) -> Result<bool, ApiError> {
        dedup_in_effect(&self.lab, self.settings.current().dedup)
            .await
            .map_err(failed)
    }
}

/// Whether gold drops duplicates now: as its state started (gold's own state decides once it
/// exists), or as `setting` says when it has none yet.
async fn dedup_in_effect(lab: &Lab, setting: bool) -> Result<bool, FlowError> {
    let started = GoldState::committed(&lab.flows()).await?;
    Ok(started.map_or(setting, |s| s.dedup()))
}
