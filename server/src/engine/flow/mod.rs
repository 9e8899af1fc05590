//! A flow and the runner that runs flows. Every flow has the same four steps, in order:
//!
//! 1. **restore** what its last commit left: the offsets or version it got to, its state;
//! 2. **read** what is new since then (nothing new: the flow is idle and stops here);
//! 3. **process** it into what it will write;
//! 4. **commit** the rows together with the progress and state that describe them, in one Delta
//!    commit, so a crash anywhere leaves either all of it or none.
//!
//! The runner drives the steps, stops the process at a crash point when a test asks for one,
//! and keeps one event per flow per run (PIPELINES §6), which the lab records in its history.

use std::path::PathBuf;
use std::time::Instant;

use app::model::{FlowRun, FlowStatus};

use super::tables::Tables;
use crate::crash::{CrashPoint, Moment};
use crate::process::cpu::{self, Clock};

mod error;

pub use error::{FlowError, Refusal};

/// What a flow may touch: the lab's tables, its topic, its state folder, and the crash point a
/// test set. The lab hands this down; flows never see the lab.
#[derive(Debug, Clone)]
pub struct FlowContext {
    pub tables: Tables,
    pub topic: String,
    /// Partitions the topic is created with when a flow finds it missing.
    pub partitions: i32,
    /// `<data>/state`: state that is not rows (gold's open hours), committed by a Delta version.
    pub state_dir: PathBuf,
    /// The data folder: `read_files` paths are relative to it.
    pub data_dir: PathBuf,
    /// A lab on the server: `read_files` reads only under `landing/`.
    pub landing_only: bool,
    /// The lab's name: `read_kafka`'s topic `T` is `T.<lab>` outside lab `default`.
    pub lab: String,
    /// The lab's bootstrap servers, the only ones `read_kafka` may name.
    pub brokers: String,
    /// The lab's Kafka connection, when a run reads Kafka (`read_kafka`).
    pub kafka: Option<std::sync::Arc<crate::kafka::Kafka>>,
    pub crash_at: Option<CrashPoint>,
}

impl FlowContext {
    pub fn gold_state_dir(&self) -> PathBuf {
        self.state_dir.join("gold")
    }

    /// The lab's topic for the topic a learner names (SPEC §1's mapping): no name reaches
    /// another lab's topic.
    pub fn kafka_topic(&self, named: &str) -> String {
        match self.lab.as_str() {
            app::model::DEFAULT_LAB => named.to_string(),
            lab => format!("{named}.{lab}"),
        }
    }
}

/// One flow: restore, read, process, commit. Each step notes what it did in the run's event.
#[async_trait::async_trait]
pub trait Flow: Send {
    /// What the last commit left: progress and state.
    type State: Send;
    /// What is new since then.
    type Input: Send;
    /// What the commit will write.
    type Output: Send;
    /// What the run hands back besides its event (the check's report; nothing for streams).
    type Done: Send + Default;

    /// The flow's name in events and crash points: bronze, silver, gold, check.
    fn name(&self) -> &str;
    /// The table it writes, if any.
    fn target(&self) -> Option<&str>;

    async fn restore(
        &mut self,
        cx: &FlowContext,
        event: &mut FlowRun,
    ) -> Result<Self::State, FlowError>;

    /// `None` when nothing is new: the flow is idle and commits nothing.
    async fn read(
        &mut self,
        cx: &FlowContext,
        state: &Self::State,
        event: &mut FlowRun,
    ) -> Result<Option<Self::Input>, FlowError>;

    async fn process(
        &mut self,
        state: &mut Self::State,
        input: Self::Input,
        event: &mut FlowRun,
    ) -> Result<Self::Output, FlowError>;

    async fn commit(
        &mut self,
        cx: &FlowContext,
        state: Self::State,
        output: Self::Output,
        event: &mut FlowRun,
    ) -> Result<Self::Done, FlowError>;
}

/// Runs flows in the order it is given them and keeps each one's event.
pub struct Runner {
    cx: FlowContext,
    events: Vec<FlowRun>,
}

impl Runner {
    pub fn new(cx: FlowContext) -> Self {
        Self { cx, events: vec![] }
    }

    /// Runs one flow's four steps and records its event, failed or not.
    pub async fn run<F: Flow>(&mut self, mut flow: F) -> Result<F::Done, FlowError> {
        let mut event = FlowRun::starting(flow.name(), flow.target(), now());
        let started = Instant::now();
        let result = steps(&mut flow, &self.cx, &mut event).await;
        event.duration_ms = started.elapsed().as_millis() as u64;
        if let Err(e) = &result {
            event.status = FlowStatus::Failed;
            event.error = Some(e.to_string());
        }
        self.events.push(event);
        result
    }

    /// Records a flow that did not run because what it reads failed.
    pub fn skip(&mut self, name: &str, target: Option<&str>) {
        let mut event = FlowRun::starting(name, target, now());
        event.status = FlowStatus::Skipped;
        self.events.push(event);
    }

    /// Records the flows of `plan` that did not run (an earlier one failed) as skipped.
    pub fn skip_rest(&mut self, plan: &[(&str, Option<&str>)]) {
        for (name, target) in plan {
            if !self.events.iter().any(|e| e.flow == *name) {
                self.skip(name, *target);
            }
        }
    }

    pub fn events(&self) -> &[FlowRun] {
        &self.events
    }

    pub fn into_events(self) -> Vec<FlowRun> {
        self.events
    }
}

async fn steps<F: Flow>(
    flow: &mut F,
    cx: &FlowContext,
    event: &mut FlowRun,
) -> Result<F::Done, FlowError> {
    // Where a flow's time goes, step by step, for `RECKON_LOG=reckon=debug`: its milliseconds,
    // and the CPU the whole machine was busy with meanwhile (read only when it is logged).
    let logged = tracing::enabled!(tracing::Level::DEBUG);
    let busy = || {
        logged
            .then(|| cpu::used(Clock::Machine))
            .unwrap_or_default()
    };
    let (name, mut lap, mut was_busy) = (flow.name().to_string(), Instant::now(), busy());
    let mut took = |step: &str| {
        let (ms, now_busy) = (lap.elapsed().as_secs_f64() * 1e3, busy());
        let machine_cpu_ms = now_busy.saturating_sub(was_busy).as_secs_f64() * 1e3;
        tracing::debug!(flow = name, step, ms, machine_cpu_ms);
        (lap, was_busy) = (Instant::now(), now_busy);
    };
    let mut state = flow.restore(cx, event).await?;
    took("restore");
    let Some(input) = flow.read(cx, &state, event).await? else {
        event.status = FlowStatus::Idle;
        return Ok(F::Done::default());
    };
    took("read");
    CrashPoint::abort_if(cx.crash_at.as_ref(), flow.name(), Moment::AfterRead);
    let output = flow.process(&mut state, input, event).await?;
    took("process");
    let done = flow.commit(cx, state, output, event).await?;
    took("commit");
    event.status = FlowStatus::Completed;
    CrashPoint::abort_if(cx.crash_at.as_ref(), flow.name(), Moment::AfterCommit);
    Ok(done)
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tables::{TableError, Tables};

    /// A flow that finds `new` rows, and fails at `fail_at` when asked to.
    struct Counter {
        new: u64,
        fail_at: Option<&'static str>,
    }

    impl Counter {
        fn step(&mut self, step: &'static str) -> Result<(), FlowError> {
            match self.fail_at == Some(step) {
                true => Err(FlowError::Table(TableError::Unknown(step.into()))),
                false => Ok(()),
            }
        }
    }

    #[async_trait::async_trait]
    impl Flow for Counter {
        type State = u64;
        type Input = u64;
        type Output = u64;
        type Done = u64;

        fn name(&self) -> &str {
            "counter"
        }

        fn target(&self) -> Option<&str> {
            Some("counts")
        }

        async fn restore(&mut self, _: &FlowContext, _: &mut FlowRun) -> Result<u64, FlowError> {
            self.step("restore").map(|()| 10)
        }

        async fn read(
            &mut self,
            _: &FlowContext,
            _: &u64,
            event: &mut FlowRun,
        ) -> Result<Option<u64>, FlowError> {
            self.step("read")?;
            event.figures.rows_read = self.new;
            Ok((self.new > 0).then_some(self.new))
        }

        async fn process(
            &mut self,
            state: &mut u64,
            input: u64,
            _: &mut FlowRun,
        ) -> Result<u64, FlowError> {
            self.step("process")?;
            *state += input;
            Ok(input)
        }

        async fn commit(
            &mut self,
            _: &FlowContext,
            state: u64,
            output: u64,
            event: &mut FlowRun,
        ) -> Result<u64, FlowError> {
            self.step("commit")?;
            event.figures.rows_written = output;
            Ok(state)
        }
    }

    fn runner() -> (tempfile::TempDir, Runner) {
        let dir = tempfile::tempdir().unwrap();
        let cx = FlowContext {
            tables: Tables::new(dir.path().join("tables"), None),
            topic: "t".into(),
            partitions: 1,
            state_dir: dir.path().join("state"),
            data_dir: dir.path().to_path_buf(),
            landing_only: false,
            lab: app::model::DEFAULT_LAB.into(),
            brokers: "127.0.0.1:9092".into(),
            kafka: None,
            crash_at: None,
        };
        (dir, Runner::new(cx))
    }

    /// SPEC §1's mapping: a learner's topic name is the lab's own, never another lab's.
    #[test]
    fn a_topic_named_in_a_lab_is_that_labs_own() {
        let (_dir, runner) = runner();
        let mut cx = runner.cx.clone();
        assert_eq!(cx.kafka_topic("orders"), "orders");
        cx.lab = "ann".into();
        assert_eq!(cx.kafka_topic("orders"), "orders.ann");
        assert_eq!(cx.kafka_topic("orders.bob"), "orders.bob.ann");
    }

    fn counter(new: u64, fail_at: Option<&'static str>) -> Counter {
        Counter { new, fail_at }
    }

    #[tokio::test]
    async fn a_flow_runs_its_four_steps_in_order_and_records_one_event() {
        let (_dir, mut runner) = runner();
        assert_eq!(runner.run(counter(3, None)).await.unwrap(), 13);
        let event = &runner.events()[0];
        assert_eq!(
            (event.flow.as_str(), event.target.as_deref(), event.status),
            ("counter", Some("counts"), FlowStatus::Completed)
        );
        assert_eq!(
            (event.figures.rows_read, event.figures.rows_written),
            (3, 3)
        );
    }

    #[tokio::test]
    async fn nothing_new_is_idle_and_neither_processed_nor_committed() {
        let (_dir, mut runner) = runner();
        // A commit would hand back the restored state (10): idle hands back nothing.
        assert_eq!(runner.run(counter(0, None)).await.unwrap(), 0);
        assert_eq!(runner.events()[0].status, FlowStatus::Idle);
    }

    #[tokio::test]
    async fn a_failure_is_recorded_with_its_error_and_the_rest_skipped() {
        let (_dir, mut runner) = runner();
        let error = runner.run(counter(3, Some("commit"))).await.unwrap_err();
        runner.skip_rest(&[("counter", Some("counts")), ("check", None)]);
        let events = runner.into_events();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].status, FlowStatus::Failed);
        assert_eq!(events[0].error.as_deref(), Some(error.to_string().as_str()));
        assert_eq!(
            (events[1].flow.as_str(), events[1].status),
            ("check", FlowStatus::Skipped)
        );
    }
}

/// Where a step's time goes: each stage's milliseconds in the flow's event (`stages_ms`, shown
/// with the run's events).
pub struct Lap(std::time::Instant);

impl Lap {
    pub fn start() -> Self {
        Self(std::time::Instant::now())
    }

    /// Records the time since the last stage as `stage`'s.
    pub fn took(&mut self, stage: &str, event: &mut FlowRun) {
        let ms = self.0.elapsed().as_millis() as u64;
        *event
            .figures
            .stages_ms
            .entry(stage.to_string())
            .or_default() += ms;
        self.0 = std::time::Instant::now();
    }
}
