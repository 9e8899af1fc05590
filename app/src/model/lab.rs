//! A lab as its people see it: how fresh its numbers are, its settings, who is looking.

use serde::{Deserialize, Serialize};

/// The freshness light: green (final and checked), amber (behind or not checked), red (a failed
/// run or a PROBLEM).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Light {
    Green,
    #[default]
    Amber,
    Red,
}

impl std::fmt::Display for Light {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Light {
    pub fn as_str(self) -> &'static str {
        match self {
            Light::Green => "green",
            Light::Amber => "amber",
            Light::Red => "red",
        }
    }
}

/// How the last check went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckOutcome {
    /// No line said PROBLEM.
    Passed,
    Problem,
}

impl std::fmt::Display for CheckOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl CheckOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckOutcome::Passed => "passed",
            CheckOutcome::Problem => "problem",
        }
    }
}

/// Who someone is to a lab.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// No tokens are asked: a single-user tool on loopback.
    Local,
    Instructor,
    /// Produces, runs and resets one lab.
    Learner,
    /// Reads one lab's pages.
    Viewer,
    /// Reads one class's board, and no lab.
    ClassViewer,
    /// No token, or one that opens nothing.
    #[default]
    Anonymous,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Local => "local",
            Role::Instructor => "instructor",
            Role::Learner => "learner",
            Role::Viewer => "viewer",
            Role::ClassViewer => "class-viewer",
            Role::Anonymous => "anonymous",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [
            Self::Local,
            Self::Instructor,
            Self::Learner,
            Self::Viewer,
            Self::ClassViewer,
            Self::Anonymous,
        ]
        .into_iter()
        .find(|r| r.as_str() == text)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// "Are the numbers final up to when?", for the home page.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Freshness {
    pub light: Light,
    /// The last hour written to `hourly_sales` (RFC 3339): every hour up to it is final. In a
    /// declarative project's lab, the newest final day of its gold chart (`2026-10-29`).
    pub final_through: Option<String>,
    /// The first hour not final yet.
    pub next_hour: Option<String>,
    /// The event time from which a placed order closes `next_hour`.
    pub closes_with_order_at: Option<String>,
    pub last_run_at: Option<String>,
    pub last_check: Option<CheckOutcome>,
    /// What the home page says, in plain words.
    pub sentences: Vec<String>,
    /// The gold numbers the sentences speak of, by hour or day (a declarative project's lab).
    #[serde(default)]
    pub chart: Option<GoldChart>,
    /// What fresher (or staler) numbers would cost, from the lab's own runs.
    #[serde(default)]
    pub cost: Option<FreshnessCost>,
    /// Hours (or days) the last check found short by events that came late: the light stays
    /// green, and the page says so.
    #[serde(default)]
    pub late_hours: u64,
}

/// The cost of freshness, from the lab's run history: what each schedule costs a day on a
/// cluster priced by [`CostModel`], and how old its numbers can get.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FreshnessCost {
    /// What the figures rest on, in words: the runs, their median and range, the price model.
    pub based_on: String,
    pub median_ms: u64,
    pub options: Vec<CostOption>,
    /// The trade-off in a sentence a director can read.
    pub sentence: String,
    /// The price model the figures use.
    #[serde(default)]
    pub model: CostModel,
}

/// One schedule: every hour, every 15 minutes, every 5 minutes, or continuously.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CostOption {
    pub label: String,
    pub runs_per_day: u64,
    /// Seconds of cluster billed a day: each run's start-up and time, at least the minimum;
    /// continuously, the whole day.
    pub billed_s_per_day: u64,
    /// What that costs a day, in hundredths of a unit.
    pub cents_per_day: u64,
    /// The same for the 10th and the 90th percentile run, with enough runs for a range.
    pub cents_range: Option<(u64, u64)>,
    /// How old the numbers can be at worst, in seconds: an event landing just after a run
    /// started waits for the next run to end.
    pub worst_stale_s: u64,
}

/// A gold table's numbers by period, final ones told apart, for people who are not engineers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GoldChart {
    /// What the bars count, in words: "tickets per day (gold_daily_account_status)".
    pub title: String,
    pub bars: Vec<GoldBar>,
    /// When a bar is final, in words.
    pub final_rule: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GoldBar {
    pub label: String,
    pub value: i64,
    pub r#final: bool,
}

/// The lab's settings, as the settings form and `POST /api/settings` change them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    /// Seconds between scheduled runs; `None`: no schedule (the default).
    pub schedule_seconds: Option<u64>,
    /// Whether gold drops duplicates, from the next reset on.
    pub dedup: bool,
    /// Whether gold drops duplicates now (fixed when gold's state started).
    pub dedup_in_effect: bool,
    /// Whether anyone may read the lab's freshness and reconciliation pages without a token.
    pub public: bool,
    /// Whether files landing in the lab's `landing/` folder start a run.
    #[serde(default)]
    pub run_on_arrival: bool,
    /// What the cost of freshness prices a cluster at (the instructor sets it).
    #[serde(default)]
    pub cost: CostModel,
}

/// What a team pays for the cluster that runs its pipeline, as the cost of freshness prices it:
/// a scheduled run pays the cluster's start-up and its own time, billed at least a minimum; a
/// pipeline kept up continuously pays for the cluster all day. The instructor sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CostModel {
    /// Seconds a cluster takes to start before each scheduled run (billed).
    pub startup_s: u64,
    /// The least a run is billed, in seconds.
    pub minimum_s: u64,
    /// The price of an hour of the cluster, in hundredths of a unit.
    pub price_per_hour_cents: u64,
}

impl CostModel {
    /// A price as people write it (`1`, `0.25`, `12.50`): hundredths of a unit.
    pub fn cents(price: &str) -> Result<u64, String> {
        let bad = || format!("a price such as 1 or 0.25, not {price:?}");
        let price = price.trim();
        let (whole, part) = price.split_once('.').unwrap_or((price, ""));
        let digits =
            |s: &str| !s.is_empty() && s.len() <= 9 && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(whole) || !(part.is_empty() || (part.len() <= 2 && digits(part))) {
            return Err(bad());
        }
        let whole: u64 = whole.parse().map_err(|_| bad())?;
        let part: u64 = format!("{part:0<2}").parse().map_err(|_| bad())?;
        Ok(whole * 100 + part)
    }

    /// Hundredths of a unit as a price: `1.00`.
    pub fn price(cents: u64) -> String {
        format!("{}.{:02}", cents / 100, cents % 100)
    }
}

impl Default for CostModel {
    /// Start-up 5 minutes, billed at least 1 minute, 1 unit an hour.
    fn default() -> Self {
        Self {
            startup_s: 300,
            minimum_s: 60,
            price_per_hour_cents: 100,
        }
    }
}

/// A change to some of a lab's settings; `None` leaves one as it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsChange {
    /// `Some(None)` turns the schedule off.
    pub schedule_seconds: Option<Option<u64>>,
    pub dedup: Option<bool>,
    pub public: Option<bool>,
    pub run_on_arrival: Option<bool>,
    /// The instructor's alone to change.
    #[serde(default)]
    pub cost: Option<CostModel>,
}

/// Who the pages are showing to, so they offer only what that person may do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionView {
    /// Whether the server asks for tokens (an instructor token is configured).
    pub auth: bool,
    pub role: Role,
    /// The lab a learner's or viewer's token opens.
    pub lab: Option<String>,
    /// The labs this person may open, `default` first: the lab picker.
    pub labs: Vec<String>,
    /// The token a signed-in browser's forms carry (CSRF protection); `None` without a session.
    pub csrf: Option<String>,
}

impl SessionView {
    /// Whether this person may make and delete labs and mint their tokens: the instructor, or
    /// anyone on a server that asks for no tokens.
    pub fn may_manage(&self) -> bool {
        matches!(self.role, Role::Local | Role::Instructor)
    }

    /// Whether this person may produce, run and reset `lab`.
    pub fn may_write(&self, lab: &str) -> bool {
        match self.role {
            Role::Local | Role::Instructor => true,
            Role::Learner => self.lab.as_deref() == Some(lab),
            Role::Viewer | Role::ClassViewer | Role::Anonymous => false,
        }
    }
}

/// A lab on the instructor's overview: where it stands, in one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabSummary {
    pub name: String,
    pub topic: String,
    pub public: bool,
    /// As on the lab's freshness page.
    pub light: Light,
    pub final_through: Option<String>,
    pub last_check: Option<CheckOutcome>,
    pub last_run_at: Option<String>,
    /// Why the summary could not be read (the lab's tables are unreadable, ...).
    pub error: Option<String>,
    /// The course's streams or the lab's own declarative project.
    #[serde(default)]
    pub pipeline: super::PipelineKind,
    /// Rows that broke a quality rule in the lab's last run (each rule counted).
    #[serde(default)]
    pub rule_failures: u64,
}

/// A token, shown once: only its hash is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewToken {
    pub lab: String,
    /// Learner or viewer.
    pub role: Role,
    pub token: String,
}

/// What the server announces on a lab's live stream (`/api/live`), one server-sent event each,
/// as `{"event": "run-started"}`: the pages that show it fetch it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Announcement {
    RunStarted,
    RunFinished,
    /// Events were sent to the lab's topic.
    Sent,
    Reset,
    Settings,
    /// Files landed in the lab's `landing/` folder.
    Landed,
    /// The lab's pipeline code changed.
    Code,
    /// The stream missed some announcements: every page fetches again.
    Lagged,
}
