//! The cost of freshness, as a team pays for it: a cluster that starts for each scheduled run
//! (its start-up billed, each run billed at least a minimum), or one kept up all day to run
//! continuously; times a price per hour. The run time is the median of this lab's own recent runs
//! of the pipeline it runs now (course or project, never both), with how sure that is: the 10th
//! to 90th percentile of at least [`RANGE_RUNS`] runs. The instructor sets the price model
//! ([`CostModel`]); the course's "about 4x" is what learners argue from these figures.

use app::model::{CostModel, CostOption, FreshnessCost, PipelineKind};

use crate::service::lab::{Lab, LabError};

/// Runs the figures rest on, at most.
const RUNS: i64 = 20;
/// Runs a range needs, at least.
pub const RANGE_RUNS: usize = 5;
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

/// Hundredths of a unit as money: "2.08 units".
fn money(cents: u64) -> String {
    let unit = if cents == 100 { "unit" } else { "units" };
    format!("{} {unit}", CostModel::price(cents))
}

/// The value at `share` of the sorted `values` (nearest rank).
fn percentile(sorted: &[u64], share: f64) -> u64 {
    let rank = (share * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// A schedule's billed seconds a day, for runs of `run_ms`: each run pays the start-up and its
/// own time, at least the minimum; a cluster busy past the interval never stops (all day).
fn billed_per_day(model: &CostModel, every_s: Option<u64>, run_ms: u64) -> u64 {
    let Some(every_s) = every_s else {
        return DAY_S;
    };
    let per_run = (model.startup_s + run_ms.div_ceil(1000)).max(model.minimum_s);
    (DAY_S / every_s * per_run).min(DAY_S)
}

fn cents_per_day(model: &CostModel, billed_s: u64) -> u64 {
    (billed_s * model.price_per_hour_cents).div_ceil(3600)
}

/// The cost of each schedule for runs of these durations (ms) under `model`; `None` without
/// any run.
pub fn cost(durations_ms: &[u64], model: &CostModel, kind: PipelineKind) -> Option<FreshnessCost> {
    let mut sorted = durations_ms.to_vec();
    sorted.sort_unstable();
    let median_ms = match sorted.len() {
        0 => return None,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
    }
    .max(1);
    let range =
        (sorted.len() >= RANGE_RUNS).then(|| (percentile(&sorted, 0.1), percentile(&sorted, 0.9)));
    let option = |label: &str, every_s: Option<u64>| {
        let billed = billed_per_day(model, every_s, median_ms);
        CostOption {
            label: label.to_string(),
            runs_per_day: every_s.map_or(DAY_S * 1000 / median_ms, |s| DAY_S / s),
            billed_s_per_day: billed,
            cents_per_day: cents_per_day(model, billed),
            cents_range: range.map(|(low, high)| {
                (
                    cents_per_day(model, billed_per_day(model, every_s, low)),
                    cents_per_day(model, billed_per_day(model, every_s, high)),
                )
            }),
            // An event landing just after a run started waits for the next one to start up
            // and end; run continuously, for the run under way and the next.
            worst_stale_s: match every_s {
                Some(s) => s + model.startup_s + median_ms.div_ceil(1000),
                None => (2 * median_ms).div_ceil(1000),
            },
        }
    };
    let options = vec![
        option("every hour", Some(3_600)),
        option("every 15 minutes", Some(900)),
        option("every 5 minutes", Some(300)),
        // Back to back on a cluster kept up all day.
        option("continuously", None),
    ];
    let (hourly, live) = (&options[0], &options[3]);
    let sentence = format!(
        "Updated every hour, the numbers cost {} a day and are at most {} old. Kept up to date \
         continuously, they cost {} a day and are at most {} old.",
        money(hourly.cents_per_day),
        words(hourly.worst_stale_s),
        money(live.cents_per_day),
        words(live.worst_stale_s),
    );
    let runs = match kind {
        PipelineKind::Course => "course runs",
        PipelineKind::Project => "pipeline runs",
    };
    let seconds = |ms: u64| format!("{:.1} s", ms as f64 / 1000.0);
    let sure = match range {
        Some((low, high)) => format!(
            "; the 10th to 90th percentile, {} to {}, gives each range",
            seconds(low),
            seconds(high)
        ),
        None => format!(
            "; only {} run(s) so far, and a range needs {RANGE_RUNS}",
            sorted.len()
        ),
    };
    Some(FreshnessCost {
        based_on: format!(
            "the median of this lab's last {} {runs}, {}{sure}. A cluster takes {} to start, \
             bills at least {} a run and costs {} an hour",
            sorted.len(),
            seconds(median_ms),
            words(model.startup_s),
            words(model.minimum_s),
            money(model.price_per_hour_cents),
        ),
        median_ms,
        options,
        sentence,
        model: *model,
    })
}

/// The cost of freshness from the lab's recent runs of the pipeline it runs now, under `model`
/// (`None` without a history or such a run).
pub async fn of_lab(lab: &Lab, model: &CostModel) -> Result<Option<FreshnessCost>, LabError> {
    let Some(history) = lab.history() else {
        return Ok(None);
    };
    let kind = lab.kind();
    let durations = history
        .recent_durations(&lab.config.lab, kind == PipelineKind::Course, RUNS)
        .await?;
    Ok(cost(&durations, model, kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(cost: &FreshnessCost) -> Vec<(u64, u64, u64, u64)> {
        cost.options
            .iter()
            .map(|o| {
                (
                    o.runs_per_day,
                    o.billed_s_per_day,
                    o.cents_per_day,
                    o.worst_stale_s,
                )
            })
            .collect()
    }

    #[test]
    fn a_schedule_pays_start_up_and_run_at_least_the_minimum_and_continuous_the_whole_day() {
        let model = CostModel::default();
        let cost = cost(&[3_000, 1_000, 2_000], &model, PipelineKind::Course).unwrap();
        assert_eq!(cost.median_ms, 2_000);
        // Hourly: 24 runs of 300 + 2 s; every 5 minutes the cluster never stops.
        assert_eq!(
            figures(&cost),
            [
                (24, 7_248, 202, 3_902),
                (96, 28_992, 806, 1_202),
                (288, 86_400, 2_400, 602),
                (43_200, 86_400, 2_400, 4),
            ]
        );
        assert!(cost.options.iter().all(|o| o.cents_range.is_none()));
        assert_eq!(
            cost.sentence,
            "Updated every hour, the numbers cost 2.02 units a day and are at most 1 h 5 min old. \
             Kept up to date continuously, they cost 24.00 units a day and are at most 4 s old."
        );
        assert!(
            cost.based_on
                .contains("only 3 run(s) so far, and a range needs 5"),
            "{}",
            cost.based_on
        );
    }

    #[test]
    fn the_minimum_bill_and_the_price_are_the_models() {
        let model = CostModel {
            startup_s: 0,
            minimum_s: 60,
            price_per_hour_cents: 250,
        };
        let cost = cost(&[2_000; 5], &model, PipelineKind::Project).unwrap();
        // 24 runs billed a minute each: 24 min, 2.50 an hour.
        assert_eq!(figures(&cost)[0], (24, 1_440, 100, 3_602));
        assert_eq!(cost.options[0].cents_range, Some((100, 100)));
        assert!(cost.based_on.contains("pipeline runs"), "{}", cost.based_on);
    }

    #[test]
    fn the_range_is_the_10th_to_90th_percentile_of_five_runs_or_more() {
        let runs = [
            1_000, 2_000, 3_000, 4_000, 100_000, 5_000, 6_000, 7_000, 8_000, 9_000,
        ];
        let model = CostModel {
            startup_s: 0,
            minimum_s: 0,
            price_per_hour_cents: 360_000,
        };
        let cost = cost(&runs, &model, PipelineKind::Course).unwrap();
        // Hourly: 24 runs of 1 s (10th) to 9 s (90th), at 1 cent a second.
        assert_eq!(cost.options[0].cents_range, Some((2_400, 21_600)));
        assert_eq!(percentile(&[5], 0.1), 5);
        assert!(
            cost.based_on.contains("1.0 s to 9.0 s"),
            "{}",
            cost.based_on
        );
    }

    #[test]
    fn a_price_reads_as_people_write_it() {
        assert_eq!(CostModel::cents("1"), Ok(100));
        assert_eq!(CostModel::cents("0.25"), Ok(25));
        assert_eq!(CostModel::cents("12.5"), Ok(1_250));
        assert!(CostModel::cents("-1").is_err());
        assert!(CostModel::cents("1.234").is_err());
        assert!(CostModel::cents("").is_err());
        assert_eq!(CostModel::price(1_250), "12.50");
        assert!(cost(&[], &CostModel::default(), PipelineKind::Course).is_none());
    }
}
