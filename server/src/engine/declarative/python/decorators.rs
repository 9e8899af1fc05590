//! A decorated function's decorators (`@dp.table`, `@dp.materialized_view`, the expectations)
//! and the statement they make of the DataFrame it returns.

use std::collections::BTreeMap;

use tree_sitter::Node;

use super::Source;
use super::column::{MODULES, arguments, constant, name, quoted, split};
use super::frame::Frame;
use crate::engine::declarative::parse::ParseError;

/// What a function's decorators declare.
pub struct Declared {
    kind: Kind,
    name: String,
    comment: Option<String>,
    properties: Vec<(String, String)>,
    /// (name, condition, `ON VIOLATION ...` or nothing).
    expectations: Vec<(String, String, &'static str)>,
}

#[derive(Clone, PartialEq)]
enum Kind {
    /// `@dp.table`: a streaming table over a stream, else a materialized view.
    Table,
    MaterializedView,
    TemporaryView,
    /// `@dp.append_flow(target=...)`: one more flow into a streaming table declared elsewhere
    /// (`dp.create_streaming_table`), its rows appended by name.
    AppendFlow {
        target: String,
    },
}

impl Declared {
    pub fn of(
        source: Source,
        decorators: &[Node],
        function: &str,
        constants: &BTreeMap<String, String>,
    ) -> Result<Self, ParseError> {
        let mut kind = None;
        let mut out = Declared {
            kind: Kind::Table,
            name: function.to_string(),
            comment: None,
            properties: vec![],
            expectations: vec![],
        };
        for decorator in decorators {
            let Some(expr) = decorator.named_child(0) else {
                continue;
            };
            let (callee, call) = match expr.kind() {
                "call" => (
                    expr.child_by_field_name("function").unwrap_or(expr),
                    Some(expr),
                ),
                _ => (expr, None),
            };
            let text = source.text(callee);
            let Some((module, what)) = text.split_once('.') else {
                return Err(source.error(callee, format!("@{text} is not a pipeline decorator")));
            };
            if !MODULES.contains(&module) {
                return Err(source.error(
                    callee,
                    format!("@{text}: name the decorators by the pipelines module, as `dp.table` (from pyspark import pipelines as dp)"),
                ));
            }
            let args = match call {
                Some(call) => arguments(source, call)?,
                None => vec![],
            };
            let (positional, keywords) = split(source, &args)?;
            match what {
                "table" | "materialized_view" | "temporary_view" | "view" => {
                    kind = Some(match what {
                        "table" => Kind::Table,
                        "materialized_view" => Kind::MaterializedView,
                        _ => Kind::TemporaryView,
                    });
                    for (key, value) in keywords {
                        match key.as_str() {
                            "name" => out.name = constant(source, value, constants)?,
                            "comment" => out.comment = Some(constant(source, value, constants)?),
                            "table_properties" => {
                                out.properties = dictionary(source, value, constants)?
                            }
                            "spark_conf" | "path" | "partition_cols" | "cluster_by" | "schema" => {}
                            other => {
                                return Err(source.error(
                                    value,
                                    format!("@{text}: the argument {other} is not supported"),
                                ));
                            }
                        }
                    }
                }
                "append_flow" => {
                    let mut target = None;
                    for (key, value) in keywords {
                        match key.as_str() {
                            "target" => target = Some(constant(source, value, constants)?),
                            "name" => out.name = constant(source, value, constants)?,
                            "comment" | "spark_conf" => {}
                            other => {
                                return Err(source.error(
                                    value,
                                    format!("@{text}: the argument {other} is not supported (once=True batch flows are not followed)"),
                                ));
                            }
                        }
                    }
                    let target = target.ok_or_else(|| {
                        source.error(*decorator, format!("@{text} needs target=\"table\""))
                    })?;
                    kind = Some(Kind::AppendFlow { target });
                }
                "expect" | "expect_or_drop" | "expect_or_fail" => {
                    let action = violation(what);
                    let [rule, condition] = positional.as_slice() else {
                        return Err(source
                            .error(*decorator, format!("@{text} takes a name and a condition")));
                    };
                    out.expectations.push((
                        constant(source, *rule, constants)?,
                        constant(source, *condition, constants)?,
                        action,
                    ));
                }
                "expect_all" | "expect_all_or_drop" | "expect_all_or_fail" => {
                    let action = violation(what.replace("_all", "").as_str());
                    let [rules] = positional.as_slice() else {
                        return Err(source.error(
                            *decorator,
                            format!("@{text} takes one dict of name: condition"),
                        ));
                    };
                    for (rule, condition) in dictionary(source, *rules, constants)? {
                        out.expectations.push((rule, condition, action));
                    }
                }
                other => {
                    return Err(source.error(
                        callee,
                        format!("@{module}.{other} is not supported: table, materialized_view, temporary_view, append_flow and the expect decorators are"),
                    ));
                }
            }
        }
        out.kind = kind.ok_or_else(|| {
            source.error(
                decorators[0],
                "the function needs @dp.table, @dp.materialized_view or @dp.temporary_view".into(),
            )
        })?;
        Ok(out)
    }

    /// The SQL statement, on one line.
    pub fn statement(&self, source: Source, frame: &Frame, at: Node) -> Result<String, ParseError> {
        let name = name(source, at, &self.name)?;
        if let Kind::AppendFlow { target } = &self.kind {
            return self.append_flow(source, frame, at, (&name, target));
        }
        let what = match (&self.kind, frame.stream) {
            (Kind::TemporaryView, _) => {
                return Ok(format!(
                    "CREATE TEMPORARY VIEW {name} AS {};",
                    &frame.query()
                ));
            }
            (Kind::Table, true) => "STREAMING TABLE",
            (Kind::Table, false) | (Kind::MaterializedView, false) => "MATERIALIZED VIEW",
            (Kind::MaterializedView, true) => {
                return Err(source.error(
                    at,
                    "a materialized view reads its sources whole: use spark.read, or @dp.table for a streaming table".into(),
                ));
            }
            (Kind::AppendFlow { .. }, _) => unreachable!("an append flow is written above"),
        };
        let mut sql = format!("CREATE OR REFRESH {what} {name}");
        if !self.expectations.is_empty() {
            let rules: Vec<String> = self
                .expectations
                .iter()
                .map(|(rule, condition, action)| {
                    format!("CONSTRAINT {rule} EXPECT ({condition}){action}")
                })
                .collect();
            sql.push_str(&format!(" ({})", rules.join(", ")));
        }
        if let Some(comment) = &self.comment {
            sql.push_str(&format!(" COMMENT {}", quoted(comment)));
        }
        let mut properties = self.properties.clone();
        if let Some(keys) = &frame.dedup {
            properties.push(("reckon.dropDuplicates".into(), keys.join(", ")));
        }
        if let Some(keys) = &frame.within {
            properties.push((
                "reckon.dropDuplicatesWithinWatermark".into(),
                keys.join(", "),
            ));
        }
        if !properties.is_empty() {
            let pairs: Vec<String> = properties
                .iter()
                .map(|(k, v)| format!("{} = {}", quoted(k), quoted(v)))
                .collect();
            sql.push_str(&format!(" TBLPROPERTIES ({})", pairs.join(", ")));
        }
        sql.push_str(&format!(" AS {};", &frame.query()));
        Ok(sql.replace('\n', " "))
    }
}

impl Declared {
    /// `CREATE FLOW name AS INSERT INTO target BY NAME query;` (PIPELINES §2): the target's
    /// rules and properties are the target's own, declared with it.
    fn append_flow(
        &self,
        source: Source,
        frame: &Frame,
        at: Node,
        (name, target): (&str, &str),
    ) -> Result<String, ParseError> {
        let target = super::column::name(source, at, target)?;
        let refused = |what: &str| {
            Err(source.error(
                at,
                format!("{what} on an append flow: declare it with its target (dp.create_streaming_table(\"{target}\", ...))"),
            ))
        };
        if !self.expectations.is_empty() {
            return refused("expectations");
        }
        if frame.dedup.is_some() || frame.within.is_some() {
            return refused("dropping duplicates");
        }
        if !frame.stream {
            return Err(source.error(
                at,
                "an append flow reads a stream: spark.readStream or dp.read_stream".into(),
            ));
        }
        let sql = format!(
            "CREATE FLOW {name} AS INSERT INTO {target} BY NAME {};",
            frame.query()
        );
        Ok(sql.replace('\n', " "))
    }
}

fn violation(what: &str) -> &'static str {
    match what {
        "expect_or_drop" => " ON VIOLATION DROP ROW",
        "expect_or_fail" => " ON VIOLATION FAIL UPDATE",
        _ => "",
    }
}

/// A `{"text": "text"}` literal.
fn dictionary(
    source: Source,
    node: Node,
    constants: &BTreeMap<String, String>,
) -> Result<Vec<(String, String)>, ParseError> {
    if node.kind() != "dictionary" {
        return Err(source.error(node, "a dict {\"name\": \"value\", ...} is expected".into()));
    }
    let mut out = vec![];
    let mut cursor = node.walk();
    for pair in node
        .named_children(&mut cursor)
        .filter(|n| n.kind() == "pair")
    {
        let (Some(key), Some(value)) = (
            pair.child_by_field_name("key"),
            pair.child_by_field_name("value"),
        ) else {
            continue;
        };
        out.push((
            constant(source, key, constants)?,
            constant(source, value, constants)?,
        ));
    }
    Ok(out)
}
