//! The seed's pipeline on PySpark, Reckon's peer in the side-by-side benchmark.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Stages, hour_row};

/// The seed's pipeline on PySpark (`bench/spark/pipeline.py`): one warm session kept open for
/// runs, and cold runs as the seed runs them (a process per stream, then one for the check).
pub struct SparkPeer {
    script: PathBuf,
    dir: PathBuf,
    brokers: String,
    topic: String,
    session: Child,
    commands: ChildStdin,
    answers: BufReader<ChildStdout>,
    /// How long the warm session took to start.
    pub started_in: Duration,
}

impl SparkPeer {
    pub fn start(script: &Path, dir: &Path, brokers: &str, topic: &str) -> anyhow::Result<Self> {
        let started = Instant::now();
        let mut session = Self::command(script, dir, brokers, topic)
            .arg("serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let commands = session.stdin.take().expect("piped stdin");
        let answers = BufReader::new(session.stdout.take().expect("piped stdout"));
        let mut peer = Self {
            script: script.into(),
            dir: dir.into(),
            brokers: brokers.into(),
            topic: topic.into(),
            session,
            commands,
            answers,
            started_in: Duration::ZERO,
        };
        peer.answer()?; // "ready"
        peer.started_in = started.elapsed();
        Ok(peer)
    }

    fn command(script: &Path, dir: &Path, brokers: &str, topic: &str) -> Command {
        let mut command = Command::new("python3");
        command
            .arg(script)
            .arg("--dir")
            .arg(dir)
            .args(["--brokers", brokers, "--topic", topic]);
        command
    }

    /// The next `PEER {json}` line the session prints (Spark may print other lines).
    fn answer(&mut self) -> anyhow::Result<Value> {
        let mut line = String::new();
        loop {
            line.clear();
            if self.answers.read_line(&mut line)? == 0 {
                anyhow::bail!("the Spark session ended: see {}", self.dir.display());
            }
            if let Some(json) = line.trim().strip_prefix("PEER ") {
                let value: Value = serde_json::from_str(json)?;
                if let Some(error) = value.get("error") {
                    anyhow::bail!("the Spark peer failed: {error}");
                }
                return Ok(value);
            }
        }
    }

    fn ask(&mut self, command: &str) -> anyhow::Result<Value> {
        writeln!(self.commands, "{command}")?;
        self.commands.flush()?;
        self.answer()
    }

    /// One pipeline run in the warm session: bronze, silver, gold, then the seed's check.
    pub fn run(&mut self) -> anyhow::Result<Stages> {
        let answer = self.ask("run")?;
        let seconds = |k: &str| Duration::from_secs_f64(answer[k].as_f64().unwrap_or_default());
        Ok(Stages {
            bronze: seconds("bronze"),
            silver: seconds("silver"),
            gold: seconds("gold"),
            check: seconds("check"),
            events: answer["events"].as_u64().unwrap_or_default(),
            checked: answer["checked"].as_u64().unwrap_or_default(),
            problems: answer["lines"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .filter(|l| l.starts_with("PROBLEM"))
                .map(str::to_string)
                .collect(),
            jit: Duration::ZERO,
        })
    }

    /// One pipeline run as the seed runs it: `read_orders.py`, `latest_orders.py`,
    /// `hourly_sales.py` and `check_streams.py`, each its own process with its own session.
    pub fn cold_run(&self) -> anyhow::Result<Duration> {
        let started = Instant::now();
        for step in [
            &["run", "bronze"][..],
            &["run", "silver"],
            &["run", "gold"],
            &["check"],
        ] {
            let out = Self::command(&self.script, &self.dir, &self.brokers, &self.topic)
                .args(step)
                .stdin(Stdio::null())
                .output()?;
            // The seed's check exits 1 when it finds a PROBLEM: a finding, not a failure.
            let finding = step == ["check"] && out.status.code() == Some(1);
            if !out.status.success() && !finding {
                anyhow::bail!(
                    "Spark {step:?} failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                        .lines()
                        .rev()
                        .take(5)
                        .collect::<Vec<_>>()
                        .join(" | ")
                );
            }
        }
        Ok(started.elapsed())
    }

    pub fn hourly_sales(&mut self) -> anyhow::Result<Vec<(String, i64, String)>> {
        let answer = self.ask("hourly_sales")?;
        Ok(answer["rows"]
            .as_array()
            .into_iter()
            .flatten()
            .map(hour_row)
            .collect())
    }
}

impl Drop for SparkPeer {
    fn drop(&mut self) {
        let _ = writeln!(self.commands, "quit");
        let _ = self.commands.flush();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.session.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.session.kill();
    }
}
