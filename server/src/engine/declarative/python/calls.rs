//! A pipeline file's module-level calls: `dp.create_streaming_table(...)` and
//! `dp.create_auto_cdc_flow(...)` (formerly `apply_changes`, PIPELINES §5), as the statements a
//! SQL file would hold for them.

use std::collections::BTreeMap;

use tree_sitter::Node;

use super::Source;
use super::column::{MODULES, arguments, column, constant, name, quoted, split};
use crate::engine::declarative::parse::ParseError;

/// `call`'s statement, on one line.
pub fn statement(
    source: Source,
    call: Node,
    constants: &BTreeMap<String, String>,
) -> Result<String, ParseError> {
    let function = call
        .child_by_field_name("function")
        .ok_or_else(|| source.error(call, "a call without a function".into()))?;
    let text = source.text(function);
    let what = text
        .split_once('.')
        .filter(|(module, _)| MODULES.contains(module))
        .map(|(_, what)| what)
        .ok_or_else(|| {
            source.error(
                function,
                format!("{text}(...) at the top of a pipeline file is not followed: dp.create_streaming_table and dp.create_auto_cdc_flow are"),
            )
        })?;
    let (positional, keywords) = split(source, &arguments(source, call)?)?;
    let mut named: BTreeMap<String, Node> = keywords.into_iter().collect();
    let mut take = |key: &str, at: usize| named.remove(key).or_else(|| positional.get(at).copied());
    let text_of = |node: Option<Node>, what: &str| -> Result<String, ParseError> {
        let node = node.ok_or_else(|| source.error(call, format!("{text}: {what} is missing")))?;
        constant(source, node, constants)
    };
    match what {
        "create_streaming_table" | "create_streaming_live_table" => {
            let table = text_of(take("name", 0), "the table's name")?;
            let mut sql = format!("CREATE OR REFRESH STREAMING TABLE {}", name(source, call, &table)?);
            if let Some(comment) = take("comment", 1) {
                sql.push_str(&format!(" COMMENT {}", quoted(&constant(source, comment, constants)?)));
            }
            Ok(format!("{sql};"))
        }
        "create_auto_cdc_flow" | "apply_changes" => {
            let target = text_of(take("target", 0), "target")?;
            let from = text_of(take("source", 1), "source")?;
            let keys = names(source, take("keys", 2), constants)?;
            let sequence = take("sequence_by", 3)
                .ok_or_else(|| source.error(call, format!("{text}: sequence_by is missing")))?;
            let flow = match take("name", 99) {
                Some(n) => constant(source, n, constants)?,
                None => format!("{target}_cdc"),
            };
            let mut sql = format!(
                "CREATE FLOW {} AS AUTO CDC INTO {} FROM STREAM({}) KEYS ({})",
                name(source, call, &flow)?,
                name(source, call, &target)?,
                name(source, call, &from)?,
                keys.join(", ")
            );
            if let Some(flag) = take("ignore_null_updates", 99)
                && source.text(flag) == "True"
            {
                sql.push_str(" IGNORE NULL UPDATES");
            }
            if let Some(deletes) = take("apply_as_deletes", 99) {
                sql.push_str(&format!(" APPLY AS DELETE WHEN {}", condition(source, deletes, constants)?));
            }
            sql.push_str(&format!(" SEQUENCE BY {}", column(source, sequence, constants)?));
            match (take("column_list", 99), take("except_column_list", 99)) {
                (Some(list), None) => sql.push_str(&format!(" COLUMNS {}", names(source, Some(list), constants)?.join(", "))),
                (None, Some(list)) => sql.push_str(&format!(" COLUMNS * EXCEPT ({})", names(source, Some(list), constants)?.join(", "))),
                (None, None) => {}
                (Some(list), Some(_)) => return Err(source.error(list, "give column_list or except_column_list, not both".into())),
            }
            if let Some(kind) = take("stored_as_scd_type", 99) {
                sql.push_str(&format!(" STORED AS SCD TYPE {}", constant(source, kind, constants)?));
            }
            match (take("track_history_column_list", 99), take("track_history_except_column_list", 99)) {
                (Some(list), None) => sql.push_str(&format!(" TRACK HISTORY ON {}", names(source, Some(list), constants)?.join(", "))),
                (None, Some(list)) => sql.push_str(&format!(" TRACK HISTORY ON * EXCEPT ({})", names(source, Some(list), constants)?.join(", "))),
                (None, None) => {}
                (Some(list), Some(_)) => return Err(source.error(list, "give one of the track_history lists, not both".into())),
            }
            if let Some((key, node)) = named.into_iter().next() {
                return Err(source.error(node, format!("{text}: the argument {key} is not supported")));
            }
            Ok(format!("{sql};"))
        }
        other => Err(source.error(
            function,
            format!("{text}: {other} is not followed at the top of a pipeline file: create_streaming_table and create_auto_cdc_flow are"),
        )),
    }
}

/// A list of column names (`["a", F.col("b")]`), or one.
fn names(
    source: Source,
    node: Option<Node>,
    constants: &BTreeMap<String, String>,
) -> Result<Vec<String>, ParseError> {
    let Some(node) = node else {
        return Ok(vec![]);
    };
    match node.kind() {
        "list" | "tuple" => {
            let mut cursor = node.walk();
            node.named_children(&mut cursor)
                .map(|item| column(source, item, constants))
                .collect()
        }
        _ => Ok(vec![column(source, node, constants)?]),
    }
}

/// A condition: SQL text, or a column expression (`F.expr("op = 'DELETE'")`).
fn condition(
    source: Source,
    node: Node,
    constants: &BTreeMap<String, String>,
) -> Result<String, ParseError> {
    match node.kind() {
        "string" | "concatenated_string" => constant(source, node, constants),
        _ => column(source, node, constants),
    }
}
