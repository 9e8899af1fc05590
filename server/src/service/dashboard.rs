//! The dashboard's engine side: runs started from the server (one per lab at a time, beside CLI
//! runs through the lab's lock), the schedule, the settings, live announcements, and the data
//! every page and API call shows. Implements the app's [`Backend`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use app::api::{ApiError, Backend, EventForm};
use app::model::*;
use chrono::{SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use tokio::sync::{Semaphore, broadcast, oneshot, watch};
use tokio::task::JoinHandle;

use crate::config::DEFAULT_LAB;
use crate::engine::check::{self, Verdict};
use crate::engine::event::{OrderEvent, format_micros};
use crate::engine::flows::gold::GoldState;
use crate::engine::flows::{HOUR_MICROS, StreamError};
use crate::engine::scenario::Scenario;
use crate::engine::tables::{Fingerprint, TableName};
use crate::service::freshness;
use crate::service::lab::{Lab, LabError};
use crate::service::views;

/// Recent events the produce page lists.
const RECENT_EVENTS: i64 = 20;

/// What the settings file keeps (`<data>/settings.json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct SettingsFile {
    /// Seconds between scheduled runs; `None`: off.
    schedule_seconds: Option<u64>,
    /// Deduplication from the next reset on; `None`: on (SPEC's default).
    dedup: Option<bool>,
}

/// The run in progress, if any: one per lab at a time.
struct Running {
    /// `None` while it waits for the lab's lock (a CLI run may hold it).
    id: Option<i64>,
    /// The task driving it; shutdown waits for it so a run finishes instead of being cut.
    task: JoinHandle<()>,
    /// True until the run has ended and said how: the next run may start from then on, even
    /// before the task has wound down.
    active: Arc<AtomicBool>,
}

impl Running {
    fn is_active(&self) -> bool {
        self.active.load(Ordering::SeqCst)
    }
}

/// Marks a run ended when dropped: after its outcome is sent, on any early return, or when its
/// task is aborted or panics (the task's future, holding it, is dropped then).
struct Ended(Arc<AtomicBool>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

pub struct Dashboard {
    lab: Lab,
    settings_path: PathBuf,
    settings: Mutex<SettingsFile>,
    running: Mutex<Option<Running>>,
    /// Announcements for `/api/live`: run-started, run-finished, sent, reset, settings.
    live: broadcast::Sender<String>,
    /// The schedule's interval, watched by the schedule task.
    schedule: watch::Sender<Option<u64>>,
    /// The schedule's task while the server runs it.
    schedule_task: Mutex<Option<JoinHandle<()>>>,
    /// Runs at once across the server's labs: a run waits for one of these first.
    run_slots: Arc<Semaphore>,
    /// Whether anyone may read the freshness and reconciliation pages without a token.
    public: AtomicBool,
    /// The last recount of bronze and the tables' fingerprint it was made on: readers reuse it
    /// until something is committed, and wait for one recount instead of each making their own.
    recount: tokio::sync::Mutex<Option<(Fingerprint, check::Report)>>,
}

impl Dashboard {
    /// A dashboard for one of a server's labs (one that records to its history): its runs wait
    /// for one of `run_slots`.
    pub fn new(lab: Lab, run_slots: Arc<Semaphore>, public: bool) -> Arc<Self> {
        let settings_path = lab.config.data_dir.join("settings.json");
        let settings: SettingsFile = match std::fs::read(&settings_path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(
                    "{}: {e}; using the default settings",
                    settings_path.display()
                );
                SettingsFile::default()
            }),
            Err(_) => SettingsFile::default(),
        };
        let (live, _) = broadcast::channel(64);
        let (schedule, _) = watch::channel(settings.schedule_seconds);
        Arc::new(Self {
            lab,
            settings_path,
            settings: Mutex::new(settings),
            running: Mutex::new(None),
            live,
            schedule,
            schedule_task: Mutex::new(None),
            run_slots,
            public: AtomicBool::new(public),
            recount: tokio::sync::Mutex::new(None),
        })
    }

    pub fn is_public(&self) -> bool {
        self.public.load(Ordering::Relaxed)
    }

    /// Whether a run of this lab is going on (or waiting for a slot or the lab's lock).
    pub fn is_running(&self) -> bool {
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(Running::is_active)
    }

    pub fn lab(&self) -> &Lab {
        &self.lab
    }

    /// Announcements for live pages.
    pub fn subscribe(&self) -> broadcast::Receiver<String> {
        self.live.subscribe()
    }

    fn announce(&self, what: &str) {
        // Nobody listening is fine: the pages show the same when they load.
        let _ = self.live.send(format!("{{\"event\":\"{what}\"}}"));
    }

    fn history(&self) -> Result<&crate::store::History, ApiError> {
        self.lab
            .history()
            .ok_or_else(|| ApiError::Failed("this lab keeps no history".into()))
    }

    async fn dedup_in_effect(&self) -> Result<bool, ApiError> {
        dedup_in_effect(&self.lab, self.dedup_setting())
            .await
            .map_err(failed)
    }

    fn dedup_setting(&self) -> bool {
        self.lock_settings().dedup.unwrap_or(true)
    }

    fn lock_settings(&self) -> std::sync::MutexGuard<'_, SettingsFile> {
        self.settings.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs the schedule until [`Dashboard::stop_schedule`]: a run every `schedule_seconds` when set.
    pub fn start_schedule(self: &Arc<Self>) {
        let dashboard = Arc::clone(self);
        let mut interval = self.schedule.subscribe();
        let task = tokio::spawn(async move {
            loop {
                let seconds = *interval.borrow_and_update();
                let tick = async {
                    match seconds {
                        Some(s) if s > 0 => tokio::time::sleep(Duration::from_secs(s)).await,
                        _ => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = tick => {
                        if let Err(e) = dashboard.start_run("schedule", false).await {
                            tracing::info!("scheduled run skipped: {e}");
                        }
                    }
                    changed = interval.changed() => if changed.is_err() { return },
                }
            }
        });
        let old = self
            .schedule_task
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace(task);
        if let Some(old) = old {
            old.abort();
        }
    }

    pub fn stop_schedule(&self) {
        if let Some(task) = self
            .schedule_task
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            task.abort();
        }
    }

    /// Waits for the run in progress, if any, to finish (shutdown).
    pub async fn finish_running(&self) {
        let running = self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(running) = running {
            tracing::info!(
                "waiting for the run in progress ({:?}) to finish",
                running.id
            );
            let _ = running.task.await;
        }
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

    async fn sent(&self, sent: Vec<crate::kafka::Sent>, and_run: bool) -> Result<Sent, ApiError> {
        self.announce("sent");
        let run = if and_run {
            Some(self.start_run("send-and-run", true).await?)
        } else {
            None
        };
        Ok(Sent {
            sent: sent
                .into_iter()
                .map(|s| SentAt {
                    partition: s.partition,
                    offset: s.offset,
                })
                .collect(),
            run,
        })
    }
}

/// Whether gold drops duplicates now: as its state started (gold's own state decides once it
/// exists), or as `setting` says when it has none yet.
async fn dedup_in_effect(lab: &Lab, setting: bool) -> Result<bool, StreamError> {
    let started = GoldState::committed(lab).await?;
    Ok(started.map_or(setting, |s| s.dedup))
}

/// An engine error as the person who clicked reads it.
pub fn failed(e: impl Into<LabError>) -> ApiError {
    match e.into() {
        busy @ LabError::Busy { .. } => ApiError::Busy(busy.to_string()),
        gone @ LabError::Deleted { .. } => ApiError::NotFound(gone.to_string()),
        LabError::Stream(StreamError::DedupSettingFixed { .. }) => ApiError::Failed(
            "gold's state keeps the deduplication setting it started with; reset the lab to change it".into(),
        ),
        other => ApiError::Failed(other.to_string()),
    }
}

#[async_trait::async_trait]
impl Backend for Dashboard {
    async fn freshness(&self) -> Result<Freshness, ApiError> {
        freshness::freshness(&self.lab, Utc::now())
            .await
            .map_err(failed)
    }

    async fn runs(&self, before: Option<i64>, limit: i64) -> Result<RunsPage, ApiError> {
        if !(1..=1000).contains(&limit) {
            return Err(ApiError::field("limit", "between 1 and 1000"));
        }
        self.history()?
            .timeline(&self.lab.config.lab, limit, before)
            .await
            .map_err(failed)
    }

    async fn run(&self, id: i64) -> Result<RunDetail, ApiError> {
        let detail = self
            .history()?
            .run(id)
            .await
            .map_err(failed)?
            .filter(|d| d.run.lab == self.lab.config.lab)
            .ok_or_else(|| ApiError::NotFound(format!("no run #{id}")))?;
        views::convert(&detail)
    }

    async fn start_run(
        &self,
        started_by: &'static str,
        wait: bool,
    ) -> Result<RunStarted, ApiError> {
        let (id_tx, id_rx) = oneshot::channel();
        let (done_tx, done_rx) = oneshot::channel();
        {
            let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(r) = running.as_ref().filter(|r| r.is_active()) {
                return Err(ApiError::Busy(match r.id {
                    Some(id) => format!("run #{id} is in progress; start another when it ends"),
                    None => "a run is starting (waiting for a free run slot or the lab's lock); \
                             start another when it ends"
                        .into(),
                }));
            }
            let lab = self.lab.started_by(started_by);
            let dedup = self.dedup_setting();
            let live = self.live.clone();
            let slots = self.run_slots.clone();
            let active = Arc::new(AtomicBool::new(true));
            let ended = Ended(active.clone());
            let task = tokio::spawn(async move {
                // At most N runs at once across labs: wait for a slot before taking the lock.
                let Ok(_slot) = slots.acquire_owned().await else {
                    return;
                };
                // Unreadable state: the run itself reports it, with the setting as asked.
                let dedup = dedup_in_effect(&lab, dedup).await.unwrap_or(dedup);
                let result = lab
                    .pipeline_with(dedup, |id| {
                        let _ = id_tx.send(id);
                        let _ = live.send("{\"event\":\"run-started\"}".into());
                    })
                    .await;
                let _ = live.send("{\"event\":\"run-finished\"}".into());
                drop(ended);
                let _ = done_tx.send(result.map(|_| ()).map_err(failed));
            });
            *running = Some(Running {
                id: None,
                task,
                active,
            });
        }
        let id = match id_rx.await {
            Ok(Some(id)) => id,
            Ok(None) => return Err(ApiError::Failed("this lab keeps no history".into())),
            // The run ended before it started (lock busy, Kafka unreachable): say why.
            Err(_) => {
                return Err(match done_rx.await {
                    Ok(Err(e)) => e,
                    _ => ApiError::Failed("the run stopped before it started".into()),
                });
            }
        };
        if let Some(r) = self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            r.id = Some(id);
        }
        if !wait {
            return Ok(RunStarted {
                id,
                status: "running".into(),
                error: None,
            });
        }
        let outcome = done_rx.await.unwrap_or_else(|_| {
            Err(ApiError::Failed(
                "the run's task ended without a result".into(),
            ))
        });
        Ok(RunStarted {
            id,
            status: if outcome.is_ok() {
                "succeeded"
            } else {
                "failed"
            }
            .into(),
            error: outcome.err().map(|e| e.to_string()),
        })
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
                    let report = check::run(&self.lab).await.map_err(failed)?;
                    *recount = Some((fingerprint, report.clone()));
                    report
                }
            }
        };
        views::hours(&self.lab, &report).await
    }

    async fn produce_event(
        &self,
        form: EventForm,
        source: &str,
        and_run: bool,
    ) -> Result<Sent, ApiError> {
        self.produce_parsed(views::parse_form(&form)?, source, and_run)
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
        let json = self
            .history()?
            .produced_event(&self.lab.config.lab, id)
            .await
            .map_err(failed)?
            .ok_or_else(|| ApiError::field("id", format!("no event #{id} was sent to this lab")))?;
        let event = OrderEvent::parse(json.as_bytes())
            .map_err(|e| ApiError::Failed(format!("event #{id} in the history: {e}")))?;
        let sent = self
            .lab
            .produce(&[event], "send-again")
            .await
            .map_err(failed)?;
        self.sent(sent, and_run).await
    }

    async fn produce_page(&self) -> Result<ProducePage, ApiError> {
        let history = self.history()?;
        let lab = &self.lab.config.lab;
        let recent = history.produced(lab, RECENT_EVENTS).await.map_err(failed)?;
        let next_order_id = history
            .max_order_id(lab)
            .await
            .map_err(failed)?
            .unwrap_or(1000)
            // Any whole number is an order id: the largest one has no next, and is offered again.
            .saturating_add(1);
        let watermark = GoldState::committed(&self.lab)
            .await
            .map_err(failed)?
            .and_then(|s| s.watermark);
        // Half an hour behind the watermark: in an hour gold already closed, or about to drop.
        let late = watermark.map(|w| w - HOUR_MICROS / 2);
        let late_explanation = match (watermark, late) {
            (Some(w), Some(late)) => format!(
                "The watermark is {}. An order placed at {} is behind it: gold drops it as late and \
                 counts it in no hour, and the check will show its hour as late.",
                views::clock(w),
                views::clock(late)
            ),
            _ => "No watermark yet: gold has not seen a placed order, so no event can be late."
                .into(),
        };
        let batches = Scenario::load("course")
            .map(|c| c.batches.keys().cloned().collect())
            .unwrap_or_default();
        Ok(ProducePage {
            recent,
            watermark: watermark.map(format_micros),
            late_event_time: late.map(format_micros),
            late_explanation,
            batches,
            next_order_id,
            now: Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true),
        })
    }

    async fn topic(&self) -> Result<TopicView, ApiError> {
        views::topic(&self.lab).await
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
        views::table(&self.lab, table, version).await
    }

    async fn pipeline(&self) -> Result<PipelineView, ApiError> {
        views::pipeline(&self.lab).await
    }

    async fn settings(&self) -> Result<Settings, ApiError> {
        let dedup_in_effect = self.dedup_in_effect().await?;
        let settings = self.lock_settings();
        Ok(Settings {
            schedule_seconds: settings.schedule_seconds,
            dedup: settings.dedup.unwrap_or(true),
            dedup_in_effect,
            public: self.is_public(),
        })
    }

    async fn update_settings(
        &self,
        schedule_seconds: Option<Option<u64>>,
        dedup: Option<bool>,
        public: Option<bool>,
    ) -> Result<Settings, ApiError> {
        if let Some(Some(0)) = schedule_seconds {
            return Err(ApiError::field(
                "schedule_seconds",
                "at least 1 second, or null for no schedule",
            ));
        }
        // Public first: it is the one write that can find the lab gone.
        if let Some(public) = public {
            let found = self
                .history()?
                .set_public(&self.lab.config.lab, public)
                .await
                .map_err(failed)?;
            if !found {
                return Err(ApiError::NotFound(format!(
                    "no lab {:?}",
                    self.lab.config.lab
                )));
            }
            self.public.store(public, Ordering::Relaxed);
        }
        {
            let mut settings = self.lock_settings();
            let mut changed = settings.clone();
            if let Some(schedule) = schedule_seconds {
                changed.schedule_seconds = schedule;
            }
            if let Some(dedup) = dedup {
                changed.dedup = Some(dedup);
            }
            let json =
                serde_json::to_vec_pretty(&changed).map_err(|e| ApiError::Failed(e.to_string()))?;
            // Written aside and renamed: a crash leaves the old settings or the new, never half.
            let partial = self.settings_path.with_extension("json.partial");
            std::fs::create_dir_all(&self.lab.config.data_dir)
                .and_then(|()| std::fs::write(&partial, json))
                .and_then(|()| std::fs::rename(&partial, &self.settings_path))
                .map_err(|e| ApiError::Failed(format!("{}: {e}", self.settings_path.display())))?;
            *settings = changed;
            self.schedule.send_replace(settings.schedule_seconds);
        }

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

/// Verdict words as the API spells them.
pub fn verdict_word(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Ok => "ok",
        Verdict::Note => "note",
        Verdict::Late => "late",
        Verdict::Problem => "problem",
        Verdict::Waiting => "waiting",
    }
}
