//! The DataFrame a decorated function returns, as a query: a chain of calls from
//! `spark.readStream` / `spark.read` (or `dp.read_stream` / `dp.read`) through `select`,
//! `where`, `withColumn`, `dropDuplicates`, `groupBy(...).count()` / `.agg(...)`, each with
//! Spark's meaning.

use std::collections::BTreeMap;

use tree_sitter::Node;

use super::Source;
pub use super::body::Frame;
use super::column::{MODULES, arguments, column, constant, name, quoted, split};
use super::join::{combinable, join_keys, join_sql};
use crate::engine::declarative::parse::ParseError;

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
fn step(
    source: Source,
    node: Node,
    constants: &BTreeMap<String, String>,
) -> Result<Step, ParseError> {
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

fn call(
    source: Source,
    node: Node,
    constants: &BTreeMap<String, String>,
) -> Result<Step, ParseError> {
    let function = node
        .child_by_field_name("function")
        .expect("a call has a function");
    let args = arguments(source, node)?;
    let (positional, keywords) = split(source, &args)?;
    let text = |i: usize| -> Result<String, ParseError> {
        let arg = positional
            .get(i)
            .ok_or_else(|| source.error(node, "an argument is missing".into()))?;
        constant(source, *arg, constants)
    };
    if function.kind() != "attribute" {
        return Err(source.error(
            function,
            format!("{} is not a DataFrame method", source.text(function)),
        ));
    }
    let object = function
        .child_by_field_name("object")
        .expect("an attribute has an object");
    let method = source.text(function.child_by_field_name("attribute").expect("named"));
    // `dp.read("t")`, `dp.read_stream("t")`: a dataset of the pipeline.
    if MODULES.contains(&source.text(object)) {
        return match method {
            "read" | "read_stream" => Ok(Step::Frame(table(
                source,
                node,
                &text(0)?,
                method == "read_stream",
            )?)),
            other => Err(source.error(
                function,
                format!("{}.{other} is not followed", source.text(object)),
            )),
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
    if let Step::Frame(f) = &before
        && let Some(keys) = &f.dedup
    {
        let touched = match method {
            "withColumn" | "withColumnRenamed" => vec![name(source, node, &text(0)?)?],
            "drop" | "select" => columns(0)?,
            _ => vec![],
        };
        f.after_dedup(keys, method, &touched)
            .map_err(|message| source.error(node, message))?;
    }
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
        (Step::Reader(r), "load") => Ok(Step::Frame(load(
            source,
            node,
            r,
            positional.first().map(|_| text(0)).transpose()?,
        )?)),
        (Step::Frame(f), "select") => {
            let items = columns(0)?;
            Ok(Step::Frame(
                f.wrap(format!("SELECT {}", items.join(", ")), Some(items)),
            ))
        }
        (Step::Frame(f), "selectExpr") => {
            let exprs = (0..positional.len())
                .map(text)
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Step::Frame(
                f.wrap(format!("SELECT {}", exprs.join(", ")), Some(exprs)),
            ))
        }
        (Step::Frame(f), "where" | "filter") => {
            let arg = positional
                .first()
                .ok_or_else(|| source.error(node, "a condition is missing".into()))?;
            let condition = match arg.kind() {
                "string" | "concatenated_string" => constant(source, *arg, constants)?,
                _ => column(source, *arg, constants)?,
            };
            Ok(Step::Frame(f.wrap_where(&condition)))
        }
        (Step::Frame(f), "withColumn") => {
            let name = name(source, node, &text(0)?)?;
            let value = positional
                .get(1)
                .ok_or_else(|| source.error(node, "withColumn takes a name and a column".into()))?;
            let value = column(source, *value, constants)?;
            // In place when the frame has the column, at the end when not
            // (`sql/wildcards.rs`).
            Ok(Step::Frame(f.wrap(
                format!("SELECT * REPLACE ({value} AS {name})"),
                None,
            )))
        }
        (Step::Frame(f), "withColumnRenamed") => {
            let (old, new) = (
                name(source, node, &text(0)?)?,
                name(source, node, &text(1)?)?,
            );
            // Each other column keeps its place; a name the frame lacks changes nothing, as
            // in Spark (`sql/wildcards.rs`).
            Ok(Step::Frame(
                f.wrap(format!("SELECT * RENAME ({old} AS {new})"), None),
            ))
        }
        (Step::Frame(mut f), "dropDuplicates" | "drop_duplicates") => {
            if !f.stream {
                return Err(source.error(
                    node,
                    "dropDuplicates is followed on a stream (spark.readStream) only".into(),
                ));
            }
            let keys = columns(0)?;
            if keys.is_empty() {
                return Err(source.error(
                    node,
                    "name the key columns: dropDuplicates([\"id\"])".into(),
                ));
            }
            f.dedup = Some(keys);
            Ok(Step::Frame(f))
        }
        (Step::Frame(f), "drop") => {
            let names = positional
                .iter()
                .map(|arg| match arg.kind() {
                    "string" | "concatenated_string" | "identifier" => {
                        name(source, *arg, &constant(source, *arg, constants)?)
                    }
                    _ => column(source, *arg, constants),
                })
                .collect::<Result<Vec<_>, _>>()?;
            if names.is_empty() {
                return Err(source.error(node, "name the columns to drop".into()));
            }
            // Spark passes over a name the frame does not have; DataFusion refuses it, naming
            // it, when the flow is planned (a misspelt name is more often a mistake).
            Ok(Step::Frame(f.wrap(
                format!("SELECT * EXCEPT ({})", names.join(", ")),
                None,
            )))
        }
        (Step::Frame(f), "join") => {
            let other = other_frame(source, node, positional.first(), constants)?;
            let on = positional
                .get(1)
                .copied()
                .or_else(|| keyword(&keywords, "on"))
                .ok_or_else(|| {
                    source.error(node, "join needs on=\"column\" or a list of them".into())
                })?;
            let keys = join_keys(source, on, constants)?;
            let how = match positional
                .get(2)
                .copied()
                .or_else(|| keyword(&keywords, "how"))
            {
                Some(how) => constant(source, how, constants)?,
                None => "inner".into(),
            };
            let sql = join_sql(source, node, &keys, &how)?;
            combinable(source, node, (&f, &other), Some(&how))?;
            Ok(Step::Frame(f.combined(&other, sql)))
        }
        (Step::Frame(f), "unionByName") => {
            let other = other_frame(source, node, positional.first(), constants)?;
            combinable(source, node, (&f, &other), None)?;
            // BY NAME: columns matched by name, one side's missing ones NULL (Spark asks for
            // allowMissingColumns=True for that; without it, a missing column is its error).
            Ok(Step::Frame(f.combined(&other, |a, b| {
                format!("SELECT * FROM ({a}) AS a UNION ALL BY NAME SELECT * FROM ({b}) AS b")
            })))
        }
        (Step::Frame(f), "groupBy" | "groupby") => Ok(Step::Grouped(f, columns(0)?)),
        (Step::Grouped(f, keys), "count") => Ok(Step::Frame(
            f.grouped(&keys, vec![("count(*)".into(), Some("count".into()))]),
        )),
        (Step::Grouped(f, keys), "agg") => {
            let aggregates = columns(0)?
                .into_iter()
                .map(|a| match a.rsplit_once(" AS ") {
                    Some((e, n)) => (e.to_string(), Some(n.to_string())),
                    None => (a, None),
                })
                .collect();
            Ok(Step::Frame(f.grouped(&keys, aggregates)))
        }
        (Step::Frame(f), "withWatermark") => {
            let (column, delay) = (text(0)?, text(1)?);
            let interval = interval(source, node, &delay)?;
            let column = name(source, node, &column)?;
            f.watermarked(&column, &interval).map(Step::Frame).map_err(|_| {
                source.error(
                    node,
                    "call withWatermark on the source as read, before select, withColumn or groupBy".into(),
                )
            })
        }
        (Step::Frame(mut f), "dropDuplicatesWithinWatermark") => {
            if !f.has_watermark() {
                return Err(source.error(
                    node,
                    "dropDuplicatesWithinWatermark needs a watermark: call withWatermark first"
                        .into(),
                ));
            }
            f.within = Some(columns(0)?);
            Ok(Step::Frame(f))
        }
        (_, other) => {
            let _ = keywords;
            Err(source.error(
                function,
                format!(
                    ".{other} is not followed here; Reckon reads format, option, schema, load, table, select, selectExpr, where, filter, withColumn, withColumnRenamed, drop, join, unionByName, dropDuplicates, withWatermark, dropDuplicatesWithinWatermark, groupBy(...).count() and .agg(...)"
                ),
            ))
        }
    }
}

/// A keyword argument's value.
fn keyword<'t>(keywords: &[(String, Node<'t>)], key: &str) -> Option<Node<'t>> {
    keywords.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
}

/// The other DataFrame of a join or a union: a chain of its own, written in place (a variable
/// is not followed), with no duplicate keys of its own (they are its table's property).
fn other_frame(
    source: Source,
    at: Node,
    arg: Option<&Node>,
    constants: &BTreeMap<String, String>,
) -> Result<Frame, ParseError> {
    let arg = arg.ok_or_else(|| source.error(at, "name the other DataFrame".into()))?;
    match step(source, *arg, constants)? {
        Step::Frame(f) if f.dedup.is_none() && f.within.is_none() => Ok(f),
        Step::Frame(_) => Err(source.error(
            *arg,
            "drop duplicates on the joined side in a dataset of its own".into(),
        )),
        _ => Err(source.error(*arg, "the other side must be a DataFrame: spark.read.table(\"t\"), dp.read_stream(\"t\"), ...".into())),
    }
}

/// A dataset of the pipeline, streamed or read whole.
fn table(source: Source, at: Node, table: &str, stream: bool) -> Result<Frame, ParseError> {
    let name = name(source, at, table)?;
    let from = match stream {
        true => format!("STREAM({name})"),
        false => name,
    };
    Ok(Frame::source(from, stream))
}

/// `load(path)`: files (Auto Loader's `cloudFiles`, or a format) or Kafka.
fn load(
    source: Source,
    at: Node,
    reader: Reader,
    path: Option<String>,
) -> Result<Frame, ParseError> {
    let option = |key: &str| {
        reader
            .options
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.clone())
    };
    let stream = if reader.stream { "STREAM " } else { "" };
    let format = reader.format.clone().unwrap_or_else(|| "parquet".into());
    let query = match format.as_str() {
        "kafka" => {
            let topic = option("subscribe").ok_or_else(|| {
                source.error(
                    at,
                    "a Kafka reader needs .option(\"subscribe\", topic)".into(),
                )
            })?;
            let mut args = vec![format!("subscribe => {}", quoted(&topic))];
            if let Some(starting) = option("startingOffsets") {
                args.push(format!("startingOffsets => {}", quoted(&starting)));
            }
            format!("{stream}read_kafka({})", args.join(", "))
        }
        _ => {
            let format = match format.as_str() {
                "cloudFiles" => option("cloudFiles.format").ok_or_else(|| source.error(at, "cloudFiles needs .option(\"cloudFiles.format\", \"json\" | \"csv\" | \"parquet\")".into()))?,
                other => other.to_string(),
            };
            let path = path.ok_or_else(|| source.error(at, "load takes the files' path".into()))?;
            let mut args = vec![
                quoted(&landing(source, at, &path)?),
                format!("format => {}", quoted(&format)),
            ];
            if let Some(schema) = &reader.schema {
                args.push(format!("schema => {}", quoted(schema)));
            }
            format!("{stream}read_files({})", args.join(", "))
        }
    };
    Ok(Frame::source(query, reader.stream))
}

/// A Databricks volume path as the lab's folder: `/Volumes/<catalog>/<schema>/<volume>/<dir>`
/// is `landing/<dir>`; a relative path is the lab's own.
fn landing(source: Source, at: Node, path: &str) -> Result<String, ParseError> {
    match path.strip_prefix("/Volumes/") {
        Some(rest) => {
            let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
            match parts.as_slice() {
                [_, _, _, dir @ ..] => Ok(std::iter::once("landing")
                    .chain(dir.iter().copied())
                    .collect::<Vec<_>>()
                    .join("/")),
                _ => Err(source.error(
                    at,
                    format!("{path}: a volume path is /Volumes/<catalog>/<schema>/<volume>/..."),
                )),
            }
        }
        None if path.starts_with('/') => Err(source.error(
            at,
            format!("{path}: read the lab's files: landing/... or a /Volumes/... path"),
        )),
        None => Ok(path.trim_end_matches('/').to_string()),
    }
}

/// A delay as Spark writes it (`"1 hour"`, `"10 minutes"`) as the `WATERMARK` clause's interval.
fn interval(source: Source, at: Node, delay: &str) -> Result<String, ParseError> {
    let parts: Vec<&str> = delay.split_whitespace().collect();
    match parts.as_slice() {
        [n, unit] if n.chars().all(|c| c.is_ascii_digit()) => {
            Ok(format!("{n} {}", unit.to_ascii_uppercase()))
        }
        _ => Err(source.error(
            at,
            format!("the delay {delay:?}: a number and a unit, as \"1 hour\""),
        )),
    }
}
