//! The check's lines for the tables whose flows do not aggregate (PIPELINES §9): where every
//! row went (`declared/accounting.rs`). An `ok` line counts rows per destination; a `PROBLEM`
//! names the rows that went nowhere, came from nowhere, or are missing from `_quarantine`.

use app::model::{CheckLine, Verdict};

use super::Scope;
use crate::engine::declarative::declared::accounting::{self, Accounting};
use crate::engine::declarative::graph::{FlowKind, FlowSpec, Graph};
use crate::engine::declarative::parse::Kind;
use crate::engine::flow::{FlowContext, FlowError};

/// The lines of every table its flows fill with rows (not windows, not AUTO CDC changes), all
/// of its flows together: every table for `reckon pipeline check`; after a run, those with
/// `reckon.dropDuplicates`.
pub async fn tables(
    cx: &FlowContext,
    graph: &Graph,
    scope: Scope,
) -> Result<Vec<CheckLine>, FlowError> {
    let mut lines = vec![];
    for dataset in &graph.datasets {
        if dataset.kind == Kind::TemporaryView {
            continue;
        }
        if scope == Scope::LastRun && !dataset.properties.contains_key("reckon.dropDuplicates") {
            continue;
        }
        let flows: Vec<_> = graph
            .flows
            .iter()
            .filter(|f| f.target == dataset.name)
            .collect();
        let plain = |f: &&FlowSpec| {
            matches!(f.kind, FlowKind::Append | FlowKind::Materialize)
                && f.query.window.is_none()
                && f.cdc.is_none()
        };
        if flows.is_empty() || !flows.iter().all(plain) {
            continue;
        }
        // Duplicates dropped across several flows depend on the order their rows came in,
        // run by run, which the check does not replay.
        if flows.len() > 1 && dataset.properties.contains_key("reckon.dropDuplicates") {
            lines.push(CheckLine::says(
                Verdict::Note,
                format!(
                    "{} is filled by {} flows and drops duplicates across them: where each row \
                     went is not checked",
                    dataset.name,
                    flows.len()
                ),
            ));
            continue;
        }
        if let Some(account) = accounting::account(cx, &flows, dataset).await? {
            lines.extend(self::lines(&account));
        }
    }
    Ok(lines)
}

pub fn lines(a: &Accounting) -> Vec<CheckLine> {
    let table = &a.table;
    if a.adds_up() {
        let mut parts = vec![
            format!("{} rows read", count(a.read)),
            format!("{} kept", count(a.kept)),
        ];
        if a.duplicates > 0 {
            parts.push(format!("{} duplicates", count(a.duplicates)));
        }
        for (rule, n) in &a.dropped {
            parts.push(format!("{} dropped by {rule}", count(*n)));
        }
        let text = match a.materialized {
            true => format!("{table} equals its query: {}", parts.join(", ")),
            false => format!("{table}: {}", parts.join(", ")),
        };
        return vec![CheckLine::says(Verdict::Ok, text)];
    }
    let mut out = vec![];
    let mut problem = |(names, n): &(Vec<String>, u64), what: &str| {
        if *n > 0 {
            let more = match *n as usize > names.len() {
                true => format!(" and {} more", *n as usize - names.len()),
                false => String::new(),
            };
            out.push(CheckLine::says(
                Verdict::Problem,
                format!("{table}: {} {what}: {}{more}", count(*n), names.join("; ")),
            ));
        }
    };
    problem(
        &a.went_nowhere,
        "row(s) its query gives from the sources are not in it, nor set aside",
    );
    problem(&a.unsourced, "row(s) it holds come from no source row");
    problem(
        &a.quarantine_missing,
        "row(s) a drop rule kept out are missing from _quarantine",
    );
    problem(
        &a.quarantine_extra,
        "row(s) in _quarantine come from no row its rules kept out",
    );
    out
}

/// `9562` as `9,562`.
fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_have_thousands_separators() {
        assert_eq!(super::count(9562), "9,562");
        assert_eq!(super::count(1_000_000), "1,000,000");
        assert_eq!(super::count(12), "12");
    }
}
