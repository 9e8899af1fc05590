//! A flow's definition (PIPELINES §2): its parsed statement printed canonically, hashed. The
//! queries are sqlparser's print of what it parsed, so comments, spacing and the statement's place
//! in its file are not part of it; the expectations, TBLPROPERTIES and AUTO CDC clauses are.
//! Committed with the flow's state: a materialized view whose definition changed is recomputed,
//! a streaming flow's new query applies to new rows.

use blake2::{Blake2s256, Digest};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;

use super::FlowSpec;
use crate::engine::declarative::parse::Dataset;

impl FlowSpec {
    /// The hash of this flow's definition, writing `target`, as hex.
    pub fn definition(&self, target: &Dataset) -> String {
        let mut text = format!("{:?} {}\n{}\n", self.kind, self.target, self.query.sql);
        for (view, query) in &self.views {
            text += &format!("view {view}: {}\n", query.sql);
        }
        for rule in &target.expectations {
            let violation = rule.on_violation;
            let condition = canonical(&rule.condition);
            text += &format!("rule {} {violation:?}: {condition}\n", rule.name);
        }
        for (key, value) in &target.properties {
            text += &format!("property {key} = {value}\n");
        }
        if let Some(cdc) = &self.cdc {
            let columns = (&cdc.columns, &cdc.track, cdc.scd, cdc.ignore_null_updates);
            text += &format!(
                "cdc {} keys {:?} sequence {} delete {:?} {columns:?}\n",
                cdc.source, cdc.keys, cdc.sequence_by, cdc.delete_when
            );
        }
        hex::encode(Blake2s256::digest(text.as_bytes()))
    }
}

/// A condition as sqlparser prints it (as written when it does not parse: the run will say so).
fn canonical(condition: &str) -> String {
    Parser::new(&GenericDialect {})
        .try_with_sql(condition)
        .and_then(|mut p| p.parse_expr())
        .map_or_else(|_| condition.to_string(), |e| e.to_string())
}
