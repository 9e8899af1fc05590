//! The cost of freshness (a teaching view): from the median duration of the lab's recent runs,
//! what running every hour, every 15 minutes, every 5 minutes or continuously would cost in
//! computing a day, and how old the numbers could get. Figures a director can read, from the
//! lab's own history instead of a guess.

use app::model::{CostOption, FreshnessCost, RunStatus};
use chrono::DateTime;

use crate::service::lab::{Lab, LabError};
use crate::store::{History, HistoryError};

/// Runs the figures rest on, at most.
const RUNS: i64 = 20;
const DAY_S: u64 = 86_400;

/// Seconds as people say them: "40 s", "12 min", "1 h 5 min".
fn words(seconds: u64) -> String {
    match seconds {
        0..60 => format!("{seconds} s"),
        60..3600 => format!("{} min", (seconds + 30) / 60),
        _ => {
            let minutes = (seconds + 30) / 60;
            match minutes % 60 {
                0 => format!("{} h", minutes / 60),
                m => format!("{} h {m} min", minutes / 60),
            }
        }
    }
}

/// The cost of each schedule for runs of these durations (ms); `None` without any run.
pub fn cost(durations_ms: &[u64]) -> Option<FreshnessCost> {
    let mut sorted = durations_ms.to_vec();
    sorted.sort_unstable();
    let median_ms = match sorted.len() {
        0 => return None,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
    }
    .max(1);
    let median_s = median_ms.div_ceil(1000);
    let option = |label: &str, every_ms: u64| {
        let runs_per_day = DAY_S * 1000 / every_ms;
        CostOption {
            label: label.to_string(),
            runs_per_day,
            compute_s_per_day: (runs_per_day * median_ms).div_ceil(1000),
            worst_stale_s: (every_ms + median_ms).div_ceil(1000),
        }
    };
    let options = vec![
        option("every hour", 3_600_000),
        option("every 15 minutes", 900_000),
        option("every 5 minutes", 300_000),
        // Back to back: a run starts as the last one ends.
        option("continuously", median_ms),
    ];
    let (hourly, live) = (&options[0], &options[3]);
    let sentence = format!(
        "Updated every hour, the numbers take {} of computing a day and are at most {} old. \
         Kept up to date continuously, they take {} a day, {}x as much, and are at most {} old.",
        words(hourly.compute_s_per_day),
        words(hourly.worst_stale_s),
        words(live.compute_s_per_day),
        live.compute_s_per_day / hourly.compute_s_per_day.max(1),
        words(live.worst_stale_s),
    );
    Some(FreshnessCost {
        based_on: format!(
            "the median of the last {} run(s), {}",
            sorted.len(),
            if median_s < 60 {
                format!("{:.1} s", median_ms as f64 / 1000.0)
            } else {
                words(median_s)
            }
        ),
        median_ms,
        options,
        sentence,
    })
}

/// The cost of freshness from the lab's recent runs (`None` without a history or a run).
pub async fn of_lab(lab: &Lab) -> Result<Option<FreshnessCost>, LabError> {
    let Some(history) = lab.history() else {
        return Ok(None);
    };
    Ok(cost(&recent_durations(history, &lab.config.lab).await?))
}

/// The durations (ms) of the lab's last runs that succeeded.
pub async fn recent_durations(history: &History, lab: &str) -> Result<Vec<u64>, HistoryError> {
    let runs = history.runs(lab, RUNS, None).await?;
    Ok(runs
        .iter()
        .filter(|r| r.status == RunStatus::Succeeded)
        .filter_map(|r| {
            let start = DateTime::parse_from_rfc3339(&r.started_at).ok()?;
            let end = DateTime::parse_from_rfc3339(r.finished_at.as_deref()?).ok()?;
            u64::try_from((end - start).num_milliseconds()).ok()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_schedule_costs_its_runs_times_the_median_run() {
        let cost = cost(&[3_000, 1_000, 2_000]).unwrap();
        assert_eq!(cost.median_ms, 2_000);
        assert_eq!(cost.based_on, "the median of the last 3 run(s), 2.0 s");
        let figures: Vec<(u64, u64, u64)> = cost
            .options
            .iter()
            .map(|o| (o.runs_per_day, o.compute_s_per_day, o.worst_stale_s))
            .collect();
        assert_eq!(
            figures,
            [
                (24, 48, 3_602),
                (96, 192, 902),
                (288, 576, 302),
                (43_200, 86_400, 4),
            ]
        );
        assert_eq!(
            cost.sentence,
            "Updated every hour, the numbers take 48 s of computing a day and are at most 1 h old. \
             Kept up to date continuously, they take 24 h a day, 1800x as much, and are at most 4 s old."
        );
    }

    #[test]
    fn an_even_count_takes_the_middle_two_and_no_run_gives_nothing() {
        assert_eq!(
            cost(&[1_000, 3_000, 5_000, 100_000]).unwrap().median_ms,
            4_000
        );
        assert!(cost(&[]).is_none());
    }
}
