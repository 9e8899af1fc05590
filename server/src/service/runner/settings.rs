//! A lab's settings, in one store: the schedule and the deduplication setting (kept in
//! `<data>/settings.json`) and whether its pages are public (kept in the registry, which the
//! access code reads when the server starts). Readers see all three through one lock.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use app::api::ApiError;
use app::model::CostModel;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::access::registry::Registry;
use crate::service::error::failed;

/// What the settings file keeps.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct SettingsFile {
    /// Seconds between scheduled runs; `None`: off.
    schedule_seconds: Option<u64>,
    /// Deduplication from the next reset on; `None`: on (SPEC's default).
    dedup: Option<bool>,
    /// Files landing start a run; `None`: off.
    #[serde(default)]
    run_on_arrival: Option<bool>,
    /// How the cost of freshness prices a cluster; `None`: its defaults.
    #[serde(default)]
    cost: Option<CostModel>,
}

/// Every setting of a lab as it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Current {
    pub schedule_seconds: Option<u64>,
    pub dedup: bool,
    pub public: bool,
    pub run_on_arrival: bool,
    pub cost: CostModel,
}

pub use app::model::SettingsChange as Change;

pub struct SettingsStore {
    lab: String,
    path: PathBuf,
    registry: Registry,
    current: Mutex<(SettingsFile, bool)>,
    /// The schedule's interval, watched by the schedule task.
    schedule: watch::Sender<Option<u64>>,
    /// Whether landing files start runs, watched by the landing folder's watcher.
    arrival: watch::Sender<bool>,
}

impl SettingsStore {
    /// The settings of lab `lab` kept in folder `dir`; `public` as the registry has it.
    pub fn open(lab: &str, dir: PathBuf, registry: Registry, public: bool) -> Self {
        let path = dir.join("settings.json");
        let file: SettingsFile = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!("{}: {e}; using the default settings", path.display());
                SettingsFile::default()
            }),
            Err(_) => SettingsFile::default(),
        };
        let (schedule, _) = watch::channel(file.schedule_seconds);
        let (arrival, _) = watch::channel(file.run_on_arrival.unwrap_or(false));
        Self {
            lab: lab.to_string(),
            path,
            registry,
            current: Mutex::new((file, public)),
            schedule,
            arrival,
        }
    }

    fn lock(&self) -> MutexGuard<'_, (SettingsFile, bool)> {
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn current(&self) -> Current {
        let (file, public) = &*self.lock();
        Current {
            schedule_seconds: file.schedule_seconds,
            dedup: file.dedup.unwrap_or(true),
            public: *public,
            run_on_arrival: file.run_on_arrival.unwrap_or(false),
            cost: file.cost.unwrap_or_default(),
        }
    }

    /// The schedule's interval as it changes.
    pub fn schedule(&self) -> watch::Receiver<Option<u64>> {
        self.schedule.subscribe()
    }

    /// Whether landing files start runs, as it changes.
    pub fn arrival(&self) -> watch::Receiver<bool> {
        self.arrival.subscribe()
    }

    /// Applies a change: public first (the one write that can find the lab gone), then the
    /// file, written aside and renamed so a crash leaves the old settings or the new.
    pub async fn change(&self, change: Change) -> Result<Current, ApiError> {
        if let Some(cost) = &change.cost {
            checked_cost(cost)?;
        }
        if let Some(Some(0)) = change.schedule_seconds {
            return Err(ApiError::field(
                "schedule_seconds",
                "at least 1 second, or null for no schedule",
            ));
        }
        if let Some(public) = change.public {
            let found = self
                .registry
                .set_public(&self.lab, public)
                .await
                .map_err(failed)?;
            if !found {
                return Err(ApiError::NotFound(format!("no lab {:?}", self.lab)));
            }
            self.lock().1 = public;
        }
        if change.schedule_seconds.is_some()
            || change.dedup.is_some()
            || change.run_on_arrival.is_some()
            || change.cost.is_some()
        {
            let mut current = self.lock();
            let mut file = current.0.clone();
            if let Some(schedule) = change.schedule_seconds {
                file.schedule_seconds = schedule;
            }
            if let Some(dedup) = change.dedup {
                file.dedup = Some(dedup);
            }
            if let Some(on) = change.run_on_arrival {
                file.run_on_arrival = Some(on);
            }
            if let Some(cost) = change.cost {
                file.cost = Some(cost);
            }
            let json =
                serde_json::to_vec_pretty(&file).map_err(|e| ApiError::Failed(e.to_string()))?;
            let partial = self.path.with_extension("json.partial");
            let dir = self.path.parent().unwrap_or(&self.path);
            std::fs::create_dir_all(dir)
                .and_then(|()| std::fs::write(&partial, json))
                .and_then(|()| std::fs::rename(&partial, &self.path))
                .map_err(|e| ApiError::Failed(format!("{}: {e}", self.path.display())))?;
            self.schedule.send_replace(file.schedule_seconds);
            self.arrival
                .send_replace(file.run_on_arrival.unwrap_or(false));
            current.0 = file;
        }
        Ok(self.current())
    }
}

/// The most a cluster's start-up or minimum bill may be, and the most an hour may cost: bounds
/// that keep the day's figures within what a page can show.
const MOST_SECONDS: u64 = 24 * 3600;
const MOST_CENTS: u64 = 100_000_000;

fn checked_cost(cost: &CostModel) -> Result<(), ApiError> {
    if cost.startup_s > MOST_SECONDS {
        return Err(ApiError::field(
            "startup_s",
            "at most a day (86400 seconds)",
        ));
    }
    if cost.minimum_s > MOST_SECONDS {
        return Err(ApiError::field(
            "minimum_s",
            "at most a day (86400 seconds)",
        ));
    }
    if cost.price_per_hour_cents > MOST_CENTS {
        return Err(ApiError::field(
            "price_per_hour",
            "at most 1,000,000 units an hour",
        ));
    }
    Ok(())
}
