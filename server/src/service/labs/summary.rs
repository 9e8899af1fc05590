//! One lab summed up for the instructor's overview: its light, how final its numbers are, its
//! last check and run, and the rules its last run's rows failed.

use app::model::{LabSummary, Light};
use chrono::Utc;

use crate::service::pages::freshness;
use crate::service::runner::LabRunner;

pub(super) async fn summary(dashboard: &LabRunner) -> LabSummary {
    let config = &dashboard.lab().config;
    let mut summary = LabSummary {
        name: config.lab.clone(),
        topic: config.topic.clone(),
        public: dashboard.is_public(),
        light: Light::Amber,
        final_through: None,
        last_check: None,
        last_run_at: None,
        error: None,
        pipeline: dashboard.lab().kind(),
        rule_failures: 0,
    };
    if let Some(history) = dashboard.lab().history()
        && let Ok(Some(last)) = history.last_finished_run(&config.lab).await
        && let Ok(events) = history.events(&config.lab, Some(last.id)).await
    {
        summary.rule_failures = events
            .iter()
            .flat_map(|(_, e)| &e.figures.expectations)
            .map(|r| r.failed)
            .sum();
    }
    match freshness::freshness(dashboard.lab(), Utc::now(), &dashboard.cost_model()).await {
        Ok(f) => {
            summary.light = f.light;
            summary.final_through = f.final_through;
            summary.last_check = f.last_check;
            summary.last_run_at = f.last_run_at;
        }
        Err(e) => summary.error = Some(e.to_string()),
    }
    summary
}
