//! Test harness: the real local broker (started once, with a home outside any test's folder), a
//! fresh topic and data folder per test, and the `reckon` binary run as a user would.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

pub const SEED_BLOCK: &str = "\
ok      bronze_orders has 11 events, each offset once
note    1 of them sent twice by the shop's system
ok      orders has the newest state of all 9 orders
late    09:00 counted 3 orders, 68.50; bronze has 4 orders, 90.50: 1 arrived after the hour was written
ok      10:00 2 orders, 55.00
ok      11:00 1 order, 18.25
waiting 12:00 is not written yet: the watermark has not passed its end
waiting 13:00 is not written yet: the watermark has not passed its end
";

/// A lab of its own: a temp data folder and a topic no other test uses.
pub struct TestLab {
    pub dir: tempfile::TempDir,
    pub topic: String,
    /// Dropped with the lab: tells the watchdog the test ended.
    _watchdog: std::sync::mpsc::Sender<()>,
}

/// How long one test may take before it counts as hung.
const HUNG_AFTER: std::time::Duration = std::time::Duration::from_secs(600);

/// Ends the test binary, naming the test, if the lab outlives `HUNG_AFTER`: a hung test then
/// fails in minutes with its name instead of holding CI until its deadline.
fn watchdog(name: &str) -> std::sync::mpsc::Sender<()> {
    let (ended, wait) = std::sync::mpsc::channel::<()>();
    let name = name.to_string();
    std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(HUNG_AFTER) {
            eprintln!(
                "test lab {name:?} still open after {} s: the test hangs; aborting",
                HUNG_AFTER.as_secs()
            );
            std::process::abort();
        }
    });
    ended
}

fn broker_home() -> PathBuf {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    home.join(".cache/reckon/test-broker")
}

/// Starts the shared local broker once per test binary (idempotent across binaries too).
fn ensure_broker() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let out = Command::new(env!("CARGO_BIN_EXE_reckon"))
            .args(["broker", "start", "--broker-home"])
            .arg(broker_home())
            .output()
            .expect("run reckon broker start");
        assert!(
            out.status.success(),
            "broker start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

impl TestLab {
    pub fn new(name: &str) -> Self {
        ensure_broker();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let topic = format!("test.{name}.{}.{nanos}", std::process::id());
        let dir = tempfile::Builder::new()
            .prefix(&format!("reckon-{name}-"))
            .tempdir()
            .unwrap();
        Self {
            dir,
            topic,
            _watchdog: watchdog(name),
        }
    }

    pub fn data(&self) -> &Path {
        self.dir.path()
    }

    /// `reckon --data <dir> --topic <topic> ARGS`, finished.
    pub fn reckon(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run reckon")
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_reckon"));
        cmd.arg("--data")
            .arg(self.data())
            .args(["--topic", &self.topic])
            .args(args);
        cmd.env_remove("RECKON_BROKERS")
            .env_remove("RECKON_DATA")
            .env_remove("RECKON_TOPIC");
        cmd
    }

    /// Runs reckon and insists it succeeds; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.reckon(args);
        assert!(
            out.status.success(),
            "reckon {args:?} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    pub fn send(&self, batch: &str) {
        self.ok(&["produce", "--scenario", "course", "--batch", batch]);
    }

    /// A table as JSON lines, with the columns that depend on when things ran left out.
    pub fn table(&self, name: &str) -> Vec<serde_json::Value> {
        self.ok(&["table", name, "--json"])
            .lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                if let Some(o) = v.as_object_mut() {
                    o.remove("ingested_at");
                    o.remove("kafka_timestamp");
                }
                v
            })
            .collect()
    }

    pub fn check(&self) -> (String, i32) {
        let out = self.reckon(&["check"]);
        (
            String::from_utf8(out.stdout).unwrap(),
            out.status.code().unwrap_or(-1),
        )
    }

    /// A connection to the shared broker, for what the CLI must not do (send garbage, recreate).
    pub fn kafka(&self) -> reckon::kafka::Kafka {
        reckon::kafka::Kafka::new("127.0.0.1:9092").unwrap()
    }
}

/// Reads a table of the lab with Python's `deltalake` (another Delta reader than Reckon's) and
/// insists it gives the rows `reckon table NAME --json` gives; returns how many.
pub fn same_rows_in_python(lab: &TestLab, table: &str) -> usize {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/read_with_deltalake.py"
    );
    let out = Command::new("python3")
        .arg(script)
        .arg(lab.data().join("tables").join(table))
        .arg(table)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "python deltalake failed: {}",
        stderr(&out)
    );
    let python: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ours: Vec<serde_json::Value> = lab
        .ok(&["table", table, "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(python, ours, "{table}");
    ours.len()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

impl TestLab {
    /// The default lab's config: this test's folder and topic, the shared broker.
    pub fn config(&self) -> reckon::Config {
        let mut config = reckon::Config::new(self.data());
        config.topic = self.topic.clone();
        config
    }

    /// The lab as the server opens it: with its history, on the shared broker.
    pub async fn open(&self) -> reckon::Lab {
        reckon::Lab::open(self.config())
            .await
            .expect("open the lab")
    }

    /// The dashboard's state for this folder, single-user; `site` holds the built wasm/JS/CSS
    /// (may be empty).
    pub async fn dashboard(&self, site: &Path) -> reckon::web::AppState {
        self.server(site, self.config(), Default::default()).await
    }

    /// The dashboard's state for `config` (this folder's), serving its labs as `serving` says.
    pub async fn server(
        &self,
        site: &Path,
        mut config: reckon::Config,
        serving: reckon::config::Serving,
    ) -> reckon::web::AppState {
        config.serving = serving;
        let labs = reckon::service::labs::Labs::open(config)
            .await
            .expect("open the labs");
        reckon::web::AppState::new(labs, site.to_path_buf())
    }
}

/// A dashboard's answer as a client sees it: status, headers, and the body as JSON (a JSON
/// string when the body is not JSON).
pub struct Answer {
    pub status: axum::http::StatusCode,
    pub json: serde_json::Value,
    pub headers: axum::http::HeaderMap,
}

impl Answer {
    /// The body of an answer that must be a success; `what` names the call when it is not.
    pub fn ok(self, what: &str) -> serde_json::Value {
        assert!(
            self.status.is_success(),
            "{what}: {} {}",
            self.status,
            self.json
        );
        self.json
    }
}

/// Calls `router` with `request` and reads the whole answer.
pub async fn call(router: axum::Router, request: axum::http::Request<axum::body::Body>) -> Answer {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let response = router.oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&body).into_owned();
    let json = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
    Answer {
        status,
        json,
        headers,
    }
}

/// `method uri` with a JSON body, as `token` (none: no Authorization header).
pub fn json_request(
    method: &str,
    uri: &str,
    token: Option<&str>,
    body: serde_json::Value,
) -> axum::http::Request<axum::body::Body> {
    use axum::http::header;
    let mut request = axum::http::Request::builder()
        .method(method)
        .uri(uri)
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    request
        .body(axum::body::Body::from(body.to_string()))
        .unwrap()
}
