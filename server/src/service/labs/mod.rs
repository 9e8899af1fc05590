//! The server's labs: `default` plus the labs made with `POST /api/labs`, each with its own topic,
//! folder, settings and schedule, sharing one broker, one history and N run slots. Every page,
//! server function and API call opens its lab here, and is allowed or refused here.

mod adopt;
mod classes;
mod summary;
mod tokens;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use app::api::{Access, ApiError, Backend, Server};
use app::model::{
    ClassMade, ClassProgress, DEFAULT_LAB, LabProgress, LabSummary, NewToken, Role, SessionView,
};
use tokio::sync::Semaphore;

use crate::access::registry::Registry;
use crate::access::{self, Auth, Caller, Who};
use crate::config::{Config, validate_lab_name};
use crate::kafka::SharedClients;
use crate::service::error::failed;
use crate::service::lab::{Lab, LabError};
use crate::service::runner::LabRunner;
use crate::store::History;

pub struct Labs {
    /// The default lab's config: every other lab's is derived from it.
    root: Config,
    history: History,
    pub auth: Auth,
    dashboards: Mutex<BTreeMap<String, Arc<LabRunner>>>,
    run_slots: Arc<Semaphore>,
    run_limits: crate::config::RunLimits,
    /// Whether new labs start their schedule (the server is serving).
    scheduling: std::sync::atomic::AtomicBool,
    /// Held while a lab is made or deleted: one of those at a time, never interleaved.
    managing: tokio::sync::Mutex<()>,
    /// One Kafka connection and producer for every lab's sends.
    kafka: Arc<SharedClients>,
}

impl Labs {
    /// Opens the default lab in `root` and every lab recorded in its history, served as
    /// `root.serving` says.
    pub async fn open(root: Config) -> Result<Arc<Self>, LabError> {
        let config = root.serving.clone();
        let history = History::open(&root.history).await?;
        let registry = Registry::new(history.clone());
        let auth = Auth::new(config.instructor_token.as_deref(), registry.clone())
            .map_err(|e| LabError::Auth(e.to_string()))?;
        let run_slots = Arc::new(Semaphore::new(config.max_runs.max(1)));
        let records = registry.labs().await?;
        let public = |name: &str| records.iter().any(|r| r.name == name && r.public);
        let kafka = Arc::new(SharedClients::default());
        let mut dashboards = BTreeMap::new();
        for name in std::iter::once(DEFAULT_LAB).chain(
            records
                .iter()
                .map(|r| r.name.as_str())
                .filter(|n| *n != DEFAULT_LAB),
        ) {
            let lab = Lab::with_history(root.for_lab(name), history.clone()).sharing(kafka.clone());
            let dashboard = LabRunner::new(
                lab,
                registry.clone(),
                (run_slots.clone(), config.run_limits),
                public(name),
            );
            dashboards.insert(name.to_string(), dashboard);
        }
        Ok(Arc::new(Self {
            root,
            history,
            auth,
            dashboards: Mutex::new(dashboards),
            run_slots,
            run_limits: config.run_limits,
            scheduling: Default::default(),
            managing: Default::default(),
            kafka,
        }))
    }

    fn dashboards(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<LabRunner>>> {
        self.dashboards.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn get(&self, name: &str) -> Option<Arc<LabRunner>> {
        self.dashboards().get(name).cloned()
    }

    /// The registry of labs, tokens and classes.
    pub fn registry(&self) -> &Registry {
        self.auth.registry()
    }

    /// How the server serves these labs.
    pub fn serving(&self) -> &crate::config::Serving {
        &self.root.serving
    }

    pub fn default_lab(&self) -> Arc<LabRunner> {
        self.get(DEFAULT_LAB)
            .expect("the default lab is opened with the server and never deleted")
    }

    /// Every lab: `default` first, then by name.
    pub fn all(&self) -> Vec<Arc<LabRunner>> {
        let dashboards = self.dashboards();
        let (default, others): (Vec<_>, Vec<_>) = dashboards
            .iter()
            .partition(|(name, _)| name.as_str() == DEFAULT_LAB);
        default
            .into_iter()
            .chain(others)
            .map(|(_, d)| d.clone())
            .collect()
    }

    /// Starts every lab's schedule, and those of labs made from now on.
    pub fn start_schedules(&self) {
        self.scheduling
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.all().iter().for_each(LabRunner::start_schedule);
    }

    /// Stops the schedules and waits for the runs in progress (shutdown).
    pub async fn finish(&self) {
        for dashboard in self.all() {
            dashboard.stop_schedule();
            dashboard.finish_running().await;
        }
    }

    /// Lab `name`, if the caller may `access` it (a write by a browser session must carry its
    /// CSRF token).
    fn allow(
        &self,
        caller: &Caller,
        name: &str,
        access: Access,
        csrf: Option<&str>,
    ) -> Result<Arc<LabRunner>, ApiError> {
        // A lab being deleted is gone already for every new request.
        let dashboard = self.get(name).filter(|d| !d.lab().is_retired());
        let public = dashboard.as_ref().is_some_and(|d| d.is_public());
        caller.may(name, access, public, csrf)?;
        dashboard.ok_or_else(|| ApiError::NotFound(format!("no lab {name:?}")))
    }

    /// Lab `name` as the JSON API's handlers use it.
    pub async fn open_lab(
        &self,
        headers: &http::HeaderMap,
        name: &str,
        access: Access,
    ) -> Result<Arc<LabRunner>, ApiError> {
        let caller = self.auth.caller(headers).await?;
        if self.get(name).is_none() {
            self.adopt().await?;
        }
        self.allow(&caller, name, access, access::csrf_header(headers))
    }

    /// The labs `who` may open: all for the instructor, their own and the public ones for others.
    fn visible(&self, who: &Who) -> Vec<Arc<LabRunner>> {
        self.all()
            .into_iter()
            .filter(|d| {
                let name = &d.lab().config.lab;
                matches!(who, Who::Local | Who::Instructor)
                    || who.lab() == Some(name.as_str())
                    || d.is_public()
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl Server for Labs {
    async fn open(
        &self,
        headers: &http::HeaderMap,
        lab: &str,
        access: Access,
        csrf: Option<&str>,
    ) -> Result<Arc<dyn Backend>, ApiError> {
        let caller = self.auth.caller(headers).await?;
        if self.get(lab).is_none() {
            self.adopt().await?;
        }
        Ok(self.allow(&caller, lab, access, csrf)?)
    }

    async fn session(&self, headers: &http::HeaderMap) -> SessionView {
        // A caller refused for now (too many tries of its token) is shown as signed out.
        let caller = self.auth.caller(headers).await.unwrap_or(Caller {
            who: Who::Anonymous,
            csrf: None,
        });
        SessionView {
            auth: self.auth.enabled(),
            role: caller.who.role(),
            lab: caller.who.lab().map(str::to_string),
            labs: self
                .visible(&caller.who)
                .iter()
                .map(|d| d.lab().config.lab.clone())
                .collect(),
            csrf: caller.csrf,
        }
    }

    async fn labs(&self, headers: &http::HeaderMap) -> Result<Vec<LabSummary>, ApiError> {
        let caller = self.auth.caller(headers).await?;
        self.adopt().await?;
        let visible = self.visible(&caller.who);
        if caller.who == Who::Anonymous && visible.is_empty() {
            caller.who.may(DEFAULT_LAB, Access::Read, false)?;
        }
        let mut summaries = vec![];
        for dashboard in visible {
            summaries.push(summary::summary(&dashboard).await);
        }
        Ok(summaries)
    }

    async fn create_lab(
        &self,
        headers: &http::HeaderMap,
        name: &str,
        csrf: Option<&str>,
    ) -> Result<NewToken, ApiError> {
        let caller = self.auth.caller(headers).await?;
        caller.may(name, Access::Manage, false, csrf)?;
        validate_lab_name(name).map_err(|e| ApiError::field(e.field, e.why))?;
        let taken = || ApiError::field("name", format!("a lab named {name} exists already"));
        let _managing = self.managing.lock().await;
        if self.get(name).is_some() {
            return Err(taken());
        }
        let token = self.auth.mint(name, Role::Learner).await?;
        let config = self.root.for_lab(name);
        // A folder of no lab is what a failed delete left: the new lab must not start on it.
        match std::fs::remove_dir_all(&config.data_dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(ApiError::Failed(format!(
                    "{} (left by an earlier lab {name}): {e}",
                    config.data_dir.display()
                )));
            }
            _ => {}
        }
        // The topic first: a lab whose topic cannot be made is not made at all.
        let lab = Lab::with_history(config, self.history.clone()).sharing(self.kafka.clone());
        let kafka = lab.kafka().await.map_err(failed)?;
        // A topic of that name holding events (another data folder's lab, on a shared broker)
        // would be read as this lab's: refused, never silently adopted nor deleted.
        let topic = &lab.config.topic;
        let partitions = kafka.partitions(topic).map_err(failed)?.unwrap_or_default();
        let ranges = kafka.log_ranges(topic, &partitions).map_err(failed)?;
        let events: i64 = ranges.iter().map(|(start, end)| end - start).sum();
        if events > 0 {
            return Err(ApiError::field(
                "name",
                format!(
                    "topic {topic} exists on the broker with {events} events, made by something \
                     else than this server; choose another name, or delete that topic first"
                ),
            ));
        }
        kafka
            .ensure_topic(topic, lab.config.partitions)
            .await
            .map_err(failed)?;
        if !self
            .auth
            .registry()
            .create_lab(name, &token.stored)
            .await
            .map_err(failed)?
        {
            return Err(taken());
        }
        // A token of an earlier lab of this name, verified just as it was deleted, opens nothing.
        self.auth.forget_lab(name);
        let registry = self.auth.registry().clone();
        let dashboard = LabRunner::new(
            lab,
            registry,
            (self.run_slots.clone(), self.run_limits),
            false,
        );
        if self.scheduling.load(std::sync::atomic::Ordering::Relaxed) {
            dashboard.start_schedule();
        }
        self.dashboards().insert(name.to_string(), dashboard);
        tracing::info!("lab {name} created");
        Ok(NewToken {
            lab: name.into(),
            role: Role::Learner,
            token: token.plain,
        })
    }

    async fn create_class(
        &self,
        headers: &http::HeaderMap,
        class: &str,
        list: &str,
        csrf: Option<&str>,
    ) -> Result<ClassMade, ApiError> {
        let caller = self.auth.caller(headers).await?;
        caller.may(DEFAULT_LAB, Access::Manage, false, csrf)?;
        crate::service::class::create(self, self.auth.registry(), headers, (class, list), csrf)
            .await
    }

    async fn replace_token(
        &self,
        headers: &http::HeaderMap,
        lab: &str,
        csrf: Option<&str>,
    ) -> Result<NewToken, ApiError> {
        let caller = self.auth.caller(headers).await?;
        if self.get(lab).is_none() {
            self.adopt().await?;
        }
        self.allow(&caller, lab, Access::Manage, csrf)?;
        self.new_token(lab, Role::Learner).await
    }

    async fn delete_class(
        &self,
        headers: &http::HeaderMap,
        class: &str,
        confirm: bool,
        csrf: Option<&str>,
    ) -> Result<Vec<String>, ApiError> {
        let caller = self.auth.caller(headers).await?;
        caller.may(DEFAULT_LAB, Access::Manage, false, csrf)?;
        self.delete_class_labs(headers, class, confirm, csrf).await
    }

    async fn accept_milestone(
        &self,
        headers: &http::HeaderMap,
        (lab, milestone): (&str, &str),
        note: &str,
        csrf: Option<&str>,
    ) -> Result<LabProgress, ApiError> {
        let caller = self.auth.caller(headers).await?;
        if self.get(lab).is_none() {
            self.adopt().await?;
        }
        let dashboard = self.allow(&caller, lab, Access::Manage, csrf)?;
        crate::service::progress::accept(dashboard.lab(), milestone, note).await?;
        dashboard.progress().await
    }

    async fn class_viewer_token(
        &self,
        headers: &http::HeaderMap,
        class: &str,
        hide_names: bool,
        csrf: Option<&str>,
    ) -> Result<NewToken, ApiError> {
        let caller = self.auth.caller(headers).await?;
        caller.may(DEFAULT_LAB, Access::Manage, false, csrf)?;
        self.new_class_token(class, hide_names).await
    }

    async fn class_progress(
        &self,
        headers: &http::HeaderMap,
        class: &str,
    ) -> Result<ClassProgress, ApiError> {
        let caller = self.auth.caller(headers).await?;
        let viewer = matches!(&caller.who, Who::ClassViewer(c) if c == class);
        if !viewer {
            caller.who.may(DEFAULT_LAB, Access::Manage, false)?;
        }
        self.class_board(class, viewer).await
    }

    async fn delete_lab(
        &self,
        headers: &http::HeaderMap,
        name: &str,
        csrf: Option<&str>,
    ) -> Result<(), ApiError> {
        let caller = self.auth.caller(headers).await?;
        if name == DEFAULT_LAB {
            caller.who.may(name, Access::Manage, false)?;
            return Err(ApiError::field(
                "lab",
                "the default lab cannot be deleted; reset it instead",
            ));
        }
        let dashboard = self.allow(&caller, name, Access::Manage, csrf)?;
        let _managing = self.managing.lock().await;
        if dashboard.is_running() {
            return Err(ApiError::Busy(format!(
                "a run of lab {name} is in progress; delete it when the run ends"
            )));
        }
        let lab = dashboard.lab();
        let kafka = lab.kafka().await.map_err(failed)?;
        // From here new requests find no lab, and a run or send already under way stops at the
        // lock (or before sending) instead of bringing back the folder, topic or history.
        let _lock = lab.retire_and_lock().map_err(failed)?;
        // A run started since the check above waits for the lock this holds: its process is
        // stopped before it can take the lock and bring the lab's folder back.
        dashboard.cancel();
        dashboard.cool();
        if let Err(e) = self.auth.registry().delete_lab(name).await {
            lab.unretire();
            return Err(failed(e));
        }
        dashboard.stop_schedule();
        self.dashboards().remove(name);
        self.auth.forget_lab(name);
        kafka
            .delete_topic(&lab.config.topic)
            .await
            .map_err(failed)?;
        let dir = &lab.config.data_dir;
        if let Err(e) = std::fs::remove_dir_all(dir)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            return Err(ApiError::Failed(format!(
                "lab {name} is deleted but its folder {} stays: {e}",
                dir.display()
            )));
        }
        tracing::info!("lab {name} deleted");
        Ok(())
    }

    async fn viewer_token(
        &self,
        headers: &http::HeaderMap,
        lab: &str,
        csrf: Option<&str>,
    ) -> Result<NewToken, ApiError> {
        let caller = self.auth.caller(headers).await?;
        self.allow(&caller, lab, Access::Write, csrf)?;
        self.new_token(lab, Role::Viewer).await
    }
}
