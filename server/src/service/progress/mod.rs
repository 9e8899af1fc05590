//! A lab's milestones (issue "The classroom"): each course's "done when", proved from what the
//! lab did. The history gives the runs, checks, resets and consumer-group reads
//! (`store/progress.rs`); the lab's tables give what the history cannot (an SCD 2 target's
//! closed versions); `rules.rs` decides. Computed when asked, from the evidence as it stands:
//! never ticked by hand.

mod changes;
mod rules;
pub mod writing;

use app::api::ApiError;
use std::collections::BTreeSet;

use app::model::{Accepted, LabProgress, Milestone};
use arrow::array::Array;

pub use rules::{Facts, Proof, RULES, Rule};

use crate::engine::tables;
use crate::service::error::failed;
use crate::service::lab::Lab;
use crate::store::Evidence;

/// Every milestone of `lab`, each course's in order.
pub async fn progress(lab: &Lab) -> Result<LabProgress, ApiError> {
    let evidence = match lab.history() {
        Some(history) => history.evidence(&lab.config.lab).await.map_err(failed)?,
        None => Evidence::default(),
    };
    let facts = facts(lab, &evidence).await?;
    Ok(LabProgress {
        lab: lab.config.lab.clone(),
        milestones: milestones(&evidence, &facts),
        project: changes::against_examples(lab),
    })
}

/// A lab's milestones as last computed, with the evidence's stamp then (and its project files'
/// times): the class board asks for every lab's at once, and only a lab whose evidence or
/// project changed since is computed again.
#[derive(Default)]
pub struct Cached(tokio::sync::Mutex<Option<(([i64; 6], u128), LabProgress)>>);

impl Cached {
    /// `lab`'s milestones: as cached while its evidence has not changed, else computed again.
    pub async fn progress(&self, lab: &Lab) -> Result<LabProgress, ApiError> {
        let Some(history) = lab.history() else {
            return progress(lab).await;
        };
        let mut cached = self.0.lock().await;
        let stamp = (
            (history.evidence_stamp(&lab.config.lab).await).map_err(failed)?,
            changes::project_stamp(lab),
        );
        if let Some((at, progress)) = cached.as_ref()
            && *at == stamp
        {
            return Ok(progress.clone());
        }
        let fresh = progress(lab).await?;
        *cached = Some((stamp, fresh.clone()));
        Ok(fresh)
    }
}

/// Records that the instructor accepted `milestone` of `lab` by hand, with `note` saying why.
pub async fn accept(lab: &Lab, milestone: &str, note: &str) -> Result<(), ApiError> {
    if !RULES.iter().any(|r| r.id == milestone) {
        let ids: Vec<&str> = RULES.iter().map(|r| r.id).collect();
        return Err(ApiError::field(
            "milestone",
            format!("{milestone:?} is no milestone; they are {}", ids.join(", ")),
        ));
    }
    let note = note.trim();
    if note.is_empty() || note.len() > 1000 {
        return Err(ApiError::field(
            "note",
            "say why it is accepted, in at most 1,000 characters",
        ));
    }
    let history = crate::service::pages::history(lab)?;
    (history
        .record_acceptance(&lab.config.lab, milestone, note)
        .await)
        .map_err(failed)?;
    Ok(())
}

/// The milestones `evidence` and `facts` prove.
pub fn milestones(evidence: &Evidence, facts: &Facts) -> Vec<Milestone> {
    RULES
        .iter()
        .map(|rule| {
            let proof = (rule.proved)(evidence, facts);
            let since = proof.as_ref().and_then(|p| match p.run {
                Some(id) => evidence
                    .runs
                    .iter()
                    .find(|r| r.id == id)
                    .and_then(|r| r.finished_at.clone()),
                None => p.at.clone(),
            });
            let accepted = (evidence.accepted.iter())
                .find(|(id, _, _)| id == rule.id)
                .map(|(_, note, at)| Accepted {
                    note: note.clone(),
                    at: at.clone(),
                });
            Milestone {
                accepted,
                id: rule.id.to_string(),
                course: rule.course,
                title: rule.title.to_string(),
                how: rule.how.to_string(),
                done: proof.is_some(),
                since,
                run: proof.as_ref().and_then(|p| p.run),
                evidence: proof.map(|p| p.evidence),
            }
        })
        .collect()
}

/// What the lab's tables say: each SCD 2 target's closed versions. The targets are those the
/// history shows an AUTO CDC flow writing (rows upserted), wherever the project ran from.
async fn facts(lab: &Lab, evidence: &Evidence) -> Result<Facts, ApiError> {
    let mut facts = Facts::default();
    let targets: BTreeSet<&str> = (evidence.runs.iter())
        .flat_map(|r| r.flows.iter())
        .filter(|f| f.figures.rows_upserted > 0)
        .filter_map(|f| f.target.as_deref())
        .collect();
    for target in targets {
        let Some(table) = lab.tables.open_named(target).await.map_err(failed)? else {
            continue;
        };
        let schema = tables::arrow_schema(&table).map_err(failed)?;
        if schema.field_with_name("__END_AT").is_err() {
            continue;
        }
        let ctx = tables::session(&table, "t").await.map_err(failed)?;
        let sql = "SELECT count(*) AS n FROM t WHERE \"__END_AT\" IS NOT NULL";
        let closed = tables::query(&ctx, target, sql)
            .await
            .map_err(failed)?
            .first()
            .and_then(|b| {
                let n = b
                    .column(0)
                    .as_any()
                    .downcast_ref::<arrow::array::Int64Array>()?;
                (!n.is_empty()).then(|| n.value(0) as u64)
            })
            .unwrap_or(0);
        facts.closed_versions.push((target.to_string(), closed));
    }
    Ok(facts)
}
