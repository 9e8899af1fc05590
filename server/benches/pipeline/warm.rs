//! The broker warmed up before anything is timed. The limit bronze is measured against (raw
//! consume) runs last, on a broker that has served the whole bench; without a warm-up, bronze's
//! first sends ran on a broker just started, whose JVM still interpreted the requests a run
//! makes only a few times (metadata, log offsets): on a fresh broker a send's restore took 4.5 to
//! 5.3 ms and its log question 4.8 to 7.3 ms, on a warm one 1.5 and 1.7 ms (`bench/results.md`,
//! 2026-12-03). A long-running lab server's broker is warm, so that is the state both sides are
//! measured in. `--no-warm-up` measures from a cold start as before.
//!
//! Its sends are as large as the workload's. After ten sends of 20,000 events, the broker's JIT
//! compilers still took a third of a core in some of bronze's read windows during the main
//! sends, compiling what the send's produce just before had made hot, and those were the slowest
//! reads (`perf record -a`, `bench/results.md`, 2026-12-05). Sends of the workload's size leave
//! less of it for the timed part; the bench prints the share that is left on each side.
//!
//! A broker the bench started keeps its storage in the bench's folder, so it is stopped before
//! the folder goes: left running on a deleted folder, it gave the next bench's first topic no
//! leader ("did not get a leader for every partition within 60 s", every second run).

use std::path::Path;
use std::time::{Duration, Instant};

use reckon::Config;
use reckon::bench::{self, Workload};
use reckon::service::lab::Streams;

/// Sends the warm-up makes (each as large as the workload's, each read by bronze), on a topic of
/// its own.
const SENDS: usize = 10;
/// The requests a run makes once or twice, asked this many times (or for [`QUESTIONS_FOR`]).
const QUESTIONS: usize = 3000;
const QUESTIONS_FOR: Duration = Duration::from_secs(15);

/// What the warm-up did, for the bench's output.
pub struct Warmed {
    pub took: Duration,
    pub questions: usize,
    /// The log question's median before and after, in ms: how much warmer the broker got.
    pub question_ms: (f64, f64),
}

/// Sends of `send_size` events with bronze runs, raw consumes and log questions on a lab of
/// its own; none of it timed.
pub async fn warm_up(dir: &Path, send_size: usize) -> anyhow::Result<Warmed> {
    let started = Instant::now();
    let lab = super::lab(dir, "warm-up");
    lab.reset(false).await?;
    let workload = Workload::new(send_size * SENDS, SENDS);
    for send in &workload.sends {
        lab.produce(send, "warm-up").await?;
        lab.run(Streams::Bronze, true).await?;
    }
    for _ in 0..2 {
        bench::raw_consume(&lab).await?;
    }
    let kafka = lab.kafka().await?;
    let topic = lab.config.topic.clone();
    let (questions, first, last) = tokio::task::spawn_blocking(move || {
        let partitions = kafka.partitions(&topic)?.unwrap_or_default();
        let asked = Instant::now();
        let mut took = Vec::with_capacity(QUESTIONS);
        while took.len() < QUESTIONS && asked.elapsed() < QUESTIONS_FOR {
            let one = Instant::now();
            kafka.partitions(&topic)?;
            kafka.log_ranges(&topic, &partitions)?;
            took.push(one.elapsed().as_secs_f64() * 1e3);
        }
        let tenth = (took.len() / 10).max(1);
        let median = |mut ms: Vec<f64>| {
            ms.sort_by(f64::total_cmp);
            ms.get(ms.len() / 2).copied().unwrap_or(f64::NAN)
        };
        let (first, last) = (
            median(took[..tenth].to_vec()),
            median(took[took.len() - tenth..].to_vec()),
        );
        anyhow::Ok((took.len(), first, last))
    })
    .await??;
    Ok(Warmed {
        took: started.elapsed(),
        questions,
        question_ms: (first, last),
    })
}

impl std::fmt::Display for Warmed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "warm-up (not timed): {:.1} s; {} log questions, median {:.1} ms in the first tenth, {:.1} ms in the last",
            self.took.as_secs_f64(),
            self.questions,
            self.question_ms.0,
            self.question_ms.1
        )
    }
}

/// The local broker as the bench found it: a broker it starts itself is stopped at its end.
pub struct Broker {
    config: Config,
    started_here: bool,
}

impl Broker {
    pub fn before(dir: &Path) -> Self {
        let config = Config::new(dir);
        let started_here = config.uses_local_broker() && !config.local_broker.listening();
        Self {
            config,
            started_here,
        }
    }

    pub async fn stop_if_started(self) {
        if !self.started_here {
            return;
        }
        match self.config.local_broker.stop().await {
            Ok(_) => println!("stopped the local broker the bench started"),
            Err(e) => eprintln!("could not stop the local broker the bench started: {e}"),
        }
    }
}
