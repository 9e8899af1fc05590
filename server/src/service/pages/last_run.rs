//! When a lab last ran, in words: "Last run 5 minutes ago; every check passed.", and the light it
//! sets. Both freshness pages (the course's and a project's) say it the same way.

use app::model::{CheckOutcome, Light, RunStatus, Verdict};
use chrono::{DateTime, Utc};

use crate::service::lab::{Lab, LabError};
use crate::store::{History, HistoryError};

/// The last run and check, in a sentence and a light.
pub struct Said {
    pub sentence: String,
    /// What the last check left short by events that came late (the watermark at work, not a
    /// fault): said beside an all-good light, never hidden by it.
    pub late: Vec<String>,
    pub light: Light,
    pub last_run_at: Option<String>,
    pub last_check: Option<CheckOutcome>,
}

impl Said {
    /// What late events left out of the final numbers, from the last check's `late` lines:
    /// the watermark at work, said so that an all-good light does not hide it.
    pub fn left_out(&self) -> Option<String> {
        match self.late.as_slice() {
            [] => None,
            [one] => Some(format!(
                "Left out as late, as designed: {one}. The check accounts for it and passes."
            )),
            [first, rest @ ..] => Some(format!(
                "{} hours leave out events that came late, as designed; first: {first}. The \
                 check accounts for them and passes.",
                rest.len() + 1
            )),
        }
    }
}

/// Green when the last run and its check went well; red when either did not; amber before any
/// run, or before any check unless `unchecked` says why a run has none (a project whose tables
/// the check has nothing to recompute for). A `late` hour is the watermark working as designed:
/// the check still passes.
pub async fn said_of_last_run(
    lab: &Lab,
    now: DateTime<Utc>,
    unchecked: Option<&'static str>,
) -> Result<Said, LabError> {
    let (last_run_at, run_failed, last_check) = match lab.history() {
        Some(history) => last_run(history, &lab.config.lab).await?,
        None => (None, false, None),
    };
    let findings = match lab.history() {
        Some(history) => history.last_check_findings(&lab.config.lab).await?,
        None => vec![],
    };
    let of = |verdict: Verdict| -> Vec<String> {
        findings
            .iter()
            .filter(|(v, _)| *v == verdict)
            .map(|(_, text)| text.clone())
            .collect()
    };
    let (problems, late) = (of(Verdict::Problem), of(Verdict::Late));
    let Some(at) = &last_run_at else {
        return Ok(Said {
            late,
            sentence: "Nothing has run yet.".into(),
            light: Light::Amber,
            last_run_at,
            last_check,
        });
    };
    let when = DateTime::parse_from_rfc3339(at)
        .map(|t| ago(t.with_timezone(&Utc), now))
        .unwrap_or_default();
    // A problem is named: the first the check found, and how many more.
    let problem = match problems.as_slice() {
        [] => "the last check found a problem".to_string(),
        [one] => format!("the last check found a problem: {one}"),
        [first, more @ ..] => format!(
            "the last check found {} problems, first: {first}",
            more.len() + 1
        ),
    };
    let (mut light, check) = match last_check {
        Some(CheckOutcome::Problem) => (Light::Red, problem),
        Some(CheckOutcome::Passed) => (Light::Green, "every check passed".to_string()),
        None => match unchecked {
            Some(why) => (Light::Green, why.to_string()),
            None => (Light::Amber, "no check has run yet".to_string()),
        },
    };
    let sentence = match run_failed {
        true => {
            light = Light::Red;
            format!("The last run failed, {when}; {check}.")
        }
        false => format!("Last run {when}; {check}."),
    };
    Ok(Said {
        sentence,
        late,
        light,
        last_run_at,
        last_check,
    })
}

fn ago(then: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let seconds = (now - then).num_seconds().max(0);
    let (n, unit) = match seconds {
        0..60 => return "just now".into(),
        60..3600 => (seconds / 60, "minute"),
        3600..86400 => (seconds / 3600, "hour"),
        _ => (seconds / 86400, "day"),
    };
    format!("{n} {unit}{} ago", if n == 1 { "" } else { "s" })
}

/// When the last run finished, whether it failed, and how the last check went.
async fn last_run(
    history: &History,
    lab: &str,
) -> Result<(Option<String>, bool, Option<CheckOutcome>), HistoryError> {
    let Some(last) = history.last_finished_run(lab).await? else {
        return Ok((None, false, None));
    };
    let last_check = history.last_check(lab).await?;
    let failed = last.status == RunStatus::Failed;
    let finished = last.finished_at.unwrap_or(last.started_at);
    Ok((Some(finished), failed, last_check))
}
