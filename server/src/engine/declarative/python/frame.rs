//! A decorated function read as a statement: its decorators (`@dp.table`, the expectations)
//! and the DataFrame it returns, a chain of calls from `spark.readStream` / `spark.read` (or
//! `dp.read_stream` / `dp.read`) through `select`, `where`, `withColumn`, `dropDuplicates`,
//! `groupBy(...).count()` / `.agg(...)`, each with Spark's meaning, as a query.

use std::collections::BTreeMap;

use tree_sitter::Node;

use super::Source;
use super::column::{arguments, column, constant, name, quoted};
use crate::engine::declarative::parse::ParseError;

/// The modules a pipeline file names its decorators by.
const MODULES: [&str; 2] = ["dp", "dlt"];

/// What a function's decorators declare.
pub struct Declared {
    kind: Kind,
    name: String,
    comment: Option<String>,
    properties: Vec<(String, String)>,
    /// (name, condition, `ON VIOLATION ...` or nothing).
    expectations: Vec<(String, String, &'static str)>,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// `@dp.table`: a streaming table over a stream, else a materialized view.
    Table,
    MaterializedView,
    TemporaryView,
}

/// The DataFrame a function returns, as a query.
pub struct Frame {
    query: String,
    stream: bool,
    /// `dropDuplicates` keys: Spark's streaming `dropDuplicates`.
    dedup: Option<Vec<String>>,
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
                "call" => (expr.child_by_field_name("function").unwrap_or(expr), Some(expr)),
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
                            "table_properties" => out.properties = dictionary(source, value, constants)?,
                            "spark_conf" | "path" | "partition_cols" | "cluster_by" | "schema" => {}
                            other => {
                                return Err(source.error(value, format!("@{text}: the argument {other} is not supported")));
                            }
                        }
                    }
                }
                "expect" | "expect_or_drop" | "expect_or_fail" => {
                    let action = violation(what);
                    let [rule, condition] = positional.as_slice() else {
                        return Err(source.error(*decorator, format!("@{text} takes a name and a condition")));
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
                        return Err(source.error(*decorator, format!("@{text} takes one dict of name: condition")));
                    };
                    for (rule, condition) in dictionary(source, *rules, constants)? {
                        out.expectations.push((rule, condition, action));
                    }
                }
                other => {
                    return Err(source.error(
                        callee,
                        format!("@{module}.{other} is not supported: table, materialized_view, temporary_view and the expect decorators are"),
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
        let what = match (self.kind, frame.stream) {
            (Kind::TemporaryView, _) => {
                return Ok(format!("CREATE TEMPORARY VIEW {name} AS {};", frame.query));
            }
            (Kind::Table, true) => "STREAMING TABLE",
            (Kind::Table, false) | (Kind::MaterializedView, false) => "MATERIALIZED VIEW",
            (Kind::MaterializedView, true) => {
                return Err(source.error(
                    at,
                    "a materialized view reads its sources whole: use spark.read, or @dp.table for a streaming table".into(),
                ));
            }
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
        if !properties.is_empty() {
            let pairs: Vec<String> = properties
                .iter()
                .map(|(k, v)| format!("{} = {}", quoted(k), quoted(v)))
                .collect();
            sql.push_str(&format!(" TBLPROPERTIES ({})", pairs.join(", ")));
        }
        sql.push_str(&format!(" AS {};", frame.query));
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

type Arguments<'t> = (Vec<Node<'t>>, Vec<(String, Node<'t>)>);

/// Positional arguments, and keyword ones by name.
fn split<'t>(source: Source, args: &[Node<'t>]) -> Result<Arguments<'t>, ParseError> {
    let (mut positional, mut keywords) = (vec![], vec![]);
    for arg in args {
        match arg.kind() {
            "keyword_argument" => {
                let key = arg.child_by_field_name("name").map(|n| source.text(n).to_string());
                let value = arg.child_by_field_name("value");
                if let (Some(key), Some(value)) = (key, value) {
                    keywords.push((key, value));
                }
            }
            _ => positional.push(*arg),
        }
    }
    Ok((positional, keywords))
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
    for pair in node.named_children(&mut cursor).filter(|n| n.kind() == "pair") {
        let (Some(key), Some(value)) = (pair.child_by_field_name("key"), pair.child_by_field_name("value")) else {
            continue;
        };
        out.push((constant(source, key, constants)?, constant(source, value, constants)?));
    }
    Ok(out)
}

/// A reader being set up: `spark.read(Stream).format(...).option(...).schema(...)`.
#[derive(Default)]
struct Reader {
    stream: bool,
    format: Option<String>,
    options: Vec<(String, String)>,
    schema: Option<String>,
}

enum Step {
    Spark,
    Reader(Reader),
    Frame(Frame),
    /// `groupBy(...)`: the frame and the grouping columns, waiting for `count()` or `agg()`.
    Grouped(Frame, Vec<String>),
}

impl Frame {
    pub fn of(
        source: Source,
        node: Node,
        constants: &BTreeMap<String, String>,
    ) -> Result<Frame, ParseError> {
        match step(source, node, constants)? {
            Step::Frame(frame) => Ok(frame),
            _ => Err(source.error(
                node,
                "the function must return a DataFrame: end the reader with .load(path) or .table(name), a groupBy with .count() or .agg(...)".into(),
            )),
        }
    }
}

/// Reads a chain of calls from its start, one step at a time (the tree's depth is bounded).
fn step(source: Source, node: Node, constants: &BTreeMap<String, String>) -> Result<Step, ParseError> {
    match node.kind() {
        "parenthesized_expression" => match node.named_child(0) {
            Some(inner) => step(source, inner, constants),
            None => Err(source.error(node, "an empty expression".into())),
        },
        "identifier" if source.text(node) == "spark" => Ok(Step::Spark),
        "attribute" => {
            let object = node.child_by_field_name("object").expect("an attribute has an object");
            let attribute = source.text(node.child_by_field_name("attribute").expect("named"));
            match (step(source, object, constants)?, attribute) {
                (Step::Spark, "readStream") => Ok(Step::Reader(Reader { stream: true, ..Reader::default() })),
                (Step::Spark, "read") => Ok(Step::Reader(Reader::default())),
                (_, other) => Err(source.error(node, format!(".{other} is not followed here"))),
            }
        }
        "call" => call(source, node, constants),
        _ => Err(source.error(
            node,
            "a DataFrame starts at spark.readStream, spark.read, spark.table(...) or dp.read_stream(...)".into(),
        )),
    }
}

fn call(source: Source, node: Node, constants: &BTreeMap<String, String>) -> Result<Step, ParseError> {
    let function = node.child_by_field_name("function").expect("a call has a function");
    let args = arguments(source, node)?;
    let (positional, keywords) = split(source, &args)?;
    let text = |i: usize| -> Result<String, ParseError> {
        let arg = positional.get(i).ok_or_else(|| source.error(node, "an argument is missing".into()))?;
        constant(source, *arg, constants)
    };
    if function.kind() != "attribute" {
        return Err(source.error(function, format!("{} is not a DataFrame method", source.text(function))));
    }
    let object = function.child_by_field_name("object").expect("an attribute has an object");
    let method = source.text(function.child_by_field_name("attribute").expect("named"));
    // `dp.read("t")`, `dp.read_stream("t")`: a dataset of the pipeline.
    if MODULES.contains(&source.text(object)) {
        return match method {
            "read" | "read_stream" => Ok(Step::Frame(table(source, node, &text(0)?, method == "read_stream")?)),
            other => Err(source.error(function, format!("{}.{other} is not followed", source.text(object)))),
        };
    }
    let before = step(source, object, constants)?;
    let columns = |from: usize| -> Result<Vec<String>, ParseError> {
        let mut out = vec![];
        for arg in &positional[from.min(positional.len())..] {
            match arg.kind() {
                "list" | "tuple" => {
                    let mut cursor = arg.walk();
                    for item in arg.named_children(&mut cursor) {
                        out.push(column(source, item, constants)?);
                    }
                }
                _ => out.push(column(source, *arg, constants)?),
            }
        }
        Ok(out)
    };
    match (before, method) {
        (Step::Spark, "table") => Ok(Step::Frame(table(source, node, &text(0)?, false)?)),
        (Step::Reader(mut r), "format") => {
            r.format = Some(text(0)?);
            Ok(Step::Reader(r))
        }
        (Step::Reader(mut r), "option") => {
            r.options.push((text(0)?, text(1)?));
            Ok(Step::Reader(r))
        }
        (Step::Reader(mut r), "schema") => {
            r.schema = Some(text(0)?);
            Ok(Step::Reader(r))
        }
        (Step::Reader(r), "table") => Ok(Step::Frame(table(source, node, &text(0)?, r.stream)?)),
        (Step::Reader(r), "load") => Ok(Step::Frame(load(source, node, r, positional.first().map(|_| text(0)).transpose()?)?)),
        (Step::Frame(f), "select") => Ok(Step::Frame(f.wrap(format!("SELECT {}", columns(0)?.join(", "))))),
        (Step::Frame(f), "selectExpr") => {
            let exprs = (0..positional.len()).map(text).collect::<Result<Vec<_>, _>>()?;
            Ok(Step::Frame(f.wrap(format!("SELECT {}", exprs.join(", ")))))
        }
        (Step::Frame(f), "where" | "filter") => {
            let arg = positional.first().ok_or_else(|| source.error(node, "a condition is missing".into()))?;
            let condition = match arg.kind() {
                "string" | "concatenated_string" => constant(source, *arg, constants)?,
                _ => column(source, *arg, constants)?,
            };
            Ok(Step::Frame(f.wrap_where(&condition)))
        }
        (Step::Frame(f), "withColumn") => {
            let name = name(source, node, &text(0)?)?;
            let value = positional.get(1).ok_or_else(|| source.error(node, "withColumn takes a name and a column".into()))?;
            let value = column(source, *value, constants)?;
            Ok(Step::Frame(f.wrap(format!("SELECT *, {value} AS {name}"))))
        }
        (Step::Frame(mut f), "dropDuplicates" | "drop_duplicates") => {
            if !f.stream {
                return Err(source.error(node, "dropDuplicates is followed on a stream (spark.readStream) only".into()));
            }
            let keys = columns(0)?;
            if keys.is_empty() {
                return Err(source.error(node, "name the key columns: dropDuplicates([\"id\"])".into()));
            }
            f.dedup = Some(keys);
            Ok(Step::Frame(f))
        }
        (Step::Frame(f), "groupBy" | "groupby") => Ok(Step::Grouped(f, columns(0)?)),
        (Step::Grouped(f, keys), "count") => {
            let mut select = keys.clone();
            select.push("count(*) AS count".into());
            Ok(Step::Frame(f.grouped(&select, &keys)))
        }
        (Step::Grouped(f, keys), "agg") => {
            let mut select = keys.clone();
            select.extend(columns(0)?);
            Ok(Step::Frame(f.grouped(&select, &keys)))
        }
        (_, other) => {
            let _ = keywords;
            Err(source.error(
                function,
                format!(
                    ".{other} is not followed here; Reckon reads format, option, schema, load, table, select, selectExpr, where, filter, withColumn, dropDuplicates, groupBy(...).count() and .agg(...)"
                ),
            ))
        }
    }
}

/// A dataset of the pipeline, streamed or read whole.
fn table(source: Source, at: Node, table: &str, stream: bool) -> Result<Frame, ParseError> {
    let name = name(source, at, table)?;
    Ok(Frame {
        query: match stream {
            true => format!("SELECT * FROM STREAM({name})"),
            false => format!("SELECT * FROM {name}"),
        },
        stream,
        dedup: None,
    })
}

/// `load(path)`: files (Auto Loader's `cloudFiles`, or a format) or Kafka.
fn load(source: Source, at: Node, reader: Reader, path: Option<String>) -> Result<Frame, ParseError> {
    let option = |key: &str| reader.options.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v.clone());
    let stream = if reader.stream { "STREAM " } else { "" };
    let format = reader.format.clone().unwrap_or_else(|| "parquet".into());
    let query = match format.as_str() {
        "kafka" => {
            let topic = option("subscribe").ok_or_else(|| source.error(at, "a Kafka reader needs .option(\"subscribe\", topic)".into()))?;
            let mut args = vec![format!("subscribe => {}", quoted(&topic))];
            if let Some(starting) = option("startingOffsets") {
                args.push(format!("startingOffsets => {}", quoted(&starting)));
            }
            format!("SELECT * FROM {stream}read_kafka({})", args.join(", "))
        }
        _ => {
            let format = match format.as_str() {
                "cloudFiles" => option("cloudFiles.format").ok_or_else(|| source.error(at, "cloudFiles needs .option(\"cloudFiles.format\", \"json\" | \"csv\" | \"parquet\")".into()))?,
                other => other.to_string(),
            };
            let path = path.ok_or_else(|| source.error(at, "load takes the files' path".into()))?;
            let mut args = vec![quoted(&landing(source, at, &path)?), format!("format => {}", quoted(&format))];
            if let Some(schema) = &reader.schema {
                args.push(format!("schema => {}", quoted(schema)));
            }
            format!("SELECT * FROM {stream}read_files({})", args.join(", "))
        }
    };
    Ok(Frame { query, stream: reader.stream, dedup: None })
}

/// A Databricks volume path as the lab's folder: `/Volumes/<catalog>/<schema>/<volume>/<dir>`
/// is `landing/<dir>`; a relative path is the lab's own.
fn landing(source: Source, at: Node, path: &str) -> Result<String, ParseError> {
    match path.strip_prefix("/Volumes/") {
        Some(rest) => {
            let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
            match parts.as_slice() {
                [_, _, _, dir @ ..] => Ok(std::iter::once("landing").chain(dir.iter().copied()).collect::<Vec<_>>().join("/")),
                _ => Err(source.error(at, format!("{path}: a volume path is /Volumes/<catalog>/<schema>/<volume>/..."))),
            }
        }
        None if path.starts_with('/') => Err(source.error(at, format!("{path}: read the lab's files: landing/... or a /Volumes/... path"))),
        None => Ok(path.trim_end_matches('/').to_string()),
    }
}

impl Frame {
    /// `SELECT ... FROM (this)`.
    fn wrap(self, select: String) -> Frame {
        Frame {
            query: format!("{select} FROM ({}) AS q", self.query),
            ..self
        }
    }

    fn wrap_where(self, condition: &str) -> Frame {
        Frame {
            query: format!("SELECT * FROM ({}) AS q WHERE {condition}", self.query),
            ..self
        }
    }

    fn grouped(self, select: &[String], keys: &[String]) -> Frame {
        Frame {
            query: format!(
                "SELECT {} FROM ({}) AS q GROUP BY {}",
                select.join(", "),
                self.query,
                keys.join(", ")
            ),
            ..self
        }
    }
}
