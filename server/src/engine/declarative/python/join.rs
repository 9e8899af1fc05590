//! `join` and `unionByName`'s join: two DataFrames as one query, with Spark's columns (the keys
//! once, first, then each side's others).

use std::collections::BTreeMap;

use tree_sitter::Node;

use super::Source;
use super::body::Frame;
use super::column::{constant, name};
use crate::engine::declarative::parse::ParseError;

/// `on="k"` or `on=["k1", "k2"]`: the key columns' names.
pub fn join_keys(
    source: Source,
    on: Node,
    constants: &BTreeMap<String, String>,
) -> Result<Vec<String>, ParseError> {
    let items: Vec<Node> = match on.kind() {
        "list" | "tuple" => {
            let mut cursor = on.walk();
            on.named_children(&mut cursor).collect()
        }
        _ => vec![on],
    };
    let keys = items
        .iter()
        .map(|item| match item.kind() {
            "string" | "concatenated_string" | "identifier" => {
                name(source, *item, &constant(source, *item, constants)?)
            }
            _ => Err(source.error(
                *item,
                "join on column names (on=\"k\" or on=[\"k1\", \"k2\"]); a condition on two frames' columns is not followed".into(),
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if keys.is_empty() {
        return Err(source.error(on, "join on one column at least".into()));
    }
    Ok(keys)
}

/// The query of a join on `keys` as Spark gives it: the keys once, first (from the side the
/// join keeps, both sides' for a full join), then each side's other columns; a semi or anti join
/// keeps the left side's columns alone.
pub fn join_sql(
    source: Source,
    at: Node,
    keys: &[String],
    how: &str,
) -> Result<impl FnOnce(String, String) -> String, ParseError> {
    let kind = match how.to_ascii_lowercase().replace('_', "").as_str() {
        "inner" => "JOIN",
        "left" | "leftouter" => "LEFT JOIN",
        "right" | "rightouter" => "RIGHT JOIN",
        "full" | "outer" | "fullouter" => "FULL JOIN",
        "semi" | "leftsemi" => "LEFT SEMI JOIN",
        "anti" | "leftanti" => "LEFT ANTI JOIN",
        _ => {
            return Err(source.error(
                at,
                format!("join how={how:?}: inner, left, right, full, left_semi or left_anti"),
            ));
        }
    };
    let condition = keys
        .iter()
        .map(|k| format!("l.{k} = r.{k}"))
        .collect::<Vec<_>>()
        .join(" AND ");
    let except = keys.join(", ");
    let items = match kind {
        "LEFT SEMI JOIN" | "LEFT ANTI JOIN" => "l.*".to_string(),
        _ => {
            let key = |k: &String| match kind {
                "RIGHT JOIN" => format!("r.{k} AS {k}"),
                "FULL JOIN" => format!("COALESCE(l.{k}, r.{k}) AS {k}"),
                _ => format!("l.{k} AS {k}"),
            };
            let keys: Vec<String> = keys.iter().map(key).collect();
            format!(
                "{}, l.* EXCEPT ({except}), r.* EXCEPT ({except})",
                keys.join(", ")
            )
        }
    };
    Ok(move |left: String, right: String| {
        format!("SELECT {items} FROM ({left}) AS l {kind} ({right}) AS r ON {condition}")
    })
}

/// Whether `left` may be joined with (`how`) or put in a union with (`None`) `right`, as Spark
/// allows in a pipeline: two tables read whole, or a stream on the left joined with a table read
/// whole (inner, left, semi or anti: the others would give the table's unmatched rows again on
/// every run), or a union of two streams; duplicates dropped before it are not followed (they
/// are the table's property, and would act after it).
pub fn combinable(
    source: Source,
    at: Node,
    (left, right): (&Frame, &Frame),
    how: Option<&str>,
) -> Result<(), ParseError> {
    let refuse = |why: &str| Err(source.error(at, why.to_string()));
    if left.dedup.is_some() || left.within.is_some() {
        return refuse(
            "dropping duplicates before a join or a union is not followed: drop them in a dataset of its own, then read that",
        );
    }
    let how = how.map(|h| h.to_ascii_lowercase().replace('_', ""));
    match (left.stream, right.stream, how.as_deref()) {
        (false, false, _) | (true, true, None) => Ok(()),
        (
            true,
            false,
            Some("inner" | "left" | "leftouter" | "semi" | "leftsemi" | "anti" | "leftanti"),
        ) => Ok(()),
        (true, false, Some(_)) => refuse(
            "a stream joined with a table read whole keeps the stream's side: how=inner, left, left_semi or left_anti",
        ),
        (false, true, Some(_)) => refuse(
            "put the stream on the left of a join with a table read whole (spark.readStream...join(spark.read...))",
        ),
        (true, true, Some(_)) => {
            refuse("a join of two streams is not followed: join a stream with a table read whole")
        }
        (_, _, None) => refuse(
            "a union of a stream and a table read whole: read both as streams, or both whole",
        ),
    }
}
