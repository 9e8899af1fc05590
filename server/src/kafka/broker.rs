//! The machine's local Apache Kafka (KRaft, single node) that Reckon starts and stops itself when no
//! `--brokers` is given. One broker per port serves every data directory; a pointer file in the
//! temp folder records which process and home it is, so any lab can stop it.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::config::LocalBroker;
use crate::kafka::Kafka;

/// How long a starting broker may take to answer metadata requests.
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a stopping broker may take to shut down cleanly before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error(
        "Kafka's jars are not in {0}: run kafka/fetch-jars.sh (or set RECKON_KAFKA_LIBS to a folder holding them)"
    )]
    MissingJars(PathBuf),
    #[error("cannot run {java}: {source} (the local broker needs Java 17 or later)")]
    Java {
        java: PathBuf,
        source: std::io::Error,
    },
    #[error("formatting the broker's storage in {home} failed: {detail}")]
    Format { home: PathBuf, detail: String },
    #[error(
        "the broker did not answer on 127.0.0.1:{port} within {seconds} s; its log {log} ends with:\n{tail}"
    )]
    StartTimeout {
        port: u16,
        seconds: u64,
        log: PathBuf,
        tail: String,
    },
    #[error("the broker exited while starting; its log {log} ends with:\n{tail}")]
    Exited { log: PathBuf, tail: String },
    #[error(
        "a Kafka broker answers on 127.0.0.1:{0}, but Reckon did not start it: stop it where it was started"
    )]
    NotOurs(u16),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Kafka(#[from] crate::kafka::KafkaError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BrokerError + '_ {
    move |source| BrokerError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What `broker start` did.
#[derive(Debug, PartialEq, Eq)]
pub enum Started {
    /// A broker already answered on the port.
    AlreadyRunning,
    /// Reckon started one with this process id.
    Now { pid: u32 },
}

/// The local broker as `broker status` reports it.
#[derive(Debug)]
pub struct Status {
    pub port: u16,
    pub answers: bool,
    /// Set when Reckon started the broker on this port.
    pub started_by_reckon: Option<Pointer>,
}

/// Which process serves the port and where its storage is.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pointer {
    pub pid: u32,
    pub home: PathBuf,
}

impl LocalBroker {
    fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn pointer_path(&self) -> PathBuf {
        std::env::temp_dir().join(format!("reckon-broker-{}.json", self.port))
    }

    fn lock_path(&self) -> PathBuf {
        std::env::temp_dir().join(format!("reckon-broker-{}.lock", self.port))
    }

    fn read_pointer(&self) -> Option<Pointer> {
        let text = fs::read_to_string(self.pointer_path()).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Whether something accepts connections on the port: the cheap test a run makes before
    /// each use (a broker being started is waited for by [`LocalBroker::start`]'s lock).
    pub fn listening(&self) -> bool {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
    }

    /// Whether a Kafka broker answers metadata requests on the port.
    pub fn answers(&self) -> bool {
        self.listening()
            && Kafka::new(&self.bootstrap()).is_ok_and(|k| k.answers(Duration::from_secs(5)))
    }

    pub fn status(&self) -> Status {
        let answers = self.answers();
        let started_by_reckon = self.read_pointer().filter(|p| alive(p.pid));
        Status {
            port: self.port,
            answers,
            started_by_reckon,
        }
    }

    /// Starts the broker unless one answers already; returns once it answers metadata requests.
    pub async fn start(&self) -> Result<Started, BrokerError> {
        // Parallel tests and labs may all try at once: one starts it, the others find it running.
        let lock_path = self.lock_path();
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
        crate::kafka::blocking(|| lock.lock()).map_err(io(&lock_path))?;
        if self.answers() {
            return Ok(Started::AlreadyRunning);
        }
        if !self
            .kafka_libs
            .join(format!("kafka_2.13-{}.jar", crate::config::KAFKA_VERSION))
            .exists()
        {
            return Err(BrokerError::MissingJars(self.kafka_libs.clone()));
        }
        fs::create_dir_all(&self.home).map_err(io(&self.home))?;
        let home = fs::canonicalize(&self.home).map_err(io(&self.home))?;
        let properties = home.join("server.properties");
        fs::write(&properties, self.server_properties(&home)).map_err(io(&properties))?;
        let log4j = home.join("log4j2.properties");
        fs::write(&log4j, LOG4J).map_err(io(&log4j))?;
        if !home.join("storage/meta.properties").exists() {
            self.format(&home, &properties)?;
        }
        let log_path = home.join("broker.log");
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(io(&log_path))?;
        let child = Command::new(&self.java)
            .args([
                "-Xms256m",
                "-Xmx1g",
                "-XX:+UseG1GC",
                "-Djava.awt.headless=true",
            ])
            .arg(format!("-Dlog4j2.configurationFile={}", log4j.display()))
            .arg(format!("-Dkafka.logs.dir={}", home.join("logs").display()))
            .arg("-cp")
            .arg(self.classpath())
            .arg("kafka.Kafka")
            .arg(&properties)
            .current_dir(&home)
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(io(&log_path))?)
            .stderr(log)
            // Its own process group: Ctrl-C in the terminal that started it does not stop it.
            .process_group(0)
            .spawn()
            .map_err(|source| BrokerError::Java {
                java: self.java.clone(),
                source,
            })?;
        let pid = child.id();
        let pointer = Pointer {
            pid,
            home: home.clone(),
        };
        let pointer_path = self.pointer_path();
        fs::write(
            &pointer_path,
            serde_json::to_vec(&pointer).unwrap_or_default(),
        )
        .map_err(io(&pointer_path))?;
        // The broker outlives this process; dropping the handle does not stop it.
        drop(child);
        let started = Instant::now();
        loop {
            if self.answers() {
                return Ok(Started::Now { pid });
            }
            if !alive(pid) {
                return Err(BrokerError::Exited {
                    tail: tail(&log_path),
                    log: log_path,
                });
            }
            if started.elapsed() > START_TIMEOUT {
                return Err(BrokerError::StartTimeout {
                    port: self.port,
                    seconds: START_TIMEOUT.as_secs(),
                    tail: tail(&log_path),
                    log: log_path,
                });
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Stops the broker Reckon started on this port; `false` when none was running.
    pub async fn stop(&self) -> Result<bool, BrokerError> {
        let Some(pointer) = self.read_pointer().filter(|p| alive(p.pid)) else {
            if self.answers() {
                return Err(BrokerError::NotOurs(self.port));
            }
            let _ = fs::remove_file(self.pointer_path());
            return Ok(false);
        };
        signal(pointer.pid, libc::SIGTERM);
        let started = Instant::now();
        while alive(pointer.pid) {
            if started.elapsed() > STOP_TIMEOUT {
                signal(pointer.pid, libc::SIGKILL);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let _ = fs::remove_file(self.pointer_path());
        Ok(true)
    }

    fn classpath(&self) -> String {
        format!("{}/*", self.kafka_libs.display())
    }

    fn format(&self, home: &Path, properties: &Path) -> Result<(), BrokerError> {
        let java = |args: &[&str]| -> Result<String, BrokerError> {
            let out = Command::new(&self.java)
                .arg("-cp")
                .arg(self.classpath())
                .arg("kafka.tools.StorageTool")
                .args(args)
                .output()
                .map_err(|source| BrokerError::Java {
                    java: self.java.clone(),
                    source,
                })?;
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            if !out.status.success() {
                return Err(BrokerError::Format {
                    home: home.to_path_buf(),
                    detail: format!("{text}{}", String::from_utf8_lossy(&out.stderr)),
                });
            }
            Ok(text)
        };
        let cluster_id = java(&["random-uuid"])?;
        let cluster_id = cluster_id
            .lines()
            .last()
            .unwrap_or_default()
            .trim()
            .to_string();
        let props = properties.to_string_lossy();
        java(&["format", "--standalone", "-t", &cluster_id, "-c", &props])?;
        Ok(())
    }

    fn server_properties(&self, home: &Path) -> String {
        format!(
            "# Written by `reckon broker start`; rewritten at every start.\n\
             process.roles=broker,controller\n\
             node.id=1\n\
             listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}\n\
             advertised.listeners=PLAINTEXT://127.0.0.1:{port}\n\
             controller.listener.names=CONTROLLER\n\
             listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n\
             controller.quorum.bootstrap.servers=127.0.0.1:{controller}\n\
             log.dirs={storage}\n\
             num.partitions=3\n\
             auto.create.topics.enable=false\n\
             delete.topic.enable=true\n\
             offsets.topic.replication.factor=1\n\
             transaction.state.log.replication.factor=1\n\
             transaction.state.log.min.isr=1\n\
             share.coordinator.state.topic.replication.factor=1\n\
             share.coordinator.state.topic.min.isr=1\n\
             group.initial.rebalance.delay.ms=0\n\
             log.retention.hours=-1\n",
            port = self.port,
            controller = self.controller_port,
            storage = home.join("storage").display(),
        )
    }
}

/// Broker logging: warnings and errors to its log file (stdout is redirected there).
const LOG4J: &str = "rootLogger.level = WARN\n\
rootLogger.appenderRef.stdout.ref = STDOUT\n\
appender.stdout.type = Console\n\
appender.stdout.name = STDOUT\n\
appender.stdout.layout.type = PatternLayout\n\
appender.stdout.layout.pattern = [%d] %p %m (%c)%n\n";

/// Whether a process runs (a zombie does not count: it has exited).
fn alive(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

fn tail(path: &Path) -> String {
    let Ok(file) = File::open(path) else {
        return String::new();
    };
    let lines: Vec<String> = BufReader::new(file).lines().map_while(Result::ok).collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}
